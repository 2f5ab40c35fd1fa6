"""``kitab demo``: the refresh on the bundled snapshot through the local mirror, and a
summary a person can read: the summary every ``kitab refresh`` prints (kitab/app/summary.py:
counts per stage, rejects by stage and reason, time per stage, data tests, requests, wall
time, where the release is) with a tour of the release: books per author, entity counts, a
Table-2-style summary with one rendered query of each type and its answer, and one example
SQL query with its answer."""

from __future__ import annotations

import time
from pathlib import Path

import duckdb

from kitab.app.console import console, print_rows
from kitab.app.runs import run_refresh
from kitab.app.summary import print_summary
from kitab.core.env import BUNDLED_SNAPSHOT

DEMO_RELEASE = "demo"
EXAMPLE_SQL = (
    "SELECT name, birth_year, sitelinks, books, title_variants, first_year, last_year "
    "FROM books_per_author ORDER BY sitelinks DESC LIMIT 5"
)
ONE_QUERY_PER_TYPE = """
WITH typed AS (
    SELECT q.*, CASE WHEN json_extract(c.spec, '$.present')::BOOLEAN = false THEN 'no_' ELSE '' END
                || q.constraint_types[1] AS type
    FROM queries q JOIN constraints c ON c.release = q.release AND c.constraint_id = q.constraint_ids[1]
    WHERE q.n_constraints = 1 AND q.satisfiable
)
SELECT type, query, mapped_titles
FROM (SELECT *, row_number() OVER (PARTITION BY type ORDER BY n_mapped BETWEEN 1 AND 6 DESC, query_id) AS k
      FROM typed)
WHERE k = 1 ORDER BY type
"""


def _distribution(values: list[int]) -> str:
    values = sorted(values)
    if not values:
        return "none"
    pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]  # noqa: E731
    return f"min {values[0]}, median {pick(0.5)}, p90 {pick(0.9)}, max {values[-1]} (n={len(values)})"


def run_demo(warehouse: Path, *, authors: int, seed: int, replace: bool = False, progress=None) -> dict:
    started = time.monotonic()
    # direct: the pipeline in this process on the local runner (threads for I/O, one process
    # per core for tagging): the same steps and release as the Prefect flow, without starting
    # Prefect's temporary server (~10-15 s, most of a demo); `kitab refresh` and the scheduled
    # deployment keep running the flow
    summary = run_refresh(
        source="mirror",
        snapshot=BUNDLED_SNAPSHOT,
        authors=authors,
        seed=seed,
        release=DEMO_RELEASE,
        warehouse=warehouse,
        direct=True,
        replace=replace,
        progress=progress,
    )
    print_summary(summary, wall=time.monotonic() - started, command="kitab demo", tour=tour)
    return summary


def tour(con: duckdb.DuckDBPyConnection) -> None:
    """What the demo shows beyond a refresh's summary: books per author, names and cities in
    titles, the paper's Table 2, one query of each type with its answer, and SQL."""
    from tasks.constraints.table2 import format_table2, table2
    from tasks.entities.registry import entity_phrase, release_kinds

    per_author = [r[0] for r in con.execute("SELECT books FROM books_per_author").fetchall()]
    console.print(f"books per author: {_distribution(per_author)}")
    total = con.execute("SELECT count(*) FROM books").fetchall()[0][0]
    named = dict(
        con.execute("SELECT kind, count(*) FILTER (WHERE has_name) FROM book_entity_flags GROUP BY kind").fetchall()
    )
    parts = [f"with a {entity_phrase(kind)}: {named.get(kind, 0)} / {total}" for kind in release_kinds(named)]
    console.print("books " + "; ".join(parts))
    constraints = con.sql("SELECT * FROM constraints").to_arrow_table().to_pylist()
    queries = con.sql("SELECT * FROM queries").to_arrow_table().to_pylist()
    console.print(format_table2(table2(constraints, queries)))
    examples = con.execute(ONE_QUERY_PER_TYPE).fetchall()
    print_rows(
        ["type", "query", "answer"],
        [(t, q, "; ".join(m)) for t, q, m in examples],
        title="one query of each type, with its answer",
    )
    console.print(f"[bold]example SQL:[/bold] {EXAMPLE_SQL}")
    cursor = con.execute(EXAMPLE_SQL)
    print_rows([d[0] for d in cursor.description], cursor.fetchall())
