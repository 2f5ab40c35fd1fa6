"""What a refresh did, as :func:`flows.pipeline.run_pipeline` returns it: the run summary that
``kitab refresh`` prints, the tests compare and the benchmarks read."""

from __future__ import annotations

import json

from kitab.core.params import RunConfig
from kitab.core.refs import TableRef, duck
from kitab.core.stages import GENERATE_CONSTRAINTS, TAG_ENTITIES
from kitab.core.warehouse import Warehouse
from kitab.core.workdir import StepResult
from kitab.sources import Origin
from tasks.steps import Batch, Collected, merge_stats


def run_summary(
    config: RunConfig,
    wh: Warehouse,
    origin: Origin,
    excluded,
    *,
    sampled: StepResult,
    collected: Collected,
    constrained: list[StepResult],
    titles: TableRef,
    chunks: list[Batch],
    stats: dict,
    rejected_reasons: dict[str, int],
    requests_made: int,
    committed: dict,
    stages: list[dict],
) -> dict:
    """What the run did, for the caller (kitab refresh's summary, the tests, the benchmarks)."""
    params = config.params
    collect_stats = merge_stats([c.stats for c in collected.results])
    constrain_stats = merge_stats([c.stats for c in constrained])
    counts = committed["row_counts"]
    methods = collect_stats["collect_authors"]["match_method"]
    kept = collected.passed
    return {
        "release": params.release,
        "seed": params.seed,
        "source": params.source,
        "snapshot_id": origin.snapshot_id,
        "warehouse": str(wh.root),
        "authors": author_counts(params.authors, sampled.stats, collected.drawn, kept),
        "rejected_authors": rejected_reasons,
        "excluded_releases": excluded,
        "unchanged": bool(committed.get("unchanged")),
        # a --replace: what this version changed of the one it replaced, and why (ledger ``changes``)
        "rebuilt": None
        if committed.get("unchanged") or not committed.get("changes")
        else json.loads(committed["changes"]),
        "stage_counts": {
            "candidate authors": sampled.stats["candidates"],
            "drawn (authors)": collected.drawn,
            "source unavailable": collected.failed,
            "matched on Open Library": methods.get("p648", 0) + methods.get("name_birth_year", 0),
            "works_raw": counts["works_raw"],
            "works kept by clean_books": collect_stats["clean_books"]["works_clean"],
            "title_variants": counts["title_variants"],
            "books": counts["books"],
            "authors with >= 5 books": kept,
            "title_entities": counts["title_entities"],
            "constraints": counts["constraints"],
            "queries": counts["queries"],
            "claims": counts["claims"],
        },
        "match_methods": {m: methods.get(m, 0) for m in ("p648", "name_birth_year", "unmatched")},
        "rejects": counts["rejects"],
        "stage_stats": {
            "sample_authors": sampled.stats,
            "collect_authors": collect_stats["collect_authors"],
            "clean_books": collect_stats["clean_books"],
            "dedup_titles": collect_stats["dedup_titles"],
            "tag_entities": {**constrain_stats["tag_entities"], "titles_tagged": titles.rows},
            "generate_constraints": constrain_stats["generate_constraints"],
            **stats,
        },
        "batches": {
            "authors_per_batch": params.batch_size,
            "collect": len(collected.batches),
            TAG_ENTITIES: len(chunks),
            GENERATE_CONSTRAINTS: len(collected.batches),
        },
        "stages": stages,
        "stage_seconds": {r["stage"]: r["seconds"] for r in stages},
        "requests_made": requests_made,
        "checksums": committed["checksums"],
        "data_tests": committed["data_tests"],
        # per entity slice (kitab/release/key_quality.py), read from the staged release at publish
        "key_quality": committed["facts"]["key_quality"],
    }


def author_counts(requested: int, sample_stats: dict, drawn: int, released: int) -> dict:
    """Authors requested, eligible (not released nor rejected before, with a label), drawn
    (in the seeded order) and released (passed every stage), and how many short of the
    request the release is (the candidates ran out)."""
    return {
        "requested": requested,
        "eligible": sample_stats["eligible"],
        "excluded_released": sample_stats["excluded_released"],
        "excluded_rejected_before": sample_stats["excluded_rejected_before"],
        "drawn": drawn,
        "sampled": drawn,
        "released": released,
        "shortfall": max(0, requested - released),
    }


def rejected_author_reasons(parts: list[TableRef]) -> dict[str, int]:
    """Drawn authors rejected, per reason (the rejects rows of kind ``author``)."""
    files = [r.path for r in parts if r.rows]
    if not files:
        return {}
    with duck() as con:
        rows = con.sql(
            "SELECT reason, count(DISTINCT record_id) FROM read_parquet(?, union_by_name = true) "
            "WHERE record_kind = 'author' GROUP BY reason ORDER BY 2 DESC, 1",
            params=[files],
        ).fetchall()
    return {reason: n for reason, n in rows}
