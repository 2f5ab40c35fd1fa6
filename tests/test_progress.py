"""A refresh a person can watch (kitab/progress.py, kitab/progress_display.py): the progress
object the pipeline updates, the views that render it, and the stage timings the ledger keeps.

The pure parts run on a fake clock; one direct run through the session's mirror checks what
the pipeline itself reports; one flow-level test runs the real ``kitab refresh`` command."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from kitab.cli import app
from kitab.env import BUNDLED_SNAPSHOT
from kitab.progress import (RATE_WINDOW, STAGES, Progress, Throttled, format_count, format_seconds, parse_stages,
                            status_line, tracking)
from kitab.warehouse import LEDGER_FILE, Warehouse
from tasks.publish import publish
from tests.test_cli_errors import kitab_cmd
from tests.test_warehouse import tables


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Client:
    """Stands in for an HTTP client: what Progress.watching reads (a counter and a cap)."""

    def __init__(self, cap):
        from kitab.sources.http import RequestCounter

        self.counter, self.rate_cap = RequestCounter(), cap


# -- the progress object, on a fake clock -----------------------------------------------------

def test_progress_counts_parts_requests_and_eta():
    clock = Clock()
    p = Progress(clock)
    ol = Client(cap=1.0)
    with p.watching({"Open Library": ol}):
        p.stage("collect", total=10, unit="writers", tasks=2)
        clock.now += 4
        for _ in range(4):
            ol.counter.record(from_cache=False)
        ol.counter.record(from_cache=True)  # a cache hit is not a request
        p.advance("collect", 0, 2)  # in-process, writer by writer
        p.advance("collect", 0, 1)  # late and smaller: ignored
        p.advance("tag", 0, 9)  # not the running stage: ignored
        status = p.status()
        assert (status.done, status.total, status.requests) == (2, 10, 4)
        assert status.eta == pytest.approx(4 / 2 * 8)
        p.part_done(0, 5, requests=4)  # the batch's own count: the same requests, not more
        p.advance("collect", 0, 3)  # after its part finished: ignored
        p.part_done(1, 5, requests=3)  # a batch that ran elsewhere (Dask): only its own count
        clock.now += 6
        status = p.status()
    ol.counter.record(from_cache=False)  # after watching: not counted
    assert (status.done, status.tasks_done, status.requests) == (10, 2, 7)
    (service,) = status.services
    assert (service.name, service.sent, service.cap) == ("Open Library", 4, 1.0)
    assert service.rate == pytest.approx(4 / RATE_WINDOW)
    assert status.fraction == pytest.approx(1 / len(STAGES))
    p.end_stage(rows=123)
    assert p.records() == [{"stage": "collect", "seconds": 10.0, "rows": 123, "tasks": 2, "requests": 7}]
    assert p.status().phase == "finishing"
    p.finish()
    assert p.status().phase == "done" and p.status().fraction == 1.0


def test_unknown_stage_is_refused_and_a_failing_view_is_dropped():
    p = Progress(Clock())
    with pytest.raises(ValueError, match="unknown stage 'fetch'"):
        p.stage("fetch")
    seen = []

    def broken(progress, event):
        raise RuntimeError("server gone")

    p.subscribe(broken)
    p.subscribe(lambda progress, event: seen.append(event))
    p.stage("start")  # the refresh goes on
    p.stage("sample")
    assert seen == ["stage", "stage"]


def test_tracking_gives_steps_the_outer_progress():
    from kitab.progress import step_progress

    outer = Progress(Clock())
    with tracking("r1", outer) as first:
        with tracking("r1", Progress()) as inner:  # the flow, inside `kitab refresh`: the CLI's object
            assert inner is first is outer
            outer.stage("collect", total=3, unit="writers")
            step_progress("r1", "collect", 0)(2)
            step_progress("r2", "collect", 0)(3)  # another release: not this one's
        assert outer.status().done == 2
    step_progress("r1", "collect", 0)(3)  # nothing registered any more: a no-op
    assert outer.status().done == 2


def test_throttled_passes_stage_changes_and_spaces_advances():
    clock, calls = Clock(), []
    view = Throttled(lambda p, e: calls.append(e), every=2.0, clock=clock)
    for event, dt in [("stage", 0), ("advance", 0.5), ("advance", 2.0), ("stage", 0.1), ("advance", 0.1),
                      ("end", 0.1)]:
        clock.now += dt
        view(None, event)
    assert calls == ["stage", "advance", "stage", "end"]


def test_numbers_for_people_stay_short():
    assert [format_seconds(s) for s in (0.44, 41.25, 725, 7380)] == ["0.4 s", "41.2 s", "12m 05s", "2h 03m"]
    assert [format_count(n) for n in (987, 9876, 52311, 412345, 1234567)] == \
        ["987", "9,876", "52.3k", "412k", "1.23M"]


# -- the pipeline reports its own progress ------------------------------------------------------

def test_a_direct_run_reports_stages_writers_and_requests(mirror, tmp_path):
    """Through the session's mirror, batches of 5 writers on threads: every stage in order,
    writers counted one by one up to the total, and every request the clients sent."""
    from kitab.runs import run_refresh

    p, events = Progress(), []
    p.subscribe(lambda progress, event: events.append((event, progress.status())))
    summary = run_refresh(source="mirror", snapshot=BUNDLED_SNAPSHOT, mirror_url=mirror.url, authors=12, seed=3,
                          release="p", warehouse=tmp_path, batch_size=5, direct=True, progress=p)
    started = [s.stage for e, s in events if e == "stage"]
    assert started == list(STAGES)
    collect = [s.done for e, s in events if e == "advance" and s.stage == "collect"]
    assert max(collect) == collect[-1] == 12  # the last batch's end comes after every writer's report
    assert set(collect) - {5, 10, 12}, "writers are reported one by one, not only per batch"
    status = p.status()
    assert status.ended and status.requests == summary["requests_made"] > 0
    services = {s.name: s for s in status.services}
    assert set(services) == {"WikiData", "Open Library"} and services["Open Library"].cap == 20.0
    assert sum(s.sent for s in services.values()) == status.requests
    records = {r["stage"]: r for r in summary["stages"]}
    counts = json.loads(Warehouse(tmp_path).ledger_row("p")["counts"])
    assert (records["sample"]["rows"], records["collect"]["tasks"]) == (12, 3)
    assert records["collect"]["rows"] == counts["works_raw"]
    assert records["constrain"]["rows"] == counts["constraints"]
    assert records["sample_queries"]["rows"] == counts["queries"]
    assert records["sample"]["requests"] + records["collect"]["requests"] == summary["requests_made"]
    # the ledger keeps the same stages (publish: up to the commit)
    ledger = parse_stages(Warehouse(tmp_path).ledger_row("p")["stages"])
    assert [r["stage"] for r in ledger] == list(STAGES)
    assert ledger[:-1] == summary["stages"][:-1]
    assert ledger[-1]["rows"] == sum(counts.values()) == records["publish"]["rows"]
    assert ledger[-1]["seconds"] <= records["publish"]["seconds"]


# -- the ledger's stages column, shown by `kitab releases` and `kitab report` --------------------

STAGES_BEFORE_PUBLISH = [{"stage": "start", "seconds": 0.4}, {"stage": "sample", "seconds": 1.3, "rows": 2},
                         {"stage": "collect", "seconds": 754.2, "rows": 2, "tasks": 1, "requests": 1234},
                         {"stage": "tag", "seconds": 8.1, "rows": 2, "tasks": 1},
                         {"stage": "constrain", "seconds": 2.0, "rows": 0, "tasks": 1},
                         {"stage": "sample_queries", "seconds": 0.8, "rows": 0}]


def put(wh: Warehouse, release: str, qids: list[str], stages=STAGES_BEFORE_PUBLISH) -> dict:
    return publish(wh, release, tables(qids), seed=1, source="dump", snapshot_id="s", n_authors_requested=len(qids),
                   requests_made=1234, stages=stages)


def make_old(wh: Warehouse, release: str) -> None:
    """Rewrite a release's ledger row as releases were written before the stages column."""
    path = wh.partition("releases", release) / LEDGER_FILE
    pq.write_table(pq.read_table(path).drop_columns(["stages"]), path)


def releases_output(root: Path) -> str:
    result = CliRunner().invoke(app, ["releases", "--warehouse", str(root)], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 100, result.output
    return result.output


def test_status_line_before_and_after():
    clock = Clock()
    p = Progress(clock)
    assert status_line(p.status()) == "starting"
    p.stage("tag")
    assert status_line(p.status()) == "tag (4/7): tagging names and cities in titles · 0 requests"
    p.plan(total=0, unit="titles")
    assert status_line(p.status()) == "tag (4/7): 0 / 0 titles · 0 requests"
