"""A fresh Prefect home's database, copied from one migrated once per install.

Prefect's temporary server migrates a new SQLite database on its first start (Alembic: ~230
tables, indexes and triggers): ~8 CPU-s and 8-10 s of wall on this machine, paid by every Prefect
refresh into a fresh warehouse (its ``.prefect``), so by every benchmark run. The
migrations depend only on Prefect's version, so they run once per install into a template
(``<venv>/var/kitab/prefect-<version>.db``: ``make venv`` builds it, or the first server start
that finds none), and a fresh home gets a copy. The server still runs its migrations on start;
on the copy they find Prefect's head and do nothing, and a template left behind by an older
Prefect is only migrated forward like any old database.

Only a database that does not exist yet is seeded (nor its ``-wal`` / ``-shm`` files): a home
in use is never touched. A server on PostgreSQL, or one already running (``PREFECT_API_URL``),
is not Prefect's temporary server and gets nothing. A template that cannot be built leaves the
home as it was: the server then migrates it itself, as before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

TEMPLATE_ENV = "KITAB_PREFECT_DB_TEMPLATE"  # a path: where the template is (tests; a read-only venv)
_SQLITE_PREFIXES = ("sqlite+aiosqlite:///", "sqlite:///")


def template_path() -> Path:
    """Where this install's template is: ``$KITAB_PREFECT_DB_TEMPLATE``, else inside the venv
    (it goes with the Prefect it was made by), else the user's cache."""
    import prefect

    if os.environ.get(TEMPLATE_ENV):
        return Path(os.environ[TEMPLATE_ENV])
    name = f"prefect-{prefect.__version__}.db"
    if sys.prefix != sys.base_prefix:
        return Path(sys.prefix) / "var" / "kitab" / name
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "kitab" / name


def database_path() -> Path | None:
    """The SQLite file Prefect's temporary server would open, or None (PostgreSQL, memory)."""
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL

    url = PREFECT_API_DATABASE_CONNECTION_URL.value() or ""
    for prefix in _SQLITE_PREFIXES:
        if url.startswith(prefix):
            path = url[len(prefix) :].split("?", 1)[0]
            return Path(path) if path and path != ":memory:" else None
    return None


def migrated_revision(db: Path) -> str | None:
    """The Alembic revision a database file is at, or None if it is not a readable one."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            row = conn.execute("select version_num from alembic_version").fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def build_template(path: Path, timeout: float = 300.0) -> str | None:
    """Migrate an empty database in a child process (Prefect's settings are per process) and
    move it to ``path`` whole. None once ``path`` holds one, else why not (never raises)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return _build(path, timeout)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"


def _build(path: Path, timeout: float) -> str | None:
    with tempfile.TemporaryDirectory(prefix=".prefect-db-", dir=path.parent) as work:
        db = Path(work) / "prefect.db"
        env = {
            **os.environ,
            "PREFECT_HOME": str(Path(work) / "home"),
            "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{db}",
        }
        env.pop("PREFECT_API_URL", None)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "kitab.app.prefect_db", "--migrate"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return f"Prefect's migrations took over {timeout:.0f} s"
        if done.returncode != 0:
            last = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            return f"Prefect's migrations failed (exit {done.returncode}): {last[0]}"
        if migrated_revision(db) is None:
            return "Prefect's migrations left no alembic_version"
        with contextlib.closing(sqlite3.connect(db)) as conn:
            # one file, read without -wal / -shm beside it; Prefect's server turns WAL back on
            conn.execute("pragma journal_mode=delete")
        os.replace(db, path)  # concurrent builders: the same content, the last one stays
    return None


def ensure_template(path: Path) -> str | None:
    """None once ``path`` holds a migrated database (built if it is missing or unreadable),
    else why not."""
    return None if migrated_revision(path) is not None else build_template(path)


def seed_database(db: Path | None = None) -> bool:
    """Copy the template to ``db`` (default: the temporary server's database) if nothing is
    there yet; build the template first if it is missing or unreadable. True if seeded."""
    db = database_path() if db is None else db
    if db is None or any(Path(f"{db}{suffix}").exists() for suffix in ("", "-wal", "-shm", "-journal")):
        return False
    template = template_path()
    if ensure_template(template) is not None:
        return False
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".prefect-db-", dir=db.parent)
    except OSError:
        return False  # the server reports an unwritable home itself
    os.close(fd)
    try:
        shutil.copyfile(template, tmp)
        os.link(tmp, db)  # never over a database another process has just created
    except OSError:
        return False
    finally:
        os.unlink(tmp)
    return True


def _migrate() -> None:
    import asyncio

    from prefect.server.database import provide_database_interface

    asyncio.run(provide_database_interface().create_db())


if __name__ == "__main__":
    if sys.argv[1:] == ["--migrate"]:  # the child of build_template, its database in the environment
        _migrate()
    elif not sys.argv[1:]:  # `make venv`: this install's template, if it has none
        target = template_path()
        why = ensure_template(target)
        print(f"Prefect database template: {target}" + (f" not built: {why}" if why else ""))
    else:
        sys.exit("usage: python -m kitab.app.prefect_db [--migrate]")
