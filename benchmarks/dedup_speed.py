"""Throughput and peak memory of dedup_titles over many authors, against a naive pairwise loop.

The titles come from ``title_source`` (a seeded generator of realistic titles and Open Library
style variants: subtitles, edition notes, case, punctuation, articles, "&", number words,
one-letter typos, series volumes). Swap that one function for the snapshot generator when it
exists. The naive loop makes the same decisions with a Python double loop over each author's
keys (fuzz.ratio + guards per pair, shorter forms per pair); the script checks that both give
the same clusters.

    .venv/bin/python benchmarks/dedup_speed.py [--authors 5000] [--seed 7]
"""
from __future__ import annotations

import argparse
import random
import resource
import sys
import time
import tracemalloc
from collections import defaultdict
from itertools import combinations
from pathlib import Path

from rapidfuzz import fuzz

ROOT = Path(__file__).resolve().parents[1]
# Import from the repo root instead of benchmarks/, whose benchmarks/requests.py would shadow the
# requests package for anything imported from here (e.g. a snapshot-based title source).
sys.path[0] = str(ROOT)

import tasks.dedup_titles as dd  # noqa: E402
from tasks.dedup_titles import Variant, cluster_titles, dedup_titles  # noqa: E402
from tasks.text import main_title, match_key  # noqa: E402

ADJ = ("Dark Silent Lost Hidden Broken Golden Last Secret Burning Crimson Quiet Wild Bitter Distant Hollow "
       "Frozen Sacred Savage Gentle Winter Summer Midnight Little Endless Final").split()
NOUN = ("House Garden River Night Tower City Road Sea Heart Shadow Storm Crown Mirror Island Kingdom Fire "
        "Stone Bridge Forest Letter Song Daughter Widow Stranger Harvest Empire Orchard Lantern Voyage Winter "
        "Promise Secret Dream Ghost Wolf Raven Rose Thorn Ashes Bones Glass Silver Iron Salt").split()
NAME = "Anna Eliza Thomas Jude Clara Henry Maud Ivan Rosa Leo Ada Simon Nora Felix Iris Jonah".split()
PLACE = "Venice Lisbon Prague Cairo Dublin Kyoto Odessa Tangier Vienna Havana Galway Lhasa".split()
NUMBER = [("Two", "2"), ("Three", "3"), ("Seven", "7"), ("Twelve", "12"), ("Twenty", "20"), ("One Hundred", "100")]
PATTERNS = (
    "The {a} {n}", "{n} of {n2}", "The {n} of {name}", "{name}'s {n}", "A {n} in {place}", "{a} {n}",
    "The {n} and the {n2}", "{n}", "The {a} {n} of {place}", "{name} and the {a} {n}", "Letters from {place}",
    "The {n} Who Came Back", "{num} {n}s", "Return to {place}",
)
SUBTITLES = (": A Novel", ": Stories", " (Penguin Classics)", " (Vintage International)", ": A Memoir",
             " - Deluxe Edition", ": 25th Anniversary Edition", " / {author}")


def _book_title(rng: random.Random) -> str:
    words, digits = rng.choice(NUMBER)
    return rng.choice(PATTERNS).format(a=rng.choice(ADJ), n=rng.choice(NOUN), n2=rng.choice(NOUN),
                                       name=rng.choice(NAME), place=rng.choice(PLACE), num=words)


def _variant(title: str, author: str, rng: random.Random) -> str:
    kind = rng.randrange(9)
    if kind == 0:
        return title + rng.choice(SUBTITLES).format(author=author)
    if kind == 1:
        return title.upper() if rng.random() < 0.3 else title.lower()
    if kind == 2:
        return title.replace(" and ", " & ") if " and " in title else title + "."
    if kind == 3:
        return title[4:] if title.startswith("The ") else "The " + title
    if kind == 4:
        for words, digits in NUMBER:
            title = title.replace(words, digits)
        return title
    if kind == 5 and len(title) > 6:  # a one-letter typo
        i = rng.randrange(1, len(title) - 1)
        return title[:i] + rng.choice("aeiourst") + title[i + 1:]
    return title  # the same title again (another OL work record)


def title_source(n_authors: int, seed: int) -> tuple[list[dict], list[dict]]:
    """(works_clean-shaped rows, authors rows) for ``n_authors`` synthetic writers."""
    rng = random.Random(seed)
    rows, authors = [], []
    work = 0
    for a in range(n_authors):
        qid, name = f"Q{a + 1}", f"{rng.choice(NAME)} {rng.choice(NOUN)}son"
        authors.append({"qid": qid, "name": name, "match_method": "p648"})
        books = {_book_title(rng) for _ in range(max(3, int(rng.lognormvariate(3.3, 0.7))))}
        series = rng.choice(NOUN)
        books |= {f"{series} Chronicles, Book {k}" for k in range(1, rng.choice((1, 1, 3, 5)))}
        for book in sorted(books):
            year = rng.randint(1900, 2020)
            for v in range(1 + min(int(rng.expovariate(1.4)), 5)):
                work += 1
                rows.append({"author_qid": qid, "work_key": f"/works/OL{work}W",
                             "title": book if v == 0 else _variant(book, name, rng),
                             "year": year + rng.randint(0, 10) * (v > 0), "edition_count": rng.randint(1, 30)})
    return rows, authors


def _partition(clusters) -> set[frozenset[str]]:
    return {frozenset(v.work_key for v, _ in c.members) for c in clusters}


def naive_cluster(variants: list[Variant]) -> set[frozenset[str]]:
    """The same decisions as cluster_titles, found with a Python double loop over the keys."""
    keys = sorted({match_key(v.title) for v in variants})
    index = {k: i for i, k in enumerate(keys)}
    mains = defaultdict(set)  # key -> match keys of its raw titles' main titles (computed once, not per pair)
    for v in variants:
        mains[match_key(v.title)].add(match_key(main_title(v.title)))
    parent = list(range(len(keys)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    longer = defaultdict(set)
    for i in range(len(keys)):
        for j in range(len(keys)):
            if i == j:
                continue
            a, b = keys[i], keys[j]
            if i < j and fuzz.ratio(a, b) >= dd.FUZZY_MIN_RATIO and dd.fuzzy_compatible(a, b):
                parent[find(j)] = find(i)
            ta, tb = a.split(), b.split()
            prefix = (len(ta) < len(tb) and tb[: len(ta)] == ta
                      and sum(t not in dd._FUNCTION_WORDS for t in ta) >= dd.SUBSET_MIN_CONTENT_WORDS)
            if a and (prefix or a in mains[b]):
                longer[i].add(j)
    accepted = [(s, ls) for s, ls in longer.items()
                if all(find(x) == find(y) or y in longer.get(x, ()) or x in longer.get(y, ())
                       for x, y in combinations(ls, 2))]
    for s, ls in accepted:
        for li in ls:
            parent[find(li)] = find(s)
    groups = defaultdict(set)
    for v in variants:
        groups[find(index[match_key(v.title)])].add(v.work_key)
    return {frozenset(g) for g in groups.values()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--prolific-from", type=int, default=40, help="authors merged into one prolific author")
    args = parser.parse_args()

    rows, authors = title_source(args.authors, args.seed)
    per_author = defaultdict(list)
    for r in rows:
        per_author[r["author_qid"]].append(Variant(r["work_key"], r["title"], r["year"], r["edition_count"]))
    n = len(rows)
    sizes = sorted(len(v) for v in per_author.values())
    print(f"{len(authors)} authors, {n} titles (per author: median {sizes[len(sizes) // 2]}, max {sizes[-1]}), seed {args.seed}")

    def timed(fn, *fn_args):
        match_key.cache_clear()  # every contender starts cold
        t0 = time.perf_counter()
        out = fn(*fn_args)
        return out, time.perf_counter() - t0

    result, stage_s = timed(dedup_titles, rows, authors)
    fast, fast_s = timed(lambda: {q: _partition(cluster_titles(vs)) for q, vs in per_author.items()})
    naive, naive_s = timed(lambda: {q: naive_cluster(vs) for q, vs in per_author.items()})
    assert naive == fast, "the naive loop and cluster_titles disagree"

    # One prolific author (Open Library lists thousands of works for some): where n² bites.
    big = [v for vs in list(per_author.values())[: args.prolific_from] for v in vs]
    big_fast, big_fast_s = timed(lambda: _partition(cluster_titles(big)))
    big_naive, big_naive_s = timed(naive_cluster, big)
    assert big_fast == big_naive

    tracemalloc.start()
    dedup_titles(rows, authors)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB

    print(f"{'':<36}{'seconds':>9}{'titles/s':>11}")
    print(f"{'dedup_titles (whole stage)':<36}{stage_s:>9.2f}{n / stage_s:>11,.0f}")
    print(f"{'cluster_titles (cdist + hashing)':<36}{fast_s:>9.2f}{n / fast_s:>11,.0f}")
    print(f"{'naive pairwise Python loop':<36}{naive_s:>9.2f}{n / naive_s:>11,.0f}")
    print(f"speed-up of cluster_titles over the naive loop: {naive_s / fast_s:.1f}x (same clusters: yes)")
    print(f"one author with {len(big)} titles: cluster_titles {big_fast_s:.2f} s ({len(big) / big_fast_s:,.0f} titles/s), "
          f"naive {big_naive_s:.2f} s ({len(big) / big_naive_s:,.0f} titles/s): {big_naive_s / big_fast_s:.0f}x")
    print(f"books {len(result.tables['books'])}, links {result.stats['links']}")
    print(f"peak traced memory of dedup_titles: {peak / 2**20:.1f} MiB (tracemalloc); process max RSS {maxrss_mb:.0f} MiB")


if __name__ == "__main__":
    main()
