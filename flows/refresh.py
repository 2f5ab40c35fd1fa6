"""The ``refresh`` flow: one release of the benchmark, from sampling to the warehouse.

Composition only: each step is a thin task around a pure stage function in ``tasks/``.
"""
from __future__ import annotations

import time
from datetime import date, datetime, timezone
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.futures import as_completed
from prefect.utilities.annotations import unmapped

from kitab.config import Settings
from kitab.env import BUNDLED_SNAPSHOT
from kitab.sources import connect
from kitab.warehouse import Warehouse, validate_release_id
from tasks.base import StageResult
from tasks.publish import other_releases, publish, released_authors_rows
from tasks.steps import (clean_books_step, collect_author_step, dedup_titles_step, generate_constraints_step,
                         sample_authors_step, sample_queries_step, tag_entities_step)


def default_seed(today: date) -> int:
    return int(f"{today:%Y%m%d}")


def default_release_id(seed: int, today: date) -> str:
    """Release ids are <UTC date>-s<seed>, e.g. 2026.11.21-s42: the version scheme of the
    warehouse and of the Hugging Face dataset (its tag). See README, Releases."""
    return f"{today:%Y.%m.%d}-s{seed}"


@flow(name="refresh", log_prints=True)
def refresh(source: str = "mirror", snapshot: str | None = None, authors: int = 40, seed: int | None = None,
            release: str | None = None, warehouse: str | None = None, mirror_url: str | None = None) -> dict:
    """Sample ``authors`` writers not released before, collect their Open Library works and
    publish the tables as release ``release``. Defaults for scheduled runs: the seed is the
    UTC date (YYYYMMDD) and the release id ``YYYY.MM.DD-s<seed>``, so each day's run is a
    new release and a rerun the same day rebuilds it."""
    logger = get_run_logger()
    started = time.monotonic()
    settings = Settings(**({"warehouse": warehouse} if warehouse else {}))
    today = datetime.now(timezone.utc).date()
    seed = default_seed(today) if seed is None else seed
    release = validate_release_id(release or default_release_id(seed, today))
    wh = Warehouse(settings.warehouse)
    with connect(source, settings, snapshot=Path(snapshot) if snapshot else BUNDLED_SNAPSHOT,
                 mirror_url=mirror_url, release=release) as (sources, origin):
        snapshot_id = origin.snapshot_id
        source_key = f"{source}:{snapshot_id or mirror_url or settings.wikidata_endpoint}"
        ledger = other_releases(wh, release)
        sampled = sample_authors_step(sources, source_key, n=authors, seed=seed, exclude_qids=sorted(ledger.qids),
                                      exclude_names=sorted(ledger.names),
                                      first_year=settings.birth_year_min,
                                      last_year_exclusive=today.year + 1,
                                      window=settings.birth_year_window, min_works=settings.min_works,
                                      max_works=settings.max_works)
        writers = sampled.tables["sampled"]
        logger.info("sampled %d writers (%d eligible, %d excluded as released)", len(writers),
                    sampled.stats["eligible"], sampled.stats["excluded_released"])

        progress = create_progress_artifact(0.0, description="authors collected")
        futures = collect_author_step.map(unmapped(sources), unmapped(source_key), writers,
                                          released_ol_keys=unmapped(sorted(ledger.ol_keys)))
        for done, _ in enumerate(as_completed(futures), start=1):  # progress only
            update_progress_artifact(progress, 100.0 * done / max(1, len(writers)))
            if done % 10 == 0 or done == len(writers):
                logger.info("authors done %d / %d", done, len(writers))
        # in sample order, not completion order: the next steps' cache keys hash their inputs
        merged = StageResult.merge([future.result() for future in futures])
        authors_rows = merged.tables.get("authors", [])
        works_raw = merged.tables.get("works_raw", [])
        # writers already rejected (no match, no works, released before) are not rejected again
        rejected = {r["record_id"] for r in merged.rejects if r["record_kind"] == "author"}
        collected_authors = [a for a in authors_rows if a["qid"] not in rejected]
        cleaned = clean_books_step(sources, source_key, works_raw, collected_authors, today_year=today.year)
        deduped = dedup_titles_step(cleaned.tables["works_clean"], collected_authors)
        books, variants = deduped.tables["books"], deduped.tables["title_variants"]
        kept = {b["author_qid"] for b in books}
        kept_authors = [a for a in authors_rows if a["qid"] in kept]
        tagged = tag_entities_step(books, variants)
        constraints = generate_constraints_step(kept_authors, books, tagged.tables["title_entities"])
        queries = sample_queries_step(constraints.tables["constraints"], kept_authors, books, seed=seed)
        stages = {"sample_authors": sampled, "collect_authors": merged, "clean_books": cleaned,
                  "dedup_titles": deduped, "tag_entities": tagged, "generate_constraints": constraints,
                  "sample_queries": queries}
        tables = {
            "authors": authors_rows,
            "works_raw": works_raw,
            "books": books,
            "title_variants": variants,
            "title_entities": tagged.tables["title_entities"],
            "constraints": constraints.tables["constraints"],
            "queries": queries.tables["queries"],
            "rejects": [r for stage in stages.values() for r in stage.rejects],
            "released_authors": released_authors_rows(release, authors_rows, kept),
        }
        requests_made = origin.requests_made(sources)
        ledger = publish(wh, release, tables, seed=seed, source=source, snapshot_id=snapshot_id,
                         n_authors_requested=authors, requests_made=requests_made)
    return {
        "release": release, "seed": seed, "source": source, "snapshot_id": snapshot_id, "warehouse": str(wh.root),
        "stage_counts": {"candidate writers": sampled.stats["candidates"], "sampled": len(writers),
                         "matched on Open Library": sum(1 for a in authors_rows if a["ol_author_key"]),
                         "works_raw": len(works_raw), "works kept by clean_books": len(cleaned.tables["works_clean"]),
                         "title_variants": len(variants), "books": len(books), "authors with >= 5 books": len(kept),
                         "title_entities": len(tables["title_entities"]),
                         "constraints": len(tables["constraints"]), "queries": len(tables["queries"])},
        "match_methods": {m: sum(1 for a in authors_rows if a["match_method"] == m)
                          for m in ("p648", "name_birth_year", "unmatched")},
        "rejects": len(tables["rejects"]),
        "stage_stats": {name: stage.stats for name, stage in stages.items()},
        "requests_made": requests_made,
        "checksums": ledger["checksums"], "data_tests": ledger["data_tests"],
        "wall_seconds": round(time.monotonic() - started, 2),
    }
