"""Issue 39, item 4: the review loop (``kitab review export`` / ``kitab review import``), probed
through the real command on a copy of the clean release: formula-leading titles in the CSV a
spreadsheet opens, two imports at once, a --warehouse typo, contradictory rows, a huge cell, an
unterminated quote, duplicate and unknown-book rows. The same probes run in
tests/test_review_import.py."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from benchmarks import faults
from tests.review_files import concurrent_rounds, distinct_rows, read_export, write_filled

SURFACE = "review import/export"
ROUNDS = 20
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _labels(wh: Path) -> list[dict]:
    from kitab.core.reviews import read_labels

    return read_labels(wh)


def whole(wh: Path, clean_verify: dict) -> bool:
    """``kitab verify`` passes with the clean copy's counts."""
    got = faults.kitab_cli("verify", "--warehouse", wh)
    return got["exit"] == 0 and got["stdout"] == clean_verify["stdout"]


def refused(case: str, wh: Path, verify: dict, result: dict, needle: str, before: bytes | None) -> dict:
    """A refusal probe: one stderr line containing ``needle``, rc != 0, the labels file as it was
    and the warehouse whole."""
    from kitab.core.reviews import labels_path

    after = labels_path(wh).read_bytes() if labels_path(wh).exists() else None
    held = faults.spoke(result) and needle in result["first"] and after == before and whole(wh, verify)
    return faults.probe(case, SURFACE, held, f"rc {result['exit']}, {result['lines']} line(s)", result)


def formula_probe(out: Path) -> dict:
    """A release whose titles start with =, +, -, @, ': no exported cell starts with a formula
    character, and the import stores each title exactly as the release has it."""
    from kitab.core.warehouse import Warehouse

    wh = out / "formula-wh"
    if not (wh / "tables").exists():
        build = subprocess.run(
            [sys.executable, "-c", f"from tests.review_files import hostile_title_release as b; b({str(out)!r})"],
            cwd=faults.ROOT,
            capture_output=True,
            text=True,
        )
        if build.returncode != 0:
            return faults.probe("review export: formula-leading titles", SURFACE, None, build.stderr[-200:])
    path = out / "formula.csv"
    export = faults.kitab_cli(
        "review", "export", "--release", "demo", "--out", path, "--sample", 100000, "--warehouse", wh
    )
    with open(path, encoding="utf-8-sig", newline="") as fh:
        cells = [c for row in csv.reader(fh) for c in row]
    raw = sum(c[:1] in FORMULA for c in cells)
    fields, rows = read_export(path)
    led = distinct_rows([r for r in rows if r["title"][:1] in (*FORMULA, "'")])
    filled = faults.kitab_cli(
        "review", "import", write_filled(out / "formula-filled.csv", fields, led), "--warehouse", wh
    )
    with Warehouse(wh).connect(release="demo", warn=False) as con:
        titles = {t for (t,) in con.execute("SELECT canonical_title FROM books").fetchall()}
    stored = [r["title"] for r in _labels(wh)]
    exact = sum(t in titles for t in stored)
    held = export["exit"] == 0 and filled["exit"] == 0 and raw == 0 and led and exact == len(stored) == len(led)
    measured = f"{raw} of {len(cells)} cells start with = + - @ tab CR; {exact} of {len(stored)} imported titles exact"
    return faults.probe("review export: formula-leading titles", SURFACE, bool(held), measured, export, filled)


def probes(clean: Path, out: Path) -> list[dict]:
    from kitab.core.reviews import labels_path
    from kitab.core.warehouse import Warehouse

    out = out / "review"
    out.mkdir(parents=True, exist_ok=True)
    release = Warehouse(clean).committed_releases()[0]
    wh = faults.copy_release(clean, out / "wh")
    verify = faults.kitab_cli("verify", "--warehouse", wh)
    every = out / "all.csv"
    faults.kitab_cli("review", "export", "--release", release, "--out", every, "--sample", 100000, "--warehouse", wh)
    fields, rows = read_export(every)
    # plain rows (no quote, comma or newline in a cell): the unterminated quote below is the only one
    rows = [r for r in distinct_rows(rows) if not any(c in v for v in r.values() for c in '",\r\n')]
    rows_out: list[dict] = [formula_probe(out)]

    half = min(60, len(rows) // 2)
    a = write_filled(out / "a.csv", fields, rows[:half])
    b = write_filled(out / "b.csv", fields, rows[half : 2 * half])
    got = concurrent_rounds([sys.executable, "-m", "kitab.app.cli"], wh, a, b, ROUNDS, cwd=faults.ROOT)
    rows_out.append(
        faults.probe(
            f"two review imports at once ({got['rounds']} rounds)",
            SURFACE,
            got["held"] == got["rounds"],
            f"{got['held']} of {got['rounds']} rounds kept every label or refused one import in a line "
            f"(labels kept: {min(got['kept'])}-{max(got['kept'])} of {2 * half}; slowest round {got['seconds']:.1f} s)",
        )
    )

    labels_path(wh).unlink(missing_ok=True)
    typo = out / "no-such-wh"
    result = faults.kitab_cli("review", "import", a, "--warehouse", typo)
    rows_out.append(
        faults.probe(
            "review import --warehouse with a typo",
            SURFACE,
            faults.spoke(result) and not typo.exists(),
            f"rc {result['exit']}, {result['lines']} line(s), folder created: {typo.exists()}",
            result,
        )
    )

    write_filled(out / "base.csv", fields, rows[:5])
    faults.kitab_cli("review", "import", out / "base.csv", "--warehouse", wh)
    before = labels_path(wh).read_bytes()

    first = {**rows[0], "label": "yes"}
    clash = write_filled(out / "clash.csv", fields, [first, *rows[1:4], {**rows[0], "label": "no"}])
    result = faults.kitab_cli("review", "import", clash, "--warehouse", wh)
    rows_out.append(refused("review import: one book labelled yes and no", wh, verify, result, "lines 2 and 6", before))

    huge = write_filled(out / "huge.csv", fields, [rows[0], {**rows[1], "title": "x" * 300_000}, rows[2]])
    result = faults.kitab_cli("review", "import", huge, "--warehouse", wh)
    rows_out.append(refused("review import: a 300,000-character cell", wh, verify, result, "line 3", before))

    text = write_filled(out / "quote.csv", fields, rows[:12]).read_bytes().decode("utf-8-sig").split("\r\n")
    text[3] = text[3].replace(",", ',"', 1)  # line 4: a cell opens a quote that never closes
    cut = out / "quote-cut.csv"
    cut.write_text("\ufeff" + "\r\n".join(text), encoding="utf-8")
    result = faults.kitab_cli("review", "import", cut, "--warehouse", wh)
    rows_out.append(refused("review import: an unterminated quote", wh, verify, result, "line 4", before))

    unknown = [{**r, "title": f"No Such Book {i}"} for i, r in enumerate(rows[5:8])]
    mixed = write_filled(out / "mixed.csv", fields, [*rows[5:10], rows[5], rows[6], *unknown])
    result = faults.kitab_cli("review", "import", mixed, "--warehouse", wh)
    stored = len(_labels(wh))
    said = "2 duplicate" in result["stdout"] and "3 unknown" in result["stdout"]
    rows_out.append(
        faults.probe(
            "review import: 2 duplicate and 3 unknown-book rows",
            SURFACE,
            result["exit"] == 0 and said and stored == 10,
            f"rc {result['exit']}, {stored} labels stored (10 distinct known), counted in the summary: {said}",
            result,
        )
    )
    return rows_out
