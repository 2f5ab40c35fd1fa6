"""Releases: consecutive refreshes are disjoint (checked in SQL), a killed refresh leaves
no partial release and a rerun completes it, and the scheduled deployment is created."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kitab.core.warehouse import Warehouse

pytestmark = pytest.mark.flow


@pytest.fixture(scope="module")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def overlaps(con) -> list:
    return con.execute("""
        select 'qid' as key, qid as value from released_authors group by all having count(distinct release) > 1
        union all
        select 'ol_author_key', ol_author_key from released_authors where ol_author_key is not null
        group by all having count(distinct release) > 1
        union all
        select 'name_norm', name_norm from released_authors group by all having count(distinct release) > 1
    """).fetchall()


def test_three_consecutive_refreshes_are_disjoint(harness, tmp_path, snapshot_dir):
    from kitab.app.runs import run_refresh

    for n, seed in enumerate([11, 12, 13], start=1):
        summary = run_refresh(
            source="dump", snapshot=snapshot_dir, authors=40, seed=seed, release=f"r{n}", warehouse=tmp_path
        )
        assert summary["authors"]["released"] == 40 <= summary["stage_counts"]["drawn (authors)"]
    wh = Warehouse(tmp_path)
    assert wh.committed_releases() == ["r1", "r2", "r3"]
    with wh.connect() as con:
        assert con.execute("select count(distinct release), count(*) from released_authors").fetchone()[0] == 3
        assert overlaps(con) == []
        # and the candidates that a fourth refresh could still draw exclude all of them
        released = {r[0] for r in con.execute("select qid from released_authors").fetchall()}
    assert len(released) >= 60


def test_killed_refresh_leaves_no_partial_release_and_rerun_completes(harness, tmp_path, snapshot_dir, mirror):
    """A refresh in another process is killed (SIGKILL, whole process group) mid-collection;
    nothing of it is visible, and a rerun of the same command completes the release."""
    from kitab.app.runs import run_refresh

    mirror.faults.clear()
    env = {**os.environ, "KITAB_MIRROR_OL_RATE": "4", "PREFECT_HOME": str(tmp_path / "prefect-child")}
    env.pop("PREFECT_API_URL", None)  # the child starts its own temporary server
    cmd = [
        sys.executable,
        "-m",
        "kitab.app.cli",
        "refresh",
        "--source",
        "mirror",
        "--mirror-url",
        mirror.url,
        "--authors",
        "30",
        "--seed",
        "5",
        "--release",
        "k1",
        "--warehouse",
        str(tmp_path / "wh"),
    ]
    mark = len(mirror.log("openlibrary"))
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while len(mirror.log("openlibrary")) - mark < 12:  # well into collecting works
            assert child.poll() is None, "refresh ended before it could be killed"
            assert time.monotonic() < deadline, "refresh never reached Open Library"
            time.sleep(0.2)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    wh = Warehouse(tmp_path / "wh")
    assert "k1" not in wh.committed_releases()
    if wh.catalog_path.exists():
        with wh.connect() as con:
            assert con.execute("select count(*) from authors").fetchone() == (0,)

    summary = run_refresh(
        source="mirror",
        snapshot=snapshot_dir,
        authors=30,
        seed=5,
        release="k1",
        warehouse=tmp_path / "wh",
        mirror_url=mirror.url,
    )
    assert wh.committed_releases() == ["k1"]
    with wh.connect() as con:
        drawn = con.execute("select count(*) from sampled_authors").fetchone()[0]
    assert summary["stage_counts"]["drawn (authors)"] == drawn >= 30 == summary["authors"]["released"]


def test_scheduled_deployment_is_created(harness):
    from prefect import get_client

    from flows.deploy import DEFAULT_CRON, refresh_deployment

    deployment_id = refresh_deployment(cron=DEFAULT_CRON, source="mirror", mirror_url="http://mirror:8089").apply()

    async def read():
        async with get_client() as client:
            return await client.read_deployment(deployment_id)

    import asyncio

    deployment = asyncio.run(read())
    assert deployment.name == "scheduled-refresh"
    assert [s.schedule.cron for s in deployment.schedules] == [DEFAULT_CRON]
    assert deployment.parameters == {"source": "mirror", "authors": 40, "mirror_url": "http://mirror:8089"}
    assert "seed" not in deployment.parameters  # each run derives a new seed and release id
