"""Throughput and peak memory of dedup_titles over a generated snapshot, against a naive pairwise loop.

The titles are the ``works_clean`` rows of a generated snapshot (``kitab.simulate.generator.generate``,
every candidate author sampled, matched, fetched and cleaned by the real stages: see
``benchmarks/snapshot_input.py``). The generator plants title variants only in its edge cases,
so nearly all titles are distinct books: per-title normalisation dominates the per-author runs,
and the pairwise cost shows in the prolific-author row (several authors merged into one).
The naive loop makes the same decisions with a Python double loop over each author's keys
(fuzz.ratio + guards per pair, shorter forms per pair); the script checks that both give the
same clusters.

    .venv/bin/python benchmarks/dedup_speed.py [--authors 5000] [--seed 7]
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, benchmarks/ is first on sys.path and benchmarks/requests.py would shadow the `requests`
# package: put the repo root in its place (which also makes `benchmarks.snapshot_input` importable).
HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

import argparse  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections import defaultdict  # noqa: E402
from itertools import combinations  # noqa: E402

from rapidfuzz import fuzz  # noqa: E402

import tasks.dedup_titles as dd  # noqa: E402
from benchmarks.snapshot_input import cleaned_input  # noqa: E402
from tasks.dedup_titles import Variant, cluster_titles, dedup_titles  # noqa: E402
from tasks.text import main_title, match_key  # noqa: E402


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
            prefix = (
                len(ta) < len(tb)
                and tb[: len(ta)] == ta
                and sum(t not in dd._FUNCTION_WORDS for t in ta) >= dd.SUBSET_MIN_CONTENT_WORDS
            )
            if a and (prefix or a in mains[b]):
                longer[i].add(j)
    by_component = defaultdict(list)  # spellings of one shorter title share one decision
    for s in sorted(longer):
        by_component[find(s)].append(s)
    accepted = [
        shorter
        for shorter in by_component.values()  # every decision before any link
        if all(
            find(x) == find(y) or y in longer.get(x, ()) or x in longer.get(y, ())
            for x, y in combinations(sorted(set().union(*(longer[s] for s in shorter))), 2)
        )
    ]
    for shorter in accepted:
        for s in shorter:
            for li in longer[s]:
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

    data = cleaned_input(args.authors, args.seed)
    rows, authors = data.cleaned.tables["works_clean"], data.authors
    per_author = defaultdict(list)
    for r in rows:  # the Variants dedup_titles builds
        per_author[r["author_qid"]].append(
            Variant(r["work_key"], r["title"], r.get("year"), r.get("edition_count") or 0)
        )
    n = len(rows)
    sizes = sorted(len(v) for v in per_author.values())
    print(data.summary())
    print(
        f"{n} titles of {len(per_author)} authors (per author: median {sizes[len(sizes) // 2]}, max {sizes[-1]}), "
        f"seed {args.seed}"
    )

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
    print(
        f"speed-up over the naive loop: cluster_titles {naive_s / fast_s:.1f}x, whole stage {naive_s / stage_s:.1f}x "
        f"(same clusters: yes)"
    )
    print(
        f"one author with {len(big)} titles: cluster_titles {big_fast_s:.2f} s ({len(big) / big_fast_s:,.0f} titles/s), "
        f"naive {big_naive_s:.2f} s ({len(big) / big_naive_s:,.0f} titles/s): {big_naive_s / big_fast_s:.0f}x"
    )
    print(f"books {len(result.tables['books'])}, links {result.stats['links']}")
    print(
        f"peak traced memory of dedup_titles: {peak / 2**20:.1f} MiB (tracemalloc); process max RSS {maxrss_mb:.0f} MiB "
        "(includes reading the snapshot)"
    )


if __name__ == "__main__":
    main()
