"""The share of entity queries whose key holds a wrong book, *measured* on labelled real
bibliographies (issue 37, item 7), beside the release's own estimate (docs/key_truth.md).

    .venv/bin/python benchmarks/key_truth.py [--data FILE ...] [--json] [--max-wrong 0.10]
                                             [--simulate-review 0.10] [--keep DIR]

Input: ``benchmarks/data/author_books_*.tsv`` (default) or ``--data`` files: every title of
each author, labelled (author, qid, birth_year, title, year, human, city; gold spans as in
entity_titles.tsv). The harness writes a snapshot whose candidates are exactly those authors
(kitab/simulate/generator/labelled.py), builds a release from it with the real pipeline (the
dump source, in process, into a temporary warehouse), joins its books back to the labels through
``title_variants.work_key`` and measures per entity slice (kitab/release/key_truth.py).
``--simulate-review S``: label S of the (book, kind) rows with the truth, picked by the review
queue or at random (5 seeds), and measure again. ``--pseudo-authors FILE --split S``: real
labelled titles (entity_titles.tsv's format) cut into invented bibliographies of 15.
Exit status 1 if a slice's measured share is above ``--max-wrong``.
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import sys
import tempfile
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
ROOT = _HERE.parent
sys.path.insert(0, str(ROOT))

from kitab.core.params import DEFAULT_MAX_KEY_ERROR  # noqa: E402

RELEASE = "truth"


def _rows(con, sql: str) -> list[dict]:
    return con.sql(sql).to_arrow_table().to_pylist()


PER_PSEUDO_AUTHOR = 15


def pseudo_bibliographies(titles: list[Path], splits: set[str] | None, out: Path) -> Path:
    """Labelled titles (entity_titles.tsv's format: title, author, human, city, split) cut, in
    file order, into pseudo-authors of PER_PSEUDO_AUTHOR titles (invented names, born 1940,
    years 1965-2007), written as an author_books TSV at ``out``: real titles and labels in
    invented bibliographies, for when no fully labelled real author is at hand."""
    import csv

    rows = []
    for path in titles:
        with open(path, encoding="utf-8", newline="") as fh:
            rows += [
                r
                for r in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
                if splits is None or r.get("split") in splits
            ]
    lines = ["author\tqid\tbirth_year\ttitle\tyear\thuman\tcity"]
    for i, r in enumerate(rows):
        a = i // PER_PSEUDO_AUTHOR
        name = f"Pseudo Author {chr(65 + a // 26 % 26)}{chr(65 + a % 26)}{a // 676 or ''}"
        year = 1965 + i % PER_PSEUDO_AUTHOR * 3
        lines.append("\t".join([name, "", "1940", r["title"], str(year), r["human"] or "", r["city"] or ""]))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def build(data: list[Path], work: Path, seed: int, max_key_error: float = DEFAULT_MAX_KEY_ERROR) -> dict:
    """Snapshot, release, and the release's rows the measurement needs."""
    from kitab.app.runs import run_refresh
    from kitab.core.warehouse import Warehouse
    from kitab.release.key_quality import release_key_quality
    from kitab.simulate.generator.labelled import read_bibliographies, write_labelled_snapshot

    authors = read_bibliographies(data)
    works = write_labelled_snapshot(work / "snapshot", authors)
    root = work / "warehouse"
    run_refresh(
        source="dump",
        snapshot=work / "snapshot",
        authors=len(authors),
        seed=seed,
        release=RELEASE,
        warehouse=root,
        direct=True,
        allow_fewer=True,
        max_key_error=max_key_error,
    )
    with Warehouse(root).connect(release=RELEASE) as con:
        tables = {
            "queries": _rows(con, "SELECT query_id, author_qid, n_constraints, constraint_ids FROM queries ORDER BY 1"),
            "constraints": _rows(
                con,
                "SELECT constraint_id, spec, entity_kind, mapped_book_ids FROM constraints "
                "WHERE constraint_id IN (SELECT unnest(constraint_ids) FROM queries) ORDER BY 1",
            ),
            "states": _rows(con, "SELECT * FROM book_entities ORDER BY book_id, kind"),
            "variants": _rows(con, "SELECT book_id, work_key FROM title_variants ORDER BY 1, 2"),
            "released": [r["qid"] for r in _rows(con, "SELECT qid FROM authors ORDER BY 1")],
            "stated": release_key_quality(con),
        }
    labels = {key: {k: t.label(k) for k in t.spans} for key, (_, _, t) in works.items()}
    names = {qid: name for qid, name, _ in works.values()}
    missing = sorted(name for qid, name in names.items() if qid not in set(tables["released"]))
    return {**tables, "work_labels": labels, "authors": len(authors), "not_released": missing, "titles": len(works)}


def measure(built: dict, simulate: float | None = None) -> dict:
    """The measurement of :func:`build`'s release (pure: kitab/release/key_truth.py)."""
    from kitab.release.key_truth import book_labels, confusion, measured_wrong, simulate_review
    from kitab.release.review_queue import entity_queries, row_errors

    queries = entity_queries(built["queries"], built["constraints"], built["states"])
    states = {(s["book_id"], s["kind"]): s["state"] for s in built["states"]}
    kinds = {k for _, k in states}
    labels = {r: v for r, v in book_labels(built["variants"], built["work_labels"]).items() if r[1] in kinds}
    slices = measured_wrong(queries, states, labels)
    for label, m in slices.items():
        stated = built["stated"].get(label, {})
        m["stated"] = stated
        low, high = stated.get("wrong_key_low"), stated.get("wrong_key_high")
        m["inside_stated"] = None if low is None or high is None else low <= m["wrong_share"] <= high
    out = {
        "authors": {
            "labelled": built["authors"],
            "released": len(built["released"]),
            "not_released": built["not_released"],
        },
        "titles": {"labelled": built["titles"], "books": len({b for b, _ in states})},
        "slices": slices,
        "kinds": confusion(states, labels),
    }
    if simulate is not None:
        out["review"] = simulate_review(queries, states, row_errors(built["states"]), labels, simulate)
    return out


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def markdown(result: dict) -> str:
    a, t = result["authors"], result["titles"]
    lines = [
        f"Authors: {a['released']} released of {a['labelled']} labelled; titles: {t['labelled']} labelled, "
        f"{t['books']} books in the release."
        + (
            f" Not released: {', '.join(a['not_released'])} (born before 1850: not a candidate; else dropped by a stage: `rejects` in the `--keep` warehouse)."
            if a["not_released"]
            else ""
        ),
        "",
        "| slice | queries | key wrong (measured) | one-constraint | two-constraint | release's estimate "
        "| inside stated interval | deciding rows unsure |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- | ---: |",
    ]
    for label, m in result["slices"].items():
        st = m["stated"]
        stated = _pct(st.get("wrong_key"))
        if "wrong_key_low" in st:
            stated += f" [{_pct(st['wrong_key_low'])}, {_pct(st.get('wrong_key_high'))}]"
        if st.get("ceiling") is not None:
            stated += f", ceiling {_pct(st['ceiling'])}"
        inside = {None: "no interval stated", True: "yes", False: "**no**"}[m["inside_stated"]]
        lines.append(
            f"| {label} | {m['queries']} | {m['wrong']} ({_pct(m['wrong_share'])}) | {m['wrong_one']}/{m['queries_one']} "
            f"| {m['wrong_two']}/{m['queries_two']} | {stated} | {inside} | {_pct(m['unsure_share'])} |"
        )
    lines += ["", "The release's own key quality (`release_key_quality`), every key:", ""]
    for label, m in result["slices"].items():
        lines.append(f"- {label}: " + ", ".join(f"{k} {v}" for k, v in m["stated"].items()))
    lines += [
        "",
        "| kind | labelled rows | tp | fp | fn | tn | unsure (label yes / no) | unsure | wrong among decided |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kind, c in result["kinds"].items():
        lines.append(
            f"| {kind} | {c['n']} | {c['tp']} | {c['fp']} | {c['fn']} | {c['tn']} | {c['unsure_yes']} / "
            f"{c['unsure_no']} | {_pct(c['unsure_share'])} | {_pct(c['decided_error'])} |"
        )
    review = result.get("review")
    if review:
        lines += [
            "",
            f"Review simulation: {review['budget']} (book, kind) rows labelled ({_pct(review['share'])}; the queue "
            f"offered {review['queued']}), random = mean of {len(review['seeds'])} seeds.",
            "",
            "| slice | measured before | after queue | after random | estimated before | estimated after queue |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for label, s in review["slices"].items():
            lines.append(
                f"| {label} | {_pct(s['before'])} | {_pct(s['queue'])} | {_pct(s['random'])} "
                f"| {_pct(s['estimated_before'])} | {_pct(s['estimated_after'])} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", help="labelled TSV files (default: author_books_*.tsv)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    parser.add_argument("--max-wrong", type=float, default=None, help="exit 1 if a slice's measured share is above")
    parser.add_argument("--simulate-review", type=float, default=None, metavar="SHARE")
    parser.add_argument("--seed", type=int, default=42, help="the release's seed")
    parser.add_argument(
        "--max-key-error",
        type=float,
        default=DEFAULT_MAX_KEY_ERROR,
        help="the release's key-error bound (1: none, to measure the release without it)",
    )
    parser.add_argument("--keep", type=Path, default=None, help="build in this folder (kept) instead of a temp one")
    parser.add_argument(
        "--pseudo-authors",
        type=Path,
        nargs="+",
        metavar="TITLES_TSV",
        help=f"instead of --data: labelled titles (entity_titles.tsv format) as pseudo-authors of {PER_PSEUDO_AUTHOR}",
    )
    parser.add_argument("--split", default=None, help="with --pseudo-authors: only these splits (comma-separated)")
    args = parser.parse_args(argv)
    data = args.data or sorted((ROOT / "benchmarks" / "data").glob("author_books_*.tsv"))
    if args.pseudo_authors:
        splits = set(args.split.split(",")) if args.split else None
        folder = tempfile.mkdtemp(prefix="key_truth-pseudo-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        pseudo = Path(folder) / "author_books_pseudo.tsv"
        data = [pseudo_bibliographies(args.pseudo_authors, splits, pseudo)]
    if not data:
        parser.error("no labelled files: benchmarks/data/author_books_*.tsv is empty; pass --data")
    if args.simulate_review is not None and not 0 < args.simulate_review <= 1:
        parser.error("--simulate-review: a share in (0, 1]")
    from kitab.core.env import quiet_prefect_env

    quiet_prefect_env()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = measure(build(data, args.keep, args.seed, args.max_key_error), args.simulate_review)
    else:
        with tempfile.TemporaryDirectory(prefix="key_truth-") as tmp:
            result = measure(build(data, Path(tmp), args.seed, args.max_key_error), args.simulate_review)
    result["data"] = [str(p) for p in data]
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else markdown(result), end="")
    over = [
        label
        for label, m in result["slices"].items()
        if args.max_wrong is not None and m["wrong_share"] > args.max_wrong
    ]
    if over:
        print(f"measured wrong-key share above {args.max_wrong}: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
