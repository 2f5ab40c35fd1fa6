"""Sort a table's Parquet parts by its key into one file, in bounded memory.

Publishing needs each table in key order, ties kept in the parts' order (part, then row):
the order :meth:`kitab.core.ledger.WarehouseFiles.write_table` gives the concatenated rows, so the
bytes do not depend on how the rows were batched. At 100,000 writers the constraints table
has about 6 million rows with list columns; DuckDB's ORDER BY over that ran out of memory at
2 GB. This is a distribution sort instead:

1. read only the key columns of each run (consecutive parts joined up to a bucket's rows, a
   part bigger than a bucket a slice at a time), sort them, and take every ``stride``-th key as a
   sample; the sorted samples give bucket boundaries (key ranges of at most ``bucket_rows``);
2. sort each run (one in memory), and append each bucket's slice of it to that
   bucket's spill file, parts in order;
3. read one bucket at a time, sort it stably (ties keep part, then row), write it out.

Memory is about one bucket; disk is one extra copy of the table (as Arrow IPC with LZ4, ~3x
its Parquet). A table of at most ``bucket_rows`` rows is sorted in memory, with no spill.
"""

from __future__ import annotations

import bisect
import itertools
import os
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kitab.core.refs import ROW_GROUP, TableRef, write_batches

# Rows per bucket: one Parquet row group (ROW_GROUP). A bucket of constraints (two list
# columns) is about 60 MB in Arrow; at 10,000 authors publishing's staging peaked at 0.60 GiB
# with it, 0.97 GiB with buckets of 524,288 rows, and took no longer. The bytes do not depend
# on it: ties never straddle buckets, and the file is written in row groups of ROW_GROUP rows.
BUCKET_ROWS = ROW_GROUP

# Spills are Arrow IPC files, LZ4-compressed: never kept, so read and written at memory speed.
# As LZ4 Parquet (before) the 100,000-author publish spent ~31 CPU-s writing them and ~2.4 s
# reading back each million constraints rows; IPC writes them in a third of the time and
# reads them in a tenth, at ~3x the disk (~110 MB per million constraints rows).
SPILL_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")

_SEP, _PRESENT, _NULL = "\x00", "\x01", "\x02"


def sort_key(table: pa.Table, keys: list[str]) -> pa.Array:
    """One string per row whose byte order is the order of ``keys`` (nulls last in each),
    the order of ``kitab.core.ledger._sort_key``: each value is marked present or null and the
    values are joined by NUL, so a shorter value sorts before its extensions."""
    if not keys:
        return pa.array([""] * table.num_rows, pa.string())
    parts = []
    for name in keys:
        column = pc.cast(table.column(name), pa.string())
        if pc.any(pc.match_substring(column, _SEP)).as_py():
            raise ValueError(f"key column {name!r} holds a NUL character; it cannot be sorted by key")
        parts.append(pc.fill_null(pc.binary_join_element_wise(_PRESENT, column, ""), _NULL))
    joined = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, _SEP)
    return joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined


def _sorted(table: pa.Table, keys: list[str]) -> tuple[pa.Table, pa.Array]:
    key = sort_key(table, keys)
    order = pc.sort_indices(key)  # stable: equal keys keep their order
    return table.take(order), key.take(order)


def _runs(parts: list[TableRef], schema: pa.Schema, rows: int, columns: list[str] | None = None):
    """The parts' rows, in order, as tables of at most ``rows`` rows: consecutive small parts
    joined (at 100,000 authors a table comes in 482 parts of ~15,000 rows: a run per part
    spilled 482 slices into each bucket), a part bigger than a bucket (the queries table is one
    part) read a slice at a time. Runs follow each other in part then row order, so ties
    between runs break the same way as ties between parts."""
    target = schema if columns is None else pa.schema([schema.field(c) for c in columns])
    pending: list[pa.Table] = []
    held = 0
    for ref in parts:
        for batch in pq.ParquetFile(ref.path).iter_batches(batch_size=rows, columns=columns):
            table = pa.Table.from_batches([batch]).select(target.names).cast(target)
            if held + table.num_rows > rows and pending:
                yield pa.concat_tables(pending)
                pending, held = [], 0
            pending.append(table)
            held += table.num_rows
    if pending:
        yield pa.concat_tables(pending)


def _run_count(parts: list[TableRef], rows: int) -> int:
    """How many runs :func:`_runs` gives at most (each but the last holds more than half of
    ``rows``, or a whole slice of a part)."""
    return max(1, -(-2 * sum(ref.rows for ref in parts) // rows) + 1)


class _Values:
    """A sorted Arrow string array as a sequence for :mod:`bisect`: only the ~17 values a
    search looks at become Python strings, not the whole run."""

    def __init__(self, array: pa.Array):
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i: int) -> str:
        return self.array[i].as_py()


def boundaries(parts: list[TableRef], keys: list[str], schema: pa.Schema, bucket_rows: int) -> list[str]:
    """Sort keys that split the parts' rows into buckets of at most about ``bucket_rows``.

    Every ``stride``-th key of each sorted run (:func:`_runs`) is a sample. A bucket holds ``per_bucket``
    samples, so it gets at most per_bucket * stride rows from between samples plus fewer than
    stride rows per run from its edges: bucket_rows / 2 + bucket_rows / 2. (Many rows with
    one key value cannot be split and make a larger bucket.)"""
    runs = _run_count(parts, bucket_rows)
    stride = max(1, bucket_rows // (2 * max(1, runs)))
    per_bucket = max(1, bucket_rows // (2 * stride))
    samples: list[str] = []
    for run in _runs(parts, schema, bucket_rows, columns=keys):
        key = sort_key(run, keys)
        key = key.take(pc.sort_indices(key))
        samples.extend(key.take(pa.array(range(0, len(key), stride), pa.int64())).to_pylist())
    samples.sort()
    return sorted(set(samples[per_bucket::per_bucket]))


def write_sorted(
    parts: list[TableRef],
    keys: list[str],
    table_name: str,
    path: str | os.PathLike,
    schema: pa.Schema,
    spill_dir: str | os.PathLike,
    bucket_rows: int = BUCKET_ROWS,
) -> TableRef:
    """Parts -> one Parquet file sorted by ``keys`` (nulls last), ties in part then row order."""
    parts = [ref for ref in parts if ref.rows]
    if sum(ref.rows for ref in parts) <= bucket_rows:
        table = (
            pa.concat_tables([*_runs(parts, schema, bucket_rows)], promote_options="none")
            if parts
            else schema.empty_table()
        )
        return write_batches([_sorted(table, keys)[0]], table_name, path, schema)

    cuts = boundaries(parts, keys, schema, bucket_rows)
    Path(spill_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=spill_dir, prefix="sort-") as tmp:
        spills = [Path(tmp) / f"bucket-{b:05d}.arrow" for b in range(len(cuts) + 1)]
        writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
        try:
            for run in _runs(parts, schema, bucket_rows):
                table, key = _sorted(run, keys)
                values = _Values(key)
                edges = [0, *(bisect.bisect_left(values, cut) for cut in cuts), len(values)]
                for b, (start, stop) in enumerate(itertools.pairwise(edges)):
                    if stop > start:
                        if b not in writers:
                            writers[b] = pa.ipc.new_file(str(spills[b]), schema, options=SPILL_OPTIONS)
                        writers[b].write_table(table.slice(start, stop - start))
        finally:
            for writer in writers.values():
                writer.close()

        def buckets():
            for b in sorted(writers):
                with pa.OSFile(str(spills[b])) as source:
                    bucket = pa.ipc.open_file(source).read_all()
                yield _sorted(bucket, keys)[0]  # (IPC keeps the schema: no cast)
                spills[b].unlink()

        return write_batches(buckets(), table_name, path, schema)
