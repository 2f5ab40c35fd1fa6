"""The constrain step's "mostly unsure" branch through the real pipeline (issue 36): an entity
constraint whose author's books are mostly ``unsure`` is no candidate; it is a ``rejects`` row
with its counts as evidence, and the release still publishes. The bundled demo never reaches the
branch, and a 10,000-author refresh died there (``reject()`` got unknown keywords), so the test
builds a snapshot where it must be reached: the bundled one with every Open Library work renamed
to a title the human tagger cannot decide alone ("The Zarvek Story": an unknown capitalised word
is the risky ``unknown_word`` / ``proper_title`` class, tasks/entity_states.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.sources.snapshot.format import (
    OL_WORKS_FILE,
    deterministic_gzip,
    iter_ol_dump,
    ol_dump_line,
    read_manifest,
)
from kitab.sources.snapshot.manifest import write_manifest
from tests.releases import dump_release

SYLLABLES = ("zar", "vek", "quol", "lin", "mel", "quis", "orv", "ath", "brin", "dor", "tal", "ux")
# not "The Last Days of {}": since human_v7 a lone word after "of" is no doubt (a place genitive)
SHAPES = ("The {} Story", "{} Remembered", "A Summer with {}", "Goodbye, {}", "Waiting for {}")


def coined(n: int) -> str:
    """A capitalised word no name list knows, distinct for every n (three syllables in base 12)."""
    a, b, c = n % 12, (n // 12) % 12, (n // 144) % 12
    return (SYLLABLES[a] + SYLLABLES[b] + SYLLABLES[c]).capitalize()


@pytest.fixture(scope="module")
def unsure_release(tmp_path_factory) -> Path:
    snapshot = tmp_path_factory.mktemp("unsure_snapshot")
    for path in BUNDLED_SNAPSHOT.iterdir():
        if path.name != OL_WORKS_FILE and path.is_file():
            shutil.copy2(path, snapshot / path.name)
    with deterministic_gzip(snapshot / OL_WORKS_FILE) as out:
        for i, (record_type, key, revision, modified, record) in enumerate(
            iter_ol_dump(BUNDLED_SNAPSHOT / OL_WORKS_FILE)
        ):
            if record.get("title"):
                record = {**record, "title": SHAPES[i % len(SHAPES)].format(coined(i))}
            out.write(ol_dump_line(record_type, key, revision, modified, record) + "\n")
    write_manifest(snapshot, as_of=read_manifest(BUNDLED_SNAPSHOT)["created_at"])
    root = tmp_path_factory.mktemp("unsure_warehouse")
    return dump_release(root, authors=4, seed=11, release="unsure", snapshot=snapshot)


def _rows(root: Path, sql: str, params: list | None = None) -> list[tuple]:
    from kitab.core.warehouse import Warehouse

    with Warehouse(root).connect() as db:
        return db.execute(sql, params or []).fetchall()


def test_the_renamed_titles_are_unsure_for_the_human_tagger():
    """The premise, so the test below cannot pass for another reason: these titles are unsure."""
    from tasks.tag_entities import tag_probe

    titles = [shape.format(coined(i)) for i, shape in enumerate(SHAPES)]
    assert [json.loads(line)["human"] for line in tag_probe(titles, explain=False)] == ["unsure"] * len(SHAPES)
    assert len({coined(i) for i in range(12**3)}) == 12**3  # every work its own title


def test_mostly_unsure_entity_constraints_are_rejected_with_their_counts(unsure_release):
    rejected = _rows(
        unsure_release,
        "select record_id, author_qid, evidence from rejects "
        "where stage = 'generate_constraints' and reason = 'entity_books_mostly_unsure' order by record_id",
    )
    assert rejected, "no entity constraint was rejected as mostly unsure: the branch was not reached"
    released = {qid for (qid,) in _rows(unsure_release, "select qid from authors")}
    assert len(released) == 4
    for record_id, author_qid, evidence in rejected:
        counts = json.loads(evidence)
        assert counts["unsure"] > counts["books"] / 2 > 0, (record_id, counts)
        assert author_qid in released and record_id.startswith(f"{author_qid}:human_name:")
    # a rejected constraint is in no table a query is drawn from
    ids = [record_id for record_id, _, _ in rejected]
    kept = _rows(unsure_release, "select count(*) from constraints where list_contains(?, constraint_id)", [ids])
    assert kept == [(0,)]
