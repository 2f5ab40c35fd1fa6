"""How often record evidence (tasks/book_evidence.py) decides a book right, on real records.

    .venv/bin/python benchmarks/record_evidence.py [--list] [--min 0.97]
    .venv/bin/python benchmarks/record_evidence.py --warehouse warehouse --release demo

Sets: 119 real Open Library dump works that carry subject_people / subject_places (of the first
1,000 works of the 2020 dump: tests/data/book_records/ol_dump_works_with_records.jsonl) and the
79 real romance works with people / places (snapshots/seed/ol_etl_romance_sample). Every book
record evidence decides was labelled by hand (tests/data/book_records/labels.tsv: does the
title contain a person's / a city's name). The titles are tagged first with the default title
taggers (human_v6, city_v6): a record confirms or contradicts their spans (tasks/book_evidence.py,
record_verdict). --list prints each decision beside its label.
Exit status 1 if the share right on either set, per kind or in all, is below --min.

With --warehouse and --release: the states of a built release that its records change (the
state in book_entities against decide() of the same evidence without the record), listed.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
ROOT = _HERE.parent
sys.path.insert(0, str(ROOT))

from tasks.book_evidence import LexiconGazetteer, record_evidence  # noqa: E402
from tasks.tag_entities import default_taggers, title_tags  # noqa: E402

DATA = ROOT / "tests" / "data" / "book_records"
ROMANCE = ROOT / "snapshots" / "seed" / "ol_etl_romance_sample"


def dump_set() -> list[tuple[str, str, list[dict]]]:
    books = []
    for line in (DATA / "ol_dump_works_with_records.jsonl").read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        records = [{"field": f, "name": n} for f in ("subject_people", "subject_places") for n in d.get(f) or []]
        books.append((d["key"].rsplit("/", 1)[-1], d["title"], records))
    return books


def romance_set() -> list[tuple[str, str, list[dict]]]:
    with (ROMANCE / "works_compact.tsv").open(encoding="utf-8") as f:
        titles = {r["work_key"]: r["title"] for r in csv.DictReader(f, delimiter="\t")}
    records: dict[str, list[dict]] = defaultdict(list)
    for name, field, column in (
        ("works_people.csv", "subject_people", "person"),
        ("works_places.csv", "subject_places", "place"),
    ):
        with (ROMANCE / name).open(encoding="utf-8") as f:
            for r in csv.DictReader(f):
                records[r["work_key"]].append({"field": field, "name": r[column]})
    return [(k, titles[k], records[k]) for k in sorted(records) if k in titles]


def labels() -> dict[tuple[str, str], str]:
    with (DATA / "labels.tsv").open(encoding="utf-8") as f:
        return {
            (r["work_key"], r["kind"]): r["label"]
            for r in csv.DictReader(f, delimiter="\t")
            if not r["work_key"].startswith("#")
        }


def changed_by_records(rows: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str, str]]:
    """book_entities rows (kind, state, evidence, title) -> those whose state differs from the
    state the same evidence gives without its record: (kind, without, state, title, evidence)."""
    from tasks.entities.registry import entity_kind
    from tasks.entity_states import TitleEvidence, decide

    out = []
    for kind, state, evidence, title in rows:
        parts = [p.split(":", 1) for p in evidence.split("|") if ":" in p]
        classes = tuple(c for s, v in parts if s == "title" for c in v.split("+") if c != "none")
        title_ev = TitleEvidence(entity_kind(kind).evidence_class(classes[0]).verdict, classes) if classes else None
        others = [{"source": s, "verdict": v} for s, v in parts if s not in ("title", "record")]
        without, _ = decide(kind, title_ev, others)
        if without != state:
            out.append((kind, without, state, title, evidence))
    return out


def release_changes(warehouse: str, release: str) -> int:
    from kitab.core.warehouse import Warehouse

    with Warehouse(warehouse).connect() as con:
        rows = con.execute(
            "SELECT e.kind, e.state, e.evidence, b.canonical_title FROM book_entities e JOIN books b "
            "ON b.book_id = e.book_id AND b.release = e.release WHERE e.release = ? ORDER BY e.book_id, e.kind",
            [release],
        ).fetchall()
    changed = changed_by_records(rows)
    print(f"{len(changed)} of {len(rows)} states changed by the records (release {release})")
    for kind, without, state, title, evidence in changed:
        print(f"  {kind:5} {without} -> {state}  {title!r}  ({evidence})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--min", type=float, default=0.97)
    ap.add_argument("--warehouse", help="a built warehouse: count the states its records change")
    ap.add_argument("--release", default="demo")
    args = ap.parse_args()
    if args.warehouse:
        return release_changes(args.warehouse, args.release)
    truth = labels()
    gazetteer = LexiconGazetteer()
    sets = (("OL dump (first 1,000 works)", dump_set()), ("OL romance sample", romance_set()))
    spans: dict[str, dict[str, list[str]]] = {}  # title -> kind -> the title rules' span texts
    for row in title_tags([t for _, books in sets for _, t, _ in books], default_taggers()):
        if row["start"] >= 0:
            spans.setdefault(row["title"], {}).setdefault(row["kind"], []).append(row["text"])
    failed = False
    print("| set | books with records | kind | decided yes | decided no | right | unlabelled |")
    print("|---|---|---|---|---|---|---|")
    for set_name, books in sets:
        totals = [0, 0]
        for kind in ("human", "city"):
            n_yes = n_no = right = missing = 0
            for key, title, records in books:
                ev = record_evidence(title, [], records, gazetteer, spans.get(title)).get(kind)
                if ev is None:
                    continue
                n_yes += ev["verdict"] == "yes"
                n_no += ev["verdict"] == "no"
                label = truth.get((key, kind))
                missing += label is None
                right += label == ev["verdict"]
                if args.list:
                    mark = "?" if label is None else ("ok" if label == ev["verdict"] else "WRONG")
                    print(f"  {mark:5} {kind:5} {ev['verdict']:3} {key} {title!r}: {ev['detail']}")
            decided = n_yes + n_no
            share = right / decided if decided else 1.0
            failed |= share < args.min
            totals[0] += right
            totals[1] += decided
            print(
                f"| {set_name} | {len(books)} | {kind} | {n_yes} | {n_no} | {right}/{decided} = {share:.3f} | {missing} |"
            )
        share = totals[0] / totals[1] if totals[1] else 1.0
        failed |= share < args.min
        print(f"| {set_name} | {len(books)} | both | | | {totals[0]}/{totals[1]} = {share:.3f} | |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
