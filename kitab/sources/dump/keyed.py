"""The keyed Arrow format: a table's rows by key, at the cost of the keys asked for.

A batch asks for a few hundred authors' rows (or a few thousand titles) scattered over the whole
key range. In Parquet that touches nearly every row group however small they are, so each batch
cost a scan of the table and collecting grew with the square of the authors. Instead, each
looked-up table also has an uncompressed Arrow IPC copy (``<table>.arrow``), read through a
memory map (a row costs the pages it sits on, nothing is decoded), and an index from key hash to
the key's run of rows (``<table>.index.npy``): a batch costs its keys and its rows, whatever the
table's size."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterable
from pathlib import Path

import duckdb

from kitab.core.text import is_unicode
from kitab.sources.dump.sql import sql_string

KEYED_BATCH_ROWS = 65536  # rows per record batch of a <table>.arrow file


def key_hash(key: str) -> int:
    """The index's 64-bit hash of a key: DuckDB's ``md5_number_lower`` (the last 8 bytes of the MD5,
    little-endian), which builds the index; a standard hash, so no DuckDB version can change it."""
    import hashlib

    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[8:], "little")


def keyed_files(table: str) -> tuple[str, str]:
    return f"{table}.arrow", f"{table}.index.npy"


def write_keyed(
    con: duckdb.DuckDBPyConnection,
    out: Path,
    table: str,
    key: str,
    arrow_batch_rows: int = KEYED_BATCH_ROWS,
    index_batch_rows: int = 100_000,
) -> None:
    """``<table>.arrow`` (the rows of ``<table>.parquet``, in its order) and ``<table>.index.npy``:
    a (3, keys) uint64 array of key hash, first row and row count per distinct key, sorted by
    hash. Memory stays bounded: the copy goes a record batch at a time, the index is sorted by
    DuckDB and written into a memory-mapped file."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = out / f"{table}.parquet"
    arrow_name, index_name = keyed_files(table)
    parquet = pq.ParquetFile(source)
    with pa.OSFile(str(out / arrow_name), "wb") as sink, pa.ipc.new_file(sink, parquet.schema_arrow) as writer:
        for batch in parquet.iter_batches(batch_size=arrow_batch_rows):
            writer.write_batch(batch)
    runs = (
        f"SELECT md5_number_lower({key}) AS hash, min(file_row_number) AS first, count(*) AS n, "
        f"max(file_row_number) AS last FROM read_parquet({sql_string(str(source))}, file_row_number = true) "
        f"WHERE {key} IS NOT NULL GROUP BY {key}"
    )
    keys = con.execute(f"SELECT count(*) FROM ({runs})").fetchall()[0][0]
    index = np.lib.format.open_memmap(out / index_name, mode="w+", dtype=np.uint64, shape=(3, keys))
    done = 0
    for batch in con.sql(f"{runs} ORDER BY hash, first").to_arrow_reader(index_batch_rows):
        first, n, last = (batch.column(c).to_numpy() for c in ("first", "n", "last"))
        if (last - first + 1 != n).any():  # the lookup reads a key's rows as one run
            raise RuntimeError(f"{source.name} is not sorted by {key}")
        size = len(first)
        index[0, done : done + size] = batch.column("hash").to_numpy()
        index[1, done : done + size] = first
        index[2, done : done + size] = n
        done += size
    index.flush()
    del index


class KeyedTable:
    """One looked-up table's rows by key (see :func:`write_keyed`), safe to share between threads.

    Each lookup maps the two files for its own duration only: what it takes is copied out, so
    the pages it touched do not stay in this process's memory (over a whole run, the batches of
    one worker touch most of a large table); within a lookup, the data file's pages leave the
    process once each record batch's rows are copied (:func:`drop_pages`): a lookup touched up
    to 400 MiB of a 100,000-author dump, all of it counted in the worker's RSS until the end.
    ``rows_read`` and ``batches_read`` count the rows taken from the file and the record
    batches touched: what lookups cost."""

    def __init__(self, folder: Path, table: str, key: str):
        import numpy as np

        arrow_name, index_name = keyed_files(table)
        self.table, self.key = table, key
        self.data_path, self.index_path = folder / arrow_name, folder / index_name
        with self._mapped() as (_, reader):
            self.schema = reader.schema
            sizes = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
        self.offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])  # first row of each batch
        self._lock = threading.Lock()
        self.rows_read = self.batches_read = 0

    @contextlib.contextmanager
    def _mapped(self):
        import numpy as np
        import pyarrow as pa

        source = pa.memory_map(str(self.data_path), "r")
        try:
            yield np.load(self.index_path, mmap_mode="r"), pa.ipc.open_file(source)
        finally:
            source.close()  # unmapped once no zero-copy view of it is left

    def rows(self, keys: Iterable[str]):
        """A pyarrow Table: every row whose key is one of ``keys``, in file order (key order)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        # a key that is not valid UTF-8 (a lone surrogate from a JSON escape) is in no table
        wanted = sorted(k for k in set(keys) if is_unicode(k))
        hashes = np.fromiter((key_hash(k) for k in wanted), dtype=np.uint64, count=len(wanted))
        hashes.sort()
        parts = []
        with self._mapped() as (index, reader):
            lo = np.searchsorted(index[0], hashes, "left")
            hi = np.searchsorted(index[0], hashes, "right")
            # index entries: a key, or another with the same hash (two wanted keys of one hash find it twice)
            entries = np.unique(_ranges(lo, hi - lo))
            first, count = index[1][entries].astype(np.int64), index[2][entries].astype(np.int64)
            # distinct keys' runs are disjoint: in file order their rows are sorted and distinct
            # (no unique over the rows: NumPy's hash-based unique took 0.7 s on 350,000 of them)
            by_row = np.argsort(first, kind="stable")
            rows = _ranges(first[by_row], count[by_row])
            if len(rows):
                batch_of = np.searchsorted(self.offsets, rows, "right") - 1
                starts = np.flatnonzero(np.r_[True, batch_of[1:] != batch_of[:-1]])
                for start, stop in zip(starts, np.r_[starts[1:], len(rows)]):
                    b = int(batch_of[start])
                    # take copies the rows out of the zero-copy batch
                    batch = reader.get_batch(b)
                    parts.append(batch.take(pa.array(rows[start:stop] - self.offsets[b])))
                    drop_pages(buffer for column in batch.columns for buffer in column.buffers())
            del index
        with self._lock:
            self.rows_read += len(rows)
            self.batches_read += len(parts)
        found = pa.Table.from_batches(parts, schema=self.schema)
        # a hash shared by two keys brings the other's rows too: the exact test drops them, a
        # key's run at a time (its first row's key), not a row at a time (~350,000 a batch at 100k)
        runs = count[by_row]
        firsts = pa.array(np.cumsum(runs) - runs)
        ours = pc.is_in(found.column(self.key).take(firsts), value_set=pa.array(wanted, pa.string()))
        ours = ours.to_numpy(zero_copy_only=False)
        return found if ours.all() else found.filter(pa.array(np.repeat(ours, runs)))


_MADV_DONTNEED = 4  # Linux


def drop_pages(buffers) -> bool:
    """The pages under ``buffers`` (zero-copy Arrow buffers of one read-only memory map, e.g. a
    record batch's; None entries skipped) out of this process's RSS: ``madvise(MADV_DONTNEED)``
    on the span they cover, so the call costs that span, not the file. The file's pages stay in
    the page cache; a later read maps them again. False where that is not possible (not Linux):
    that costs memory, never a wrong row, since nothing that points into the map is written."""
    import sys

    spans = [(b.address, b.address + b.size) for b in buffers if b is not None and b.size]
    if not sys.platform.startswith("linux") or not spans:
        return False
    import ctypes
    import mmap

    start = min(lo for lo, _ in spans) // mmap.PAGESIZE * mmap.PAGESIZE
    stop = max(hi for _, hi in spans)
    return _libc().madvise(ctypes.c_void_p(start), ctypes.c_size_t(stop - start), _MADV_DONTNEED) == 0


@functools.cache
def _libc():
    """The C library, loaded once: a ``CDLL`` per call built a class each time (0.6 ms, ~100
    calls a batch at 100,000 authors: one per record batch a lookup touches)."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _ranges(starts, lengths):
    """The concatenated ``range(start, start + length)`` of each pair, as one int64 array."""
    import numpy as np

    starts, lengths = np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)
