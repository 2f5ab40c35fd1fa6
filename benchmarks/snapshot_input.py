"""Benchmark input from a generated snapshot, through the real stages (no Prefect, no HTTP).

    snapshot = snapshot_for(5000, seed=7)            # kitab.simulate.generator.generate, cached in bench_out/
    authors, works_raw = works_for(snapshot, seed=7)  # sample every candidate -> match -> fetch
    data = cleaned_input(5000, seed=7)               # both, then clean_books: what the benchmarks use

The snapshot is read in-process through the "dump" source, so the rows are the ones the refresh
flow collects from that snapshot when it samples every candidate (tests/test_sources_mirror.py
checks dump == mirror).
Years are judged against the snapshot's as-of date, not today's, so a rerun next year gives the
same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kitab.core.config import Settings
from kitab.simulate.generator.generate import GENERATOR_VERSION, generate_snapshot
from kitab.sources import open_sources
from kitab.sources.snapshot.format import MANIFEST_FILE, read_manifest
from kitab.sources.wikidata import works_with_labels
from tasks.base import StageResult
from tasks.clean_books import clean_books
from tasks.fetch_works import collect_authors
from tasks.sample_authors import fetch_candidates, sample_authors

BENCH_OUT = Path(__file__).resolve().parents[1] / "bench_out"  # gitignored


def snapshot_for(n_authors: int, seed: int, cache_root: Path = BENCH_OUT) -> Path:
    """The snapshot folder for (``n_authors``, ``seed``), generated unless already there.

    Generation is deterministic, so a folder with a manifest from this generator version is
    the same bytes and is reused (5,000 authors take ~40 s to generate). ``generate_snapshot``
    writes atomically: a folder with a manifest is complete.
    """
    out = Path(cache_root) / f"snapshot-s{seed}-n{n_authors}"
    if not (out / MANIFEST_FILE).exists() or read_manifest(out)["generator"]["version"] != GENERATOR_VERSION:
        generate_snapshot(out, seed, n_authors)
    return out


def _as_of_year(snapshot_dir: Path) -> int:
    return datetime.fromisoformat(read_manifest(snapshot_dir)["created_at"].replace("Z", "+00:00")).year


def _dump_sources(snapshot_dir: Path):
    # The dump scan is cached per snapshot id under bench_out/warehouse/.cache/dumps; a
    # benchmark never touches the real warehouse.
    return open_sources("dump", Settings(warehouse=BENCH_OUT / "warehouse"), snapshot=snapshot_dir)


def works_for(snapshot_dir: Path, seed: int, sources=None) -> tuple[list[dict], list[dict]]:
    """(``authors`` rows, ``works_raw`` rows) for every candidate author of the snapshot: the
    pipeline's sample and collect stages (tasks/steps.py), sampling all candidates."""
    own = sources is None
    sources = sources or _dump_sources(snapshot_dir)
    try:
        settings = Settings(warehouse=BENCH_OUT / "warehouse")
        candidates, _ = fetch_candidates(
            sources.wikidata,
            first_year=settings.birth_year_min,
            last_year_exclusive=_as_of_year(snapshot_dir) + 1,
            window=settings.birth_year_window,
            min_works=settings.min_works,
            max_works=settings.max_works,
        )
        sampled = sample_authors(candidates, n=len(candidates), seed=seed, exclude_qids=set())
        collected = collect_authors(sampled.tables["sampled"], sources.openlibrary)
        return collected.tables["authors"], collected.tables["works_raw"]
    finally:
        if own:
            sources.close()


@dataclass
class CleanedInput:
    snapshot_id: str
    authors: list[dict]  # every sampled author, matched or not (as the flow's ``authors`` table)
    works_raw: list[dict]
    cleaned: StageResult  # clean_books: tables["works_clean"], rejects, stats

    def summary(self) -> str:
        return (
            f"snapshot {self.snapshot_id}: {len(self.authors)} authors sampled, "
            f"{sum(1 for a in self.authors if a['ol_author_key'])} matched, {len(self.works_raw)} works fetched, "
            f"{len(self.cleaned.tables['works_clean'])} kept by clean_books"
        )


def cleaned_input(n_authors: int, seed: int, cache_root: Path = BENCH_OUT) -> CleanedInput:
    """snapshot_for -> works_for -> clean_books, with the WikiData cross-check on the same snapshot."""
    snapshot = snapshot_for(n_authors, seed, cache_root)
    sources = _dump_sources(snapshot)
    try:
        authors, works_raw = works_for(snapshot, seed, sources)
        cleaned = clean_books(
            works_raw,
            authors,
            lambda titles: works_with_labels(sources.wikidata, titles),
            today_year=_as_of_year(snapshot),
        )
    finally:
        sources.close()
    return CleanedInput(read_manifest(snapshot)["snapshot_id"], authors, works_raw, cleaned)
