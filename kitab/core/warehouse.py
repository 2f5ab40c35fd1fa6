"""The warehouse as readers see it: DuckDB views (kitab.core.views) over exactly the files its
ledger commits (kitab.core.ledger: the layout, the ledger rows, the checks of their files), and
``<root>/kitab.duckdb``, a catalog of those views for other tools. A rebuilt release's new
files go beside the old ones and one rename of its ledger row swaps it in
(kitab.core.release_commit); the old files are swept only once no reader that connected
before the commit still holds the warehouse (the readers lock, here). A reader sees the old
committed version or the new one, never a partition without files, even when it is the only
release.

:meth:`Warehouse.connect` builds them in memory from the ledger, in a DuckDB that may
read only the committed files and cannot change its settings (``kitab sql``'s sandbox on top
of it, which also refuses every statement that is not a query: kitab/app/sql_sandbox.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from kitab.core.errors import KitabError, UnknownRelease, first_line
from kitab.core.files import atomic_file, sha256_file
from kitab.core.ledger import (
    ANNEX_TABLES,
    LEDGER_FILE,
    SEAL_HINT,
    UNSEALED,
    FileCheck,
    LedgerRowEdited,
    WarehouseFiles,
    describe_problems,
    edited_problem,
    row_check,
    validate_release_id,
    write_rows,
)
from kitab.core.row_digest import DIGESTS
from kitab.core.schemas import STORED_RELEASE, arrow_schema, known_tables
from kitab.core.views import VIEWS_VERSION, catalog_version, create_views
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
# DuckDB's errors of a query that is itself wrong or was stopped: no reason to suspect the files
QUERY_ERRORS = (
    duckdb.ParserException,
    duckdb.BinderException,
    duckdb.CatalogException,
    duckdb.ConversionException,
    duckdb.InterruptException,
    duckdb.OutOfMemoryException,
    duckdb.NotImplementedException,
    duckdb.PermissionException,
    duckdb.ConstraintException,
)
# An annex table's replaced file (kitab evaluate) is swept the same way, but waits only this
# long: a reader that keeps it longer leaves it for the next evaluation to sweep (readers
# read the newest file: ledger.annex_file), so no evaluation stalls on a long-lived reader.
ANNEX_SWEEP_WAIT = 2.0


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

    def store_annex(
        self, table: str, release: str, rows: Iterable[dict], replaced: dict[str, object], defaults: dict | None = None
    ) -> int:
        """Add ``rows`` (one evaluation, in key order, every one with ``replaced``'s values) to
        the annex ``table`` of ``release``, replacing the rows an earlier run with those values
        left; returns how many rows. The rows go to a scratch Parquet file a batch at a time,
        outside the lock; then, under the author lock, the release's file is rewritten
        streaming (:meth:`write_annex`): atomic, in bounded memory. The old file is removed under
        the readers lock (:meth:`sweep_annex`): a reader connected before reads the old rows to
        its end, never a missing file."""
        scratch = self.root / ".sort_tmp"
        scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=scratch, prefix=f"{table}-") as tmp:
            rows_file = Path(tmp) / "rows.parquet"
            n = write_rows(table, rows, rows_file)
            with self.lock():
                written = self.write_annex(table, release, rows_file, replaced, defaults)  # readers now read it
                self.build_catalog()  # the raw view of a table with no file yet is an empty stand-in
                self.sweep_annex(table, release, written.path)  # once no reader that connected before reads it
        return n

    def sweep_annex(self, table: str, release: str, keep: Path, wait: float = ANNEX_SWEEP_WAIT) -> list[Path]:
        """Remove the files of the annex ``table`` (ledger.ANNEX_TABLES) in ``release`` other
        than ``keep``, its file just written; call it with the lock held. As :meth:`sweep`:
        only once no reader holds the warehouse (one that connected before reads the old file
        to its end), else nothing now."""
        with self._readers(fcntl.LOCK_EX, name=TURNSTILE), self._readers(fcntl.LOCK_EX, wait) as alone:
            if not alone:
                return []
            removed = []
            for path in sorted(self.partition(table, release).glob("part-*.parquet")):
                if path != keep:
                    path.unlink()
                    removed.append(path)
            return removed

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
    def read_table(self, table: str, releases: list[str] | None = None, columns: list[str] | None = None) -> pa.Table:
        """A table's rows over the given (default: all committed) releases, with ``release``
        (and without the stored ``release_id``, as the views). A committed file that is missing
        or unreadable is an error, never an empty table. ``columns``: only those (and ``release``)."""
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
                    part = pq.read_table(path, columns=columns)
                except (OSError, pa.ArrowException) as exc:
                    raise KitabError(
                        f"release {release}: the {table} file {path.relative_to(self.root)} is "
                        f"unreadable ({first_line(exc)}); run `kitab verify`"
                    ) from None
                # (a stored ``release``: the partition's column, which DuckDB writes when it rewrites a file)
                part = part.drop_columns([c for c in (STORED_RELEASE, "release") if c in part.column_names])
                parts.append(part.append_column("release", pa.array([release] * part.num_rows, pa.string())))
        if not parts:
            empty = _view_schema(table).empty_table()
            return empty if columns is None else empty.select([*columns, "release"])
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

    def require_intact(self, release: str, *, nothing: str, full: bool = True) -> None:
        """Refuse (one line) a release with any damaged file: what is built from it for others
        (an export, a prompts file) is never built from damage. ``nothing``: what was not
        written, for the message; ``full``: hash every file (else only those whose stat changed)."""
        bad = [c for c in self.check_files([release], full=full) if c.problem]
        if bad and row_check(bad[0]):  # the row that says what the release is: its own line
            hint = SEAL_HINT if bad[0].problem == UNSEALED else "run `kitab verify`"
            raise KitabError(f"the ledger row of release {release} {bad[0].problem}; {nothing}; {hint}")
        if bad:
            raise KitabError(
                f"release {release} fails verification ({bad[0].table}: {bad[0].path.relative_to(self.root)}: "
                f"{bad[0].problem}); {nothing}; run `kitab verify`"
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
                rows[release] = self.ledger_row(release, unsealed="allow")  # (check_files says it)
            except LedgerRowEdited as exc:  # only its ``releases`` row fails (_snapshot), unless it
                if set(exc.fields) & {"counts", "checksums", DIGESTS}:  # names the files: then all
                    path = self.partition("releases", release) / LEDGER_FILE
                    bad.append(FileCheck(release, "releases", path, edited_problem(exc.fields)))
                else:
                    rows[release] = exc.row
            except KitabError as exc:  # a ledger file that is unreadable: that release is left out
                bad.append(
                    FileCheck(release, "releases", self.partition("releases", release) / LEDGER_FILE, first_line(exc))
                )
        bad += [c for c in self.check_files(list(rows), full=False, rows=rows) if c.problem]
        return self._snapshot(rows, bad)

    def _snapshot(self, rows: dict[str, dict], bad: list[FileCheck]) -> ReadSnapshot:
        damaged: dict[str, dict[str, str]] = {}
        for c in bad:
            said = f"the ledger row of release {c.release} {c.problem}" if row_check(c) else c.problem
            if c.table == "releases" and c.release not in rows:  # which files it commits is unknown:
                for table in known_tables():  # every table of it fails (the problem names the release)
                    damaged.setdefault(table, {})[c.release] = f"{said}; run `kitab verify`"
            elif row_check(c):  # a ledger row edited since its commit: reading it fails, its files answer
                if c.problem != UNSEALED:  # (an unsealed one is said, not failed: an older warehouse)
                    damaged.setdefault("releases", {})[c.release] = f"{said}; run `kitab verify`"
            else:
                where = f"{c.path.relative_to(self.root)}: {c.problem}"
                damaged.setdefault(c.table, {}).setdefault(
                    c.release, f"table {c.table} of release {c.release} is damaged ({where}); run `kitab verify`"
                )
        files = {
            table: [p for p in paths if p.parent.name.removeprefix("release=") not in damaged.get(table, {})]
            for table, paths in self.view_files(list(rows), rows).items()
        }
        return ReadSnapshot(rows, files, damaged, bad)

    def damage_behind(self, snapshot: ReadSnapshot, exc: BaseException) -> list[FileCheck]:
        """The files of ``snapshot`` that explain a read that failed with ``exc``: those whose
        footer cannot be read, and those whose sha256 is not the ledger's (only the ones the
        message names when ``exc`` is a query's own error, :data:`QUERY_ERRORS`). The
        cheap check at connect hashes only files whose size, mtime or inode changed; a file
        changed in place with all three kept is found here, when a read of it fails."""
        found = []
        # a query that is wrong (or stopped) says nothing of the files; anything else (DuckDB's
        # reader fails with messages such as "Out of buffer" that name no file) hashes them all
        suspect_all = not isinstance(exc, QUERY_ERRORS)
        for table, paths in sorted(snapshot.files.items()):
            for path in paths:
                release = path.parent.name.removeprefix("release=")
                problem = None
                try:
                    pq.read_metadata(path)
                except (OSError, pa.ArrowException) as footer:
                    problem = f"unreadable: {first_line(footer)}"
                else:
                    sha = json.loads(snapshot.rows.get(release, {}).get("checksums") or "{}").get(table)
                    named = suspect_all or path.name in str(exc)
                    if sha and named and (actual := sha256_file(path)) != sha:
                        problem = f"sha256 {actual[:16]}…, ledger {sha[:16]}…"
                if problem:
                    found.append(FileCheck(release, table, path, problem))
        return found

    def explain_read_error(self, snapshot: ReadSnapshot, exc: BaseException) -> KitabError | None:
        """The one line for a query of ``snapshot`` that failed with ``exc``, when damage
        explains it (a damaged part's own message, or :meth:`damage_behind`), else None."""
        message = first_line(exc)
        if "run `kitab verify`" in message:  # the message of a damaged part's view, DuckDB's prefix off
            return KitabError(message.removeprefix("Invalid Input Error: "))
        found = self.damage_behind(snapshot, exc)
        return KitabError(self._snapshot(snapshot.rows, found).damage_line()) if found else None

    def connect(
        self,
        release: str | None = None,
        *,
        warn: bool = True,
        memory_limit: str | None = None,
        readable: Iterable[Path] = (),
        extend: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
    ) -> ReadConnection:
        """The views over every committed release (or only ``release``), built in memory
        from the ledger (read once: the reader sees one committed version of each release
        until it closes, a rebuild's sweep waits for it), in a DuckDB that may read only
        those files, no other file, and whose settings are locked. A table with a damaged
        file fails when read; the others answer. ``warn``: say so (one line on stderr, when the
        reader closes, unless a read failed on it); else the caller finds them in ``.problems``. ``readable``, ``extend``: further
        files to read and views over them (:func:`read_only_views`)."""
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
            try:
                con = read_only_views(self, snapshot, memory_limit=memory_limit, readable=readable, extend=extend)
            except (duckdb.Error, RuntimeError) as exc:  # a view over a file whose footer is damaged
                found = self.damage_behind(snapshot, exc)
                if not found:
                    raise
                snapshot = self._snapshot(snapshot.rows, snapshot.problems + found)
                con = read_only_views(self, snapshot, memory_limit=memory_limit, readable=readable, extend=extend)
        except BaseException:
            hold.__exit__(None, None, None)
            raise
        warning = f"kitab: warning: {describe_problems(snapshot.problems)}" if warn and snapshot.problems else None
        return ReadConnection(
            con, hold, snapshot.problems, lambda exc: self.explain_read_error(snapshot, exc), warning=warning
        )


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
    files: dict[str, list[Path]]  # table -> the files its view reads (a damaged part's left out)
    damaged: dict[str, dict[str, str]]  # table -> release -> the message a read of it fails with
    problems: list[FileCheck]

    def damage_line(self) -> str:
        """The first damaged part's message (what a read of it fails with)."""
        return next(m for _, parts in sorted(self.damaged.items()) for _, m in sorted(parts.items()))

    def ledger(self) -> pa.Table:
        """The ledger rows as the ``releases`` view shows them (``release``, not the stored
        ``release_id``)."""
        schema = _view_schema("releases")
        edited = self.damaged.get("releases", {})  # (its view part is a row that fails instead)
        rows = [{**row, "release": release} for release, row in sorted(self.rows.items()) if release not in edited]
        return pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()


class ReadConnection:
    """A reader's DuckDB connection (every attribute is the connection's) that also holds
    the warehouse's readers lock until it is closed."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        hold,
        problems: list[FileCheck],
        explain: Callable[[BaseException], KitabError | None] = lambda exc: None,
        warning: str | None = None,
    ):
        self._con, self._hold, self.problems, self.explain = con, hold, problems, explain
        self._warning = warning

    def __getattr__(self, name: str):
        return getattr(self._con, name)

    def __enter__(self) -> ReadConnection:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """Closes; a query that failed on damage leaves as that damage's one line
        (:meth:`Warehouse.explain_read_error`), whatever the command around it."""
        damage = self.explain(exc) if isinstance(exc, duckdb.Error) else None
        if damage is not None or (isinstance(exc, KitabError) and "run `kitab verify`" in str(exc)):
            self._warning = None  # the error line says it: one line, not a warning and then the error
        try:
            if damage is not None:
                raise damage from None
        finally:
            self.close()

    def close(self) -> None:
        """Closes, and then says once (one line on stderr) what damage the reader met, if any:
        after the answer, and not at all when the command fails on that damage."""
        if self._warning is not None:
            print(self._warning, file=sys.stderr)
            self._warning = None
        try:
            self._con.close()
        finally:
            if self._hold is not None:
                hold, self._hold = self._hold, None
                hold.__exit__(None, None, None)


# -- read-only views -------------------------------------------------------------------
def read_only_views(
    warehouse: Warehouse,
    snapshot: ReadSnapshot,
    *,
    memory_limit: str | None = None,
    readable: Iterable[Path] = (),
    extend: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with ``warehouse``'s views over ``snapshot``, locked down with
    DuckDB's own settings: external access off except for exactly those files (no other
    file can be read, written or attached; no extension installed or loaded; no temp folder,
    which DuckDB would otherwise allow, at ``<cwd>/.tmp``), then the configuration locked (no
    SET / RESET / PRAGMA that changes a setting, including these). ``readable``: further local
    files it may read; ``extend(con)`` runs once the views exist, before the configuration is
    locked (``kitab sql`` makes its views over the user's ``--file``s there: kitab/app/sql_sandbox.py)."""
    config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False, "temp_directory": ""}
    if memory_limit is not None:
        config["memory_limit"] = memory_limit
    try:
        con = duckdb.connect(config=config)
    except duckdb.Error as exc:
        raise KitabError(f"memory limit {memory_limit!r}: {first_line(exc)}") from None
    try:
        files = {t: paths for t, paths in snapshot.files.items() if t != "releases"}
        allowed = sorted(
            {p.as_posix() for paths in files.values() for p in paths} | {Path(p).as_posix() for p in readable}
        )
        if allowed:  # must precede turning external access off (DuckDB refuses it after)
            con.execute(f"SET allowed_paths = [{', '.join(_literal(p) for p in allowed)}]")
        con.execute("SET enable_external_access = false")
        # a table holding the rows read (not a registered relation: that would list as a view)
        con.register("kitab_ledger_source", snapshot.ledger())
        con.execute("CREATE TABLE kitab_ledger_rows AS SELECT * FROM kitab_ledger_source")
        con.unregister("kitab_ledger_source")
        warehouse.create_views(con, files, snapshot.damaged, ledger="kitab_ledger_rows")
        if extend is not None:
            extend(con)
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con
