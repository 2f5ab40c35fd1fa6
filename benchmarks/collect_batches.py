"""The collect stage per batch, timed on an existing dump cache without a refresh: the batches'
``collect_authors``, ``clean_books``, ``wikidata_records`` and ``dedup_titles``, as
``tasks/steps.py:collect_step`` calls them (nothing is written), with each phase's CPU seconds
(the process's, DuckDB's threads included) and the batch's wall, per batch on average, and a
digest of each batch's tables, rejects and stats (two commits that collect alike print the same).
Each batch runs as ``WorkDir.run`` runs a step: the cycle collector paused, the per-step caches
emptied after it (without the pause, a collection walked every live object: ~0.25 s a batch).

    .venv/bin/python benchmarks/collect_batches.py --snapshot bench_out/snapshot-s13-n130000 \\
        --warehouse bench_out/kitab-scale-100000-flow-XXXX --batches 8 \\
        --order bench_out/kitab-scale-100000-flow-XXXX/.work/scale-100000/sample_authors/all.order.parquet

``--warehouse``: a warehouse whose ``.cache/dumps`` holds the snapshot's scanned cache (it is
only read when it is there; otherwise it is built, as a refresh would). ``--order``: a sample
step's draw order; missing, the authors are drawn (seed 1) and written there for the next run.
Batch ``i`` is the order's 250 authors from ``250 * (7 i mod batches in the order)``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
# benchmarks/ holds a requests.py: off the path, the project root on it
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from kitab.core.config import Settings  # noqa: E402
from kitab.core.cycles import cycle_collection_paused  # noqa: E402
from kitab.core.step_memory import after_step  # noqa: E402
from kitab.sources import SourceSpec, sources_for  # noqa: E402
from kitab.sources.wikidata import works_with_labels  # noqa: E402
from tasks.clean_books import CROWD, clean_books  # noqa: E402
from tasks.dedup_titles import dedup_titles  # noqa: E402
from tasks.fetch_works import collect_authors, wikidata_records  # noqa: E402
from tasks.sample_authors import fetch_candidates, sample_authors  # noqa: E402

BATCH = 250  # the refresh's authors per collect batch


def draw_order(sources, settings: Settings, n: int) -> list[dict]:
    candidates, _ = fetch_candidates(
        sources.wikidata,
        first_year=settings.birth_year_min,
        last_year_exclusive=date.today().year + 1,
        window=settings.birth_year_window,
        min_works=settings.min_works,
        max_works=settings.max_works,
    )
    empty = frozenset()
    drawn = sample_authors(
        candidates,
        n=n,
        seed=1,
        exclude_qids=set(),
        exclude_names=empty,
        exclude_rejected=empty,
        skip_qids=empty,
        skip_names=empty,
    )
    return drawn.tables["order"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshot", type=Path, required=True)
    parser.add_argument("--warehouse", type=Path, required=True)
    parser.add_argument("--order", type=Path, required=True)
    parser.add_argument("--batches", type=int, default=8)
    args = parser.parse_args()
    settings = Settings.from_values({"warehouse": str(args.warehouse)})
    sources = sources_for(SourceSpec.of("dump", settings, snapshot=args.snapshot, mirror_url=None, cache_scope=None))
    if args.order.exists():
        order = pq.read_table(args.order).to_pylist()
    else:
        order = draw_order(sources, settings, 10_000)
        pq.write_table(pa.Table.from_pylist(order), args.order)
    totals: dict[str, float] = {}
    digests = []

    def phase(name: str, since: float) -> float:
        now = time.process_time()
        totals[name] = totals.get(name, 0.0) + now - since
        return now

    for b in range(args.batches):
        start = BATCH * (b * 7 % max(1, len(order) // BATCH))
        batch = order[start : start + BATCH]
        # as WorkDir.run runs every step: the cycle collector paused, the step's caches emptied after
        with cycle_collection_paused():
            digests.append(run_batch(batch, sources, phase, totals))
        after_step()
    per_batch = {name: round(seconds / args.batches, 3) for name, seconds in totals.items()}
    print(json.dumps({"batches": args.batches, "seconds_per_batch": per_batch, "digests": digests}))


def run_batch(batch: list[dict], sources, phase, totals: dict[str, float]) -> str:
    """One batch's collect, as collect_step calls it; its digest."""
    wall, cpu = time.perf_counter(), time.process_time()
    collected = collect_authors(batch, sources.openlibrary, frozenset())
    t = phase("collect_authors", cpu)
    rejected = {r["record_id"] for r in collected.rejects if r["record_kind"] == "author"}
    kept = [a for a in collected.tables.get("authors", []) if a["qid"] not in rejected]
    wd_works: list[dict] = []
    ours = {a["qid"] for a in kept}

    def wikidata_titles(titles: list[str]) -> list[dict]:
        wd_works.extend(found := works_with_labels(sources.wikidata, titles, ours, CROWD))
        return found

    cleaned = clean_books(
        collected.tables.get("works_raw", []),
        kept,
        wikidata_titles,
        today_year=date.today().year,
        batch_size=sources.wikidata.authors_per_query or max(1, len(kept)),
    )
    t = phase("clean_books", t)
    records = wikidata_records(cleaned.tables["works_clean"], wd_works, sources.wikidata)
    t = phase("wikidata_records", t)
    deduped = dedup_titles(cleaned.tables["works_clean"], kept)
    phase("dedup_titles", t)
    totals["cpu"] = totals.get("cpu", 0.0) + time.process_time() - cpu
    totals["wall"] = totals.get("wall", 0.0) + time.perf_counter() - wall
    results = (collected, cleaned, records, deduped)
    return hashlib.sha256(repr([(r.tables, r.rejects, r.stats) for r in results]).encode()).hexdigest()[:16]


if __name__ == "__main__":
    main()
