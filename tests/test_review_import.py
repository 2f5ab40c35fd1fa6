"""Issue 39, item 4: a review loop that is safe, through the real ``kitab`` command. The CSV a
spreadsheet opens holds no formula-leading cell and a title that starts with "=" or "-" comes
back exactly; an import is refused in one line, storing nothing, for a --warehouse typo (nothing
created), contradictory rows, a cell over the cap, malformed CSV (each with its line); duplicate
and unknown-book rows are counted, not stored silently; two imports at once keep every label
(20 rounds). benchmarks/round4/review.py runs the same probes."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core.errors import BadValue
from kitab.core.reviews import import_lock, labels_path, read_labels
from kitab.core.warehouse import Warehouse
from kitab.release.review import parse_review
from kitab.release.review_csv import CELL_CAP, FORMULA_LEAD, csv_bytes, csv_records, neutralise, restore
from tests.releases import dump_release
from tests.review_files import (
    concurrent_rounds,
    distinct_rows,
    hostile_title_release,
    read_export,
    write_filled,
)
from tests.test_cli_errors import kitab, kitab_cmd

RELEASE = "demo"
HEADER = "release,book_id,title,author,kind,state,evidence,sample,label\r\n"
TITLES = ["=1+2", "=HYPERLINK(\"http://x\",\"y\")", "+44 Poems", "-30-", "@home", "\tTabbed", "\rCR", "'Salem's Lot",
          "''", "'", "'=x", "", "Plain", "a=b", " =lead space"]  # fmt: skip


# -- the CSV's guarantees, as pure functions ---------------------------------------------------


@pytest.mark.parametrize("title", TITLES)
def test_a_formula_leading_title_is_neutralised_and_restored_exactly(title):
    cell = neutralise(title)
    assert cell[:1] not in FORMULA_LEAD and restore(cell) == title


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.text(max_size=30), min_size=3, max_size=3), min_size=1, max_size=5))
def test_any_cells_round_trip_through_the_file(rows):
    """What the export writes, the import reads back cell for cell; no written cell leads with a
    formula character."""
    fields = ("release", "title", "label")
    dicts = [{"release": "r", "title": t, "label": lab} for _, t, lab in rows]
    data = csv_bytes(dicts, fields)
    raw = [c for row in csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")) for c in row]
    assert not [c for c in raw if c[:1] in FORMULA_LEAD]
    got = [row for line, row in csv_records(data.decode("utf-8"), "f.csv")][1:]
    assert got == dicts


def test_malformed_files_are_refused_with_their_line():
    ok = "demo,b1,Emma,Jane Austen,human,yes,,decided,yes\r\n"
    with pytest.raises(BadValue, match=r"^f.csv line 3: a quote opened here is never closed"):
        parse_review(HEADER + ok + 'demo,"b2,Dune,F H,city,no,,decided,\r\n' + ok * 20, "f.csv")
    with pytest.raises(BadValue, match=r"^f.csv line 2: not valid CSV"):
        parse_review(HEADER + 'demo,"b1"x,Emma,J,human,yes,,decided,yes\r\n', "f.csv")
    with pytest.raises(BadValue, match=r"^f.csv line 3: 10 cells where the header has 9"):
        parse_review(HEADER + ok + "demo,b1,Emma, Jr,Jane Austen,human,yes,,decided,yes\r\n", "f.csv")
    with pytest.raises(BadValue, match=r"^f.csv line 2: 8 cells where the header has 9"):
        parse_review(HEADER + "demo,b1,Emma,Jane Austen,human,yes,,decided\r\n", "f.csv")
    # empty cells a spreadsheet adds after the last column, and blank rows, are no error
    assert len(parse_review(HEADER + ok.replace("\r\n", ",,\r\n") + ",,,,,,,,\r\n\r\n" + ok, "f.csv")) == 2


def test_the_cap_on_a_cell():
    row = "demo,b1,{},Jane Austen,human,yes,,decided,yes\r\n"
    assert parse_review(HEADER + row.format("x" * CELL_CAP), "f.csv")[0]["title"] == "x" * CELL_CAP
    with pytest.raises(BadValue, match=r"^f.csv line 2: a cell of 10,001 characters"):
        parse_review(HEADER + row.format("x" * (CELL_CAP + 1)), "f.csv")
    with pytest.raises(BadValue, match=r"^f.csv line 3: a cell over 10,000 characters"):
        parse_review(HEADER + row.format("a") + row.format("x" * 300_000), "f.csv")


# -- through the real command ------------------------------------------------------------------


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """One release of 8 authors from the bundled dump (the pipeline without Prefect)."""
    return dump_release(tmp_path_factory.mktemp("review") / "pristine", authors=8, seed=42, release=RELEASE)


@pytest.fixture
def wh(released, tmp_path) -> Path:
    shutil.copytree(released, tmp_path / "wh")
    return tmp_path / "wh"


@pytest.fixture(scope="module")
def exported(released, tmp_path_factory) -> tuple[list[str], list[dict]]:
    """Every (book, kind) row of the release, exported; plain ones (no quote, comma or line
    break in a cell: the probes below put the only ones in), one per label key."""
    path = tmp_path_factory.mktemp("export") / "all.csv"
    assert (
        kitab(
            "review", "export", "--release", RELEASE, "--out", path, "--sample", 100000, "--warehouse", released
        ).returncode
        == 0
    )
    fields, rows = read_export(path)
    return fields, [r for r in distinct_rows(rows) if not any(c in v for v in r.values() for c in '",\r\n')]


def one_line(result: subprocess.CompletedProcess, *needles: str) -> str:
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode != 0 and "Traceback" not in err and not result.stdout, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("kitab: error: "), err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def verify(wh: Path) -> str:
    result = kitab("verify", "--warehouse", wh)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


def test_formula_titles_are_exported_as_text_and_imported_exactly(tmp_path):
    """A release whose titles start with =, +, -, @ and ': the CSV holds none of them raw, and
    importing the filled file stores each title as the release has it."""
    wh = hostile_title_release(tmp_path, authors=6)
    path = tmp_path / "review.csv"
    result = kitab("review", "export", "--release", RELEASE, "--out", path, "--sample", 100000, "--warehouse", wh)
    assert result.returncode == 0, result.stderr
    with open(path, encoding="utf-8-sig", newline="") as fh:
        cells = [c for row in csv.reader(fh) for c in row]
    assert [c for c in cells if c.startswith("'=HYPERLINK(")], "the snapshot's formula titles reach the export"
    assert not [c for c in cells if c[:1] in FORMULA_LEAD]
    fields, rows = read_export(path)
    led = distinct_rows([r for r in rows if r["title"][:1] in ("=", "+", "-", "@", "'")])
    assert {r["title"][1] for r in led} >= {"=", "+", "-", "@", "'"}  # as exported: each behind an apostrophe
    result = kitab("review", "import", write_filled(tmp_path / "filled.csv", fields, led), "--warehouse", wh)
    assert result.returncode == 0, result.stderr
    with Warehouse(wh).connect(release=RELEASE) as con:
        titles = {t for (t,) in con.execute("SELECT canonical_title FROM books").fetchall()}
    stored = [r["title"] for r in read_labels(wh)]
    assert len(stored) == len(led) and set(stored) <= titles
    assert {t[:1] for t in stored} >= {"=", "+", "-", "@", "'"}


def test_a_warehouse_typo_is_refused_and_creates_nothing(exported, tmp_path):
    fields, rows = exported
    path = write_filled(tmp_path / "a.csv", fields, rows[:3])
    one_line(kitab("review", "import", path, "--warehouse", tmp_path / "wherehouse"), "no warehouse at", "wherehouse")
    assert not (tmp_path / "wherehouse").exists()


def refused_keeps_everything(wh: Path, result, *needles: str) -> None:
    """One line, the labels file as it was, the warehouse whole."""
    before = labels_path(wh).read_bytes()
    checked = verify(wh)
    one_line(result(), *needles)
    assert labels_path(wh).read_bytes() == before and verify(wh) == checked


@pytest.fixture
def labelled(wh, exported, tmp_path) -> Path:
    fields, rows = exported
    assert (
        kitab("review", "import", write_filled(tmp_path / "base.csv", fields, rows[:5]), "--warehouse", wh).returncode
        == 0
    )
    assert len(read_labels(wh)) == 5
    return wh


def test_contradictory_rows_are_refused_naming_both_lines(labelled, exported, tmp_path):
    fields, rows = exported
    path = write_filled(
        tmp_path / "c.csv", fields, [{**rows[6], "label": "yes"}, *rows[7:10], {**rows[6], "label": "no"}]
    )
    imp = lambda: kitab("review", "import", path, "--warehouse", labelled)  # noqa: E731
    refused_keeps_everything(labelled, imp, "lines 2 and 6", repr(rows[6]["title"]), "labelled yes and no")


def test_a_huge_cell_is_refused_with_its_line(labelled, exported, tmp_path):
    fields, rows = exported
    path = write_filled(tmp_path / "h.csv", fields, [rows[6], {**rows[7], "title": "x" * 300_000}, rows[8]])
    imp = lambda: kitab("review", "import", path, "--warehouse", labelled)  # noqa: E731
    refused_keeps_everything(labelled, imp, "line 3", "10,000 characters")


def test_an_unterminated_quote_is_refused_with_its_line(labelled, exported, tmp_path):
    fields, rows = exported
    lines = write_filled(tmp_path / "q.csv", fields, rows[6:18]).read_bytes().decode("utf-8-sig").split("\r\n")
    lines[3] = lines[3].replace(",", ',"', 1)  # line 4 opens a quote that never closes
    path = tmp_path / "cut.csv"
    path.write_text("\ufeff" + "\r\n".join(lines), encoding="utf-8")
    imp = lambda: kitab("review", "import", path, "--warehouse", labelled)  # noqa: E731
    refused_keeps_everything(labelled, imp, "line 4", "never closed")


def test_duplicate_and_unknown_rows_are_counted_not_stored(labelled, exported, tmp_path):
    fields, rows = exported
    unknown = [{**r, "title": f"No Such Book {i}"} for i, r in enumerate(rows[6:9])]
    path = write_filled(tmp_path / "m.csv", fields, [*rows[6:11], rows[6], rows[7], *unknown])
    result = kitab("review", "import", path, "--warehouse", labelled)
    out = result.stdout.decode()
    assert result.returncode == 0, result.stderr
    assert out.startswith(
        "5 labels imported (10 stored); 2 duplicate rows counted once (lines 7, 8); 3 unknown books"
    ), out
    assert "(lines 9, 10, 11: no committed release has" in out and len(out.strip().splitlines()) == 1
    assert len(read_labels(labelled)) == 10 and not any(r["title"].startswith("No Such") for r in read_labels(labelled))
    # a file of unknown books only (another warehouse's): refused
    only = write_filled(tmp_path / "u.csv", fields, unknown)
    imp = lambda: kitab("review", "import", only, "--warehouse", labelled)  # noqa: E731
    refused_keeps_everything(labelled, imp, "none of its 3 labelled books is in a committed release")


def test_twenty_rounds_of_two_imports_at_once_keep_every_label(wh, exported, tmp_path):
    fields, rows = exported
    half = min(60, len(rows) // 2)
    a = write_filled(tmp_path / "a.csv", fields, rows[:half])
    b = write_filled(tmp_path / "b.csv", fields, rows[half : 2 * half])
    got = concurrent_rounds(kitab_cmd(), wh, a, b, rounds=20)
    assert got["held"] == 20, got
    assert set(got["kept"]) == {2 * half}, got  # serialised: every round kept both files' labels


def test_an_import_that_cannot_get_the_lock_is_one_line(wh, exported, tmp_path):
    """Another import holding the labels for longer than --wait: refused, nothing stored."""
    fields, rows = exported
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom kitab.core.reviews import import_lock\n"
         f"with import_lock({str(wh)!r}, 0):\n    print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        path = write_filled(tmp_path / "a.csv", fields, rows[:3])
        one_line(kitab("review", "import", path, "--wait", 0.5, "--warehouse", wh), "another `kitab review import`")
        assert read_labels(wh) == []
    finally:
        holder.kill()
        holder.wait()
    with import_lock(wh, 5):  # the kernel dropped the killed holder's lock
        pass
