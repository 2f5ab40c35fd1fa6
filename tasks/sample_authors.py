"""Stage 1: candidate authors from WikiData, then a seeded draw order that excludes every
author of earlier releases (released, or rejected unless asked). The refresh draws from the
front of that order until ``--authors`` authors pass every stage or the order runs out
(flows/pipeline.py)."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable

from kitab.core.errors import KitabError
from kitab.core.stages import SAMPLE_AUTHORS
from kitab.sources.http import Fetched
from kitab.sources.wikidata import QueryTimeout, Wikidata, bindings
from tasks.base import StageResult, reject
from tasks.match_openlibrary import name_key

STAGE = SAMPLE_AUTHORS  # rejects.stage of what this stage drops (kitab/core/stages.py)
log = logging.getLogger("kitab.refresh")
ENTITY_PREFIX = "http://www.wikidata.org/entity/"


def birth_windows(first: int, last_exclusive: int, width: int) -> list[tuple[int, int]]:
    """[first, last) cut into windows of ``width`` years: one WDQS query each (more if one
    times out: :func:`window_answers`)."""
    return [(start, min(start + width, last_exclusive)) for start in range(first, last_exclusive, width)]


def qid_number(qid: str) -> int:
    return int(qid.lstrip("Q"))


def parse_candidate(row: dict[str, str]) -> dict:
    """One SPARQL binding row -> a candidate author record (lexical values -> typed)."""
    qid = row["author"].removeprefix(ENTITY_PREFIX)
    return {
        "qid": qid,
        "name": row.get("name"),
        "birth_year": int(row["birth_year"]),
        "sitelinks": int(row["sitelinks"]),
        "wd_work_count": int(row["works"]),
        "wd_ol_ids": sorted(row.get("ol_ids", "").split()),
    }


def fetch_candidates(
    wikidata: Wikidata, *, first_year: int, last_year_exclusive: int, window: int, min_works: int, max_works: int
) -> tuple[list[dict], list[str]]:
    """Run the sampling query per birth-year window; returns candidates and the request
    fingerprints (provenance of the sample). A window WDQS cannot answer inside its time
    limit is split (:func:`window_answers`); an author lands in exactly one window however they
    are cut (its earliest birth year decides), so the candidates do not depend on the splits."""
    candidates: dict[str, dict] = {}
    fingerprints = []
    for start, end in birth_windows(first_year, last_year_exclusive, window):
        for fetched in window_answers(wikidata, start, end, min_works=min_works, max_works=max_works):
            fingerprints.append(fetched.fingerprint)
            for row in bindings(fetched):
                candidate = parse_candidate(row)
                candidates[candidate["qid"]] = candidate
    return sorted(candidates.values(), key=lambda c: qid_number(c["qid"])), fingerprints


def window_answers(wikidata: Wikidata, start: int, end: int, *, min_works: int, max_works: int) -> list[Fetched]:
    """The sampling query's answers for births in [start, end): one query, or, if WDQS stops it
    at its time limit (a dense window), the answers of both halves, split again as needed down
    to one year. A one-year window that still times out is an error naming it."""
    try:
        return [wikidata.candidate_authors(from_year=start, to_year=end, min_works=min_works, max_works=max_works)]
    except QueryTimeout as exc:
        if end - start <= 1:
            raise KitabError(
                f"WikiData timed out on the authors born in {start} (a one-year window cannot be "
                "split further); try again later"
            ) from exc
        log.info("WDQS timed out on births %d-%d: splitting the window", start, end - 1)
    middle = (start + end) // 2
    return window_answers(wikidata, start, middle, min_works=min_works, max_works=max_works) + window_answers(
        wikidata, middle, end, min_works=min_works, max_works=max_works
    )


def sample_authors(
    candidates: Iterable[dict],
    *,
    n: int,
    seed: int,
    exclude_qids: set[str],
    exclude_names: frozenset[str] = frozenset(),
    exclude_rejected: frozenset[str] = frozenset(),
    skip_qids: frozenset[str] = frozenset(),
    skip_names: frozenset[str] = frozenset(),
) -> StageResult:
    """The seeded draw order of the eligible authors (``order``) and its first ``n``
    (``sampled``). Never an author in ``exclude_qids`` nor one whose normalised name was
    released before (a duplicate WikiData item of a released author; the price is that a
    namesake is not sampled either), nor one in ``exclude_rejected`` (rejected by an earlier
    release). ``skip_qids`` / ``skip_names``: authors another release took since this one was
    first made (a rebuild's; tasks/publish.released_since): left out of the order after the
    shuffle, so the order of every other author stays as it was.

    Deterministic: candidates are put in QID order before ``random.Random(seed)`` shuffles them,
    so the same candidates and seed give the same order on any machine, and drawing more
    authors only extends the draws before it.
    """
    pool, rejects, excluded, rejected_before = [], [], 0, 0
    for c in sorted(candidates, key=lambda c: qid_number(c["qid"])):
        if c["qid"] in exclude_qids or (c.get("name") and name_key(c["name"]) in exclude_names):
            excluded += 1  # released before: not a reject, just not eligible again
        elif c["qid"] in exclude_rejected:
            rejected_before += 1  # rejected by an earlier release: not drawn again unless asked
        elif not c.get("name"):
            rejects.append(reject(STAGE, "no_english_label", "author", c["qid"], author_qid=c["qid"]))
        else:
            pool.append(c)
    order = random.Random(seed).sample(pool, len(pool))
    skipped = [c for c in order if c["qid"] in skip_qids or name_key(c["name"]) in skip_names]
    if skipped:
        order = [c for c in order if c["qid"] not in skip_qids and name_key(c["name"]) not in skip_names]
    chosen = order[:n]
    stats = {
        "candidates": len(pool) + len(rejects) + excluded + rejected_before,
        "excluded_released": excluded,
        "excluded_rejected_before": rejected_before,
        "skipped_released_since": len(skipped),
        "eligible": len(order),
        "sampled": len(chosen),
        "shortfall": max(0, n - len(chosen)),
    }
    return StageResult(tables={"sampled": chosen, "order": order}, rejects=rejects, stats=stats)
