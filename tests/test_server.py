"""The scheduled path for real: `prefect server start` (SQLite in a temp folder), the mirror
of the bundled snapshot, the work pool and the deployment registered from prefect.yaml as the
compose worker does it, a worker process, and two runs of the deployment, one of them made by
the server's scheduler. Everything runs as separate processes (kitab/app/stack.py, the same code
as scripts/stack) and is stopped at the end, failed or not."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from prefect.server.schemas.schedules import CronSchedule

from kitab.app.processes import free_port
from kitab.app.stack import Stack, deployment_spec
from kitab.core.warehouse import Warehouse

pytestmark = pytest.mark.server

SEEDS = (1, 2)  # two releases on the same day need two seeds (a scheduled run takes the date)


@pytest.fixture
def stack(tmp_path):
    stack = Stack(
        state=tmp_path / "stack",
        warehouse=tmp_path / "warehouse",
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'prefect.db'}",
        api_port=free_port(),
        mirror_port=free_port(),
        poll_seconds=1.0,
    )
    try:
        stack.up()
        yield stack
    finally:
        survivors = stack.down()
        assert survivors == [], f"processes survived SIGKILL: {survivors}"
        assert set(stack.status().values()) == {None}


def test_scheduled_deployment_runs_twice_on_a_worker(stack):
    spec = deployment_spec()

    # registered as prefect.yaml says; only the mirror's address is the local one
    deployment = stack.deployment()
    assert deployment["entrypoint"] == spec["entrypoint"]
    assert deployment["work_pool_name"] == spec["work_pool"]["name"]
    assert deployment["parameters"] == {**spec["parameters"], "mirror_url": stack.mirror_url}
    assert [s["schedule"]["cron"] for s in deployment["schedules"]] == [s["cron"] for s in spec["schedules"]]
    assert deployment["global_concurrency_limit"]["limit"] == spec["concurrency_limit"]

    # the server's scheduler keeps the next runs of prefect.yaml's cron schedule ahead
    (schedule,) = spec["schedules"]
    upcoming = stack.upcoming()
    cron = CronSchedule(cron=schedule["cron"], timezone=schedule["timezone"])
    assert upcoming == asyncio.run(cron.get_dates(n=len(upcoming), start=datetime.now(UTC)))

    # one run as `prefect deployment run` makes it, one made by the scheduler; whichever the
    # worker takes second waits for the other (the deployment's concurrency limit)
    first = stack.trigger({"seed": SEEDS[0]})
    second = stack.schedule_run({"seed": SEEDS[1]})
    runs = stack.wait([first, second], timeout=480)
    for run in runs:
        assert run["state"]["name"] == "Completed", (
            f"{run['name']}: {run['state']['name']}: {run['state'].get('message')}\n"
            + "\n".join(stack.logs(run["id"]))
            + "\n--- worker log ---\n"
            + stack.services()["worker"].tail()
        )
        assert run["work_pool_name"] == spec["work_pool"]["name"]  # the worker ran it, not this process
        assert run["parameters"] == {**deployment["parameters"], "seed": run["parameters"]["seed"]}
    assert [(r["parameters"]["seed"], r["auto_scheduled"]) for r in runs] == [(SEEDS[0], False), (SEEDS[1], True)]
    # one at a time, in whichever order the worker took them
    earlier, later = sorted(runs, key=lambda r: datetime.fromisoformat(r["start_time"]))
    assert datetime.fromisoformat(later["start_time"]) >= datetime.fromisoformat(earlier["end_time"])

    wh = Warehouse(stack.warehouse)
    with wh.connect() as con:
        releases = con.execute("select release, seed from releases order by seed").fetchall()
        per_release = dict(con.execute("select release, count(*) from released_authors group by all").fetchall())
        overlaps = {
            column: con.execute(
                f"select {column}, list(release) from released_authors "
                f"where {column} is not null group by all "
                f"having count(distinct release) > 1"
            ).fetchall()
            for column in ("qid", "ol_author_key", "name_norm")
        }
    assert [seed for _, seed in releases] == list(SEEDS)
    assert all(per_release.get(release, 0) > 0 for release, _ in releases), per_release
    assert overlaps == {"qid": [], "ol_author_key": [], "name_norm": []}
