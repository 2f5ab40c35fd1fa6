"""The answer keys measured against labelled bibliographies (benchmarks/key_truth.py,
docs/key_truth.md): a release built from authors whose every title is labelled, its books
joined back to the labels, and per entity slice the share of queries whose key holds a wrong
decided book, beside the release's own estimate. Pure functions over the release's rows.

A (book, kind) row is *wrong* when it is decided (yes / no) and its state differs from the
label; unsure rows are in no key (don't care). A query's key is wrong when any row deciding one
of its entity criteria is wrong (kitab/release/review_queue.entity_queries: the same deciding
books as tasks/entity_states.key_quality).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from kitab.release.review_queue import EntityQuery, Row, estimated_wrong, labelled_errors, review_queue
from tasks.entity_states import UNSURE


def book_labels(title_variants: Iterable[Mapping], work_labels: Mapping[str, Mapping[str, str]]) -> dict[Row, str]:
    """(book_id, kind) -> "yes" / "no" from the labels of the book's works (``work_key`` ->
    kind -> label): yes if any of its works' titles names one (as a book's state is), else no.
    Books with no labelled work get no label."""
    out: dict[Row, str] = {}
    for v in title_variants:
        for kind, label in work_labels.get(v["work_key"], {}).items():
            key = (v["book_id"], kind)
            out[key] = "yes" if label == "yes" or out.get(key) == "yes" else "no"
    return out


def is_wrong(row: Row, states: Mapping[Row, str], labels: Mapping[Row, str]) -> bool:
    state = states.get(row, UNSURE)
    return state != UNSURE and row in labels and state != labels[row]


def measured_wrong(queries: Sequence[EntityQuery], states: Mapping[Row, str], labels: Mapping[Row, str]) -> dict:
    """label -> ``queries``, ``wrong`` (queries whose key holds a wrong decided row) and
    ``wrong_share``, the same split one- / two-constraint, and ``unsure_share`` of the deciding
    rows of its criterion."""
    acc: dict[str, dict] = {}
    for q in queries:
        wrong = any(is_wrong(r, states, labels) for r in q.rows)
        for label, rows in q.criteria:
            a = acc.setdefault(label, {"queries": 0, "wrong": 0, "one": [0, 0], "two": [0, 0], "unsure": 0, "rows": 0})
            a["queries"] += 1
            a["wrong"] += wrong
            size = a["one"] if q.n_constraints == 1 else a["two"]
            size[0] += 1
            size[1] += wrong
            a["unsure"] += sum(states.get(r, UNSURE) == UNSURE for r in rows)
            a["rows"] += len(rows)
    return {
        label: {
            "queries": a["queries"],
            "wrong": a["wrong"],
            "wrong_share": a["wrong"] / a["queries"],
            "queries_one": a["one"][0],
            "wrong_one": a["one"][1],
            "queries_two": a["two"][0],
            "wrong_two": a["two"][1],
            "unsure_share": a["unsure"] / a["rows"] if a["rows"] else None,
        }
        for label, a in sorted(acc.items())
    }


def confusion(states: Mapping[Row, str], labels: Mapping[Row, str]) -> dict[str, dict]:
    """kind -> the labelled rows' decided states against their labels (``tp`` yes/yes, ``fp``
    yes/no, ``fn`` no/yes, ``tn`` no/no), ``unsure_yes`` / ``unsure_no`` (unsure, by label),
    ``n``, ``unsure_share``, ``decided_error`` (wrong among decided) and ``wrong_titles``."""
    out: dict[str, dict] = {}
    names = {("yes", "yes"): "tp", ("yes", "no"): "fp", ("no", "yes"): "fn", ("no", "no"): "tn"}
    for row, label in sorted(labels.items()):
        kind = row[1]
        c = out.setdefault(kind, {"n": 0, "tp": 0, "fp": 0, "fn": 0, "tn": 0, "unsure_yes": 0, "unsure_no": 0})
        c["n"] += 1
        state = states.get(row, UNSURE)
        c[f"unsure_{label}" if state == UNSURE else names[state, label]] += 1
    for c in out.values():
        decided = c["tp"] + c["fp"] + c["fn"] + c["tn"]
        c["unsure_share"] = (c["unsure_yes"] + c["unsure_no"]) / c["n"]
        c["decided_error"] = (c["fp"] + c["fn"]) / decided if decided else None
    return dict(sorted(out.items()))


def relabelled(states: Mapping[Row, str], labels: Mapping[Row, str], rows: Iterable[Row]) -> dict[Row, str]:
    """``states`` after a reviewer labelled ``rows`` with the truth (a row without a label keeps
    its state). The query set and its deciding books are kept as they are: a rebuild would also
    move books in and out of the other criteria's keys, which this does not model."""
    out = dict(states)
    for r in rows:
        if r in labels:
            out[r] = labels[r]
    return out


def simulate_review(
    queries: Sequence[EntityQuery],
    states: Mapping[Row, str],
    errors: Mapping[Row, float | None],
    labels: Mapping[Row, str],
    share: float,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
) -> dict:
    """Label ``share`` of the (book, kind) rows with the truth, chosen by the review queue or at
    random (averaged over ``seeds``), and measure again: ``budget``, ``queued`` (rows the queue
    offered: it may offer fewer) and per label the measured wrong share ``before`` / ``queue`` /
    ``random``, and the queue's estimate ``estimated_before`` / ``estimated_after``."""
    rows = sorted(states)
    budget = round(share * len(rows))
    picked = [p["row"] for p in review_queue(queries, errors, budget)]
    before = measured_wrong(queries, states, labels)
    after = measured_wrong(queries, relabelled(states, labels, picked), labels)
    drawn = [
        measured_wrong(queries, relabelled(states, labels, random.Random(seed).sample(rows, budget)), labels)
        for seed in seeds
    ]
    est_before = estimated_wrong(queries, errors)
    est_after = estimated_wrong(queries, labelled_errors(errors, picked))
    return {
        "share": share,
        "budget": budget,
        "queued": len(picked),
        "seeds": list(seeds),
        "slices": {
            label: {
                "before": before[label]["wrong_share"],
                "queue": after[label]["wrong_share"],
                "random": sum(d[label]["wrong_share"] for d in drawn) / len(drawn),
                "estimated_before": est_before[label]["wrong_key"],
                "estimated_after": est_after[label]["wrong_key"],
            }
            for label in before
        },
    }
