"""What the second readers change in a built release: how many books each source decided, and
the estimated share of one-constraint name queries whose key holds a wrong decided book, with
the title rules alone (before) and with the second readers (after).

    .venv/bin/python benchmarks/second_readers.py --warehouse /tmp/wh --release demo

The estimate, per author and kind (a one-constraint query "contains a human / city name"
is decided by every decided book of its author): 1 - prod(1 - e) over those books, e per book
from its evidence: the title class's error on the dev sets (docs/tagging.md, "States and
evidence": (wrong + 0.5) / (titles + 1)), the record's error on the hand-labelled real records
(1 / 133: benchmarks/record_evidence.py), and their product where both agree (independent
readers). A review label counts as right. Before = the same books with the title rules alone.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from kitab.core.warehouse import Warehouse  # noqa: E402
from tasks.entities.registry import entity_kind  # noqa: E402
from tasks.entity_states import NO, UNSURE, YES, TitleEvidence, decide  # noqa: E402

# the kind's class counts: (wrong, titles) on dev + holdout + dev2, as key quality uses them
YES_CLASSES = {"rule", "name_list", "proper_title", "ner_only", "context", "alternate_name", "population", "ner"}
RECORD_ERROR = 1 / 133


def parse(evidence: str) -> tuple[list[str], dict[str, str]]:
    classes, others = [], {}
    for part in evidence.split("|"):
        source, _, what = part.partition(":")
        if source == "title":
            classes = [c for c in what.split("+") if c != "none"]
        else:
            others[source] = what
    return classes, others


def title_error(kind: str, classes: list[str]) -> float:
    rates = [(w + 0.5) / (n + 1) for w, n in (entity_kind(kind).class_errors(c) or (1, 1) for c in classes)]
    return max(rates, default=0.5)


def book_error(kind: str, state: str, classes: list[str], others: dict[str, str], title_verdict: str) -> float:
    if "review" in others:
        return 0.0
    e_title = title_error(kind, classes) if title_verdict == state else 1 - title_error(kind, classes)
    e = e_title
    if "record" in others:
        e *= RECORD_ERROR if others["record"] == state else 1 - RECORD_ERROR
        if others["record"] == state and title_verdict != state:
            e = RECORD_ERROR  # the record decided against the title rules
    return e


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--release", required=True)
    args = ap.parse_args()
    with Warehouse(args.warehouse).connect() as con:
        rows = con.execute(
            "SELECT author_qid, kind, state, evidence FROM book_entities WHERE release = ? ORDER BY book_id, kind",
            [args.release],
        ).fetchall()
    by_source: dict[str, Counter] = defaultdict(Counter)
    risk = {"before": defaultdict(lambda: 1.0), "after": defaultdict(lambda: 1.0)}
    decided = Counter()
    for qid, kind, state, evidence in rows:
        classes, others = parse(evidence)
        verdict = YES if any(c in YES_CLASSES for c in classes) else NO
        before, _ = decide(kind, TitleEvidence(verdict, tuple(classes)), [])
        if state == UNSURE:
            by_source[kind]["unsure"] += 1
        elif before == state:
            by_source[kind]["title" + "".join(f"+{s}" for s, v in sorted(others.items()) if v == state)] += 1
        else:
            by_source[kind]["+".join(s for s, v in sorted(others.items()) if v == state)] += 1
        if before != UNSURE:
            risk["before"][(qid, kind)] *= 1 - title_error(kind, classes)
            decided["before", kind] += 1
        if state != UNSURE:
            risk["after"][(qid, kind)] *= 1 - book_error(kind, state, classes, others, verdict)
            decided["after", kind] += 1
    for kind in sorted(by_source):
        print(f"{kind}: books by deciding source {dict(sorted(by_source[kind].items()))}")
        for when in ("before", "after"):
            keys = [k for k in risk[when] if k[1] == kind]
            share = sum(1 - risk[when][k] for k in keys) / max(1, len(keys))
            print(
                f"  {when}: {decided[when, kind]} decided books; one-constraint queries with a wrong book ~{share:.1%}"
            )


if __name__ == "__main__":
    main()
