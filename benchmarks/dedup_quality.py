"""Score dedup_titles on the labelled title pairs in benchmarks/data/dedup_pairs.tsv.

Each row: label (same | different), title_a, title_b, context (more titles of the same author,
separated by " | ", clustered together with the pair: the ambiguity guard needs them), author,
case. A pair is predicted "same" when both titles end in one cluster. Precision and recall
are of "same book". The paper's rule (lower-case, strip punctuation and a leading article,
fuzz.ratio >= 80 or a substring either way) is scored on the same pairs for comparison.

    .venv/bin/python benchmarks/dedup_quality.py [--errors]
"""

from __future__ import annotations

import csv
import string
import sys
from pathlib import Path

from rapidfuzz import fuzz

ROOT = Path(__file__).resolve().parents[1]
# Import from the repo root instead of benchmarks/, whose benchmarks/requests.py would shadow the
# requests package for anything imported from here (e.g. a snapshot-based title source).
sys.path[0] = str(ROOT)

from tasks.dedup_titles import Variant, cluster_titles  # noqa: E402

PAIRS = ROOT / "benchmarks" / "data" / "dedup_pairs.tsv"


def load_pairs(path: Path = PAIRS) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def group(row: dict) -> list[str]:
    return [row["title_a"], row["title_b"], *filter(None, (t.strip() for t in row["context"].split(" | ")))]


def ours(titles: list[str]) -> bool:
    clusters = cluster_titles([Variant(str(i), t) for i, t in enumerate(titles)])
    return any({"0", "1"} <= {v.work_key for v, _ in c.members} for c in clusters)


def _paper_key(title: str) -> str:
    words = title.lower().replace("&", "and").translate(str.maketrans("", "", string.punctuation)).split()
    return " ".join(words[1:] if len(words) > 1 and words[0] in ("the", "a", "an") else words)


def paper(titles: list[str]) -> bool:
    """The paper's rule with the same transitive closure (plain connected components)."""
    keys = [_paper_key(t) for t in titles]
    label = list(range(len(keys)))
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            a, b = keys[i], keys[j]
            if fuzz.ratio(a, b) >= 80 or a in b or b in a:
                old, new = label[j], label[i]
                label = [new if x == old else x for x in label]
    return label[0] == label[1]


def score(rows: list[dict], predict) -> dict:
    tp = fp = fn = tn = 0
    errors = []
    for row in rows:
        said, truth = predict(group(row)), row["label"] == "same"
        tp += said and truth
        fp += said and not truth
        fn += truth and not said
        tn += not said and not truth
        if said != truth:
            errors.append(("FP" if said else "FN", row))
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall),
        "errors": errors,
    }


def main(argv: list[str]) -> None:
    rows = load_pairs()
    n_same = sum(r["label"] == "same" for r in rows)
    print(
        f"{len(rows)} labelled pairs ({n_same} same book, {len(rows) - n_same} different) from {PAIRS.relative_to(ROOT)}"
    )
    print(f"{'rule':<28}{'precision':>10}{'recall':>8}{'F1':>7}{'TP':>5}{'FP':>5}{'FN':>5}{'TN':>5}")
    results = {"kitab dedup_titles": score(rows, ours), "paper (ratio>=80 | substring)": score(rows, paper)}
    for name, s in results.items():
        print(
            f"{name:<28}{s['precision']:>10.3f}{s['recall']:>8.3f}{s['f1']:>7.3f}{s['tp']:>5}{s['fp']:>5}{s['fn']:>5}{s['tn']:>5}"
        )
    if "--errors" in argv:
        for name, s in results.items():
            print(f"\n{name} errors:")
            for kind, r in s["errors"]:
                print(f"  {kind}  {r['title_a']!r} / {r['title_b']!r}  [{r['case']}]")


if __name__ == "__main__":
    main(sys.argv[1:])
