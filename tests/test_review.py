"""The review loop (issue 28): kitab review export / import, the labels as review evidence in
the next build, and the report's measured precision / recall (kitab/release/review.py)."""

from __future__ import annotations

import csv

import pytest
from typer.testing import CliRunner

from kitab.app.cli import app
from kitab.core.errors import BadValue
from kitab.core.reviews import read_labels
from kitab.core.warehouse import Warehouse
from kitab.release.review import parse_review, review_rows, wilson

runner = CliRunner()
HEADER = "release,book_id,title,author,kind,state,evidence,sample,label\n"


def kitab(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def test_wilson_and_seeded_sample():
    lo, hi = wilson(9, 10)
    assert round(lo, 3) == 0.596 and round(hi, 3) == 0.982  # the textbook value
    assert wilson(0, 0) == (0.0, 1.0)
    states = [{"book_id": f"b{i}", "kind": "human", "state": "yes" if i % 3 else "unsure"} for i in range(30)]
    rows = review_rows(states, 5, seed=1)
    assert sum(r["sample"] == "unsure" for r in rows) == 10 and len(rows) == 15
    assert rows == review_rows(states, 5, seed=1) and rows != review_rows(states, 5, seed=2)


def test_bad_rows_are_one_line_errors_naming_the_line():
    ok = HEADER + "demo,b1,Emma,Jane Austen,human,yes,title:rule,decided,YES\ndemo,b2,Dune,F H,city,no,,decided,\n"
    assert [(r["title"], r["label"], r["version"]) for r in parse_review(ok, "f.csv")] == [("Emma", "yes", "review_v1")]
    with pytest.raises(BadValue, match=r"^f.csv line 4: label 'maybe': write yes or no"):
        parse_review(ok + "demo,b3,Ada,V N,human,unsure,,unsure,maybe\n", "f.csv")
    with pytest.raises(BadValue, match=r"f.csv line 2: kind 'person'"):
        parse_review(HEADER + "demo,b1,Emma,J,person,yes,,decided,yes\n", "f.csv")
    with pytest.raises(BadValue, match="no column label"):
        parse_review("title,author,kind\nEmma,J,human\n", "f.csv")


def test_round_trip_export_label_import_rebuild(tmp_path):
    """A label for an unsure book decides it in the next build; the report's P / R move with it.
    The rebuild changes a committed release, so (issue 30) it is refused unless --replace."""
    first = tmp_path / "wh1"
    kitab("demo", "--warehouse", first, "--authors", 10)
    out = tmp_path / "review.csv"
    kitab("review", "export", "--release", "demo", "--out", out, "--sample", 60, "--seed", 7, "--warehouse", first)
    rows = list(csv.DictReader(out.open(encoding="utf-8-sig")))
    assert all(r["label"] == "" for r in rows) and {r["sample"] for r in rows} == {"unsure", "decided"}
    # a kind with an unsure book and a decided "yes" in the sample
    unsure, wrong = next(
        (u, w)
        for kind in ("city", "human")
        for u in rows
        if u["kind"] == kind and u["state"] == "unsure"
        for w in rows
        if w["kind"] == kind and w["state"] == "yes"
    )
    unsure["label"], wrong["label"] = "yes", "no"  # the reviewer: the key missed one, wrongly said yes to one
    with out.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert "2 labels imported" in kitab("review", "import", out, "--warehouse", first)
    assert [r["label"] for r in read_labels(first)] == ["yes", "no"]
    kind = unsure["kind"]
    before = kitab("report", "--release", "demo", "--warehouse", first)
    assert f"| {kind} | 2 | 1 | 0.000 [0.000, 0.793] | n/a |" in before  # the wrong yes; the unsure one uncounted

    refused = runner.invoke(app, ["demo", "--warehouse", str(first), "--authors", "10"])
    # the labels would change the committed release: refused before any work, naming them, unless --replace
    assert refused.exit_code != 0 and "review labels changed (2 labels since the last build" in str(refused.exception)
    assert "--replace" in str(refused.exception)
    kitab("demo", "--warehouse", first, "--authors", 10, "--replace")
    with Warehouse(first).connect(release="demo") as con:
        got = dict(
            con.execute(
                "SELECT book_id, state || ' ' || evidence FROM book_entities WHERE kind = ? AND book_id IN (?, ?)",
                [kind, unsure["book_id"], wrong["book_id"]],
            ).fetchall()
        )
    assert got[unsure["book_id"]].startswith("yes ") and got[unsure["book_id"]].endswith("review:yes")
    assert got[wrong["book_id"]].startswith("no ") and got[wrong["book_id"]].endswith("review:no")
    after = kitab("report", "--release", "demo", "--warehouse", first)
    assert f"| {kind} | 2 | 0 | 1.000 [0.207, 1.000] | 1.000 [0.207, 1.000] |" in after
