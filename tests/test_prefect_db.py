"""A fresh Prefect home's database is a copy of one migrated once (kitab/app/prefect_db.py):
the template is at Prefect's head, only a home with no database is seeded, a bad template is
rebuilt, a failed build leaves the home to Prefect, and the real server runs on the copy."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kitab.app import prefect_db
from kitab.core.env import PROJECT_ROOT


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("template") / "prefect.db"
    assert prefect_db.build_template(path) is None
    return path


def _heads() -> set[str]:
    """Prefect's SQLite migrations' heads, read from its own migration scripts."""
    import prefect.server.database
    from alembic.script import ScriptDirectory
    from prefect.server.database.alembic_commands import alembic_config

    config = alembic_config()
    versions = Path(prefect.server.database.__file__).parent / "_migrations" / "versions" / "sqlite"
    config.set_main_option("version_locations", str(versions))
    return set(ScriptDirectory.from_config(config).get_heads())


def test_template_is_one_file_at_prefects_head(template):
    assert {prefect_db.migrated_revision(template)} == _heads()
    assert sorted(p.name for p in template.parent.iterdir()) == ["prefect.db"]  # no -wal, no temp folder


def test_seed_copies_into_a_fresh_home_only(template, tmp_path, monkeypatch):
    monkeypatch.setenv(prefect_db.TEMPLATE_ENV, str(template))
    db = tmp_path / "home" / "prefect.db"
    assert prefect_db.seed_database(db) is True
    assert db.read_bytes() == template.read_bytes()
    assert [p.name for p in db.parent.iterdir()] == ["prefect.db"]  # the temp copy is gone

    db.write_bytes(b"in use")
    assert prefect_db.seed_database(db) is False
    assert db.read_bytes() == b"in use"

    other = tmp_path / "other" / "prefect.db"
    other.parent.mkdir()
    Path(f"{other}-wal").write_bytes(b"a journal of a database that is not there")
    assert prefect_db.seed_database(other) is False
    assert not other.exists()


def test_unreadable_template_is_rebuilt(template, tmp_path, monkeypatch):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database")
    monkeypatch.setenv(prefect_db.TEMPLATE_ENV, str(bad))
    db = tmp_path / "home" / "prefect.db"
    assert prefect_db.seed_database(db) is True
    assert prefect_db.migrated_revision(bad) == prefect_db.migrated_revision(template)
    assert prefect_db.migrated_revision(db) == prefect_db.migrated_revision(template)


def test_failed_build_leaves_the_home_to_prefect(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(prefect_db.TEMPLATE_ENV, str(blocker / "prefect.db"))  # its folder is a file
    assert prefect_db.build_template(blocker / "prefect.db").startswith("FileExistsError")
    db = tmp_path / "home" / "prefect.db"
    assert prefect_db.seed_database(db) is False
    assert not db.exists()


def test_database_path_is_the_temporary_servers_sqlite_file_only():
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL, temporary_settings

    for url, expected in [
        ("sqlite+aiosqlite:////srv/w/.prefect/prefect.db", Path("/srv/w/.prefect/prefect.db")),
        ("sqlite+aiosqlite:///:memory:", None),
        ("postgresql+asyncpg://prefect:pw@db:5432/prefect", None),
    ]:
        with temporary_settings(updates={PREFECT_API_DATABASE_CONNECTION_URL: url}):
            assert prefect_db.database_path() == expected


def test_the_temporary_server_runs_on_the_seeded_copy(template, tmp_path):
    """A marker table put in the template is in the home's database after a real flow run:
    the server started on the copy (guard_server seeds it) and recorded the run there."""
    marked = tmp_path / "marked.db"
    marked.write_bytes(template.read_bytes())
    with contextlib.closing(sqlite3.connect(marked)) as conn:
        conn.execute("create table kitab_marker (x)")
        conn.commit()
    home = tmp_path / "home"
    script = textwrap.dedent(
        """
        from kitab.app.prefect_guard import guard_server
        guard_server()
        from prefect import flow

        @flow
        def one():
            return 1

        assert one() == 1
        """
    )
    env = {**os.environ, "PREFECT_HOME": str(home), prefect_db.TEMPLATE_ENV: str(marked)}
    for key in ("PREFECT_API_URL", "PREFECT_API_DATABASE_CONNECTION_URL"):
        env.pop(key, None)
    subprocess.run([sys.executable, "-c", script], env=env, cwd=PROJECT_ROOT, check=True, timeout=180)
    with contextlib.closing(sqlite3.connect(home / "prefect.db")) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
        runs = conn.execute("select count(*) from flow_run").fetchone()[0]
    assert "kitab_marker" in tables
    assert runs == 1
