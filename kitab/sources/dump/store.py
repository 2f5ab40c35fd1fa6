"""The dump source's store: the scanned tables of one snapshot (kitab/sources/dump/scan.py),
kept under ``<cache>/dumps/<snapshot_id>`` and scanned once (a folder is a cache only with its
``READY.json``, written last, naming the cache version and the snapshot's checksums), then
queried through DuckDB, one connection per thread, and by key (kitab/sources/dump/keyed.py)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from kitab.core.config import Settings
from kitab.core.files import atomic_dir
from kitab.core.locking import waiting_lock
from kitab.core.refs import duck_threads
from kitab.sources.dump.keyed import KeyedTable, keyed_files
from kitab.sources.dump.scan import KEYED, TABLES, build_cache
from kitab.sources.dump.sql import sql_string
from kitab.sources.snapshot.format import DATA_FILES, SnapshotFormatError, read_manifest

CACHE_VERSION = 7  # bump when a table changes: an older cache is then rebuilt, never misread
# 2: wd_work_labels, the labelled works with their P50 authors joined once at scan time
# 5: wd_labels and wd_work_labels take the `mul` label where there is no English one, with a lang column
# 6: the works rule: no P50 link of a scholarly article (P31 in SCHOLARLY_CLASSES, or P13046)
# 7: wd_work_records, the works' P674 / P840 targets with their labels (work_records.rq)
# 3: the looked-up tables also as <table>.arrow + <table>.index.npy (lookups by key, see KeyedTable)
READY_FILE = "READY.json"  # written last; a cache folder without it is not a cache


def _ready_marker(manifest: dict) -> dict:
    return {"version": CACHE_VERSION, "snapshot_id": manifest["snapshot_id"], "checksums": manifest["checksums"]}


def _is_ready(folder: Path, marker: dict) -> bool:
    try:
        found = json.loads((folder / READY_FILE).read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        return False
    files = [f"{t}.parquet" for t in TABLES] + [name for t in KEYED for name in keyed_files(t)]
    return {k: found.get(k) for k in marker} == marker and all((folder / name).is_file() for name in files)


def snapshot_manifest(snapshot_dir: Path) -> dict:
    """The manifest of ``snapshot_dir``, once its four data files are known to be there."""
    manifest = read_manifest(snapshot_dir)
    for name in DATA_FILES:
        if not (snapshot_dir / name).is_file():
            raise SnapshotFormatError(f"{snapshot_dir / name}: missing; is {snapshot_dir} a snapshot folder?")
    return manifest


def cache_ready(snapshot_dir: Path, cache_root: Path) -> bool:
    """Whether the cache of ``snapshot_dir`` under ``cache_root`` is there, whole and current."""
    manifest = snapshot_manifest(Path(snapshot_dir))
    return _is_ready(Path(cache_root) / manifest["snapshot_id"], _ready_marker(manifest))


def cache_lock(cache_root: Path, manifest: dict) -> Path:
    """The file whose ``flock`` serialises the builders of one snapshot's cache."""
    return cache_root / f".{manifest['snapshot_id']}.lock"


def build_locked(snapshot_dir: Path, cache_root: Path, manifest: dict, memory_limit: str = "1GB") -> dict | None:
    """The cache built, for a caller holding :func:`cache_lock`, unless it is ready (then None;
    else the scan's seconds per step). Built beside its place, then swapped in whole (a stale or
    broken one goes); READY.json is written last."""
    marker = _ready_marker(manifest)
    folder = cache_root / manifest["snapshot_id"]
    if _is_ready(folder, marker):  # built while we waited for the lock
        return None
    _sweep_orphans(cache_root, manifest["snapshot_id"])
    with atomic_dir(folder) as tmp:
        timings = build_cache(snapshot_dir, tmp, memory_limit)
        (tmp / READY_FILE).write_text(json.dumps({**marker, "scan_seconds": timings}, indent=2))
    return timings


def _sweep_orphans(cache_root: Path, snapshot_id: str) -> None:
    """The temp folders (kitab.core.files.atomic_dir, swap_dir) of builders that died (a killed
    build, e.g. a stopped prebuild): under the lock no builder is alive, so any is an orphan."""
    for path in [*cache_root.glob(f".{snapshot_id}.*.tmp"), *cache_root.glob(f".{snapshot_id}.old-*")]:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


@dataclass
class DumpStore:
    """The scanned tables of one snapshot, queried through DuckDB (one connection per thread)."""

    snapshot_dir: Path
    folder: Path
    manifest: dict
    memory_limit: str = "1GB"
    scan_seconds: dict[str, float] | None = None  # None: the cache was already there

    @classmethod
    def open(cls, snapshot_dir: Path, cache_root: Path, memory_limit: str = "1GB") -> DumpStore:
        """The cache of ``snapshot_dir`` under ``cache_root/<snapshot_id>``, scanned first if missing
        (a build in progress elsewhere, e.g. kitab/sources/dump/prebuild.py's child: waited for)."""
        snapshot_dir, cache_root = Path(snapshot_dir), Path(cache_root)
        manifest = snapshot_manifest(snapshot_dir)
        folder = cache_root / manifest["snapshot_id"]
        timings = None
        if not _is_ready(folder, _ready_marker(manifest)):
            cache_root.mkdir(parents=True, exist_ok=True)
            # one scan per snapshot at a time, across processes: the others wait, then use it
            with waiting_lock(cache_lock(cache_root, manifest)):
                timings = build_locked(snapshot_dir, cache_root, manifest, memory_limit)
        store = cls(snapshot_dir, folder, manifest, memory_limit, timings)
        store._connect()
        return store

    def _connect(self) -> None:
        # An in-memory database holding only views over the immutable Parquet files: nothing
        # is ever written; each thread queries through its own cursor of this one database.
        # Lookups are small: a low limit keeps DuckDB's buffer cache from growing with the
        # dump (the scan has its own, higher limit).
        self._db = duckdb.connect(":memory:")
        self._db.execute(f"SET memory_limit = {sql_string(QUERY_MEMORY_LIMIT)}")
        self._db.execute("SET parquet_metadata_cache = true")  # footers are read once, not per query
        if duck_threads() is not None:  # this worker process's share of the cores (kitab.core.refs)
            self._db.execute(f"SET threads = {int(duck_threads())}")
        for table in TABLES:
            path = sql_string(str(self.folder / f"{table}.parquet"))
            self._db.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet({path})")
        self._local = threading.local()
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._cursor_lock = threading.Lock()
        self.keyed = {table: KeyedTable(self.folder, table, key) for table, key in KEYED.items()}

    @property
    def fetched_at(self) -> datetime:
        return datetime.fromisoformat(self.manifest["created_at"].replace("Z", "+00:00"))

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's connection (DuckDB connections are not shared between threads)."""
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            with self._cursor_lock:
                cursor = self._db.cursor()
                self._cursors.append(cursor)
            self._local.cursor = cursor
        return cursor

    def query(
        self, sql: str, params: list | None = None, rows_of: dict[str, Iterable[str]] | None = None
    ) -> list[tuple]:
        """``sql`` on this thread's connection. ``rows_of`` (table -> keys): in ``sql``, the name
        ``<table>_rows`` is the rows of that table whose key is one of the keys (a KEYED table's
        lookup: it costs the keys and their rows, never the whole table)."""
        cursor = self.cursor()
        names = []
        try:
            for table, keys in (rows_of or {}).items():
                cursor.register(f"{table}_rows", self.keyed[table].rows(keys))
                names.append(f"{table}_rows")
            return cursor.execute(sql, params or []).fetchall()
        finally:
            for name in names:
                cursor.unregister(name)

    users: int = 0
    closed: bool = False

    def close(self) -> None:
        """Close when the last source using this store closes."""
        with _STORES_LOCK:
            self.users = max(0, self.users - 1)
            if self.users:
                return
            self.closed = True
        with self._cursor_lock:
            for cursor in self._cursors:
                cursor.close()
            self._cursors.clear()
        self._db.close()


QUERY_MEMORY_LIMIT = "256MB"
_STORES: dict[tuple[Path, Path], DumpStore] = {}
_STORES_LOCK = threading.Lock()


def open_store(snapshot_dir: Path, settings: Settings) -> DumpStore:
    """One store per snapshot and process, shared by the WikiData and Open Library sources."""
    key = (Path(snapshot_dir).resolve(), (settings.cache_dir / "dumps").resolve())
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None or store.closed:
            store = _STORES[key] = DumpStore.open(*key)
        store.users += 1
        return store
