"""A rebuild of a committed release, checked before the pipeline runs: what it would read
differently from what the release was built from (its ledger row), named in one line. Without
--replace any difference refuses the run before anything starts; with it, the causes are kept
in the new version's ledger row (``changes``) and said in the run summary.

Two causes are known before the run: the configuration (IDENTITY's keys: seed, authors,
taggers, snapshot, ...) and the review labels the release's books read (``kitab review
import`` since it was built). Its sample never is one: it excludes exactly the releases its
row records (tasks/publish.excluded_releases), whatever was published since.
"""

from __future__ import annotations

import json

from flows.configure import recorded_config
from kitab.core.errors import BadValue
from kitab.core.params import RunConfig, identity_of
from kitab.core.refs import TableRef, duck
from kitab.core.reviews import label_tuples
from kitab.core.warehouse import Warehouse
from kitab.sources import Origin, source_kind
from tasks.generate_constraints import tagged_kinds
from tasks.publish import review_label_changes, review_labels_of


def check_rebuild(wh: Warehouse, config: RunConfig, snapshot_id: str | None) -> list[str]:
    """The causes a rebuild of ``config``'s release would change it by (:func:`rebuild_causes`);
    any, without --replace: refused in one line naming them, before any work."""
    causes = rebuild_causes(wh, config, snapshot_id)
    if causes and not config.params.replace:
        raise BadValue(
            f"release {config.params.release} is committed and this run would change it: {'; '.join(causes)}. "
            "Refused before any work; pass --replace to replace it (its authors stay the same unless the "
            "sample's settings changed; the old version stays in `kitab releases --history`), or choose "
            "another --release"
        )
    return causes


def check_rebuild_early(config: RunConfig) -> None:
    """:func:`check_rebuild` where a refresh starts, before Prefect's server or any flow (the
    pipeline checks again, as a deployment's run starts there): the snapshot's id from its
    manifest, as the pipeline's origin reads it."""
    params = config.params
    kind = source_kind(params.source)
    origin = Origin.of(kind.name, config.settings, snapshot=kind.snapshot(params), mirror_url=params.mirror_url)
    check_rebuild(Warehouse(config.settings.warehouse), config, origin.snapshot_id)


def rebuild_causes(wh: Warehouse, config: RunConfig, snapshot_id: str | None) -> list[str]:
    """What a rebuild of a committed release reads differently from its ledger row: each config
    key (IDENTITY) as ``key before -> now``, and the review labels its books read (new, changed,
    withdrawn since it was built). [] for a new release, or one that would read the same."""
    release = config.params.release
    if release not in wh.committed_releases():
        return []
    row = wh.ledger_row(release)
    recorded = json.loads(row["config"]) if row.get("config") else None
    if recorded is not None:
        before = identity_of(recorded, row["snapshot_id"])
    else:  # a release made before the config was recorded: what its columns say
        before = {
            "source": row["source"],
            "snapshot_id": row["snapshot_id"],
            "seed": row["seed"],
            "authors": row["n_authors_requested"],
        }
    now = identity_of(recorded_config(config), snapshot_id)
    causes = [f"{k} {before[k]} -> {now[k]}" for k in before if before[k] != now[k]]
    if row.get("review_labels") is not None:  # recorded: else only the commit sees a change
        labels = review_label_changes(json.loads(row["review_labels"]), committed_review_labels(wh, config))
        if labels:
            counts = ", ".join(f"{n} {what}" for what, n in labels.items())
            causes.append(f"review labels changed ({sum(labels.values())} labels since the last build: {counts})")
    return causes


def committed_review_labels(wh: Warehouse, config: RunConfig) -> list[list[str]]:
    """The review labels the committed release's books would read now (its books are what a
    rebuild draws again: the same authors, the same works)."""
    labels = label_tuples(wh.root)
    if not labels:
        return []
    release = config.params.release
    names = {r["qid"]: r["name"] or "" for r in wh.read_table("authors", [release]).to_pylist()}
    books = wh.read_table("books", [release]).select(["canonical_title", "author_qid"]).to_pylist()
    pairs = [(b["canonical_title"], names.get(b["author_qid"], "")) for b in books]
    return review_labels_of(pairs, labels, tagged_kinds(config.taggers or None))


def built_review_labels(config: RunConfig, labels, books: list[TableRef], authors: list[TableRef]) -> list[list[str]]:
    """The review labels this run's books read (``labels``: the run's, RunContext.review_labels;
    ``books`` and ``authors``: the collect steps' parts), for its ledger row."""
    if not labels:
        return []
    book_files, author_files = [r.path for r in books if r.rows], [r.path for r in authors if r.rows]
    if not book_files:
        return []
    with duck() as con:
        pairs = con.execute(
            "SELECT b.canonical_title, coalesce(a.name, '') FROM read_parquet(?) b "
            "LEFT JOIN (SELECT DISTINCT qid, name FROM read_parquet(?)) a ON a.qid = b.author_qid",
            [book_files, author_files],
        ).fetchall()
    return review_labels_of(pairs, labels, tagged_kinds(config.taggers or None))
