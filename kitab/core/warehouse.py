"""The warehouse: Parquet per table and release, and a DuckDB catalog of views.

Layout (contract): ``<root>/tables/<table>/release=<id>/`` (hive-style, so every view has a
``release`` column) and ``<root>/kitab.duckdb``. A table's file in a release is named by
its content, ``part-<first 16 hex of its sha256>.parquet``; the release's ledger row is
``tables/releases/release=<id>/part-0.parquet``, and writing it (temp file + rename) is
the commit. The row's ``checksums`` name exactly the files that belong to the release, so
views read those files and nothing else: a release being rebuilt writes its new files
beside the old ones, the new ledger row swaps the release in one rename, and the old files
are removed only after that. A reader sees the old committed version or the new one,
never a partition without files, even when it is the only release.

Views: one per table, named like the table unless its schema names another (the raw layer,
over every committed release; the stored ``authors`` is the view ``sampled_authors``); then ``sql/staging/*.sql`` and ``sql/marts/*.sql`` in file-name order; data
tests are ``sql/tests/*.sql``, each a SELECT returning the offending rows.
:meth:`Warehouse.connect` builds them in memory from the ledger, in a DuckDB that may
read only the committed files and cannot change its settings (``kitab sql``'s sandbox on top
of it, which also refuses every statement that is not a query: kitab/app/sql_sandbox.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from kitab.core.env import PROJECT_ROOT
from kitab.core.errors import KitabError, UnknownRelease
from kitab.core.files import atomic_file, sha256_file, write_named, write_via_temp
from kitab.core.schemas import STORED_RELEASE, arrow_schema, known_tables, table_spec, to_arrow, view_name

SQL_DIR = PROJECT_ROOT / "sql"
CATALOG = "kitab.duckdb"
# The ledger row's file: its presence is what makes a release committed. Warehouses written
# before files were named by content used this name for every table (still read, see
# Warehouse.committed_file).
LEDGER_FILE = "part-0.parquet"
STAMPS = ".stamps"
# Readers hold a shared flock on this file from connect to close; a publish sweeps a rebuilt
# release's old files only once it gets the exclusive lock (so no reader still uses them),
# waiting at most SWEEP_WAIT seconds, else it leaves them for the next publish to sweep.
READERS = ".readers"
# A sweep waiting for the readers holds this one exclusively: a new reader passes it (shared,
# at once released) before it takes READERS, so readers that keep coming cannot starve a sweep.
TURNSTILE = ".readers.turnstile"
SWEEP_WAIT = 10.0
# The views' version in kitab.duckdb (the catalog other tools open). 2: `authors` holds the
# released authors, every sampled one is in `sampled_authors`. An older catalog is rebuilt on
# the next read: a migration of views only, the Parquet files and the ledger stay as they are.
VIEWS_VERSION = 2
# Tables kept beside a release but not part of it: written after its commit by their own
# command (`kitab evaluate`), so its ledger row does not name them. The views read their file
# in every committed release, and a rebuild of the release keeps it (each evaluation row
# records the sha256 of the queries it scored).
ANNEX_TABLES = ("evaluations",)
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


# A release id is a folder name, a hive partition value and a Hub tag: keep it plain.
_RELEASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def validate_release_id(release: str) -> str:
    if not _RELEASE_ID.match(release or ""):
        raise ValueError(
            f"release id {release!r}: use letters, digits, '.', '_' and '-' "
            "(starting with a letter or digit), e.g. 2026.11.21-s42"
        )
    return release


def table_file_name(sha256: str) -> str:
    """A table file's name in its partition: by content, so a rebuilt release's new files
    never overwrite the committed ones, and the same rows keep the same name and bytes."""
    return f"part-{sha256[:16]}.parquet"


@dataclass(frozen=True)
class WrittenTable:
    table: str
    path: Path
    rows: int
    sha256: str


@dataclass(frozen=True)
class FileCheck:
    """One committed file against the ledger; ``problem`` is None when it matches."""

    release: str
    table: str
    path: Path
    problem: str | None = None


def _sort_key(table: str):
    keys = table_spec(table).get("key", [])
    return lambda row: tuple((row.get(k) is None, row.get(k) if row.get(k) is not None else "") for k in keys)


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _duck_type(type_name: str) -> str:
    if type_name.startswith("list<"):
        return _duck_type(type_name[5:-1]) + "[]"
    return _DUCK_TYPES[type_name]


def _stat(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


class Warehouse:
    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.tables_dir = self.root / "tables"
        self.catalog_path = self.root / CATALOG

    # -- writing -----------------------------------------------------------------------
    def partition(self, table: str, release: str) -> Path:
        return self.tables_dir / table / f"release={validate_release_id(release)}"

    def staging(self, release: str) -> Warehouse:
        """A private warehouse where a release is written and tested before it replaces the
        committed one: a failed rebuild leaves the old release as it was."""
        return Warehouse(self.root / ".staging" / validate_release_id(release))

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """One author at a time: the ledger check and the commit must not interleave."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _write_named(self, table: str, release: str, write: Callable[[str], int]) -> WrittenTable:
        """``write(tmp)`` fills a temp file in the partition and returns its rows; the file is
        then renamed to its content name (a reader never sees half a file)."""
        shas = []

        def content_name(tmp: Path) -> str:
            shas.append(sha256_file(tmp))
            return table_file_name(shas[0])

        target, rows = write_named(self.partition(table, release), write, content_name)
        return WrittenTable(table, target, rows, shas[0])

    def write_table(self, table: str, release: str, rows: list[dict]) -> WrittenTable:
        """Rows in key order -> one Parquet file, atomically; same rows -> same bytes."""
        arrow = to_arrow(table, sorted(rows, key=_sort_key(table)))

        def write(tmp: str) -> int:
            pq.write_table(arrow, tmp, compression="zstd")
            return arrow.num_rows

        return self._write_named(table, release, write)

    def write_parts(self, table: str, release: str, parts: list) -> WrittenTable:
        """Parquet parts of one table (kitab.core.refs.TableRef, from the pipeline's batches) ->
        its file in this warehouse, in key order, in bounded memory (kitab.core.external_sort).
        Ties on the key keep the parts' order, so the bytes are those of :meth:`write_table`
        over the concatenated rows."""
        from kitab.core.external_sort import write_sorted

        def write(tmp: str) -> int:
            return write_sorted(
                parts,
                table_spec(table).get("key", []),
                table,
                tmp,
                arrow_schema(table),
                spill_dir=self.root / ".sort_tmp",
            ).rows

        return self._write_named(table, release, write)

    def adopt(self, staged: Warehouse, release: str, tables: list[str]) -> None:
        """Move a tested release's files from ``staged`` into their partitions, beside the
        committed version's: until the ledger row names them (:meth:`commit`) no reader
        sees them, and the committed files stay as they were."""
        for table in tables:
            target = self.partition(table, release)
            target.mkdir(parents=True, exist_ok=True)
            for source in sorted(staged.partition(table, release).glob("part-*.parquet")):
                os.replace(source, target / source.name)

    def commit(self, release: str, row: dict) -> Path:
        """Write the release's ledger row: one rename swaps the whole release in."""
        arrow = to_arrow("releases", [row])
        target = self.partition("releases", release) / LEDGER_FILE
        write_via_temp(target, lambda tmp: pq.write_table(arrow, tmp, compression="zstd"))
        return target

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

    def stamp(self, release: str) -> None:
        """Record size, mtime and inode of the release's committed files, so reads can tell
        cheaply that a file was rewritten since (and hash only that one)."""
        stamps = {
            p.relative_to(self.root).as_posix(): _stat(p) for p in self.committed_files(release).values() if p.exists()
        }
        text = json.dumps(stamps, sort_keys=True) + "\n"

        def write(tmp: str) -> None:
            Path(tmp).write_text(text)

        write_via_temp(self.root / STAMPS / f"{release}.json", write)

    # -- reading -----------------------------------------------------------------------
    def committed_releases(self) -> list[str]:
        base = self.tables_dir / "releases"
        if not base.exists():
            return []
        return sorted(p.name.split("=", 1)[1] for p in base.glob("release=*") if (p / LEDGER_FILE).exists())

    def ledger_row(self, release: str) -> dict:
        """The release's row of the ``releases`` ledger (without the ``release`` column)."""
        path = self.partition("releases", release) / LEDGER_FILE
        try:
            rows = pq.read_table(path).to_pylist()
        except (OSError, pa.ArrowException) as exc:
            raise KitabError(f"release {release}: ledger file {path} is unreadable ({exc})") from exc
        if len(rows) != 1 or rows[0].get(STORED_RELEASE) != release:
            raise KitabError(f"release {release}: ledger file {path} holds {len(rows)} rows, not this release's one")
        return rows[0]

    def committed_file(self, table: str, release: str, sha256: str) -> Path:
        path = self.partition(table, release) / table_file_name(sha256)
        legacy = self.partition(table, release) / LEDGER_FILE
        return legacy if not path.exists() and legacy.exists() else path

    def committed_files(self, release: str) -> dict[str, Path]:
        """Table -> the file of it that belongs to the committed ``release`` (per the ledger)."""
        checksums = json.loads(self.ledger_row(release)["checksums"])
        return {table: self.committed_file(table, release, sha) for table, sha in sorted(checksums.items())}

    def annex_file(self, table: str, release: str) -> Path | None:
        """The current file of an annex table (ANNEX_TABLES) in ``release``: the newest, if a
        crash between writing a new one and removing the old left two."""
        folder = self.partition(table, release)
        files = [p for p in folder.glob("part-*.parquet")] if folder.exists() else []
        return max(files, key=lambda p: (p.stat().st_mtime_ns, p.name)) if files else None

    def _files(self, table: str, release: str) -> Path | None:
        if table == "releases":
            return self.partition("releases", release) / LEDGER_FILE
        if table in ANNEX_TABLES:
            return self.annex_file(table, release)
        return self.committed_files(release).get(table)

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

    def check_files(
        self, releases: list[str] | None = None, *, full: bool = True, rows: dict[str, dict] | None = None
    ) -> list[FileCheck]:
        """Every committed file of ``releases`` (default: all) against the ledger: missing,
        or sha256 / row count different from the row's ``checksums`` / ``counts``. ``full``
        hashes every file; otherwise only files whose size, mtime or inode changed since the
        commit's stamp (or that have no stamp) are hashed: cheap enough for every read, and a
        file rewritten in place (e.g. by COPY) always gets a new mtime and inode. ``rows``:
        ledger rows already read (a reader's snapshot). Over all releases, table files of a
        release without a ledger row (a deleted ledger file, a publish that crashed before
        its commit) are a problem too."""
        checks = []
        for release in self.committed_releases() if releases is None else releases:
            ledger_path = self.partition("releases", release) / LEDGER_FILE
            try:
                row = rows[release] if rows and release in rows else self.ledger_row(release)
            except KitabError as exc:
                checks.append(FileCheck(release, "releases", ledger_path, str(exc)))
                continue
            checks.append(FileCheck(release, "releases", ledger_path))
            counts, checksums = json.loads(row["counts"]), json.loads(row["checksums"])
            stamps = {} if full else self._stamps(release)
            for table, sha in sorted(checksums.items()):
                path = self.committed_file(table, release, sha)
                problem = None
                if not path.exists():
                    problem = "missing"
                elif stamps.get(path.relative_to(self.root).as_posix()) != _stat(path):
                    actual = sha256_file(path)
                    if actual != sha:
                        problem = f"sha256 {actual[:16]}…, ledger {sha[:16]}…"
                        with contextlib.suppress(OSError, pa.ArrowException):
                            found = pq.ParquetFile(path).metadata.num_rows
                            if found != counts.get(table):
                                problem += f"; {found} rows, ledger {counts.get(table)}"
                checks.append(FileCheck(release, table, path, problem))
        if releases is None:
            committed = set(self.committed_releases())
            for folder in sorted(self.tables_dir.glob("*/release=*")) if self.tables_dir.exists() else []:
                release = folder.name.split("=", 1)[1]
                files = [p for p in folder.glob("*.parquet") if p.is_file()]
                if release not in committed and files:
                    checks.append(
                        FileCheck(
                            release,
                            folder.parent.name,
                            folder,
                            f"{len(files)} file(s) of a release with no ledger row (ledger "
                            "deleted, or a publish that crashed before its commit)",
                        )
                    )
        return checks

    def _stamps(self, release: str) -> dict:
        try:
            return json.loads((self.root / STAMPS / f"{release}.json").read_text())
        except (OSError, ValueError):
            return {}  # none recorded (older warehouse, or a crash right after the commit): hash

    # -- catalog -----------------------------------------------------------------------
    def view_files(self, releases: list[str], rows: dict[str, dict] | None = None) -> dict[str, list[Path]]:
        """Table -> the committed files of ``releases`` (what the views read), per the ledger
        rows (``rows``: already read). A file that is missing is listed all the same: reading
        it fails, it is never an empty table (:meth:`connect` makes a damaged table's view an
        error)."""
        files: dict[str, list[Path]] = {table: [] for table in known_tables()}
        for release in releases:
            files.setdefault("releases", []).append(self.partition("releases", release) / LEDGER_FILE)
            checksums = json.loads(
                (rows[release] if rows and release in rows else self.ledger_row(release))["checksums"]
            )
            for table, sha in sorted(checksums.items()):
                files.setdefault(table, []).append(self.committed_file(table, release, sha))
            for table in ANNEX_TABLES:
                if (path := self.annex_file(table, release)) is not None:
                    files.setdefault(table, []).append(path)
        return files

    @staticmethod
    def _empty_view_sql(table: str, where: str = "false") -> str:
        cols = ", ".join(
            f'CAST(NULL AS {_duck_type(c["type"])}) AS "{c["name"]}"'
            for c in table_spec(table)["columns"]
            if c["name"] != STORED_RELEASE
        )
        return f'CREATE OR REPLACE VIEW "{view_name(table)}" AS SELECT {cols}, CAST(NULL AS VARCHAR) AS release WHERE {where}'

    @staticmethod
    def _raw_view_sql(table: str, files: list[Path]) -> str:
        # One name for a release id in every view: ``release`` (the partition). The ledger
        # files also store it as ``release_id``, so that a file names its own release
        # (ledger_row checks it); readers never see that column.
        if not files:  # no data yet: an empty view with the schema's columns
            return Warehouse._empty_view_sql(table)
        stored = [c["name"] for c in table_spec(table)["columns"]]
        listed = ", ".join(_literal(p.as_posix()) for p in files)
        exclude = f" EXCLUDE ({STORED_RELEASE})" if STORED_RELEASE in stored else ""
        return (
            f'CREATE OR REPLACE VIEW "{view_name(table)}" AS SELECT *{exclude} FROM read_parquet([{listed}], '
            f"hive_partitioning = true, union_by_name = true, hive_types = {{'release': 'VARCHAR'}})"
        )

    def create_views(
        self,
        con: duckdb.DuckDBPyConnection,
        files: dict[str, list[Path]],
        damaged: dict[str, str] | None = None,
        ledger: str | None = None,
    ) -> None:
        """All views, each table's over exactly ``files[table]`` (none: an empty view). A
        table in ``damaged`` gets a view that fails with its message whenever a query reads
        it (the other tables answer); ``ledger``: the name of a registered relation holding
        the ledger rows the reader read, which the ``releases`` view then shows (not the
        ledger files, which a commit may replace while the reader runs)."""
        damaged = damaged or {}
        for table in known_tables():
            if table in damaged:
                con.execute(self._empty_view_sql(table, f"error({_literal(damaged[table])}) IS NULL"))
            elif table == "releases" and ledger is not None:
                con.execute(f'CREATE OR REPLACE VIEW "{view_name("releases")}" AS SELECT * FROM "{ledger}"')
            else:
                con.execute(self._raw_view_sql(table, files.get(table, [])))
        for layer in ("staging", "marts"):
            for path in sorted((SQL_DIR / layer).glob("*.sql")):
                try:
                    con.execute(path.read_text())
                except duckdb.Error as exc:
                    raise RuntimeError(f"sql/{layer}/{path.name}: {exc}") from exc

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

    def catalog_version(self) -> int | None:
        """The views' version recorded in kitab.duckdb (None: no catalog, or it cannot be opened;
        1: before it was recorded)."""
        if not self.catalog_path.exists():
            return None
        try:
            con = duckdb.connect(str(self.catalog_path), read_only=True)
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

    def migrate_catalog(self) -> bool:
        """Rebuild kitab.duckdb when its views are older than VIEWS_VERSION (views only: no
        table file or ledger row is touched). True when it did."""
        version = self.catalog_version()
        if version is None or version >= VIEWS_VERSION:
            return False
        try:
            with self.lock():
                if (self.catalog_version() or VIEWS_VERSION) < VIEWS_VERSION:
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
        file fails when read; the others answer. ``warn``: say so at once (one line on
        stderr); else the caller finds them in ``.problems``. ``readable``, ``extend``: further
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
            if warn and snapshot.problems:
                print(f"kitab: warning: {describe_problems(snapshot.problems)}", file=sys.stderr)
            con = read_only_views(self, snapshot, memory_limit=memory_limit, readable=readable, extend=extend)
        except BaseException:
            hold.__exit__(None, None, None)
            raise
        return ReadConnection(con, hold, snapshot.problems)

    def run_data_tests(self, con: duckdb.DuckDBPyConnection) -> dict[str, int]:
        """Every sql/tests/*.sql must return no rows; raise with the offending rows if any does."""
        failures, checked = [], {}
        for name, rows in data_test_results(con):
            checked[name] = len(rows)
            if rows:
                failures.append(f"{name}.sql: {rows}")
        if failures:
            raise DataTestFailure("data tests failed:\n  " + "\n  ".join(failures))
        return checked


def data_test_results(con: duckdb.DuckDBPyConnection, limit: int = 5) -> list[tuple[str, list[tuple]]]:
    """(test name, up to ``limit`` offending rows) for every sql/tests/*.sql, in name order."""
    results = []
    for path in sorted((SQL_DIR / "tests").glob("*.sql")):
        query = path.read_text().strip().rstrip(";")
        # fetch everything of a bounded query: a half-read result blocks the connection
        results.append(
            (path.stem, con.execute(f"SELECT * FROM ({query}\n) AS offending LIMIT {int(limit)}").fetchall())
        )
    return results


def _view_schema(table: str) -> pa.Schema:
    """A table's columns as its view shows them: without the stored release id, with ``release``."""
    schema = arrow_schema(table)
    if STORED_RELEASE in schema.names:
        schema = schema.remove(schema.get_field_index(STORED_RELEASE))
    return schema.append(pa.field("release", pa.string()))


def describe_problems(problems: list[FileCheck]) -> str:
    named = ", ".join(f"{c.release}/{c.table} ({c.problem})" for c in problems[:3])
    more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
    return f"{len(problems)} committed file(s) no longer match the ledger: {named}{more}; run `kitab verify`"


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
        raise KitabError(f"memory limit {memory_limit!r}: {_first_line(exc)}") from None
    try:
        files = {t: paths for t, paths in snapshot.files.items() if t != "releases" and t not in snapshot.damaged}
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


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
