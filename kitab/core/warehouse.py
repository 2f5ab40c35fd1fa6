"""The warehouse as readers see it: DuckDB views (kitab.core.views) over exactly the files its
ledger commits (kitab.core.ledger: the layout, the ledger rows, the checks of their files), and
``<root>/kitab.duckdb``, a catalog of those views for other tools. A rebuilt release's new
files go beside the old ones and one rename of its ledger row swaps it in
(kitab.core.release_commit); the old files are swept only once no reader that connected
before the commit still holds the warehouse (the readers lock, here). A reader sees the old
committed version or the new one, never a partition without files, even when it is the only
release.

:meth:`Warehouse.connect` builds them in memory from the ledger, in a DuckDB that may
read only the committed files and cannot change its settings; :func:`read_only_query`
also refuses every statement that is not a query.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from kitab.core.errors import KitabError, UnknownRelease
from kitab.core.files import atomic_file
from kitab.core.ledger import (
    ANNEX_TABLES,
    LEDGER_FILE,
    FileCheck,
    WarehouseFiles,
    describe_problems,
    validate_release_id,
)
from kitab.core.schemas import STORED_RELEASE, arrow_schema
from kitab.core.views import VIEWS_VERSION, catalog_version, create_views
from kitab.core.views import data_test_results as data_test_results  # (kitab test reads it from here)
from kitab.core.views import sql_literal as _literal

CATALOG = "kitab.duckdb"
# Readers hold a shared flock on this file from connect to close; a publish sweeps a rebuilt
# release's old files only once it gets the exclusive lock (so no reader still uses them),
# waiting at most SWEEP_WAIT seconds, else it leaves them for the next publish to sweep.
READERS = ".readers"
# A sweep waiting for the readers holds this one exclusively: a new reader passes it (shared,
# at once released) before it takes READERS, so readers that keep coming cannot starve a sweep.
TURNSTILE = ".readers.turnstile"
SWEEP_WAIT = 10.0


class Warehouse(WarehouseFiles):
    """A warehouse's committed files (kitab.core.ledger) read through views: a reader's
    connection, the catalog, and the readers lock that keeps a sweep off files in use."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.catalog_path = self.root / CATALOG

    create_views = staticmethod(create_views)  # (read_only_views builds a reader's views with it)

    # -- the readers lock and the sweep ------------------------------------------------
    @contextlib.contextmanager
    def _readers(self, mode: int, wait: float | None = None, name: str = READERS) -> Iterator[bool]:
        """A flock on READERS: readers share it (LOCK_SH, blocking: a sweep holds it briefly),
        a sweep takes it exclusively (LOCK_EX, polled for ``wait`` seconds). Yields whether
        it is held; a warehouse a reader may not write to has no such file: nothing to hold."""
        try:
            fd = os.open(self.root / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError:
            try:
                fd = os.open(self.root / name, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                yield False
                return
        try:
            deadline = None if wait is None else time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(fd, mode | (0 if deadline is None else fcntl.LOCK_NB))
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(0.05)
            yield True
        finally:
            os.close(fd)  # (drops the flock)

    def sweep(self, release: str, wait: float = SWEEP_WAIT) -> list[Path]:
        """Remove the files of ``release`` that its ledger row does not name (an older
        version, or leftovers of a crashed publish); call it with the lock held. Waits (up
        to ``wait`` s) until no reader holds the warehouse: a reader that connected before
        the commit still reads the old files; if one still does, nothing is removed now."""
        with self._readers(fcntl.LOCK_EX, name=TURNSTILE), self._readers(fcntl.LOCK_EX, wait) as alone:
            if not alone:
                print(
                    f"kitab: warning: a reader still holds the warehouse; the replaced files of release "
                    f"{release} stay until its next publish",
                    file=sys.stderr,
                )
                return []
            return self._sweep(release)

    def _sweep(self, release: str) -> list[Path]:
        keep = set(self.committed_files(release).values()) if release in self.committed_releases() else set()
        keep.add(self.partition("releases", release) / LEDGER_FILE)
        removed = []
        for folder in sorted(self.tables_dir.glob(f"*/release={validate_release_id(release)}")):
            if folder.parent.name in ANNEX_TABLES:
                continue
            for path in sorted(folder.iterdir()):
                if path.is_file() and path not in keep:
                    path.unlink()
                    removed.append(path)
            if not any(folder.iterdir()):
                folder.rmdir()
        return removed

    # -- reading -----------------------------------------------------------------------
    def read_table(self, table: str, releases: list[str] | None = None) -> pa.Table:
        """A table's rows over the given (default: all committed) releases, with ``release``
        (and without the stored ``release_id``, as the views). A committed file that is missing
        or unreadable is an error, never an empty table."""
        committed = self.committed_releases()
        parts = []
        for release in committed if releases is None else releases:
            path = self._files(table, release) if release in committed else None
            if path is not None and not path.exists() and table not in ANNEX_TABLES:
                raise KitabError(
                    f"release {release}: the {table} file {path.relative_to(self.root)} is missing; run `kitab verify`"
                )
            if path is not None:
                try:
                    part = pq.read_table(path)
                except (OSError, pa.ArrowException) as exc:
                    raise KitabError(
                        f"release {release}: the {table} file {path.relative_to(self.root)} is "
                        f"unreadable ({_first_line(exc)}); run `kitab verify`"
                    ) from None
                if STORED_RELEASE in part.column_names:
                    part = part.drop_columns([STORED_RELEASE])
                parts.append(part.append_column("release", pa.array([release] * part.num_rows, pa.string())))
        if not parts:
            return _view_schema(table).empty_table()
        return pa.concat_tables(parts, promote_options="default")

    # -- catalog -----------------------------------------------------------------------
    def build_catalog(self) -> Path:
        """(Re)create kitab.duckdb with every view over the committed files, atomically, for
        tools other than kitab (kitab's own reads build the views from the ledger alone, so
        a deleted catalog is rebuilt by any publish or by `kitab verify`). Views hold
        absolute paths; the catalog records its root; a damaged table's view fails."""
        snapshot = self.read_snapshot(self.committed_releases())
        with atomic_file(self.catalog_path) as tmp:
            tmp.unlink()  # DuckDB wants to create the file itself
            con = duckdb.connect(str(tmp))
            try:
                self.create_views(con, snapshot.files, snapshot.damaged)
                con.execute(
                    "CREATE TABLE kitab_catalog AS SELECT ? AS root, ? AS views_version",
                    [self.root.as_posix(), VIEWS_VERSION],
                )
            finally:
                con.close()
        return self.catalog_path

    def require_release(self, release: str, committed: list[str] | None = None) -> None:
        """The one check that ``release`` is committed here: UnknownRelease naming the ones that are."""
        committed = self.committed_releases() if committed is None else committed
        if release not in committed:
            raise UnknownRelease(
                f"no committed release {release!r} in {self.root} (have: {', '.join(committed) or 'none'})"
            )

    def migrate_catalog(self) -> bool:
        """Rebuild kitab.duckdb when its views are older than VIEWS_VERSION (views only: no
        table file or ledger row is touched). True when it did."""
        version = catalog_version(self.catalog_path)
        if version is None or version >= VIEWS_VERSION:
            return False
        try:
            with self.lock():
                if (catalog_version(self.catalog_path) or VIEWS_VERSION) < VIEWS_VERSION:
                    self.build_catalog()
        except OSError as exc:  # a read-only warehouse: kitab's own reads build their views anyway
            print(f"kitab: warning: could not update {self.catalog_path} to the current views ({exc})", file=sys.stderr)
            return False
        return True

    def read_snapshot(self, releases: list[str]) -> ReadSnapshot:
        """The ledger rows of ``releases``, read once, and what they name: the files each
        view reads, the tables whose file is damaged (missing, changed, unreadable: the
        message a read of it fails with) and every problem found."""
        rows, bad = {}, []
        for release in releases:
            try:
                rows[release] = self.ledger_row(release)
            except KitabError as exc:  # a ledger file that is unreadable: that release is left out
                bad.append(
                    FileCheck(release, "releases", self.partition("releases", release) / LEDGER_FILE, _first_line(exc))
                )
        bad += [c for c in self.check_files(list(rows), full=False, rows=rows) if c.problem]
        damaged: dict[str, str] = {}
        for c in bad:
            if c.table != "releases" and c.table not in damaged:
                damaged[c.table] = (
                    f"table {c.table} of release {c.release} is damaged "
                    f"({c.path.relative_to(self.root)}: {c.problem}); run `kitab verify`"
                )
        return ReadSnapshot(rows, self.view_files(list(rows), rows), damaged, bad)

    def connect(
        self,
        release: str | None = None,
        extra_files: dict[str, Path] | None = None,
        *,
        warn: bool = True,
        memory_limit: str | None = None,
    ) -> ReadConnection:
        """The views over every committed release (or only ``release``), built in memory
        from the ledger (read once: the reader sees one committed version of each release
        until it closes, a rebuild's sweep waits for it), in a DuckDB that may read only
        those files, no other file, and whose settings are locked. A table with a damaged
        file fails when read; the others answer. ``warn``: say so at once (one line on
        stderr); else the caller finds them in ``.problems``. ``extra_files``: view name -> a
        local file the user named (``kitab sql --file``), readable as that view and no other way."""
        self.migrate_catalog()
        committed = self.committed_releases()
        if release is not None:
            self.require_release(release, committed)
        if release is None and not committed and not self.catalog_path.exists():
            raise KitabError(f"no warehouse at {self.root}: run `kitab refresh` or `kitab demo` first")
        with self._readers(fcntl.LOCK_SH, name=TURNSTILE):
            pass  # (waits while a sweep waits for the readers before this one)
        hold = self._readers(fcntl.LOCK_SH)
        hold.__enter__()
        try:
            snapshot = self.read_snapshot(committed if release is None else [release])
            if warn and snapshot.problems:
                print(f"kitab: warning: {describe_problems(snapshot.problems)}", file=sys.stderr)
            con = read_only_views(self, snapshot, extra_files, memory_limit=memory_limit)
        except BaseException:
            hold.__exit__(None, None, None)
            raise
        return ReadConnection(con, hold, snapshot.problems)


def _view_schema(table: str) -> pa.Schema:
    """A table's columns as its view shows them: without the stored release id, with ``release``."""
    schema = arrow_schema(table)
    if STORED_RELEASE in schema.names:
        schema = schema.remove(schema.get_field_index(STORED_RELEASE))
    return schema.append(pa.field("release", pa.string()))


@dataclass(frozen=True)
class ReadSnapshot:
    """What one reader reads: see :meth:`Warehouse.read_snapshot`."""

    rows: dict[str, dict]
    files: dict[str, list[Path]]
    damaged: dict[str, str]
    problems: list[FileCheck]

    def ledger(self) -> pa.Table:
        """The ledger rows as the ``releases`` view shows them (``release``, not the stored
        ``release_id``)."""
        schema = _view_schema("releases")
        rows = [{**row, "release": release} for release, row in sorted(self.rows.items())]
        return pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()


class ReadConnection:
    """A reader's DuckDB connection (every attribute is the connection's) that also holds
    the warehouse's readers lock until it is closed."""

    def __init__(self, con: duckdb.DuckDBPyConnection, hold, problems: list[FileCheck]):
        self._con, self._hold, self.problems = con, hold, problems

    def __getattr__(self, name: str):
        return getattr(self._con, name)

    def __enter__(self) -> ReadConnection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._con.close()
        finally:
            if self._hold is not None:
                hold, self._hold = self._hold, None
                hold.__exit__(None, None, None)


# -- read-only SQL ---------------------------------------------------------------------
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
            con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM {reader}({_literal(path.as_posix())}{sep})')
            con.execute(f'DESCRIBE "{name}"').fetchall()
        except duckdb.Error as exc:
            raise KitabError(f"--file {name}={path}: {_first_line(exc)}") from exc


def read_only_views(
    warehouse: Warehouse,
    snapshot: ReadSnapshot,
    extra_files: dict[str, Path] | None = None,
    *,
    memory_limit: str | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with ``warehouse``'s views over ``snapshot``, locked down with
    DuckDB's own settings: external access off except for exactly those files (no other
    file can be read, written or attached; no extension installed or loaded; no temp folder,
    which DuckDB would otherwise allow, at ``<cwd>/.tmp``), then the configuration locked (no
    SET / RESET / PRAGMA that changes a setting, including these). ``extra_files``: the user's
    own files (``kitab sql --file``), each readable as its view."""
    config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False, "temp_directory": ""}
    if memory_limit is not None:
        config["memory_limit"] = memory_limit
    try:
        con = duckdb.connect(config=config)
    except duckdb.Error as exc:
        raise KitabError(f"memory limit {memory_limit!r}: {_first_line(exc)}") from None
    try:
        extra_files = extra_files or {}
        files = {t: paths for t, paths in snapshot.files.items() if t != "releases" and t not in snapshot.damaged}
        allowed = sorted(
            {p.as_posix() for paths in files.values() for p in paths} | {p.as_posix() for p in extra_files.values()}
        )
        if allowed:  # must precede turning external access off (DuckDB refuses it after)
            con.execute(f"SET allowed_paths = [{', '.join(_literal(p) for p in allowed)}]")
        con.execute("SET enable_external_access = false")
        # a table holding the rows read (not a registered relation: that would list as a view)
        con.register("kitab_ledger_source", snapshot.ledger())
        con.execute("CREATE TABLE kitab_ledger_rows AS SELECT * FROM kitab_ledger_source")
        con.unregister("kitab_ledger_source")
        warehouse.create_views(con, files, snapshot.damaged, ledger="kitab_ledger_rows")
        _create_user_views(con, extra_files)
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


_EXPLAIN = re.compile(r"^\s*explain\s+(?:analy[sz]e\s+)?(?P<body>.*)$", re.IGNORECASE | re.DOTALL)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def check_read_only(query: str) -> None:
    """Refuse anything but queries (SELECT, incl. FROM-first, DESCRIBE, SHOW, SUMMARIZE,
    VALUES; and EXPLAIN of those), parsed by DuckDB itself. Needed on top of the locked
    configuration: an allowed path is writable too (``COPY … TO '<committed file>'
    (use_tmp_file false)`` passes DuckDB's file checks), and CHECKPOINT, SET VARIABLE,
    ATTACH ':memory:' and CREATE are not settings."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise KitabError(_first_line(exc)) from exc
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
        # a damaged table's view fails with kitab's message (Warehouse.create_views): no DuckDB prefix
        raise KitabError(_first_line(exc).removeprefix("Invalid Input Error: ")) from exc


def bounded_query(con, query: str, timeout: float | None) -> tuple[list[str], list[tuple]]:
    """:func:`read_only_query` with a time bound: the query runs in a thread while this one
    waits, so ``timeout`` seconds, Ctrl-C or SIGTERM interrupt DuckDB at once
    (``con.interrupt()``: DuckDB stops within milliseconds, recursive CTEs included) and end as
    one :class:`KitabError`. While it waits (in the main thread), SIGINT and SIGTERM only set
    a flag: no exception unwinds through DuckDB or the command line's machinery."""
    import signal

    check_read_only(query)
    done: dict = {}
    stopped: list[str] = []

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
