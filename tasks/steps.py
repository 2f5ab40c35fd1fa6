"""Thin Prefect task wrappers around the pure stage functions.

Caching: a task's cache key is its inputs plus a digest of all stage code, data files and
result-relevant package versions (kitab.version.code_digest), so a rerun with the same
inputs and code reuses the persisted result (under the warehouse's Prefect home), and any
code change recomputes. Live client objects (``sources``) are excluded from the key: they
carry no data, only connections. ``source_key`` names where the data comes from instead.
"""
from __future__ import annotations

from prefect import task
from prefect.cache_policies import INPUTS, CacheKeyFnPolicy

from kitab.sources import Sources
from kitab.sources.wikidata import works_with_labels
from kitab.version import code_digest
from tasks.base import StageResult
from tasks.clean_books import clean_books
from tasks.dedup_titles import dedup_titles
from tasks.fetch_works import collect_author
from tasks.generate_constraints import entity_flags, generate_constraints
from tasks.sample_authors import fetch_candidates, sample_writers
from tasks.sample_queries import sample_queries
from tasks.tag_entities import tag_entities

CODE = CacheKeyFnPolicy(cache_key_fn=lambda context, parameters: code_digest())
CACHED = (INPUTS + CODE) - "sources"
RETRIES = dict(retries=2, retry_delay_seconds=5)


@task(name="sample_authors", cache_policy=CACHED, persist_result=True, **RETRIES)
def sample_authors_step(sources: Sources, source_key: str, *, n: int, seed: int, exclude_qids: list[str],
                        exclude_names: list[str], first_year: int, last_year_exclusive: int, window: int,
                        min_works: int, max_works: int) -> StageResult:
    candidates, fingerprints = fetch_candidates(sources.wikidata, first_year=first_year,
                                                last_year_exclusive=last_year_exclusive, window=window,
                                                min_works=min_works, max_works=max_works)
    result = sample_writers(candidates, n=n, seed=seed, exclude_qids=set(exclude_qids),
                            exclude_names=frozenset(exclude_names))
    result.stats["sparql_fingerprints"] = fingerprints
    return result


@task(name="collect_author", cache_policy=CACHED, persist_result=True, **RETRIES,
      task_run_name="collect_author-{author[qid]}")
def collect_author_step(sources: Sources, source_key: str, author: dict, released_ol_keys: list[str]) -> StageResult:
    return collect_author(author, sources.openlibrary, frozenset(released_ol_keys))


@task(name="clean_books", cache_policy=CACHED, persist_result=True, **RETRIES)
def clean_books_step(sources: Sources, source_key: str, works_raw: list[dict], authors: list[dict],
                     today_year: int) -> StageResult:
    return clean_books(works_raw, authors, lambda titles: works_with_labels(sources.wikidata, titles),
                       today_year=today_year)


@task(name="dedup_titles", cache_policy=CACHED, persist_result=True)
def dedup_titles_step(works_clean: list[dict], authors: list[dict]) -> StageResult:
    return dedup_titles(works_clean, authors)


@task(name="tag_entities", cache_policy=CACHED, persist_result=True)
def tag_entities_step(books: list[dict], title_variants: list[dict]) -> StageResult:
    return tag_entities(books, title_variants)


@task(name="generate_constraints", cache_policy=CACHED, persist_result=True)
def generate_constraints_step(authors: list[dict], books: list[dict], title_entities: list[dict]) -> StageResult:
    return generate_constraints(authors, books, entity_flags(books, title_entities))


@task(name="sample_queries", cache_policy=CACHED, persist_result=True)
def sample_queries_step(constraints: list[dict], authors: list[dict], books: list[dict], seed: int) -> StageResult:
    return sample_queries(constraints, authors, books, seed=seed)
