"""benchmarks/key_truth.py end to end on an invented fixture (tests/data/key_truth/): snapshot,
real pipeline, measurement equal to a hand count; and ``kitab review export --budget`` through
the real command on the release it built."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kitab.app.cli import app
from kitab.core.env import PROJECT_ROOT

FIXTURE = Path(__file__).parent / "data" / "key_truth" / "author_books_fixture.tsv"


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One build: the harness with --max-wrong 0.4, which the fixture's no-city-name slice (2 of
    4 wrong) exceeds, so it prints its result and exits 1."""
    work = tmp_path_factory.mktemp("key_truth")
    args = [sys.executable, str(PROJECT_ROOT / "benchmarks" / "key_truth.py"), "--data", str(FIXTURE)]
    # without the key-error bound: the hand count is of every query the fixture makes
    args += ["--json", "--simulate-review", "0.1", "--keep", str(work), "--max-wrong", "0.4", "--max-key-error", "1"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().endswith("measured wrong-key share above 0.4: no-city-name")
    return json.loads(done.stdout), work


def test_the_measurement_equals_the_hand_count(measured):
    """The fixture plants one wrong gold label per author of two (tests/data/key_truth/README.md):
    "The Quiet Garden" (human yes; the title rules say a sure no) for Mara Ellison, "The Open
    Road" (city yes) for Tomas Rell; every other decided title agrees with its label. So each
    one-constraint slice has 3 queries (one per author), 1 wrong. The two-constraint queries of
    the release: Mara's no-human-name + no-city-name (The Quiet Garden has no city, so it decides
    the human criterion: wrong, in both slices); the release's other no-human-name pairs are
    right."""
    result, _ = measured
    assert result["authors"] == {"labelled": 3, "released": 3, "not_released": []}
    assert result["titles"] == {"labelled": 36, "books": 36}
    got = {
        label: (m["queries_one"], m["wrong_one"], m["queries_two"], m["wrong_two"])
        for label, m in result["slices"].items()
    }
    assert got == {
        "human-name": (3, 1, 0, 0),
        "no-human-name": (3, 1, 4, 1),
        "city-name": (3, 1, 0, 0),
        "no-city-name": (3, 1, 1, 1),
    }
    assert result["slices"]["no-city-name"]["wrong_share"] == 0.5
    human, city = result["kinds"]["human"], result["kinds"]["city"]
    # human yes: 6 famous names decided, "The Zarvek Story" unsure; no: 27 plain, 1 unsure ("The
    # Salt Marsh"; human_v7 no longer doubts the three titles whose word is a city)
    assert (human["tp"], human["fp"], human["fn"], human["tn"], human["unsure_yes"], human["unsure_no"]) == (
        6, 0, 1, 27, 1, 1,
    )  # fmt: skip
    assert (city["tp"], city["fp"], city["fn"], city["tn"]) == (5, 0, 1, 30)
    # the release's own estimate is beside each measured share, and the queue's "before" is it
    for label, m in result["slices"].items():
        assert m["stated"]["queries"] == m["queries"]
        est = result["review"]["slices"][label]
        assert abs(est["estimated_before"] - m["stated"]["wrong_key"]) <= 6e-5
        assert est["estimated_after"] <= est["estimated_before"] and est["before"] == m["wrong_share"]
    assert result["review"]["budget"] == 7  # 10% of 72 (book, kind) rows


def test_review_export_budget_through_the_command(measured, tmp_path):
    _, work = measured
    out = tmp_path / "queue.csv"
    result = CliRunner().invoke(
        app,
        [
            "review",
            "export",
            "--release",
            "truth",
            "--out",
            str(out),
            "--budget",
            "5",
            "--warehouse",
            str(work / "warehouse"),
        ],
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert text.startswith("5 rows queued (5 to lower the key error, 0 unsure for coverage)")
    moves = dict(
        (label, (float(b), float(a))) for label, b, a in re.findall(r"([a-z-]+) ([0-9.]+)% -> ([0-9.]+)%", text)
    )
    assert set(moves) == {"human-name", "no-human-name", "city-name", "no-city-name"}
    assert all(a <= b for b, a in moves.values()) and any(a < b for b, a in moves.values())
    rows = list(csv.DictReader(out.open(encoding="utf-8-sig")))
    assert len(rows) == 5 and all(r["label"] == "" and r["state"] in ("yes", "no") for r in rows)
    assert all(r["sample"] == "queue:error" and float(r["gain"]) > 0 for r in rows)
    # the file is a review file: import reads it back
    for r in rows:
        r["label"] = r["state"]
    with out.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    refused = CliRunner().invoke(
        app,
        [
            "review",
            "export",
            "--release",
            "truth",
            "--out",
            str(out),
            "--budget",
            "0",
            "--warehouse",
            str(work / "warehouse"),
        ],
    )
    assert refused.exit_code != 0 and "--budget 0: a number of (book, kind) rows to label" in " ".join(
        refused.output.split()
    )
    imported = CliRunner().invoke(app, ["review", "import", str(out), "--warehouse", str(work / "warehouse")])
    assert imported.exit_code == 0 and "5 labels imported" in imported.output


def test_bad_bibliography_rows_are_one_line_errors(tmp_path):
    from kitab.core.errors import BadValue
    from kitab.simulate.generator.labelled import read_bibliographies

    header = "author\tqid\tbirth_year\ttitle\tyear\thuman\tcity\n"
    cases = {
        "author\ttitle\n": r"no column qid, birth_year, year, human, city",
        header + "A B\tQ12\t\tDune\t1965\t\t\n": r"line 2: birth_year is empty",
        header + "A B\tX12\t1920\tDune\t1965\t\t\n": r"line 2: qid 'X12'",
        header + "A B\t\t1920\tDune\tsoon\t\t\n": r"line 2: year 'soon'",
        header + "A B\t\t1920\tDune\t1965\t\t\nA B\t\t1921\tEmma\t1966\t\t\n": r"line 3: birth_year 1921, but 1920",
    }
    for i, (text, message) in enumerate(cases.items()):
        path = tmp_path / f"author_books_{i}.tsv"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(BadValue, match=message):
            read_bibliographies([path])
    path.write_text(header + "A B\t\t1920\tDune\t1965\tPaul Atreides; Jessica\t\n", encoding="utf-8")
    (author,) = read_bibliographies([path])
    assert author.titles[0].spans == {"human": ("Paul Atreides", "Jessica"), "city": ()}
    assert [author.titles[0].label(k) for k in ("human", "city")] == ["yes", "no"]
