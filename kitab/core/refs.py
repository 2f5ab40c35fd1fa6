"""The columnar handoff between pipeline steps: Parquet files and small references to them.

A step writes each of its output tables to one Parquet file (temp path, then rename) and
returns a :class:`TableRef` (path, rows, sha256): that is what travels between steps, through
Prefect or Dask, never the rows themselves. A warehouse table (one with a file in
``schemas/``) is written in its schema; a step's intermediate table (``works_clean``,
``sampled``, ...) keeps the types Arrow infers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kitab.core.files import sha256_file, write_via_temp
from kitab.core.schemas import columns_to_arrow, known_tables, to_arrow

# The compression of a work-folder file that no release file is a copy of (publishing sorts and
# rewrites every table in zstd): Snappy writes and reads faster than zstd, for files ~1.3x the size.
WORK_COMPRESSION = "snappy"

# Rows per Parquet row group. Small enough that a 100,000-author table is written slice by
# slice; a table below it (every table of the bundled demo) is one row group, as before.
ROW_GROUP = 131_072


@dataclass(frozen=True)
class TableRef:
    """One Parquet file of one table: what a step returns instead of rows."""

    table: str
    path: str
    rows: int
    sha256: str

    def exists(self) -> bool:
        return Path(self.path).exists()


def write_arrow(table_name: str, data: pa.Table, path: str | os.PathLike, compression: str = "zstd") -> TableRef:
    """An Arrow table -> one Parquet file (zstd, or ``compression``: :data:`WORK_COMPRESSION`
    for a file only steps read), atomically, row groups of ROW_GROUP rows."""
    path = Path(path)
    data = data.combine_chunks()

    def write(tmp: str) -> None:
        with pq.ParquetWriter(tmp, data.schema, compression=compression) as writer:
            for start in range(0, max(data.num_rows, 1), ROW_GROUP):
                writer.write_table(data.slice(start, ROW_GROUP))

    write_via_temp(path, write)
    return TableRef(table_name, str(path), data.num_rows, sha256_file(path))


def arrow_of(table_name: str, rows: list[dict]) -> pa.Table:
    """Rows -> Arrow: in the table's schema for warehouse tables, inferred for intermediates."""
    if table_name in _warehouse_tables():
        return to_arrow(table_name, rows)
    return pa.Table.from_pylist(rows) if rows else pa.table({})


def write_rows(table_name: str, rows: list[dict], path: str | os.PathLike, compression: str = "zstd") -> TableRef:
    return write_arrow(table_name, arrow_of(table_name, rows), path, compression)


def arrow_of_columns(table_name: str, columns: dict[str, list]) -> pa.Table:
    """Columns (name -> values, in the rows' key order) -> the table :func:`arrow_of` makes of
    the same rows: a step that builds a large table as columns skips a dict per row."""
    if table_name in _warehouse_tables():
        return columns_to_arrow(table_name, columns)
    return pa.table(columns) if len(next(iter(columns.values()), ())) else pa.table({})


def write_columns(
    table_name: str, columns: dict[str, list], path: str | os.PathLike, compression: str = "zstd"
) -> TableRef:
    """:func:`write_rows` of rows given as columns: the same bytes."""
    return write_arrow(table_name, arrow_of_columns(table_name, columns), path, compression)


def read_parquet_file(path: str | os.PathLike) -> pa.Table:
    """One Parquet file as Arrow: ``pq.read_table``'s table without its dataset discovery per
    call, nor the import of ``pyarrow.dataset`` (~0.3 CPU-s in each fresh worker process)."""
    with pq.ParquetFile(path) as parquet:
        return parquet.read()


def read_arrow(refs: TableRef | Iterable[TableRef]) -> pa.Table:
    refs = [refs] if isinstance(refs, TableRef) else list(refs)
    parts = [read_parquet_file(ref.path) for ref in refs if ref.rows]
    if not parts:
        return pa.table({})
    return pa.concat_tables(parts, promote_options="default")


def iter_rows(refs: TableRef | Iterable[TableRef], columns: list[str] | None = None) -> Iterator[dict]:
    """The rows of one or more refs, in file order, as :func:`read_rows` gives them (or only
    ``columns``), converted one row group at a time: what a consumer keeps is what it costs,
    not the whole table twice (as Arrow and as dicts)."""
    refs = [refs] if isinstance(refs, TableRef) else list(refs)
    for ref in refs:
        if not ref.rows:
            continue
        with pq.ParquetFile(ref.path) as parquet:
            for batch in parquet.iter_batches(batch_size=ROW_GROUP, columns=columns):
                yield from batch.to_pylist()


def read_rows(refs: TableRef | Iterable[TableRef]) -> list[dict]:
    """The rows of one or more refs, in file order (empty refs give nothing)."""
    return read_arrow(refs).to_pylist()


def read_slice(ref: TableRef, start: int, stop: int) -> list[dict]:
    """Rows ``start:stop`` of one ref (``read_rows(ref)[start:stop]``), reading only the row
    groups that hold them and converting only those rows to Python: a batch's share of a large
    file costs the batch, not the file."""
    stop = min(stop, ref.rows)
    if start >= stop:
        return []
    with pq.ParquetFile(ref.path) as parquet:
        groups, first, at = [], 0, 0
        for i in range(parquet.metadata.num_row_groups):
            rows = parquet.metadata.row_group(i).num_rows
            if at < stop and at + rows > start:
                first = first if groups else at
                groups.append(i)
            at += rows
        table = parquet.read_row_groups(groups)
    return table.slice(start - first, stop - start).to_pylist()


_WAREHOUSE_TABLES: frozenset[str] | None = None


def _warehouse_tables() -> frozenset[str]:
    global _WAREHOUSE_TABLES
    if _WAREHOUSE_TABLES is None:
        _WAREHOUSE_TABLES = frozenset(known_tables())
    return _WAREHOUSE_TABLES


class RowGroupWriter:
    """Appends Arrow tables to a Parquet file in row groups of exactly ``row_group`` rows (the
    last one shorter): the same bytes as writing the concatenation at once."""

    def __init__(self, writer: pq.ParquetWriter, schema: pa.Schema, row_group: int = ROW_GROUP):
        self.writer, self.schema, self.row_group = writer, schema, row_group
        self.pending: list[pa.Table] = []
        self.buffered = self.rows = 0

    def append(self, table: pa.Table) -> None:
        self.pending.append(table)
        self.buffered += table.num_rows
        self.rows += table.num_rows
        if self.buffered >= self.row_group:
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        size = self.row_group
        table = pa.concat_tables(self.pending).combine_chunks() if self.pending else self.schema.empty_table()
        full = table.num_rows if final else table.num_rows - table.num_rows % size
        for start in range(0, full, size):
            self.writer.write_table(table.slice(start, min(size, full - start)))
        if final and self.rows == 0:
            self.writer.write_table(table)  # an empty table still writes its schema
        rest = table.slice(full)
        self.pending, self.buffered = [rest], rest.num_rows

    def close(self) -> None:
        self._flush(final=True)


def write_batches(
    batches: Iterable[pa.Table | pa.RecordBatch],
    table_name: str,
    path: str | os.PathLike,
    schema: pa.Schema,
    row_group: int = ROW_GROUP,
) -> TableRef:
    """Arrow tables or batches, in order -> one Parquet file (zstd) in ``schema``, atomically,
    in row groups of ``row_group`` rows."""
    path = Path(path)
    rows = 0

    def write(tmp: str) -> None:
        nonlocal rows
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            out = RowGroupWriter(writer, schema, row_group)
            for batch in batches:
                table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
                out.append(table.select(schema.names).cast(schema))
            out.close()
            rows = out.rows

    write_via_temp(path, write)
    return TableRef(table_name, str(path), rows, sha256_file(path))


def write_query(
    con, sql: str, params: list | None, table_name: str, path: str | os.PathLike, schema: pa.Schema | None = None
) -> TableRef:
    """The result of a DuckDB query -> one Parquet file, streamed in record batches (memory
    stays at about one row group), cast to ``schema`` (default: the warehouse table's), in
    row groups of ROW_GROUP rows: the same bytes as :func:`write_arrow` of the whole result."""
    from kitab.core.schemas import arrow_schema

    reader = con.sql(sql, params=params or None).to_arrow_reader(ROW_GROUP)
    return write_batches(reader, table_name, path, schema or arrow_schema(table_name))


# DuckDB's memory for one step's query over refs; beyond it, DuckDB spills to disk. Without a
# limit DuckDB takes up to 80% of the machine, for its buffer cache as much as for the work.
DUCKDB_MEMORY = "512MB"
# Publishing's data tests join whole tables (6 million constraints at 100,000 writers); they
# run after the worker processes are gone, so they may take more.
PUBLISH_MEMORY = "2GB"


# DuckDB threads per connection in this process (None: DuckDB's default, one per core). A
# worker process that shares the machine's cores with other workers gets its share (set by
# flows/runners.py): two workers each running DuckDB on every core oversubscribe them.
_DUCK_THREADS: int | None = None


def set_duck_threads(threads: int | None) -> None:
    global _DUCK_THREADS
    _DUCK_THREADS = threads


def duck_threads() -> int | None:
    return _DUCK_THREADS


def duck(spill_dir: str | os.PathLike | None = None, memory_limit: str = DUCKDB_MEMORY, threads: int | None = None):
    """An in-memory DuckDB connection with a memory limit (and a spill folder, if given);
    ``threads``: else this process's share (:func:`set_duck_threads`), else DuckDB's default."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute("SET preserve_insertion_order = false")  # every query that needs an order says so
    threads = threads if threads is not None else _DUCK_THREADS
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    if spill_dir is not None:
        Path(spill_dir).mkdir(parents=True, exist_ok=True)
        con.execute("SET temp_directory = '" + str(spill_dir).replace("'", "''") + "'")
    return con
