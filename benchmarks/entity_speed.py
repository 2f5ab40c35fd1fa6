"""Throughput and peak memory of the title_entities stage (human + city taggers, one shared parse).

    .venv/bin/python benchmarks/entity_speed.py [--titles 50000] [--seed 7] [--taggers v7|v6|v5|v4|v3] [--check]

--taggers v3 measures human_v3/city_v3 (NER on every title); v4 human_v4/city_v4 (NER only
where a cheap pass finds that it can matter, tasks/taggers/lazy.py); v5 human_v5/city_v5 (v4's
lazy NER over the grown lists of tasks/taggers/v5.py); v6 human_v6/city_v6 (v5 grown from WordNet,
tasks/taggers/v6.py). The default is the registry's default.
--check also tags the titles with the same rules and lists but NER on every title (v4: v3;
v5, v6: v3's eager taggers given their lists) and counts the titles whose spans differ (expected: 0).
--ner times spaCy's entity recogniser alone (`ner.pipe`, the tokenizer's docs given) on the titles
the lazy route sends to it, in CPU ms per title, with the entities' digest: run it under two
spaCy builds to compare them (docs/scale.md, Round 3, eleventh pass: the wheels from 3.8.8 on
take ~2x as long for the same entities).

Titles are synthetic but title-shaped (seeded, so every run tags the same ones): the labelled
titles plus templates filled with common words, given names, surnames and city names. Each is
distinct, so the stage cannot save work by deduplication.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

# Import the repo, not this folder's neighbours (a benchmarks/requests.py would shadow requests).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from tasks.taggers.gazetteers import DATA_DIR  # noqa: E402

TEMPLATES = (
    "{F} {S}",
    "The {W} of {F} {S}",
    "{W} in {C}",
    "{F}'s {W}",
    "The {W} {W}",
    "A {W} for {F}",
    "{W} and {W}",
    "The {C} {W}",
    "{W}: A {W} of {C}",
    "Mr {S} and the {W} {W}",
    "{W} {W} {W}",
    "{F} {S}: A Life",
    "Letters from {C}",
    "The {W} Who {W} {C}",
)


def _words(name: str, limit: int) -> list[str]:
    lines = [x for x in (DATA_DIR / name).read_text(encoding="utf-8").split() if x.isalpha()]
    return lines[:limit]


def synthetic_titles(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = [w.capitalize() for w in _words("common_words.txt", 40000)]
    firsts = _words("first_names.txt", 40000)
    surnames = _words("surnames.txt", 40000)
    cities = [
        "Paris",
        "London",
        "Venice",
        "Tehran",
        "Chicago",
        "Berlin",
        "Lagos",
        "Lima",
        "Kyoto",
        "Reading",
        "Nice",
        "Florence",
    ]
    labelled = [
        line.split("\t", 1)[0]
        for line in (_HERE / "data" / "entity_titles.tsv").read_text(encoding="utf-8").splitlines()[1:]
    ]
    titles = dict.fromkeys(labelled)
    while len(titles) < n:
        template = rng.choice(TEMPLATES)
        title = template
        for slot, pool in (("{F}", firsts), ("{S}", surnames), ("{C}", cities), ("{W}", words)):
            while slot in title:
                title = title.replace(slot, rng.choice(pool), 1)
        titles.setdefault(title)
    return list(titles)[:n]


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--titles", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--taggers", choices=("v7", "v6", "v5", "v4", "v3"), default=None, help="default: the registry's default"
    )
    parser.add_argument(
        "--check", action="store_true", help="compare the lazy taggers' spans with NER-on-every-title ones"
    )
    parser.add_argument(
        "--ner", action="store_true", help="time spaCy's NER alone on the titles the lazy route sends to it"
    )
    args = parser.parse_args(argv)

    titles = synthetic_titles(args.titles, args.seed)
    if args.ner:
        return ner_speed(titles)
    books = [
        {"book_id": f"b{n}", "author_qid": "Q0", "canonical_title": t, "variant_titles": []}
        for n, t in enumerate(titles)
    ]
    base = rss_mb()

    from tasks.tag_entities import tag_entities, tag_titles, v3_taggers
    from tasks.taggers.registry import DEFAULT, make_taggers

    version = args.taggers or DEFAULT[0].removeprefix("human_")
    started = time.perf_counter()
    taggers = make_taggers((f"human_{version}", f"city_{version}"))
    load_s = time.perf_counter() - started
    cpu_started = time.process_time()  # CPU time: less sensitive than wall time to other load on the machine
    result = tag_entities(books, [], taggers=taggers)
    cpu_s = time.process_time() - cpu_started
    stats = result.stats
    total_s = time.perf_counter() - started

    print(f"titles tagged:        {stats['titles_tagged']:,}")
    print(f"start-up (model + gazetteers, once per process): {load_s:.1f} s")
    print(f"tagging:              {stats['seconds']:.1f} s  ->  {stats['titles_per_s']:,.0f} titles/s")
    print(f"tagging, CPU time:    {cpu_s:.1f} s  ->  {stats['titles_tagged'] / cpu_s:,.0f} titles per CPU-second")
    print(f"end to end:           {total_s:.1f} s  ->  {len(titles) / total_s:,.0f} titles/s")
    print(f"spans per kind:       {stats['spans_per_kind']}")
    print(f"peak RSS:             {rss_mb():,.0f} MB (before loading: {base:,.0f} MB)")
    print(f"taggers:              {stats['taggers']}")
    if hasattr(taggers[0], "ner_total"):
        print(f"titles sent to NER:   {taggers[0].ner_total:,} of {taggers[0].parsed_total:,}")
    if args.check:
        distinct = sorted(set(titles))
        new = tag_titles(distinct, make_taggers((f"human_{version}", f"city_{version}")))
        eager = v3_taggers()
        for tagger in eager:
            tagger.lex = taggers[0].lex  # the same lists (v5's for v5, v6's for v6), NER on every title
        old = tag_titles(distinct, eager)
        differ = {
            kind: sum(
                1
                for a, b in zip(old[kind], new[kind])
                if [(s.start, s.end, s.kind) for s in a] != [(s.start, s.end, s.kind) for s in b]
            )
            for kind in ("human", "city")
        }
        print(f"titles whose spans differ from the same rules with NER on every title: {differ}")
    return 0


def ner_speed(titles: list[str], rounds: int = 3) -> int:
    """CPU ms per title of `ner.pipe` over the routed titles (best of ``rounds``), and a digest
    of the entities it finds, so that two spaCy builds are compared on speed and on output."""
    import hashlib

    import spacy

    from tasks.taggers.blas import one_blas_thread
    from tasks.taggers.pipeline import BATCH_SIZE
    from tasks.taggers.registry import make_taggers

    tagger = make_taggers()[0]  # a LazyNerTagger: its own route picks the titles NER sees
    nlp, ner = tagger.nlp, tagger.nlp.get_pipe("ner")
    docs, send = tagger.route(titles)
    routed = [docs[n].text for n in send]  # (recased, as the route gives them to NER)
    best, found = float("inf"), []
    with one_blas_thread():
        for _ in range(rounds):
            docs = list(nlp.tokenizer.pipe(routed))
            started = time.process_time()
            docs = list(ner.pipe(docs, batch_size=BATCH_SIZE))
            best = min(best, time.process_time() - started)
            found = [[(e.start, e.end, e.label_) for e in d.ents] for d in docs]
    digest = hashlib.sha256(repr(found).encode()).hexdigest()[:16]
    print(f"spaCy {spacy.__version__}: NER on {len(routed):,} routed titles of {len(titles):,}")
    print(f"ner.pipe, CPU time:   {best / len(routed) * 1e3:.3f} ms per title (best of {rounds})")
    print(f"entities:             {sum(map(len, found)):,}, digest {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
