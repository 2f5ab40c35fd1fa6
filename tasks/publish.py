"""Last stage: commit a release's tables to the warehouse (kitab.core.release_commit: stage
and test them, then swap them in with one rename of the release's ledger row, the catalog,
the sweep). A failure at any step leaves the release as it was committed before (invisible
if it is new); publishing again completes it."""

from __future__ import annotations

from kitab.core.release_commit import commit_release, other_releases
from kitab.core.warehouse import Warehouse
from tasks.match_openlibrary import name_key

# other_releases: the authors a refresh must not sample again (flows.pipeline imports it from here)
__all__ = ["other_releases", "publish", "released_authors_rows"]


def released_authors_rows(release: str, authors: list[dict], kept_qids: set[str]) -> list[dict]:
    return [
        {"release_id": release, "qid": a["qid"], "ol_author_key": a["ol_author_key"], "name_norm": name_key(a["name"])}
        for a in authors
        if a["qid"] in kept_qids
    ]


def publish(
    warehouse: Warehouse,
    release: str,
    tables: dict[str, list],
    *,
    seed: int,
    source: str,
    snapshot_id: str | None,
    n_authors_requested: int,
    requests_made: int | None,
    stages: list[dict] | None = None,
    inputs: list[dict] | None = None,
) -> dict:
    """Commit ``tables`` (per table: rows, or the Parquet parts the pipeline's batches wrote)
    as release ``release``, the run's parameters in its ledger row. ``stages``: the refresh's
    stages before this one (kitab.core.progress records); the ledger's ``stages`` column keeps
    them and this one (seconds up to the commit, rows written)."""
    run = {
        "seed": seed,
        "source": source,
        "snapshot_id": snapshot_id,
        "n_authors_requested": n_authors_requested,
        "requests_made": requests_made,
        "inputs": inputs,
    }
    return commit_release(warehouse, release, tables, run, stages)
