"""Last stage: commit a release's tables to the warehouse (kitab.core.release_commit: stage
and test them, then swap them in with one rename of the release's ledger row, the catalog,
the sweep). A failure at any step leaves the release as it was committed before (invisible
if it is new); publishing again completes it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from kitab.core.release_commit import ReleasedAuthors, commit_release, other_releases
from kitab.core.warehouse import Warehouse
from tasks.book_evidence import review_key
from tasks.fetch_works import SOURCE_UNAVAILABLE
from tasks.match_openlibrary import name_key

# other_releases: the authors a refresh must not sample again (flows.pipeline imports it from here)
__all__ = [
    "excluded_releases",
    "other_releases",
    "publish",
    "rejected_authors",
    "released_authors_rows",
    "released_since",
    "review_labels_of",
    "review_label_changes",
]


def excluded_releases(warehouse: Warehouse, release: str) -> list[str]:
    """The releases whose authors (released, or drawn and rejected) ``release``'s sample
    excludes: exactly those committed before it was first made, as its ledger row records them
    (``excluded_releases``). A rebuild, ``--replace`` included, reads them from the row it
    replaces, so it draws from the same candidates in the same order whatever was published
    since (a release made later never changes an earlier one's draw). A new release: every
    committed release. A row from before the column was recorded: the releases first made
    before it, by the ledger's times."""
    committed = warehouse.committed_releases()
    if release not in committed:
        return committed
    recorded = warehouse.ledger_row(release).get("excluded_releases")
    if recorded is not None:
        return json.loads(recorded)
    first = {r: first_made(warehouse.ledger_row(r)) for r in committed}
    return sorted(r for r in committed if r != release and first[r] < first[release])


def first_made(row: dict) -> str:
    """When a release was first committed: its oldest version's ``created_at`` (ISO text)."""
    versions = json.loads(row.get("history") or "[]")
    # the ledger's timestamp and the history's ISO text, as one type (str() of a datetime has
    # a space where isoformat has a "T": as text they would not compare)
    times = [_moment(v["created_at"]) for v in versions if v.get("created_at")]
    return min([*times, _moment(row["created_at"])]).isoformat()


def _moment(value: datetime | str) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def released_since(warehouse: Warehouse, release: str, excluded: list[str]) -> ReleasedAuthors:
    """The authors of the releases committed after ``release`` was first made (not in its
    ``excluded``): they are another release's now, so a rebuild that draws past its first
    draw skips them (no author is in two releases); skipping them moves no other author in the
    draw order, and a draw that ends where the first one did never meets one."""
    later = [r for r in warehouse.committed_releases() if r != release and r not in excluded]
    return other_releases(warehouse, release, later) if later else ReleasedAuthors()


def review_labels_of(
    books: Iterable[tuple[str, str]], labels: Iterable[tuple[str, str, str, str]], kinds: Iterable[str]
) -> list[list[str]]:
    """The review labels a release's books read (its ledger row's ``review_labels``), sorted:
    ``[title, author, kind, label]`` with title and author folded as labels are matched
    (tasks/book_evidence.review_key). ``books``: each book's (canonical title, author name);
    ``labels``: the warehouse's (title, author, kind, label) in import order (a later one for
    the same book and kind wins); ``kinds``: the kinds the release tags."""
    latest: dict[tuple[str, str, str], str] = {}
    for title, author, kind, label in labels:
        latest[(*review_key(title, author), kind)] = label
    if not latest:
        return []
    wanted = set(kinds)
    keys = {review_key(title, author) for title, author in books}
    return sorted([*key, label] for key, label in latest.items() if key[:2] in keys and key[2] in wanted)


def review_label_changes(before: list[list[str]], now: list[list[str]]) -> dict[str, int]:
    """How the review labels a release's books read changed since its last build: labels
    ``new`` (a book and kind not labelled before), ``changed`` (labelled otherwise) and
    ``withdrawn`` (no longer stored); empty if none did."""
    old = {tuple(r[:3]): r[3] for r in before}
    new = {tuple(r[:3]): r[3] for r in now}
    counts = {
        "new": sum(k not in old for k in new),
        "changed": sum(k in old and old[k] != v for k, v in new.items()),
        "withdrawn": sum(k not in new for k in old),
    }
    return {k: n for k, n in counts.items() if n}


def rejected_authors(warehouse: Warehouse, releases: list[str]) -> frozenset[str]:
    """WikiData ids of the authors ``releases`` drew and rejected (no Open Library match, too
    few books, ...): not drawn again by default. An author lost to a source that did not answer
    (``source_unavailable``) is not one: it may well pass next time."""
    if not releases:
        return frozenset()
    rows = warehouse.read_table("rejects", releases).select(["record_kind", "record_id", "reason"]).to_pylist()
    return frozenset(r["record_id"] for r in rows if r["record_kind"] == "author" and r["reason"] != SOURCE_UNAVAILABLE)


def released_authors_rows(release: str, authors: Iterable[dict], kept_qids: set[str]) -> list[dict]:
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
    review_labels: list[list[str]] | None = None,
    because: list[str] | None = None,
    replace: bool = False,
    inputs: list[dict] | None = None,
    derive=None,
) -> dict:
    """Commit ``tables`` (per table: rows, or the Parquet parts the pipeline's batches wrote)
    as release ``release``, the run's parameters in its ledger row. ``stages``: the refresh's
    stages before this one (kitab.core.progress records); the ledger's ``stages`` column keeps
    them and this one (seconds up to the commit, rows written). ``config``: the run's whole
    configuration (kitab.core.params.RunConfig.to_dict); ``excluded``: the releases its sample
    excluded; ``review_labels``: the review labels its books read (:func:`review_labels_of`);
    ``because``: why a rebuild differs from the committed version (flows/pipeline.py's
    rebuild check), kept with what changed; ``replace``: replace a committed release whose
    tables differ; ``derive``: tables computed from the staged release (commit_release's)."""
    run = {
        "seed": seed,
        "source": source,
        "snapshot_id": snapshot_id,
        "n_authors_requested": n_authors_requested,
        "requests_made": requests_made,
        "config": None if config is None else json.dumps(config, sort_keys=True),
        "excluded_releases": None if excluded is None else json.dumps(sorted(excluded)),
        "review_labels": None if review_labels is None else json.dumps(review_labels),
        "because": because,
        "inputs": inputs,
    }
    return commit_release(warehouse, release, tables, run, stages, replace=replace, derive=derive)
