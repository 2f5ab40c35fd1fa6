"""Thin Prefect task wrappers around the pure stage functions.

Caching: a task's cache key is its inputs plus its source code, so a rerun with the same
inputs and code reuses the persisted result (under the warehouse's Prefect home), and a
code change recomputes. Live client objects (``sources``) are excluded from the key: they
carry no data, only connections. ``source_key`` names where the data comes from instead.
"""
from __future__ import annotations

from prefect import task
from prefect.cache_policies import INPUTS, TASK_SOURCE

from kitab.sources import Sources
from tasks.base import StageResult
from tasks.fetch_works import fetch_author_works
from tasks.match_openlibrary import match_author
from tasks.sample_authors import fetch_candidates, sample_writers

CACHED = (INPUTS + TASK_SOURCE) - "sources"
RETRIES = dict(retries=2, retry_delay_seconds=5)


@task(name="sample_authors", cache_policy=CACHED, persist_result=True, **RETRIES)
def sample_authors_step(sources: Sources, source_key: str, *, n: int, seed: int, exclude_qids: list[str],
                        first_year: int, last_year_exclusive: int, window: int,
                        min_works: int, max_works: int) -> StageResult:
    candidates, fingerprints = fetch_candidates(sources.wikidata, first_year=first_year,
                                                last_year_exclusive=last_year_exclusive, window=window,
                                                min_works=min_works, max_works=max_works)
    result = sample_writers(candidates, n=n, seed=seed, exclude_qids=set(exclude_qids), min_birth_year=first_year)
    result.stats["sparql_fingerprints"] = fingerprints
    return result


@task(name="collect_author", cache_policy=CACHED, persist_result=True, **RETRIES,
      task_run_name="collect_author-{author[qid]}")
def collect_author_step(sources: Sources, source_key: str, author: dict) -> StageResult:
    """Match one writer on Open Library and fetch all its works."""
    row, rejected = match_author(author, sources.openlibrary)
    result = StageResult(tables={"authors": [row], "works_raw": []}, rejects=[rejected] if rejected else [],
                         stats={"match_method": row["match_method"]})
    if row["ol_author_key"]:
        works = fetch_author_works(row, sources.openlibrary)
        result.tables["works_raw"] = works.tables["works_raw"]
        result.rejects += works.rejects
        result.stats.update(works.stats)
    return result
