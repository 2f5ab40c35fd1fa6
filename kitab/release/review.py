"""The review loop (issue 28): the people who publish the benchmark label what the key left
unsure, and a random sample of what it decided, and every later build uses their labels.

- :func:`export_review`: ``kitab review export --release R --out FILE``: a CSV (UTF-8 with a
  BOM, so a spreadsheet opens it as such) of the release's unsure (book, kind) rows plus a
  seeded random sample of its decided ones, with title, author, kind, state, evidence and an
  empty ``label`` column to fill with yes / no; formula-leading cells neutralised
  (kitab/release/review_csv.py). Written atomically.
- :func:`import_review`: ``kitab review import FILE``: the filled labels into the warehouse's
  review labels (kitab/core/reviews.py, version ``review_v1``, keyed by normalised title and
  author and kind; a later label replaces an earlier one). A row left blank is not a label; a
  malformed file, a bad row or two rows labelling one book two ways stop the import with one
  line naming the line, and nothing is stored; repeated rows and rows of unknown books are
  counted in the summary. One import at a time per warehouse (its import lock).
- :func:`review_quality`: per kind, the labelled books of a release against their current
  states: precision and recall of "yes" among the decided ones, with 95% Wilson intervals,
  and how many are unsure (``kitab report``'s "Reviewed sample" section).
"""

from __future__ import annotations

import random
from pathlib import Path

import duckdb

from kitab.core.errors import BadValue
from kitab.core.files import write_bytes
from kitab.core.proportions import wilson
from kitab.core.reviews import VERSION, import_lock, read_labels, write_labels
from kitab.release.review_csv import csv_bytes, csv_records
from tasks.book_evidence import review_key

FIELDS = ("release", "book_id", "title", "author", "kind", "state", "evidence", "sample", "label")
LABELS = {"yes": "yes", "no": "no", "y": "yes", "n": "no"}

_STATES_SQL = """
    SELECT e.book_id, b.canonical_title AS title, coalesce(a.name, '') AS author, e.kind, e.state, e.evidence
    FROM book_entities e
    JOIN books b ON b.release = e.release AND b.book_id = e.book_id
    LEFT JOIN authors a ON a.release = e.release AND a.qid = e.author_qid
    WHERE e.release = ?
    ORDER BY e.book_id, e.kind
"""


def release_states(con: duckdb.DuckDBPyConnection, release: str) -> list[dict]:
    """Each (book, kind) of ``release`` with its title, author, state and evidence."""
    cur = con.execute(_STATES_SQL, [release])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def review_rows(states: list[dict], sample: int, seed: int) -> list[dict]:
    """The unsure rows, then ``sample`` decided rows drawn with ``seed`` (the same seed and
    release give the same file); ``sample`` says which list a row came from."""
    unsure = [dict(r, sample="unsure") for r in states if r["state"] == "unsure"]
    decided = [r for r in states if r["state"] != "unsure"]
    drawn = random.Random(seed).sample(decided, min(sample, len(decided)))
    drawn.sort(key=lambda r: (r["book_id"], r["kind"]))
    return unsure + [dict(r, sample="decided") for r in drawn]


def write_review_file(out: Path, rows: list[dict], fields: tuple[str, ...], release: str) -> None:
    """The review CSV (kitab/release/review_csv.py: UTF-8 with a BOM, CRLF, formula-leading
    cells neutralised), label column empty, written to a temp file, then renamed."""
    write_bytes(out, csv_bytes([{**r, "release": release, "label": ""} for r in rows], fields))


def export_review(con: duckdb.DuckDBPyConnection, release: str, out: Path, sample: int = 50, seed: int = 0) -> dict:
    if sample < 0:
        raise BadValue(f"--sample {sample}: a count of decided rows, 0 or more")
    states = release_states(con, release)
    if not states:
        raise BadValue(f"release {release} has no book_entities rows to review")
    rows = review_rows(states, sample, seed)
    write_review_file(out, rows, FIELDS, release)
    return {
        "unsure": sum(r["sample"] == "unsure" for r in rows),
        "decided": sum(r["sample"] == "decided" for r in rows),
    }


def _dicts(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    return con.sql(sql).to_arrow_table().to_pylist()


def queue_rows(con: duckdb.DuckDBPyConnection, release: str, budget: int) -> tuple[list[dict], dict]:
    """The review queue's ``budget`` rows of the release ``con`` is scoped to (kitab/release/
    review_queue.py), each with its ``gain``, and per entity slice the estimated wrong-key share
    before and after they are labelled: ``{label: (before, after)}``."""
    from kitab.release.review_queue import entity_queries, estimated_wrong, labelled_errors, review_queue, row_errors

    states = _dicts(con, "SELECT * FROM book_entities ORDER BY book_id, kind")
    queries = entity_queries(
        _dicts(con, "SELECT query_id, author_qid, n_constraints, constraint_ids FROM queries ORDER BY query_id"),
        _dicts(
            con,
            "SELECT constraint_id, spec, entity_kind, mapped_book_ids FROM constraints "
            "WHERE constraint_id IN (SELECT unnest(constraint_ids) FROM queries) ORDER BY constraint_id",
        ),
        states,
    )
    errors = row_errors(states)
    picks = review_queue(queries, errors, budget)
    before = estimated_wrong(queries, errors)
    after = estimated_wrong(queries, labelled_errors(errors, [p["row"] for p in picks]))
    by_row = {(r["book_id"], r["kind"]): r for r in release_states(con, release)}
    rows = [dict(by_row[p["row"]], sample=f"queue:{p['why']}", gain=f"{p['gain']:.6f}") for p in picks]
    return rows, {label: (before[label]["wrong_key"], after[label]["wrong_key"]) for label in before}


def export_queue(con: duckdb.DuckDBPyConnection, release: str, out: Path, budget: int) -> dict:
    """``kitab review export --budget N``: the queue's rows, best first, with their ``gain``
    (expected wrong keys removed by the label) and ``sample`` = queue:error or queue:coverage."""
    if budget <= 0:
        raise BadValue(f"--budget {budget}: a number of (book, kind) rows to label, 1 or more")
    rows, slices = queue_rows(con, release, budget)
    write_review_file(out, rows, (*FIELDS[:-1], "gain", "label"), release)
    return {
        "queued": len(rows),
        "error": sum(r["sample"] == "queue:error" for r in rows),
        "coverage": sum(r["sample"] == "queue:coverage" for r in rows),
        "slices": slices,
    }


def format_queue_summary(counts: dict, out: Path) -> str:
    """The export's summary line: rows, and per slice the estimated wrong-key share before -> after."""
    moves = ", ".join(f"{label} {100 * b:.1f}% -> {100 * a:.1f}%" for label, (b, a) in counts["slices"].items())
    return (
        f"{counts['queued']} rows queued ({counts['error']} to lower the key error, {counts['coverage']} unsure "
        f"for coverage) -> {out}; estimated wrong-key share once labelled: {moves or 'no entity query'}"
    )


def parse_review(text: str, name: str = "FILE", kinds: tuple[str, ...] | None = None) -> list[dict]:
    """The labelled rows of an exported (and filled) CSV, each with its ``line``; blank labels
    are skipped. Malformed CSV (review_csv.csv_records), a missing column or a bad row ->
    BadValue naming the file and line. ``kinds``: default, every registered entity kind
    (tasks/entities/registry.py)."""
    if kinds is None:
        from tasks.entities.registry import entity_kinds

        kinds = tuple(k.name for k in entity_kinds())
    records = csv_records(text, name)
    _, header = next(records, (1, {}))
    missing = [c for c in ("title", "author", "kind", "label") if c not in header]
    if missing:
        raise BadValue(f"{name}: no column {', '.join(missing)} (export one with `kitab review export`)")
    out = []
    for line, row in records:
        label = row["label"].strip().casefold()
        if not label:
            continue
        if label not in LABELS:
            raise BadValue(f"{name} line {line}: label {row['label']!r}: write yes or no (or leave it empty)")
        if row["kind"].strip() not in kinds:
            raise BadValue(f"{name} line {line}: kind {row['kind']!r}: one of {', '.join(kinds)}")
        if not review_key(row["title"], "")[0]:
            raise BadValue(f"{name} line {line}: the title is empty")
        out.append(
            {
                "version": VERSION,
                "title": row["title"],
                "author": row["author"],
                "kind": row["kind"].strip(),
                "label": LABELS[label],
                "release": row.get("release", ""),
                "book_id": row.get("book_id", ""),
                "exported_state": row.get("state", ""),
                "line": line,
            }
        )
    return out


def label_key(row: dict) -> tuple[str, str, str]:
    """What a label is stored by: the normalised title and author, and the kind."""
    return (*review_key(row["title"], row["author"]), row["kind"])


def distinct_labels(rows: list[dict], name: str = "FILE") -> tuple[list[dict], list[int]]:
    """``rows`` once per label key, and the lines that repeat an earlier row's label. Two rows
    labelling one book and kind two ways -> BadValue naming both lines."""
    first: dict[tuple, dict] = {}
    repeats = []
    for r in rows:
        seen = first.setdefault(label_key(r), r)
        if seen is r:
            continue
        if seen["label"] != r["label"]:
            raise BadValue(
                f"{name} lines {seen['line']} and {r['line']}: {r['title']!r} by {r['author'] or 'no author'} "
                f"({r['kind']}) is labelled {seen['label']} and {r['label']}; keep one"
            )
        repeats.append(r["line"])
    return list(first.values()), repeats


_BOOKS_SQL = """
    SELECT DISTINCT b.canonical_title, coalesce(a.name, ''), e.kind
    FROM book_entities e
    JOIN books b ON b.release = e.release AND b.book_id = e.book_id
    LEFT JOIN authors a ON a.release = e.release AND a.qid = e.author_qid
"""


def known_books(warehouse: Path) -> set[tuple[str, str, str]]:
    """The label key of every (book, kind) of every committed release: what a label can decide."""
    from kitab.core.warehouse import Warehouse

    with Warehouse(warehouse).connect() as con:
        return {(*review_key(t, a), k) for t, a, k in con.execute(_BOOKS_SQL).fetchall()}


def import_review(warehouse: Path, path: Path, wait: float = 60.0) -> dict:
    """Store ``path``'s labels; a label for a (title, author, kind) already stored replaces it.
    Everything is checked before the labels are read: a malformed file, a bad or contradictory
    row stores nothing. A repeated row counts once; a row of a book no committed release has is
    not stored (both are counted: ``duplicates``, ``unknown``, their lines). The read, merge and
    write hold the warehouse's import lock (kitab/core/reviews.import_lock), waiting up to
    ``wait`` seconds for another import, so two imports at once both keep their labels."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:  # newline="": a CR in a cell stays a CR
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadValue(f"{path}: cannot read it as UTF-8 text ({exc})") from None
    labels, duplicates = distinct_labels(parse_review(text, str(path)), str(path))
    known = known_books(warehouse)
    new = [r for r in labels if label_key(r) in known]
    unknown = [r["line"] for r in labels if label_key(r) not in known]
    if unknown and not new:
        raise BadValue(
            f"{path}: none of its {len(unknown)} labelled books is in a committed release of {warehouse} "
            "(is it the warehouse the file was exported from?); nothing stored"
        )
    fresh = {label_key(r) for r in new}
    with import_lock(warehouse, wait):
        kept = [r for r in read_labels(warehouse) if label_key(r) not in fresh]
        if new:
            write_labels(warehouse, kept + new)
    return {"imported": len(new), "stored": len(kept) + len(new), "duplicates": duplicates, "unknown": unknown}


def _lines(lines: list[int], most: int = 5) -> str:
    shown = ", ".join(map(str, lines[:most]))
    return f"line{'s' if len(lines) > 1 else ''} {shown}{', ...' if len(lines) > most else ''}"


def format_import_summary(counts: dict) -> str:
    """The import's one summary line: labels stored, and the rows counted but not stored."""
    parts = [f"{counts['imported']} labels imported ({counts['stored']} stored)"]
    if counts["duplicates"]:
        n = len(counts["duplicates"])
        parts.append(f"{n} duplicate row{'s' * (n > 1)} counted once ({_lines(counts['duplicates'])})")
    if counts["unknown"]:
        n = len(counts["unknown"])
        parts.append(
            f"{n} unknown book{'s' * (n > 1)} not stored ({_lines(counts['unknown'])}: "
            "no committed release has that title, author and kind)"
        )
    return (
        "; ".join(parts) + "; rebuild a release with --replace to use them "
        "(the same authors; only what the labels decide changes)"
    )


def review_quality(con: duckdb.DuckDBPyConnection, release: str, labels: list[dict]) -> dict[str, dict]:
    """kind -> the release's labelled (book, kind) rows against their current states: ``n``
    labelled, ``unsure``, and among the decided ``tp``/``fp``/``fn``, precision and recall of
    "yes" with Wilson 95% intervals."""
    lookup = {(*review_key(r["title"], r["author"]), r["kind"]): r["label"] for r in labels}
    out: dict[str, dict] = {}
    for r in release_states(con, release):
        label = lookup.get((*review_key(r["title"], r["author"]), r["kind"]))
        if label is None:
            continue
        q = out.setdefault(r["kind"], {"n": 0, "unsure": 0, "tp": 0, "fp": 0, "fn": 0, "tn": 0})
        q["n"] += 1
        if r["state"] == "unsure":
            q["unsure"] += 1
        else:
            q[
                {("yes", "yes"): "tp", ("yes", "no"): "fp", ("no", "yes"): "fn", ("no", "no"): "tn"}[r["state"], label]
            ] += 1
    for q in out.values():
        q["precision"] = q["tp"] / (q["tp"] + q["fp"]) if q["tp"] + q["fp"] else None
        q["precision_ci"] = wilson(q["tp"], q["tp"] + q["fp"])
        q["recall"] = q["tp"] / (q["tp"] + q["fn"]) if q["tp"] + q["fn"] else None
        q["recall_ci"] = wilson(q["tp"], q["tp"] + q["fn"])
    return dict(sorted(out.items()))


def review_section(con: duckdb.DuckDBPyConnection, release: str, warehouse: Path) -> str:
    """``kitab report``'s "Reviewed sample" section ('' without labels for this release)."""
    quality = review_quality(con, release, read_labels(warehouse))
    if not quality:
        return ""

    def fmt(value, ci) -> str:
        return "n/a" if value is None else f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"

    lines = [
        "## Reviewed sample",
        "",
        f"Books labelled by a reviewer (`kitab review import`, {VERSION}) against this release's states;",
        'precision and recall of "yes" among the decided ones, 95% Wilson interval. A reviewed book is',
        "decided by its label in every build after the import, so a rebuilt release's figures count it.",
        "",
        "| kind | labelled | unsure | precision | recall |",
        "| --- | --- | --- | --- | --- |",
    ]
    for kind, q in quality.items():
        lines.append(
            f"| {kind} | {q['n']} | {q['unsure']} | {fmt(q['precision'], q['precision_ci'])} | {fmt(q['recall'], q['recall_ci'])} |"
        )
    return "\n".join(lines) + "\n"
