"""Precision and recall of the country tagger (country_v1) on benchmarks/data/country_titles.tsv,
and the error of each evidence class, per split.

    .venv/bin/python benchmarks/country_quality.py [--split dev|holdout|all] [--errors N]

The labels were written by hand from docs/tagging.md's rule ("Countries in titles") before the
tagger; ``dev`` is what the rules and the classes were built on, ``holdout`` was looked at only
to report (docs/tagging.md gives both). Title level: does the title name a country? A class's
error: a title with a span is wrong if labelled "no", a title without one if labelled "yes".
tasks/taggers/country.py's COUNTRY_CLASSES are the dev counts printed here
(tests/test_tag_country.py checks that they still are).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# Import the repo, not this folder's neighbours (a benchmarks/requests.py would shadow requests).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

DATA = _HERE / "data" / "country_titles.tsv"
SPLITS = ("dev", "holdout")


@dataclass(frozen=True)
class Labelled:
    title: str
    gold: bool
    names: tuple[str, ...]
    split: str


@dataclass(frozen=True)
class Tagged:
    item: Labelled
    spans: tuple[str, ...]
    cls: str  # the title's evidence class


def load(path: Path = DATA) -> list[Labelled]:
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    bad = [r["title"] for r in rows if r["country"] not in ("yes", "no") or r["split"] not in SPLITS]
    if bad:
        raise ValueError(f"{path.name}: country must be yes/no and split one of {SPLITS}: {bad[:3]}")
    return [
        Labelled(
            r["title"], r["country"] == "yes", tuple(s.strip() for s in r["names"].split(";") if s.strip()), r["split"]
        )
        for r in rows
    ]


def tag(items: list[Labelled]) -> list[Tagged]:
    """Each labelled title through country_v1 the way the tag step runs it (tag_titles)."""
    from tasks.tag_entities import tag_titles
    from tasks.taggers.country import country_span_class
    from tasks.taggers.registry import make_taggers

    titles = [x.title for x in items]
    doubts: dict[str, list[str | None]] = {}
    spans = tag_titles(titles, make_taggers(("country_v1",)), doubts)["country"]
    return [
        Tagged(
            x,
            tuple(s.text for s in found),
            country_span_class([s.evidence for s in found]) if found else (doubt or "plain"),
        )
        for x, found, doubt in zip(items, spans, doubts["country"], strict=True)
    ]


def class_counts(tagged: list[Tagged]) -> dict[str, tuple[int, int]]:
    """class -> (wrong titles, titles)."""
    n, wrong = Counter(), Counter()
    for t in tagged:
        n[t.cls] += 1
        wrong[t.cls] += bool(t.spans) != t.item.gold
    return {c: (wrong[c], n[c]) for c in sorted(n)}


def scores(tagged: list[Tagged]) -> dict[str, float | int]:
    tp = sum(1 for t in tagged if t.spans and t.item.gold)
    fp = sum(1 for t in tagged if t.spans and not t.item.gold)
    fn = sum(1 for t in tagged if not t.spans and t.item.gold)
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"titles": len(tagged), "yes": tp + fn, "tp": tp, "fp": fp, "fn": fn, "precision": p, "recall": r}


def report(tagged: list[Tagged], split: str, errors: int) -> None:
    part = [t for t in tagged if split == "all" or t.item.split == split]
    s = scores(part)
    print(
        f"[{split}] {s['titles']} titles, {s['yes']} yes: precision {s['precision']:.3f} "
        f"recall {s['recall']:.3f} (tp {s['tp']}, fp {s['fp']}, fn {s['fn']})"
    )
    for cls, (wrong, n) in class_counts(part).items():
        print(f"  {cls:15} {wrong:3}/{n:<4} wrong ({wrong / n:.1%})")
    shown = [t for t in part if bool(t.spans) != t.item.gold][:errors]
    for t in shown:
        what = "false" if t.spans else "missed"
        print(f"    {what}: {t.item.title!r} spans={list(t.spans)} gold={list(t.item.names)} class={t.cls}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="all", choices=(*SPLITS, "all"))
    parser.add_argument("--errors", type=int, default=20, help="title-level errors to list per split")
    args = parser.parse_args(argv)
    tagged = tag(load())
    for split in SPLITS if args.split == "all" else (args.split,):
        report(tagged, split, args.errors)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
