"""``kitab demo``: the refresh on the bundled snapshot through the local mirror, and a
summary a person can read: counts per stage, rejects by reason, requests, wall time and
one example SQL query with its answer."""
from __future__ import annotations

import time
from pathlib import Path

from kitab.console import console, print_rows
from kitab.env import BUNDLED_SNAPSHOT
from kitab.runs import run_refresh
from kitab.warehouse import Warehouse

DEMO_RELEASE = "demo"
EXAMPLE_SQL = ("SELECT a.name, a.birth_year, a.sitelinks, count(w.work_key) AS works_raw "
               "FROM authors a JOIN works_raw w ON w.release = a.release AND w.author_qid = a.qid "
               "GROUP BY ALL ORDER BY a.sitelinks DESC LIMIT 5")


def run_demo(warehouse: Path, *, authors: int, seed: int) -> dict:
    started = time.monotonic()
    summary = run_refresh(source="mirror", snapshot=BUNDLED_SNAPSHOT, authors=authors, seed=seed,
                          release=DEMO_RELEASE, warehouse=warehouse)
    wall = time.monotonic() - started
    wh = Warehouse(warehouse)
    console.rule(f"kitab demo: release {DEMO_RELEASE} from snapshot {summary['snapshot_id']}")
    print_rows(["stage", "rows"], list(summary["stage_counts"].items()), title="counts per stage")
    print_rows(["match method", "authors"], list(summary["match_methods"].items()), title="Open Library match")
    with wh.connect(release=DEMO_RELEASE) as con:
        by_reason = con.execute("SELECT stage, reason, count(*) FROM rejects GROUP BY ALL ORDER BY 1, 3 DESC").fetchall()
        print_rows(["stage", "reason", "rows"], by_reason, title="rejects by stage and reason")
        console.print(f"[bold]example query:[/bold] {EXAMPLE_SQL}")
        cursor = con.execute(EXAMPLE_SQL)
        print_rows([d[0] for d in cursor.description], cursor.fetchall())
    console.print(f"data tests passed: {len(summary['data_tests'])}")
    console.print(f"requests made: {summary['requests_made']}")
    console.print(f"wall time: {wall:.1f} s")
    console.print(f"warehouse: {wh.root}  (try: .venv/bin/kitab sql \"select count(*) from authors\")")
    return summary
