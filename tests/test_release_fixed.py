"""A release is a fixed thing (issue 30): release A, then B, then A's command again gives A
again (the same authors, the same bytes but the documented provenance tables); A with other
parameters is refused in one line; with --replace it is rebuilt, and its earlier evaluations
become stale and leave the default leaderboard. And --authors N means N released authors,
with no author an earlier release rejected drawn again."""

from __future__ import annotations

import json

import pytest

from kitab.app.runs import run_refresh
from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.errors import BadValue
from kitab.core.files import sha256_file
from kitab.core.params import WORKS_RULE
from kitab.core.release_commit import PROVENANCE_TABLES
from kitab.core.warehouse import Warehouse
from kitab.release.evaluation.run import evaluate_release
from kitab.release.leaderboard import leaderboard


def _run(wh, release, seed, authors, **kw):
    return run_refresh(
        source="mirror",
        snapshot=BUNDLED_SNAPSHOT,
        warehouse=wh,
        authors=authors,
        seed=seed,
        release=release,
        direct=True,
        **kw,
    )


def _released(wh, release) -> list[str]:
    return sorted(r["qid"] for r in Warehouse(wh).read_table("released_authors", [release]).to_pylist())


def _checksums(wh, release) -> dict:
    return json.loads(Warehouse(wh).ledger_row(release)["checksums"])


def _file_sums(wh, release) -> dict:
    """sha256 of each committed file, hashed from the disk (not read from the ledger)."""
    return {t: sha256_file(path) for t, path in Warehouse(wh).committed_files(release).items()}


def test_same_command_same_release_then_refused_then_replaced(tmp_path):
    wh = tmp_path / "wh"
    a = _run(wh, "A", 5, 12)
    a_authors, a_sums = _released(wh, "A"), _checksums(wh, "A")
    assert len(a_authors) == 12 and a["authors"]["released"] == 12
    assert json.loads(Warehouse(wh).ledger_row("A")["excluded_releases"]) == []

    answers = tmp_path / "answers.jsonl"
    query = Warehouse(wh).read_table("queries", ["A"]).to_pylist()[0]["query_id"]
    answers.write_text(json.dumps({"query_id": query, "response": ""}) + "\n")
    evaluate_release(wh, "A", answers, model="m")

    _run(wh, "B", 6, 12)
    assert not set(_released(wh, "B")) & set(a_authors)
    assert json.loads(Warehouse(wh).ledger_row("B")["excluded_releases"]) == ["A"]

    again = _run(wh, "A", 5, 12)  # A's own command again, after B: the same release
    assert _released(wh, "A") == a_authors
    assert again["requests_made"] == 0
    same = {t: s for t, s in a_sums.items() if t not in PROVENANCE_TABLES}
    assert {t: s for t, s in _checksums(wh, "A").items() if t not in PROVENANCE_TABLES} == same
    with Warehouse(wh).connect(release="A") as con:
        board = leaderboard(con, "A")
    assert [e["model"] for e in board["evaluations"]] == ["m"] and not board["evaluations"][0]["stale"]

    on_disk = _file_sums(wh, "A")
    assert on_disk == _checksums(wh, "A")  # the ledger names the bytes on disk
    with pytest.raises(BadValue) as refused:  # other parameters: refused, in one line, before any work
        _run(wh, "A", 5, 10)
    message = str(refused.value)
    assert "authors 12 -> 10" in message and "--replace" in message and message.count("\n") <= 1
    assert _checksums(wh, "A") == on_disk and _file_sums(wh, "A") == on_disk  # nothing changed
    assert _released(wh, "A") == a_authors

    replaced = _run(wh, "A", 5, 10, replace=True)
    assert replaced["authors"]["released"] == 10
    row = Warehouse(wh).ledger_row("A")
    history = json.loads(row["history"])
    assert len(history) == 1 and json.loads(history[0]["checksums"])["queries"] == a_sums["queries"]
    assert json.loads(row["config"])["authors"] == 10
    assert json.loads(row["config"])["works_rule"] == WORKS_RULE  # issue 31: the works rule, in the release
    with Warehouse(wh).connect(release="A") as con:
        default = leaderboard(con, "A")
        everything = leaderboard(con, "A", include_stale=True)
        stale_rows = con.execute("SELECT DISTINCT stale FROM evaluation_summary WHERE release = 'A'").fetchall()
    assert default["evaluations"] == [] and default["stale_left_out"] == 1
    assert [e["stale"] for e in everything["evaluations"]] == [True]
    assert stale_rows == [(True,)]


def test_authors_n_means_n_released_and_rejected_authors_are_not_drawn_again(tmp_path):
    wh = tmp_path / "wh"
    first = _run(wh, "first", 42, 40)
    assert first["authors"]["released"] == 40 and first["authors"]["drawn"] > 40  # some drawn were rejected
    rejected = {
        r["record_id"]
        for r in Warehouse(wh).read_table("rejects", ["first"]).to_pylist()
        if r["record_kind"] == "author"
    }
    assert len(rejected) == first["authors"]["drawn"] - 40
    second = _run(wh, "second", 43, 200, allow_fewer=True)  # more than the snapshot has: all are drawn
    drawn_second = {r["qid"] for r in Warehouse(wh).read_table("authors", ["second"]).to_pylist()}
    assert not drawn_second & rejected
    assert second["authors"]["excluded_rejected_before"] == len(rejected)
    assert second["authors"]["shortfall"] == 200 - second["authors"]["released"]
    with pytest.raises(BadValue, match="candidate authors are eligible"):
        _run(wh, "third", 44, 200)
