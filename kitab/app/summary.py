"""What a person reads after a refresh (``kitab refresh`` and ``kitab demo`` print the same):
counts per stage, the Open Library match, rejects by stage and reason, each stage's time and
rows, data tests, requests, wall time, and the release with where it is. Also the
``kitab releases`` tables, which show the same stage timings for every committed release."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
from rich import box
from rich.table import Table

from kitab.app.console import console, print_rows
from kitab.core.progress import ROWS, STAGES, format_count, format_seconds, parse_stages, stage_rows


def print_key_quality(quality: dict) -> None:
    """Per entity slice: the queries kept, those the key-error bound left out and the authors who
    lost the slice, the estimated wrong-key share and the ceiling (kitab/release/key_quality.py;
    ``quality``: the run summary's, read at publish)."""
    from kitab.release.key_quality import bound_of, pct_range

    if not quality:
        return
    bound = bound_of(quality)

    print_rows(
        ["slice", "queries", "left out (one / two)", "authors who lost it", "key wrong (est., 95%)", "ceiling"],
        [
            (
                label,
                q["queries"],
                f"{q.get('dropped_one', 0)} / {q.get('dropped_two', 0)}",
                len(q.get("authors_lost") or []),
                pct_range(q, "wrong_key"),
                pct_range(q, "ceiling"),
            )
            for label, q in quality.items()
        ],
        title="answer-key quality"
        + (f" (entity queries over {100 * bound:.0f}% est. key error left out)" if bound is not None else ""),
    )


def print_summary(
    summary: dict, *, wall: float, command: str, tour: Callable[[duckdb.DuckDBPyConnection], None] | None = None
) -> None:
    """The human summary of one refresh (``summary``: what run_refresh returned; ``wall``:
    seconds the caller waited, Prefect's start included). ``tour``: more, printed from a
    connection scoped to the release (the demo's Table 2 and examples)."""
    from kitab.core.warehouse import Warehouse

    release, wh = summary["release"], Warehouse(Path(summary["warehouse"]))
    origin = f"snapshot {summary['snapshot_id']}" if summary.get("snapshot_id") else f"{summary['source']} services"
    console.rule(f"{command}: release {release} from {origin}")
    print_rows(["stage", "rows"], list(summary["stage_counts"].items()), title="counts per stage")
    print_rows(["match method", "authors"], list(summary["match_methods"].items()), title="Open Library match")
    wanted = summary.get("authors") or {}
    if "drawn" in wanted:  # --authors N: drawn in the seeded order until N pass every stage
        console.print(
            f"authors: {wanted['released']} released of {wanted['requested']} asked; {wanted['drawn']} drawn "
            f"in the seeded order ({wanted['eligible']} eligible; excluded: {wanted['excluded_released']} released "
            f"before, {wanted['excluded_rejected_before']} rejected before)"
        )
        reasons = summary.get("rejected_authors") or {}
        if reasons:
            console.print("drawn authors rejected: " + ", ".join(f"{n} {reason}" for reason, n in reasons.items()))
    if summary.get("rebuilt"):
        console.print(f"rebuilt {release} with --replace: {change_text(summary['rebuilt'])}", soft_wrap=True)
    with wh.connect(release=release) as con:
        # the unit of each count: an author rejected (not released) or a work (a title left out)
        rows = con.execute(
            "SELECT stage, reason, sum(n), CASE WHEN record_kind = 'query' THEN 'queries' ELSE record_kind || 's' END "
            "FROM rejects_by_reason GROUP BY ALL ORDER BY 1, 3 DESC"
        )
        print_rows(["stage", "reason", "count", "of"], rows.fetchall(), title="rejects by stage and reason")
        print_key_quality(summary["key_quality"])
        if tour is not None:
            tour(con)
    if summary.get("stages"):
        print_rows(
            ["stage", "time", "share", "rows", "tasks", "requests"],
            stage_rows(summary["stages"]),
            title="time per stage",
        )
    console.print(f"data tests passed: {len(summary['data_tests'])}")
    console.print(f"requests made: {summary['requests_made']}")
    console.print(f"wall time: {wall:.1f} s (the pipeline {summary['wall_seconds']:.1f} s)")
    console.print(f"release {release} is in the warehouse {wh.root}", soft_wrap=True)
    console.print(
        f'  try: kitab sql "select count(*) from authors" --release {release} --warehouse {wh.root}',
        soft_wrap=True,
        markup=False,
    )


def change_text(changes: dict) -> str:
    """A replacing version's ``changes`` (the ledger's) in one line: why, then the rows each
    changed table lost and gained (whole rows compared), e.g. "review labels changed (12 labels
    since the last build: 12 new): book_entities -12/+12 rows, constraints -3/+1"."""
    tables = changes.get("tables") or {}
    rows = ", ".join(f"{t} -{c['removed']}/+{c['added']}" for t, c in sorted(tables.items()))
    kept = "" if "released_authors" in tables else "; released authors the same"
    return f"{'; '.join(changes.get('because') or ['?'])}: {rows + ' rows' if rows else 'no table changed'}{kept}"


# -- kitab releases ---------------------------------------------------------------------------
# column headers, abbreviated so the table fits 100 columns
STAGE_HEADERS = {
    "start": "start",
    "sample_authors": "sample",
    "collect": "collect",
    "tag_entities": "tag",
    "generate_constraints": "constrain",
    "sample_queries": "queries",
    "publish": "publish",
}


def _synthetic_cell(synthetic: int | None, authors: int | None) -> str:
    """Made-up authors of a release and their share, bold when there are any (never passes as real)."""
    if synthetic is None:
        return "-"
    return f"[bold]{synthetic} ({synthetic / authors:.0%})[/bold]" if synthetic and authors else "0"


def releases_tables(ledger: list[dict]) -> tuple[Table, Table]:
    """The committed releases (``ledger``: rows of the releases table, by creation): an
    overview, and each release's stage wall times with their rows (the slowest in bold).
    Both fit a 100-column terminal; a release from before stage timings shows dashes."""

    def table(title: str, *headers: str) -> Table:
        out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        for n, header in enumerate(headers):
            out.add_column(
                header, justify="left" if n == 0 or header in ("created (UTC)", "source") else "right", no_wrap=n == 0
            )
        return out

    overview = table(
        "releases", "release", "created (UTC)", "source", "seed", "authors", "synthetic", "books", "queries", "requests"
    )
    timings = table(
        "time per stage, and its rows (the slowest stage in bold)",
        "release",
        *[f"{STAGE_HEADERS[s]}\n{ROWS[s]}" if ROWS[s] else STAGE_HEADERS[s] for s in STAGES],
        "total",
    )
    for row in ledger:
        counts = json.loads(row["counts"])
        created = row["created_at"]
        overview.add_row(
            row["release"],
            created.strftime("%Y-%m-%d %H:%M") if created else "",
            row["source"],
            str(row["seed"]),
            format_count(counts.get("released_authors")),
            _synthetic_cell(row.get("synthetic_authors"), counts.get("released_authors")),
            format_count(counts.get("books")),
            format_count(counts.get("queries")),
            format_count(row.get("requests_made")),
        )
        stages = {r["stage"]: r for r in parse_stages(row.get("stages")) or []}
        slowest = max(stages.values(), key=lambda r: r["seconds"])["stage"] if stages else None
        cells = []
        for name in STAGES:
            record = stages.get(name)
            if record is None:
                cells.append("–")
                continue
            text = format_seconds(record["seconds"])
            if record.get("rows") is not None:
                text += "\n" + format_count(record["rows"])
            cells.append(f"[bold]{text}[/bold]" if name == slowest else text)
        total = format_seconds(sum(r["seconds"] for r in stages.values())) if stages else "–"
        timings.add_row(row["release"], *cells, total)
    return overview, timings


def releases_records(ledger: list[dict]) -> tuple[list[str], list[tuple]]:
    """The same releases as :func:`releases_tables`, for programs (``--output json|csv``):
    one flat row per release, exact numbers (no k/M rounding), each stage's seconds and rows
    as ``<stage>_seconds`` / ``<stage>_rows`` (None for a release from before stage timings)."""
    columns = [
        "release",
        "created_at",
        "source",
        "seed",
        "authors",
        "synthetic_authors",
        "books",
        "queries",
        "requests_made",
    ]
    for stage in STAGES:
        columns += [f"{stage}_seconds", f"{stage}_rows"]
    columns.append("total_seconds")
    rows = []
    for row in ledger:
        counts = json.loads(row["counts"])
        created = row["created_at"]
        stages = {r["stage"]: r for r in parse_stages(row.get("stages")) or []}
        cells = [
            row["release"],
            created.isoformat() if created else None,
            row["source"],
            row["seed"],
            counts.get("released_authors"),
            row.get("synthetic_authors"),
            counts.get("books"),
            counts.get("queries"),
            row.get("requests_made"),
        ]
        for stage in STAGES:
            record = stages.get(stage) or {}
            cells += [record.get("seconds"), record.get("rows")]
        cells.append(round(sum(r["seconds"] for r in stages.values()), 3) if stages else None)
        rows.append(tuple(cells))
    return columns, rows
