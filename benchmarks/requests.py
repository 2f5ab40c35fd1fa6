"""Requests per author and the achieved Open Library request rate against the configured
cap, for a mirror run of the bundled snapshot (fresh cache, real clients, no Prefect).

    .venv/bin/python benchmarks/requests.py [--authors 40] [--cap 5]
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and its name would shadow
# the `requests` package that the clients import.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import tempfile
import time

from kitab.core.config import Settings
from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.simulate.mirror.server import Mirror
from kitab.sources import open_sources
from tasks.fetch_works import collect_author
from tasks.sample_authors import fetch_candidates, sample_authors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors", type=int, default=40)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--cap", type=float, default=5.0, help="client cap, Open Library requests/s")
    parser.add_argument("--mirror-limit", type=float, default=25.0, help="mirror's own limit before 429")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, Mirror(BUNDLED_SNAPSHOT, ol_rate=args.mirror_limit) as mirror:
        settings = Settings(warehouse=Path(tmp), mirror_ol_rate=args.cap)
        sources = open_sources("mirror", settings, mirror_url=mirror.url)
        started = time.monotonic()
        pool, _ = fetch_candidates(
            sources.wikidata,
            first_year=settings.birth_year_min,
            last_year_exclusive=2027,
            window=settings.birth_year_window,
            min_works=settings.min_works,
            max_works=settings.max_works,
        )
        sampled = sample_authors(pool, n=args.authors, seed=args.seed, exclude_qids=set())
        for author in sampled.tables["sampled"]:
            collect_author(author, sources.openlibrary)
        wall = time.monotonic() - started
        sources.close()
        ol = mirror.log("openlibrary")
        wd = mirror.log("wikidata")
        n = len(sampled.tables["sampled"])
        span = ol[-1].t - ol[0].t if len(ol) > 1 else float("nan")
        rate = (len(ol) - 1) / span if len(ol) > 1 else float("nan")
        # the strictest test of the cap: the most requests seen in any 1-second window
        peak = max(sum(1 for e in ol if 0 <= e.t - start.t < 1.0) for start in ol)
        print(f"authors sampled:            {n}")
        print(f"WikiData SPARQL queries:    {len(wd)}")
        print(f"Open Library requests:      {len(ol)}  ({len(ol) / n:.2f} per author)")
        print(f"all requests per author:    {(len(ol) + len(wd)) / n:.2f}")
        print(f"429 answers from mirror:    {sum(1 for e in ol + wd if e.status == 429)}")
        print(
            f"achieved OL rate:           {rate:.2f} req/s  (cap {args.cap:g} req/s, {100 * rate / args.cap:.0f}% of cap)"
        )
        print(f"peak requests in any 1 s:   {peak}")
        print(f"wall time:                  {wall:.1f} s")


if __name__ == "__main__":
    main()
