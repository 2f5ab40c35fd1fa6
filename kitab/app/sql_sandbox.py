"""``kitab sql``'s sandbox: a person's SQL over the warehouse, safely.

:meth:`kitab.core.warehouse.Warehouse.connect` gives the locked-down DuckDB every reader
gets (only the committed files readable, no extension, the configuration locked). On top of
it, for SQL a person types, this module adds: the statement check (only queries run,
:func:`check_read_only`), the user's own files as views (``--file NAME=PATH``,
:func:`user_file`, :func:`connect`), and the time bound with Ctrl-C and SIGTERM stopping a
query at once (:func:`bounded_query`). The process's memory limit is kitab/app/guard.py's.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import duckdb

# the warehouse's rules for a SQL string literal and an error's one line: the same here
from kitab.core.errors import KitabError, first_line
from kitab.core.views import sql_literal
from kitab.core.warehouse import ReadConnection, Warehouse

_USER_VIEW = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
# A user's file (kitab sql --file NAME=PATH) -> the DuckDB reader for its kind.
USER_FILE_READERS = {
    ".csv": "read_csv",
    ".tsv": "read_csv",
    ".parquet": "read_parquet",
    ".json": "read_json",
    ".jsonl": "read_json",
    ".ndjson": "read_json",
}


def user_file(spec: str) -> tuple[str, Path]:
    """``NAME=PATH`` -> (view name, absolute path of an existing file of a kind DuckDB reads)."""
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise KitabError(f"--file {spec!r}: expected NAME=PATH, e.g. --file exclude=authors.csv")
    if not _USER_VIEW.match(name):
        raise KitabError(
            f"--file {spec!r}: the view name {name!r} must be letters, digits and _ (not starting with a digit)"
        )
    file = Path(path).expanduser().absolute()
    if not file.is_file():
        raise KitabError(f"--file {spec!r}: no file {file}")
    if file.suffix.lower() not in USER_FILE_READERS:
        raise KitabError(f"--file {spec!r}: expected a {', '.join(USER_FILE_READERS)} file")
    return name, file


def _create_user_views(con: duckdb.DuckDBPyConnection, extra_files: dict[str, Path]) -> None:
    taken = {r[0].lower() for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    for name, path in sorted(extra_files.items()):
        if name.lower() in taken:
            raise KitabError(f"--file {name}=…: {name} is already a view of the warehouse; choose another name")
        reader = USER_FILE_READERS[path.suffix.lower()]
        sep = ", delim = '\t'" if path.suffix.lower() == ".tsv" else ""
        try:  # DESCRIBE reads the file's head now: a file DuckDB cannot read is an error naming it
            con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM {reader}({sql_literal(path.as_posix())}{sep})')
            con.execute(f'DESCRIBE "{name}"').fetchall()
        except duckdb.Error as exc:
            raise KitabError(f"--file {name}={path}: {first_line(exc)}") from exc


def connect(
    warehouse: Warehouse, files: dict[str, Path], *, release: str | None = None, memory_limit: str | None = None
) -> ReadConnection:
    """:meth:`Warehouse.connect` (damaged files left in ``.problems``, not warned) with
    ``files`` (view name -> a file of :func:`user_file`) readable, each as its view and no
    other way."""
    return warehouse.connect(
        release=release,
        warn=False,
        memory_limit=memory_limit,
        readable=sorted(files.values()),
        extend=lambda con: _create_user_views(con, files),
    )


_EXPLAIN = re.compile(r"^\s*explain\s+(?:analy[sz]e\s+)?(?P<body>.*)$", re.IGNORECASE | re.DOTALL)


def check_read_only(query: str) -> None:
    """Refuse anything but queries (SELECT, incl. FROM-first, DESCRIBE, SHOW, SUMMARIZE,
    VALUES; and EXPLAIN of those), parsed by DuckDB itself. Needed on top of the locked
    configuration: an allowed path is writable too (``COPY … TO '<committed file>'
    (use_tmp_file false)`` passes DuckDB's file checks), and CHECKPOINT, SET VARIABLE,
    ATTACH ':memory:' and CREATE are not settings."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise KitabError(first_line(exc)) from exc
    for statement in statements:
        kind = statement.type
        if kind == duckdb.StatementType.EXPLAIN:  # EXPLAIN ANALYZE runs its statement: a query only
            body = _EXPLAIN.match(statement.query)
            try:
                inner = duckdb.extract_statements(body["body"]) if body else []
            except duckdb.Error:
                inner = []
            if len(inner) == 1 and inner[0].type == duckdb.StatementType.SELECT:
                continue
        elif kind == duckdb.StatementType.SELECT:
            continue
        start = " ".join(statement.query.split()[:3])
        raise KitabError(
            f"read-only: {kind.name} statements are refused ({start} …); "
            "only queries run (SELECT, FROM, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN)"
        )


def read_only_query(con: duckdb.DuckDBPyConnection, query: str) -> tuple[list[str], list[tuple]]:
    """Run a person's SQL on a :meth:`Warehouse.connect` connection: ``(columns, rows)``.
    Anything refused or failing is a :class:`KitabError` with DuckDB's message."""
    check_read_only(query)
    try:
        cursor = con.execute(query)
        return [d[0] for d in cursor.description or []], cursor.fetchall()
    except duckdb.Error as exc:
        # damage that explains the failure is its one line (Warehouse.explain_read_error)
        damage = con.explain(exc) if isinstance(con, ReadConnection) else None
        raise damage or KitabError(first_line(exc)) from exc


def bounded_query(con, query: str, timeout: float | None) -> tuple[list[str], list[tuple]]:
    """:func:`read_only_query` with a time bound: the query runs in a thread while this one
    waits, so ``timeout`` seconds, Ctrl-C or SIGTERM interrupt DuckDB at once
    (``con.interrupt()``: DuckDB stops within milliseconds, recursive CTEs included) and end as
    one :class:`KitabError`. While it waits (in the main thread), SIGINT and SIGTERM only set
    a flag: no exception unwinds through DuckDB or the command line's machinery."""
    import signal

    from kitab.app.guard import stop_signal

    check_read_only(query)
    done: dict = {}
    # a signal before the query started whose exception was swallowed on the way (DuckDB may
    # turn it into its own error while a view is created): it still stops the query
    stopped: list[str] = [stop_signal()] if stop_signal() else []

    def run() -> None:
        try:
            done["result"] = read_only_query(con, query)
        except BaseException as exc:  # handed to the waiting thread
            done["error"] = exc

    def on_signal(signum, frame) -> None:
        stopped.append(signal.Signals(signum).name)
        con.interrupt()

    main = threading.current_thread() is threading.main_thread()
    saved = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        worker = threading.Thread(target=run, name="kitab-sql", daemon=True)
        if not stopped:
            worker.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        while worker.is_alive() and not stopped and (deadline is None or time.monotonic() < deadline):
            worker.join(0.05)  # short waits: a signal's flag is seen within 50 ms
        timed_out = worker.is_alive() and not stopped
        if worker.is_alive():
            con.interrupt()
            worker.join(5)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    if stopped:
        raise KitabError(f"query interrupted ({stopped[0]})")
    if timed_out:
        raise KitabError(f"query stopped after {timeout:g} s (--timeout); narrow it, or give it more time")
    if "error" in done:
        raise done["error"]
    return done["result"]
