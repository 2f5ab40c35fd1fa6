"""A refresh a person can watch (kitab/core/progress.py, kitab/app/progress_display.py): the progress
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

from flows.progress_text import status_line
from kitab.app.cli import app
from kitab.app.progress_display import HEARTBEAT_EVERY, PlainLines, progress_mode, render_status
from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.progress import (
    RATE_WINDOW,
    STAGES,
    Progress,
    Throttled,
    format_count,
    format_seconds,
    parse_stages,
    tracking,
)
from kitab.core.views import SQL_DIR
from kitab.core.warehouse import LEDGER_FILE, Warehouse
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
        p.stage("collect", total=10, unit="authors", tasks=2)
        clock.now += 4
        for _ in range(4):
            ol.counter.record(from_cache=False)
        ol.counter.record(from_cache=True)  # a cache hit is not a request
        p.advance("collect", 0, 2)  # in-process, author by author
        p.advance("collect", 0, 1)  # late and smaller: ignored
        p.advance("tag_entities", 0, 9)  # not the running stage: ignored
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
    assert p.status().phase == "between stages"
    p.stage("publish")
    p.end_stage()
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
    p.stage("sample_authors")
    assert seen == ["stage", "stage"]


def test_tracking_gives_steps_the_outer_progress():
    from kitab.core.progress import step_progress

    outer = Progress(Clock())
    with tracking("r1", outer) as first:
        with tracking("r1", Progress()) as inner:  # the flow, inside `kitab refresh`: the CLI's object
            assert inner is first is outer
            outer.stage("collect", total=3, unit="authors")
            step_progress("r1", "collect", 0)(2)
            step_progress("r2", "collect", 0)(3)  # another release: not this one's
        assert outer.status().done == 2
    step_progress("r1", "collect", 0)(3)  # nothing registered any more: a no-op
    assert outer.status().done == 2


def test_throttled_passes_stage_changes_and_spaces_advances():
    clock, calls = Clock(), []
    view = Throttled(lambda p, e: calls.append(e), every=2.0, clock=clock)
    for event, dt in [("stage", 0), ("advance", 0.5), ("advance", 2.0), ("stage", 0.1), ("advance", 0.1), ("end", 0.1)]:
        clock.now += dt
        view(None, event)
    assert calls == ["stage", "advance", "stage", "end"]


def test_numbers_for_people_stay_short():
    assert [format_seconds(s) for s in (0.44, 41.25, 725, 7380)] == ["0.4 s", "41.2 s", "12m 05s", "2h 03m"]
    assert [format_count(n) for n in (987, 9876, 52311, 412345, 1234567)] == ["987", "9,876", "52.3k", "412k", "1.23M"]


# -- the views ---------------------------------------------------------------------------------


def test_progress_mode():
    assert progress_mode(quiet=True, stdout_tty=True, stderr_tty=True) == "none"
    assert progress_mode(quiet=False, stdout_tty=True, stderr_tty=True) == "live"
    assert progress_mode(quiet=False, stdout_tty=False, stderr_tty=True) == "lines"
    assert progress_mode(quiet=False, stdout_tty=True, stderr_tty=False) == "lines"


def test_plain_lines_one_per_stage_then_every_few_seconds():
    clock, lines = Clock(), []
    p = Progress(clock)
    view = PlainLines(lines.append, every=5.0, heartbeat=30.0, clock=clock)
    p.subscribe(view)
    p.begin(release="r", source="mirror", authors=4, batch_size=2)
    p.stage("sample_authors")
    clock.now += 1.5
    p.end_stage(rows=4, requests=3)
    p.stage("collect", total=4, unit="authors", tasks=2)
    assert (
        lines[-1] == "kitab: 0:01 collect (3/7) started: Open Library match and works, cleaning, dedup "
        "(sample_authors 1.5 s, 4 authors)"
    )
    n = len(lines)
    for _ in range(3):  # ticks every second: a line once 5 s have passed and something moved
        clock.now += 1
        view.tick(p)
    p.advance("collect", 0, 1)
    clock.now += 1
    view.tick(p)
    assert len(lines) == n
    clock.now += 1
    view.tick(p)
    assert len(lines) == n + 1
    assert lines[-1].startswith("kitab: 0:06 collect (3/7): 1 / 4 authors (25%) · 3 requests · ETA 15.0 s")
    clock.now += 29
    view.tick(p)  # nothing moved: no line before the heartbeat
    assert len(lines) == n + 1
    clock.now += 1
    view.tick(p)
    assert len(lines) == n + 2
    p.finish()
    assert lines[-1].startswith("kitab: 0:36 done in 36.5 s · 3 requests; collect ")
    assert [line.split()[2] for line in lines[:2]] == ["refreshing", "sample_authors"]


def test_live_view_shows_every_stage_and_the_running_one():
    from rich.console import Console

    clock = Clock()
    p = Progress(clock)
    p.begin(release="r", source="dump", authors=1000, batch_size=250)
    p.stage("start")
    clock.now += 0.4
    p.stage("sample_authors")
    clock.now += 1.3
    p.end_stage(rows=1000)
    p.stage("collect", total=1000, unit="authors", tasks=4)
    p.part_done(0, 250)
    clock.now += 10
    console = Console(width=100, record=True, color_system=None)
    console.print(render_status(p.status()))
    text = console.export_text()
    assert "kitab refresh · release r · source dump · 1,000 authors · batches of 250" in text
    assert re.search(r"✓ sample_authors\s+1\.3 s\s+1,000 authors", text)
    assert re.search(r"collect .*250 / 1,000 authors\s+25% · 1/4 tasks · ETA 30\.0 s", text)
    assert all(name in text for name in STAGES)
    assert max(len(line) for line in text.splitlines()) <= 100


# -- the pipeline reports its own progress ------------------------------------------------------


def test_a_direct_run_reports_stages_authors_and_requests(mirror, tmp_path):
    """Through the session's mirror, batches of 5 authors on threads: every stage in order,
    authors counted one by one up to the total, and every request the clients sent."""
    from kitab.app.runs import run_refresh

    p, events = Progress(), []
    p.subscribe(lambda progress, event: events.append((event, progress.status())))
    summary = run_refresh(
        source="mirror",
        snapshot=BUNDLED_SNAPSHOT,
        mirror_url=mirror.url,
        authors=12,
        seed=3,
        release="p",
        warehouse=tmp_path,
        batch_size=5,
        direct=True,
        progress=p,
    )
    started = [s.stage for e, s in events if e == "stage"]
    assert started == list(STAGES)
    collect = [s.done for e, s in events if e == "advance" and s.stage == "collect"]
    # --authors 12 means 12 released: the draw goes on past rejected authors, in more batches
    drawn = summary["authors"]["sampled"]
    assert drawn >= 12 and max(collect) == collect[-1] == drawn  # the last report comes after every author's
    assert set(collect) - set(range(0, drawn + 1, 5)) - {drawn}, "authors are reported one by one, not per batch"
    status = p.status()
    assert status.ended and status.requests == summary["requests_made"] > 0
    services = {s.name: s for s in status.services}
    assert set(services) == {"WikiData", "Open Library"} and services["Open Library"].cap == 20.0
    assert sum(s.sent for s in services.values()) == status.requests
    records = {r["stage"]: r for r in summary["stages"]}
    counts = json.loads(Warehouse(tmp_path).ledger_row("p")["counts"])
    # the sample is the seeded draw order (every candidate); collecting went as far as it needed
    assert records["sample_authors"]["rows"] >= drawn and records["collect"]["tasks"] >= -(-drawn // 5)
    assert records["collect"]["rows"] == counts["works_raw"]
    assert records["generate_constraints"]["rows"] == counts["constraints"]
    assert records["sample_queries"]["rows"] == counts["queries"]
    assert records["sample_authors"]["requests"] + records["collect"]["requests"] == summary["requests_made"]
    # the ledger keeps the same stages (publish: up to the commit)
    ledger = parse_stages(Warehouse(tmp_path).ledger_row("p")["stages"])
    assert [r["stage"] for r in ledger] == list(STAGES)
    assert ledger[:-1] == summary["stages"][:-1]
    assert ledger[-1]["rows"] == sum(counts.values()) == records["publish"]["rows"]
    assert ledger[-1]["seconds"] <= records["publish"]["seconds"]


@pytest.mark.flow
def test_kitab_refresh_prints_progress_lines_then_the_summary_or_json(tmp_path):
    """The real command, not on a terminal: progress lines on stderr, the human summary on
    stdout; rebuilt with --json --quiet: only the JSON document on stdout, nothing on stderr."""
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "COLUMNS": "100"}
    env.pop("KITAB_DEBUG", None)
    args = [
        *kitab_cmd(),
        "refresh",
        "--source",
        "dump",
        "--authors",
        "12",
        "--seed",
        "3",
        "--release",
        "r",
        "--warehouse",
        str(tmp_path / "wh"),
    ]
    human = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert human.returncode == 0, human.stderr
    lines = human.stderr.splitlines()
    assert lines and all(line.startswith("kitab: ") for line in lines), human.stderr
    started = [m.group(1) for line in lines if (m := re.match(r"kitab: \S+ (\w+) \(\d/7\) started", line))]
    assert started == list(STAGES)
    # Prefect's temporary server: said once, named (issue 22: it was a "starting" line every 5 s)
    # (again only as the 30 s heartbeat, when a loaded machine takes that long to start it)
    waiting = [line for line in lines if " starting" in line]
    assert all("Prefect's temporary server (once per refresh" in w for w in waiting), lines
    clock = [sum(int(x) * 60**i for i, x in enumerate(reversed(w.split()[1].split(":")))) for w in waiting]
    assert all(b - a >= HEARTBEAT_EVERY - 1 for a, b in zip(clock, clock[1:])), lines
    assert re.match(r"kitab: \S+ done in .* · 0 requests; publish ", lines[-1])
    out = human.stdout
    for part in (
        "kitab refresh: release r from snapshot kitab-s42-",
        "counts per stage",
        "Open Library match",
        "rejects by stage and reason",
        "time per stage",
        f"data tests passed: {len(list((SQL_DIR / 'tests').glob('*.sql')))}",
        "requests made: 0",
        "wall time: ",
        f"release r is in the warehouse {tmp_path / 'wh'}",
    ):
        assert part in out, (part, out)
    assert "{" not in out

    as_json = subprocess.run([*args, "--json", "--quiet"], capture_output=True, text=True, env=env, timeout=600)
    assert as_json.returncode == 0, as_json.stderr
    assert as_json.stderr == ""
    document = json.loads(as_json.stdout)
    assert document["release"] == "r" and [s["stage"] for s in document["stages"]] == list(STAGES)
    assert document["checksums"] and document["data_tests"]


# -- the ledger's stages column, shown by `kitab releases` and `kitab report` --------------------

STAGES_BEFORE_PUBLISH = [
    {"stage": "start", "seconds": 0.4},
    {"stage": "sample_authors", "seconds": 1.3, "rows": 2},
    {"stage": "collect", "seconds": 754.2, "rows": 2, "tasks": 1, "requests": 1234},
    {"stage": "tag_entities", "seconds": 8.1, "rows": 2, "tasks": 1},
    {"stage": "generate_constraints", "seconds": 2.0, "rows": 0, "tasks": 1},
    {"stage": "sample_queries", "seconds": 0.8, "rows": 0},
]


LONG = "2026.11.22-s20261122"  # a default id: the date, and the date as seed


def put(wh: Warehouse, release: str, qids: list[str], stages=STAGES_BEFORE_PUBLISH) -> dict:
    return publish(
        wh,
        release,
        tables(qids),
        seed=1,
        source="dump",
        snapshot_id="s",
        n_authors_requested=len(qids),
        requests_made=1234,
        stages=stages,
    )


def make_old(wh: Warehouse, release: str) -> None:
    """Rewrite a release's ledger row as releases were written before the stages column (and
    before rows carried digests, which came later)."""
    path = wh.partition("releases", release) / LEDGER_FILE
    pq.write_table(pq.read_table(path).drop_columns(["stages", "digests"]), path)


def releases_output(root: Path) -> str:
    from kitab.app.console import console

    # a 100-column terminal: the app's console read COLUMNS once, when it was made (whatever this
    # process had then, e.g. 80 under pytest-xdist), so CliRunner's env alone cannot set it
    saved, console.width = console.width, 100
    try:
        result = CliRunner().invoke(app, ["releases", "--warehouse", str(root)], env={"COLUMNS": "100"})
    finally:
        console.width = saved
    assert result.exit_code == 0, result.output
    # rich always fits the width: readable means nothing cut short or wrapped on the way
    # (stdout: an older row's "unsealed" warning goes to stderr, one line of its own)
    assert max(len(line) for line in result.stdout.splitlines()) <= 100, result.output
    assert "…" not in result.output and "constraints" in result.output, result.output
    return result.output


def test_publish_records_the_stages_and_releases_shows_them(tmp_path):
    """The longest default release id still fits 100 columns."""
    wh = Warehouse(tmp_path)
    put(wh, LONG, ["Q1", "Q2"])
    stages = parse_stages(wh.ledger_row(LONG)["stages"])
    assert stages[:-1] == STAGES_BEFORE_PUBLISH
    counts = json.loads(wh.ledger_row(LONG)["counts"])
    assert stages[-1]["stage"] == "publish" and stages[-1]["rows"] == sum(counts.values())
    out = releases_output(tmp_path)
    # seed 1, 2 authors, 0 synthetic, no books or queries, 1,234 requests
    assert re.search(rf"{LONG}\s+\d{{4}}-\d\d-\d\d \d\d:\d\d\s+dump\s+1\s+2\s+0\s+–\s+–\s+1,234", out), out
    # the stage table: each stage's time, its rows on the next line, and the total
    assert re.search(rf"{LONG}\s+0\.4 s\s+1\.3 s\s+12m 34s\s+8\.1 s\s+2\.0 s\s+0\.8 s\s+\d\.\d s\s+12m 4\ds", out), out
    assert re.search(r"^\s+2\s+2\s+2\s+0\s+0\s+\d+\s*$", out, re.MULTILINE), out


def test_releases_from_before_the_stages_column_still_list_and_report(tmp_path):
    from kitab.release.report import stages_section

    wh = Warehouse(tmp_path)
    put(wh, "old", ["Q1"], stages=None)
    assert wh.ledger_row("old")["stages"] is None  # a publish without stages writes a null
    make_old(wh, "old")
    assert "stages" not in wh.ledger_row("old")
    only_old = releases_output(tmp_path)  # no file has the column: the view has none
    assert re.search(r"old(\s+–){7}\s+–", only_old), only_old
    put(wh, "new", ["Q2"])
    both = releases_output(tmp_path)
    assert re.search(r"old(\s+–){8}", both) and "12m 34s" in both, both
    result = CliRunner().invoke(
        app,
        [
            "sql",
            "select release, stages is null as missing from releases order by all",
            "--warehouse",
            str(tmp_path),
            "--output",
            "jsonl",
        ],
    )
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"release": "new", "missing": False},
        {"release": "old", "missing": True},
    ]
    assert "Not recorded: release `old` was made before kitab recorded stage timings." in stages_section(
        "old", wh.ledger_row("old")
    )
    section = stages_section("new", wh.ledger_row("new"))
    assert "The slowest stage, in bold, is `collect`." in section
    assert re.search(r"\| \*\*collect\*\* \| 12m 34s \| 9\d% \| 2 works \| 1 \| 1,234 \|", section), section
    assert re.search(r"\| total \| 12m 4\ds \| 100% \|", section), section


def test_status_line_before_and_after():
    clock = Clock()
    p = Progress(clock)
    assert status_line(p.status()) == "starting"
    p.stage("tag_entities")
    assert status_line(p.status()) == "tag_entities (4/7): tagging names and cities in titles · 0 requests"
    p.plan(total=0, unit="titles")
    assert status_line(p.status()) == "tag_entities (4/7): 0 / 0 titles · 0 requests"


def test_ledgers_from_before_the_stage_vocabulary_read_with_todays_step_names():
    from kitab.core.progress import STAGES, parse_stages

    old = [
        {"stage": "start", "seconds": 0.1},
        {"stage": "sample", "seconds": 1.0},
        {"stage": "tag", "seconds": 2.0},
        {"stage": "constrain", "seconds": 3.0},
        {"stage": "publish", "seconds": 0.5},
    ]
    assert [r["stage"] for r in parse_stages(json.dumps(old))] == [
        "start",
        "sample_authors",
        "tag_entities",
        "generate_constraints",
        "publish",
    ]
    assert set(r["stage"] for r in parse_stages(json.dumps(old))) <= set(STAGES)
