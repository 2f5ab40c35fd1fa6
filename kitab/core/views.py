"""The SQL over a warehouse's files: one view per table over exactly the files given, then
``sql/staging/*.sql`` and ``sql/marts/*.sql`` in file-name order; the data tests
(``sql/tests/*.sql``, each a SELECT returning the offending rows); and the views' version that
kitab.duckdb records. Which files the views read is the ledger's business
(kitab.core.ledger); where they are built, kitab.core.warehouse and kitab.core.release_commit.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from kitab.core.env import PROJECT_ROOT
from kitab.core.schemas import STORED_RELEASE, known_tables, table_spec, view_name

SQL_DIR = PROJECT_ROOT / "sql"
# The views' version in kitab.duckdb (the catalog other tools open). 2: `authors` holds the
# released authors, every sampled one is in `sampled_authors`. An older catalog is rebuilt on
# the next read: a migration of views only, the Parquet files and the ledger stay as they are.
VIEWS_VERSION = 2
_DUCK_TYPES = {
    "string": "VARCHAR",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "float64": "DOUBLE",
    "bool": "BOOLEAN",
    "timestamp": "TIMESTAMPTZ",
}


class DataTestFailure(RuntimeError):
    """A data test in sql/tests found offending rows."""


def sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _duck_type(type_name: str) -> str:
    if type_name.startswith("list<"):
        return _duck_type(type_name[5:-1]) + "[]"
    return _DUCK_TYPES[type_name]


def _empty_select(table: str) -> str:
    cols = ", ".join(
        f'CAST(NULL AS {_duck_type(c["type"])}) AS "{c["name"]}"'
        for c in table_spec(table)["columns"]
        if c["name"] != STORED_RELEASE
    )
    return f"SELECT {cols}, CAST(NULL AS VARCHAR) AS release WHERE false"


def _files_select(table: str, files: list[Path]) -> str:
    # One name for a release id in every view: ``release`` (the partition). The ledger
    # files also store it as ``release_id``, so that a file names its own release
    # (ledger_row checks it); readers never see that column.
    if not files:  # no data yet: an empty view with the schema's columns
        return _empty_select(table)
    stored = [c["name"] for c in table_spec(table)["columns"]]
    listed = ", ".join(sql_literal(p.as_posix()) for p in files)
    exclude = f" EXCLUDE ({STORED_RELEASE})" if STORED_RELEASE in stored else ""
    return (
        f"SELECT *{exclude} FROM read_parquet([{listed}], "
        f"hive_partitioning = true, union_by_name = true, hive_types = {{'release': 'VARCHAR'}})"
    )


def damaged_rows_sql(table: str, release: str, message: str) -> str:
    """A SELECT of one row of ``table`` in ``release`` that fails with ``message`` as soon as a
    query reads it: every column (and the row's existence, for ``count(*)``) is an ``error()``,
    only ``release`` is a constant. So a filter on another release prunes it before it runs,
    and every query that reads the damaged part fails, whatever its filters and shape."""
    fail = f"error({sql_literal(message)})"
    cols = ", ".join(
        f'CAST({fail} AS {_duck_type(c["type"])}) AS "{c["name"]}"'
        for c in table_spec(table)["columns"]
        if c["name"] != STORED_RELEASE
    )
    return f"SELECT {cols}, {sql_literal(release)} AS release FROM range(1) WHERE {fail} IS NULL"


def create_views(
    con: duckdb.DuckDBPyConnection,
    files: dict[str, list[Path]],
    damaged: dict[str, dict[str, str]] | None = None,
    ledger: str | None = None,
) -> None:
    """All views, each table's over exactly ``files[table]`` (none: an empty view).
    ``damaged``: table -> release -> message; that release's part of the table (its files
    are left out of ``files``) is a row that fails with the message whenever a query reads it
    (:func:`damaged_rows_sql`), so the table's other releases and the other tables answer,
    and no filter turns a damaged table into an empty one. ``ledger``: the name of a
    registered relation holding the ledger rows the reader read, which the ``releases`` view
    then shows (not the ledger files, which a commit may replace while the reader runs)."""
    damaged = damaged or {}
    for table in known_tables():
        if table == "releases" and ledger is not None:
            select = f'SELECT * FROM "{ledger}"'
        else:
            select = _files_select(table, files.get(table, []))
        parts = [select] + [damaged_rows_sql(table, r, m) for r, m in sorted(damaged.get(table, {}).items())]
        con.execute(f'CREATE OR REPLACE VIEW "{view_name(table)}" AS ' + "\nUNION ALL BY NAME\n".join(parts))
    for layer in ("staging", "marts"):
        for path in sorted((SQL_DIR / layer).glob("*.sql")):
            try:
                con.execute(path.read_text())
            except duckdb.Error as exc:
                raise RuntimeError(f"sql/{layer}/{path.name}: {exc}") from exc


def catalog_version(path: Path) -> int | None:
    """The views' version recorded in the catalog at ``path`` (None: no catalog, or it cannot
    be opened; 1: before it was recorded)."""
    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:  # e.g. another tool holds it open for writing: leave it alone
        return None
    try:
        columns = {
            r[0]
            for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = 'kitab_catalog'"
            ).fetchall()
        }
        if "views_version" not in columns:
            return 1
        return con.execute("SELECT max(views_version) FROM kitab_catalog").fetchall()[0][0]
    finally:
        con.close()


CHECK_PREFIX = "-- check:"  # a sql/tests file whose first line is "-- check: NAME.sql" runs sql/checks/NAME.sql


def data_tests() -> list[tuple[str, str]]:
    """(name, query) of every sql/tests/*.sql, in name order."""
    tests = []
    for path in sorted((SQL_DIR / "tests").glob("*.sql")):
        query = path.read_text().strip()
        if query.startswith(CHECK_PREFIX):  # a data test that runs one of sql/checks (one copy of the SQL)
            query = (SQL_DIR / "checks" / query.splitlines()[0][len(CHECK_PREFIX) :].strip()).read_text().strip()
        tests.append((path.stem, query.rstrip(";")))
    return tests


def offending_rows(con: duckdb.DuckDBPyConnection, query: str, limit: int = 5) -> list[tuple]:
    """Up to ``limit`` rows of a data test's ``query``."""
    # fetch everything of a bounded query: a half-read result blocks the connection
    return con.execute(f"SELECT * FROM ({query}\n) AS offending LIMIT {int(limit)}").fetchall()


def data_test_results(con: duckdb.DuckDBPyConnection, limit: int = 5) -> list[tuple[str, list[tuple]]]:
    """(test name, up to ``limit`` offending rows) for every sql/tests/*.sql, in name order."""
    return [(name, offending_rows(con, query, limit)) for name, query in data_tests()]


def run_data_tests(con: duckdb.DuckDBPyConnection, done: dict[str, list[tuple]] | None = None) -> dict[str, int]:
    """Every sql/tests/*.sql must return no rows; raise with the offending rows if any does.
    ``done``: the results of tests already run over the same files (:func:`tests_ready`)."""
    results = dict(done or {})
    for name, query in data_tests():
        if name not in results:
            results[name] = offending_rows(con, query)
    return check_results(results)


def check_results(results: dict[str, list[tuple]]) -> dict[str, int]:
    """Offending rows per test (name order), or DataTestFailure naming every test that found some."""
    failures, checked = [], {}
    for name, rows in sorted(results.items()):
        checked[name] = len(rows)
        if rows:
            failures.append(f"{name}.sql: {rows}")
    if failures:
        raise DataTestFailure("data tests failed:\n  " + "\n  ".join(failures))
    return checked


# What the view of a table not written yet fails with (:func:`tests_ready`).
NOT_WRITTEN = "kitab: a table not written yet"


def tests_ready(
    con: duckdb.DuckDBPyConnection,
    files: dict[str, list[Path]],
    release: str,
    done: dict[str, list[tuple]],
    *,
    defer_out_of_memory: bool = False,
) -> None:
    """The data tests not in ``done`` that read only the tables in ``files``, run over exactly
    those files; each one's offending rows added to ``done``. Every other table's view fails
    when a query reads it (:func:`damaged_rows_sql`), so a test that reads one, directly or
    through a staging or mart view, is left for later; a test that finishes read none of them,
    so its result is the one it has once they are written. ``defer_out_of_memory``: a test that
    runs out of ``con``'s memory limit is left for later too (a round under a lower limit)."""
    missing = {t: {release: NOT_WRITTEN} for t in known_tables() if t not in files}
    create_views(con, files, damaged=missing)
    for name, query in data_tests():
        if name in done:
            continue
        try:
            done[name] = offending_rows(con, query)
        except duckdb.OutOfMemoryException:
            if not defer_out_of_memory:
                raise
        except duckdb.Error as exc:
            if NOT_WRITTEN not in str(exc):
                raise
