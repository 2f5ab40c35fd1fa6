"""The warehouse: Parquet per table and release, and a DuckDB catalog of views.

Layout (contract): ``<root>/tables/<table>/release=<id>/part-0.parquet`` and
``<root>/kitab.duckdb``. Every file is written to a temporary path and renamed, so a
reader never sees half a file. A release becomes visible when its ``releases`` row is
written, last: views only show releases that have one, so an interrupted refresh leaves
nothing half-published.

Views: one per table, named like the table (the raw layer, over every committed
release); then ``sql/staging/*.sql`` and ``sql/marts/*.sql`` in file-name order; data
tests are ``sql/tests/*.sql``, each a SELECT returning the offending rows.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from kitab.env import PROJECT_ROOT
from kitab.schemas import arrow_schema, known_tables, table_spec, to_arrow
from kitab.snapshot.format import sha256_file  # noqa: F401  (kitab.warehouse.sha256_file, as before)

SQL_DIR = PROJECT_ROOT / "sql"
CATALOG = "kitab.duckdb"
_DUCK_TYPES = {"string": "VARCHAR", "int32": "INTEGER", "int64": "BIGINT", "float64": "DOUBLE",
               "bool": "BOOLEAN", "timestamp": "TIMESTAMPTZ"}


class DataTestFailure(RuntimeError):
    """A data test in sql/tests found offending rows."""


# A release id is a folder name, a hive partition value and a Hub tag: keep it plain.
_RELEASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def validate_release_id(release: str) -> str:
    if not _RELEASE_ID.match(release or ""):
        raise ValueError(f"release id {release!r}: use letters, digits, '.', '_' and '-' "
                         "(starting with a letter or digit), e.g. 2026.11.21-s42")
    return release


@dataclass(frozen=True)
class WrittenTable:
    table: str
    path: Path
    rows: int
    sha256: str


def _sort_key(table: str):
    keys = table_spec(table).get("key", [])
    return lambda row: tuple((row.get(k) is None, row.get(k) if row.get(k) is not None else "") for k in keys)


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _duck_type(type_name: str) -> str:
    if type_name.startswith("list<"):
        return _duck_type(type_name[5:-1]) + "[]"
    return _DUCK_TYPES[type_name]


class Warehouse:
    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.tables_dir = self.root / "tables"
        self.catalog_path = self.root / CATALOG

    # -- writing -----------------------------------------------------------------------
    def partition(self, table: str, release: str) -> Path:
        return self.tables_dir / table / f"release={validate_release_id(release)}"

    def staging(self, release: str) -> "Warehouse":
        """A private warehouse where a release is written and tested before it replaces the
        committed one: a failed rebuild leaves the old release as it was."""
        return Warehouse(self.root / ".staging" / validate_release_id(release))

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """One writer at a time: the ledger check and the commit must not interleave."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def write_table(self, table: str, release: str, rows: list[dict]) -> WrittenTable:
        """Rows in key order -> one Parquet file, atomically; same rows -> same bytes."""
        arrow = to_arrow(table, sorted(rows, key=_sort_key(table)))
        target = self.partition(table, release) / "part-0.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-0.", suffix=".tmp")
        os.close(fd)
        try:
            pq.write_table(arrow, tmp, compression="zstd")
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return WrittenTable(table, target, arrow.num_rows, sha256_file(target))

    def write_parts(self, table: str, release: str, parts: list) -> WrittenTable:
        """Parquet parts of one table (kitab.refs.TableRef, from the pipeline's batches) ->
        its file in this warehouse, in key order, in bounded memory (kitab.external_sort).
        Ties on the key keep the parts' order, so the bytes are those of :meth:`write_table`
        over the concatenated rows."""
        from kitab.external_sort import write_sorted

        target = self.partition(table, release) / "part-0.parquet"
        ref = write_sorted(parts, table_spec(table).get("key", []), table, target, arrow_schema(table),
                           spill_dir=self.root / ".sort_tmp")
        return WrittenTable(table, target, ref.rows, ref.sha256)

    def adopt(self, staged: "Warehouse", release: str, tables: list[str]) -> None:
        """Move a tested release from ``staged`` into place, uncommitting the old one first;
        the caller writes the releases row afterwards (the commit)."""
        shutil.rmtree(self.partition("releases", release), ignore_errors=True)
        for table in tables:
            target = self.partition(table, release)
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged.partition(table, release), target)

    # -- reading -----------------------------------------------------------------------
    def committed_releases(self) -> list[str]:
        base = self.tables_dir / "releases"
        if not base.exists():
            return []
        return sorted(p.name.split("=", 1)[1] for p in base.glob("release=*") if (p / "part-0.parquet").exists())

    def read_table(self, table: str, releases: list[str] | None = None) -> pa.Table:
        """A table's rows over the given (default: all committed) releases, with ``release``."""
        releases = self.committed_releases() if releases is None else releases
        parts = []
        for release in releases:
            path = self.partition(table, release) / "part-0.parquet"
            if path.exists():
                part = pq.read_table(path)
                parts.append(part.append_column("release", pa.array([release] * part.num_rows, pa.string())))
        if not parts:
            schema = arrow_schema(table).append(pa.field("release", pa.string()))
            return schema.empty_table()
        return pa.concat_tables(parts, promote_options="default")

    # -- catalog -----------------------------------------------------------------------
    def _raw_view_sql(self, table: str, release: str | None, pending: str | None) -> str:
        files = sorted(self.tables_dir.glob(f"{table}/release=*/part-0.parquet"))
        if not files:  # no data yet: an empty view with the schema's columns
            cols = ", ".join(f"CAST(NULL AS {_duck_type(c['type'])}) AS \"{c['name']}\""
                             for c in table_spec(table)["columns"])
            return f'CREATE OR REPLACE VIEW "{table}" AS SELECT {cols}, CAST(NULL AS VARCHAR) AS release WHERE false'
        glob = _literal((self.tables_dir / table / "release=*" / "*.parquet").as_posix())
        committed = _literal((self.tables_dir / "releases" / "release=*" / "*.parquet").as_posix())
        where = []
        if table != "releases":
            visible = (f"release IN (SELECT release_id FROM read_parquet({committed}))"
                       if self.committed_releases() else "false")
            if pending is not None:
                visible = f"({visible} OR release = {_literal(pending)})"
            where.append(visible)
        if release is not None:
            where.append(f"release = {_literal(release)}")
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return (f"CREATE OR REPLACE VIEW \"{table}\" AS SELECT * FROM read_parquet({glob}, "
                f"hive_partitioning = true, union_by_name = true, hive_types = {{'release': 'VARCHAR'}}){clause}")

    def create_views(self, con: duckdb.DuckDBPyConnection, release: str | None = None,
                     pending: str | None = None) -> None:
        """All views; ``release`` scopes them to one release, ``pending`` also shows a
        release whose tables are written but not yet committed (to test it first)."""
        for table in known_tables():
            con.execute(self._raw_view_sql(table, release, pending))
        for layer in ("staging", "marts"):
            for path in sorted((SQL_DIR / layer).glob("*.sql")):
                try:
                    con.execute(path.read_text())
                except duckdb.Error as exc:
                    raise RuntimeError(f"sql/{layer}/{path.name}: {exc}") from exc

    def build_catalog(self) -> Path:
        """(Re)create kitab.duckdb with every view, atomically. Views hold absolute paths,
        so the catalog records its root and is rebuilt if the warehouse was moved."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=f".{CATALOG}.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)  # DuckDB wants to create the file itself
        try:
            con = duckdb.connect(tmp)
            try:
                self.create_views(con)
                con.execute("CREATE TABLE kitab_catalog AS SELECT ? AS root", [self.root.as_posix()])
            finally:
                con.close()
            os.replace(tmp, self.catalog_path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return self.catalog_path

    def _catalog_root(self) -> str | None:
        with duckdb.connect(str(self.catalog_path), read_only=True) as con:
            try:
                return con.execute("SELECT root FROM kitab_catalog").fetchall()[0][0]
            except duckdb.Error:
                return None

    def connect(self, release: str | None = None) -> duckdb.DuckDBPyConnection:
        """The catalog, read-only; scoped to one release: views built in memory."""
        if release is not None:
            if release not in self.committed_releases():
                raise ValueError(f"no committed release {release!r} in {self.root} "
                                 f"(have: {', '.join(self.committed_releases()) or 'none'})")
            con = duckdb.connect()
            self.create_views(con, release)
            return con
        if not self.catalog_path.exists():
            raise FileNotFoundError(f"no catalog at {self.catalog_path}: run `kitab refresh` or `kitab demo` first")
        if self._catalog_root() != self.root.as_posix():  # copied or moved warehouse
            self.build_catalog()
        return duckdb.connect(str(self.catalog_path), read_only=True)

    def run_data_tests(self, con: duckdb.DuckDBPyConnection) -> dict[str, int]:
        """Every sql/tests/*.sql must return no rows; raise with the offending rows if any does."""
        failures, checked = [], {}
        for path in sorted((SQL_DIR / "tests").glob("*.sql")):
            query = path.read_text().strip().rstrip(";")
            # fetch everything of a bounded query: a half-read result blocks the connection
            rows = con.execute(f"SELECT * FROM ({query}\n) AS offending LIMIT 5").fetchall()
            checked[path.stem] = len(rows)
            if rows:
                failures.append(f"{path.name}: {rows}")
        if failures:
            raise DataTestFailure("data tests failed:\n  " + "\n  ".join(failures))
        return checked
