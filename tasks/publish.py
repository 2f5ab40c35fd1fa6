"""Last stage: commit a release's tables to the warehouse (kitab.core.release_commit: stage
and test them, then swap them in with one rename of the release's ledger row, the catalog,
the sweep). A failure at any step leaves the release as it was committed before (invisible
if it is new); publishing again completes it."""

from __future__ import annotations

import json

from kitab.core.release_commit import commit_release, other_releases
from kitab.core.warehouse import Warehouse
from tasks.fetch_works import SOURCE_UNAVAILABLE
from tasks.match_openlibrary import name_key

# other_releases: the authors a refresh must not sample again (flows.pipeline imports it from here)
__all__ = ["excluded_releases", "other_releases", "publish", "rejected_authors", "released_authors_rows"]


def excluded_releases(warehouse: Warehouse, release: str, *, replace: bool = False) -> list[str]:
    """The releases whose authors ``release``'s sample excludes: those committed before it was
    first made (its ledger row's ``excluded_releases``), so a rebuild gives the same sample
    whatever was published since; for a new release, or one being replaced, every other
    committed release."""
    committed = warehouse.committed_releases()
    if release in committed and not replace:
        recorded = warehouse.ledger_row(release).get("excluded_releases")
        if recorded is not None:
            return json.loads(recorded)
    return [r for r in committed if r != release]


def rejected_authors(warehouse: Warehouse, releases: list[str]) -> frozenset[str]:
    """WikiData ids of the authors ``releases`` drew and rejected (no Open Library match, too
    few books, ...): not drawn again by default. An author lost to a source that did not answer
    (``source_unavailable``) is not one: it may well pass next time."""
    if not releases:
        return frozenset()
    rows = warehouse.read_table("rejects", releases).select(["record_kind", "record_id", "reason"]).to_pylist()
    return frozenset(r["record_id"] for r in rows if r["record_kind"] == "author" and r["reason"] != SOURCE_UNAVAILABLE)


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
    config: dict | None = None,
    excluded: list[str] | None = None,
    replace: bool = False,
    inputs: list[dict] | None = None,
) -> dict:
    """Commit ``tables`` (per table: rows, or the Parquet parts the pipeline's batches wrote)
    as release ``release``, the run's parameters in its ledger row. ``stages``: the refresh's
    stages before this one (kitab.core.progress records); the ledger's ``stages`` column keeps
    them and this one (seconds up to the commit, rows written). ``config``: the run's whole
    configuration (kitab.core.params.RunConfig.to_dict); ``excluded``: the releases its sample
    excluded; ``replace``: replace a committed release whose tables differ."""
    run = {
        "seed": seed,
        "source": source,
        "snapshot_id": snapshot_id,
        "n_authors_requested": n_authors_requested,
        "requests_made": requests_made,
        "config": None if config is None else json.dumps(config, sort_keys=True),
        "excluded_releases": None if excluded is None else json.dumps(sorted(excluded)),
        "inputs": inputs,
    }
    return commit_release(warehouse, release, tables, run, stages, replace=replace)
