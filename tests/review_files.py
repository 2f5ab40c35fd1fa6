"""Review files for the review-loop tests and probes (issue 39, item 4).

A snapshot whose works carry spreadsheet-formula titles (issue 39, item 4): the bundled
snapshot with every third work's title given a leading "=", "+", "-", "@", "'" or a whole
``=HYPERLINK(...)``, its manifest's checksums redone. A release built from it exports such titles
to the review CSV. Used by tests/test_review_import.py and benchmarks/round4/review.py (a plain
module, no pytest)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.files import sha256_file

WORKS = "ol_dump_works.txt.gz"
# (prefix, keep the old title after it): what a spreadsheet would read as a formula, and an
# apostrophe-led title (the escape's own character)
PREFIXES = (
    ('=HYPERLINK("http://127.0.0.1/x","', True),
    ("=1+2 ", True),
    ("+", True),
    ("-", True),
    ("@", True),
    ("'", True),
)


def formula_title(title: str, i: int) -> str:
    prefix, keep = PREFIXES[i % len(PREFIXES)]
    return prefix + title + ('")' if prefix.startswith("=HYPERLINK") else "") if keep else prefix


def hostile_title_snapshot(folder: Path, every: int = 3) -> Path:
    """Copy the bundled snapshot to ``folder`` with every ``every``-th work retitled."""
    shutil.copytree(BUNDLED_SNAPSHOT, folder)
    lines = gzip.decompress((folder / WORKS).read_bytes()).decode("utf-8").splitlines(keepends=True)
    out = []
    for i, line in enumerate(lines):
        cols = line.rstrip("\n").split("\t")
        record = json.loads(cols[4])
        if i % every == 0 and record.get("title"):
            record["title"] = formula_title(record["title"], i // every)
            cols[4] = json.dumps(record, ensure_ascii=False)
        out.append("\t".join(cols) + "\n")
    (folder / WORKS).write_bytes(gzip.compress("".join(out).encode("utf-8"), mtime=0))
    manifest = json.loads((folder / "MANIFEST.json").read_text(encoding="utf-8"))
    manifest["checksums"][WORKS] = sha256_file(folder / WORKS)
    (folder / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder


def hostile_title_release(out: str | Path, authors: int = 10) -> Path:
    """Release ``demo`` of ``authors`` authors (seed 42) from the retitled snapshot, in
    ``out``/formula-wh (its snapshot in ``out``/formula-snapshot)."""
    from tests.releases import dump_release

    out = Path(out)
    snapshot = hostile_title_snapshot(out / "formula-snapshot")
    return dump_release(out / "formula-wh", authors=authors, seed=42, release="demo", snapshot=snapshot)


# -- filled review files ----------------------------------------------------------------------


def read_export(path: Path) -> tuple[list[str], list[dict]]:
    """An exported review CSV: its header and rows (as a person's spreadsheet reads it)."""
    import csv

    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def write_filled(path: Path, fields: list[str], rows: list[dict], label: str = "yes") -> Path:
    """``rows`` with their label column set to ``label`` (unless a row has one), as a spreadsheet
    saves it: UTF-8 with a BOM, CRLF."""
    import csv

    with open(path, "w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, lineterminator="\r\n")
        writer.writeheader()
        writer.writerows({**r, "label": r.get("label") or label} for r in rows)
    return path


def label_keys(rows) -> set[tuple[str, str, str]]:
    return {(r["title"], r["author"], r["kind"]) for r in rows}


def distinct_rows(rows: list[dict]) -> list[dict]:
    """Rows with distinct label keys (the normalised title and author, and the kind)."""
    from tasks.book_evidence import review_key

    seen, out = set(), []
    for r in rows:
        key = (*review_key(r["title"], r["author"]), r["kind"])
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def stored_before(n: int) -> list[dict]:
    """``n`` labels a warehouse already holds (earlier reviews; their books need not be in a
    release): what each import reads, merges and rewrites, so its read-to-write takes as long as
    a warehouse with a history of reviews makes it (with 10,000: ~0.5 s), not a few ms."""
    return [
        {"version": "review_v1", "title": f"Earlier Title {i}", "author": "Earlier Author", "kind": "human",
         "label": "yes", "release": "old", "book_id": f"old{i}", "exported_state": "unsure"}
        for i in range(n)
    ]  # fmt: skip


def concurrent_rounds(
    kitab: list[str], wh: Path, a: Path, b: Path, rounds: int, cwd: Path | None = None, before: int = 10_000
) -> dict:
    """``rounds`` times: ``kitab review import`` of ``a`` and of ``b`` started together (two
    processes) on ``wh`` holding ``before`` earlier labels (:func:`stored_before`). A round holds
    if both succeed and every label (the earlier ones and both files') is stored, or one is
    refused in one stderr line and every label of the other is."""
    import subprocess
    import time

    from kitab.core.reviews import read_labels, write_labels

    earlier = stored_before(before)
    old = label_keys(earlier)
    want = {p: old | label_keys(distinct_rows(read_export(p)[1])) for p in (a, b)}
    held, kept, seconds, refusals = 0, [], [], []
    for _ in range(rounds):
        write_labels(wh, earlier)
        started = time.monotonic()
        procs = {
            p: subprocess.Popen(
                [*kitab, "review", "import", str(p), "--warehouse", str(wh)],
                cwd=cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for p in (a, b)
        }
        done = {
            p: (proc.communicate(timeout=300)[1].strip().splitlines(), proc.returncode) for p, proc in procs.items()
        }
        seconds.append(time.monotonic() - started)
        stored = label_keys(read_labels(wh))
        kept.append(len(stored - old))
        ok = [p for p, (_, rc) in done.items() if rc == 0]
        bad = [lines for _, (lines, rc) in done.items() if rc != 0]
        refusals += bad
        if len(ok) == 2:
            held += stored == want[a] | want[b]
        elif len(ok) == 1 and len(bad[0]) == 1:
            held += stored == want[ok[0]]
    return {"held": held, "rounds": rounds, "kept": kept, "seconds": max(seconds), "refusals": refusals}
