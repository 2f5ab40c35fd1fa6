"""country_v1 on the bundled snapshot's titles, and its speed.

    .venv/bin/python benchmarks/country_snapshot.py [--titles 50000] [--seed 7] [--snapshot snapshots/bundled]

1. Every Open Library work of the snapshot (ol_dump_works.txt.gz), one book per work, grouped
   by its first author: how many titles get a country span, the share of books per evidence
   class, and the books' states from the title rules alone (tasks/taggers/country.py's
   COUNTRY_RISKY: a risky class is "unsure"), per author: how many authors keep at most half
   their books unsure (tasks/generate_constraints.MAX_UNSURE_SHARE), so a country constraint
   can be made for them.
2. Speed: ``--titles`` synthetic titles (benchmarks/entity_speed.py's, seeded) tagged by
   human_v6 + city_v6, then by the three with country_v1 (one shared parse), then country_v1
   alone: titles per second (wall time on a shared machine: noisy); and country_v1's own rules
   on views already parsed and read for people, what it adds to a run with human_v6.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import Counter
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))


def snapshot_books(folder: Path) -> list[tuple[str, str]]:
    """(author key, title) per Open Library work of the snapshot."""
    out = []
    with gzip.open(folder / "ol_dump_works.txt.gz", "rt", encoding="utf-8") as f:
        for line in f:
            work = json.loads(line.split("\t")[4])
            authors = [a["author"]["key"] for a in work.get("authors", []) if "author" in a]
            if work.get("title") and authors:
                out.append((authors[0], work["title"]))
    return out


def classify(titles: list[str], taggers) -> list[tuple[str, bool]]:
    """(class, has a span) per title, as the tag step's rows give them to book_states."""
    from tasks.tag_entities import tag_titles
    from tasks.taggers.country import country_span_class

    doubts: dict = {}
    spans = tag_titles(titles, taggers, doubts)["country"]
    return [
        (country_span_class([s.evidence for s in found]), True) if found else (doubt or "plain", False)
        for found, doubt in zip(spans, doubts["country"], strict=True)
    ]


def snapshot_report(folder: Path) -> None:
    from tasks.generate_constraints import MAX_UNSURE_SHARE
    from tasks.taggers.country import COUNTRY_RISKY
    from tasks.taggers.registry import make_taggers

    books = snapshot_books(folder)
    classes = classify([t for _, t in books], make_taggers(("human_v6", "city_v6", "country_v1")))
    per_class = Counter(c for c, _ in classes)
    print(f"{len(books)} books (Open Library works) of {len({a for a, _ in books})} authors")
    print(f"  with a country span: {sum(has for _, has in classes)}")
    for cls, n in per_class.most_common():
        print(f"  {cls:15} {n:5} books ({n / len(books):.1%}){'  risky' if COUNTRY_RISKY[cls] else ''}")
    by_author: dict[str, list[str]] = {}
    for (author, _), (cls, has) in zip(books, classes, strict=True):
        state = "unsure" if COUNTRY_RISKY[cls] else ("yes" if has else "no")
        by_author.setdefault(author, []).append(state)
    ok = [a for a, s in by_author.items() if s.count("unsure") <= MAX_UNSURE_SHARE * len(s)]
    with_yes = [a for a in ok if "yes" in by_author[a]]
    print(
        f"  authors with at most {MAX_UNSURE_SHARE:.0%} of their books unsure: {len(ok)}/{len(by_author)} "
        f"({len(ok) / len(by_author):.1%}); of them {len(with_yes)} with a decided country book"
    )


def speed_report(titles: list[str]) -> None:
    from tasks.tag_entities import tag_titles
    from tasks.taggers.registry import make_taggers

    n = len(titles)
    for versions in (("human_v6", "city_v6"), ("human_v6", "city_v6", "country_v1"), ("country_v1",)):
        taggers = make_taggers(versions)
        t0 = time.perf_counter()
        out = tag_titles(titles, taggers)
        dt = time.perf_counter() - t0
        found = sum(bool(s) for s in out.get("country", []))
        print(f"  {'+'.join(versions):30} {n / dt:8.0f} titles/s ({dt:.1f} s; titles with a country span: {found})")
    # what country_v1 itself adds to a run with human_v6: its rules on views already parsed,
    # whose people the human tagger has already found (the tag step shares both)
    from tasks.taggers.human import find_people

    (country,) = make_taggers(("country_v1",))
    views = country.views(titles, country.parse(titles))
    for v in views:
        find_people(v)
    t0 = time.perf_counter()
    for v in views:
        if not country.spans(v):
            country.doubt(v)
    dt = time.perf_counter() - t0
    print(f"  country_v1's rules alone on shared views: {n / dt:8.0f} titles/s ({dt:.2f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--titles", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--snapshot", type=Path, default=_HERE.parent / "snapshots" / "bundled")
    args = parser.parse_args(argv)
    snapshot_report(args.snapshot)
    import importlib.util

    spec = importlib.util.spec_from_file_location("entity_speed", _HERE / "entity_speed.py")
    entity_speed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entity_speed)
    print(f"speed, {args.titles} synthetic titles (benchmarks/entity_speed.py, seed {args.seed}):")
    speed_report(entity_speed.synthetic_titles(args.titles, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
