"""Stage 3: every Open Library work of each matched author, every result page, only the
fields the pipeline reads, with provenance on each row."""

from __future__ import annotations

import re
from collections.abc import Callable

from kitab.core.stages import FETCH_WORKS
from kitab.core.step_memory import step_cache
from kitab.sources.http import Fetched, SourceUnavailable
from kitab.sources.openlibrary import OpenLibrary
from kitab.sources.wikidata import Wikidata, records_of_works
from tasks.base import StageResult, reject
from tasks.match_openlibrary import match_author
from tasks.text import fold

STAGE = FETCH_WORKS  # rejects.stage of what this stage drops (kitab/core/stages.py)
SOURCE_UNAVAILABLE = "source_unavailable"  # the reject reason, and the stat counting such authors


def work_row(doc: dict, author: dict, fetched: Fetched, source: str) -> dict:
    return {
        "author_qid": author["qid"],
        "ol_author_key": author["ol_author_key"],
        "work_key": doc["key"],
        "title": doc.get("title"),
        "subtitle": doc.get("subtitle"),
        "first_publish_year": doc.get("first_publish_year"),
        "languages": sorted(doc.get("language") or []),
        "author_keys": list(doc.get("author_key") or []),
        "author_names": list(doc.get("author_name") or []),
        "edition_count": doc.get("edition_count"),
        "source": source,
        "request_fingerprint": fetched.fingerprint,
        "fetched_at": fetched.fetched_at,
    }


# search.json's doc field -> book_records.field (the dump's JSON field name: one name for the idea)
RECORD_FIELDS = {"person": "subject_people", "place": "subject_places"}


def record_rows(doc: dict, author: dict, fetched: Fetched, source: str) -> list[dict]:
    """The work's own record (subject people / places), one book_records row per name."""
    return [
        {
            "author_qid": author["qid"],
            "work_key": doc["key"],
            "field": field,
            "position": n,
            "name": name,
            "source": source,
            "request_fingerprint": fetched.fingerprint,
            "fetched_at": fetched.fetched_at,
        }
        for doc_field, field in RECORD_FIELDS.items()
        for n, name in enumerate(doc.get(doc_field) or [])
        if isinstance(name, str) and name.strip()
    ]


_SPACES = re.compile(r"\s+")


@step_cache(maxsize=1 << 16)  # a batch's WikiData rows repeat its few thousand titles (~90,000 rows at 100k)
def label_key(title: str) -> str:
    """A title as the authorship cross-check joins WikiData labels to it (tasks/clean_books.py):
    case-, accent- and spacing-insensitive."""
    return _SPACES.sub(" ", fold(title)).strip()


def wikidata_items(works_clean: list[dict], wd_works: list[dict]) -> dict[str, list[str]]:
    """work_key -> the WikiData work items that are that Open Library work: same title (as the
    cross-check compares them) and our author among the item's P50 authors. ``wd_works``: the
    cross-check's rows (``works_with_labels``: work_qid, title, author_qid)."""
    items: dict[tuple[str, str], set[str]] = {}
    ours = {work["author_qid"] for work in works_clean}
    for row in wd_works:
        if row["author_qid"] not in ours:  # most rows: the label's works by other authors
            continue
        items.setdefault((label_key(row["title"]), row["author_qid"]), set()).add(row["work_qid"])
    found = {}
    for work in works_clean:
        qids = items.get((label_key(work["title"]), work["author_qid"]))
        if qids:
            found[work["work_key"]] = sorted(qids, key=lambda q: int(q[1:]))
    return found


def wikidata_record_rows(
    works_clean: list[dict], items: dict[str, list[str]], records: list[dict], source: str
) -> tuple[list[dict], dict]:
    """book_records rows (fields ``characters`` / ``narrative_locations``) of the Open Library works
    that have a WikiData item, from ``records`` (``records_of_works`` rows), positions in the
    query's order per (work, field); and stats. A target without an English or mul label cannot
    be matched against a title: it is counted (``targets_unlabelled``), not stored."""
    by_item: dict[str, list[dict]] = {}
    for r in records:
        by_item.setdefault(r["work_qid"], []).append(r)
    rows, unlabelled, with_records = [], 0, 0
    for work in sorted(works_clean, key=lambda w: (w["author_qid"], w["work_key"])):
        positions: dict[str, int] = {}
        found = [r for qid in items.get(work["work_key"], []) for r in by_item.get(qid, [])]
        for r in found:
            if not (r["name"] or "").strip():
                unlabelled += 1
                continue
            n = positions.get(r["field"], 0)
            positions[r["field"]] = n + 1
            rows.append(
                {
                    "author_qid": work["author_qid"],
                    "work_key": work["work_key"],
                    "field": r["field"],
                    "position": n,
                    "name": r["name"],
                    "source": source,
                    "request_fingerprint": r["request_fingerprint"],
                    "fetched_at": r["fetched_at"],
                }
            )
        with_records += bool(positions)
    stats = {
        "works_with_item": len(items),
        "works_with_records": with_records,
        "records": len(rows),
        "targets_unlabelled": unlabelled,
    }
    return rows, stats


def wikidata_records(works_clean: list[dict], wd_works: list[dict], wikidata: Wikidata) -> StageResult:
    """The WikiData half of the works' own records: P674 / P840 of the items the authorship
    cross-check found for our works, asked author by author (one query per
    ``wikidata.works_per_query`` items of one author): what a release holds, its request
    fingerprints included, does not depend on how its authors were cut into batches."""
    items = wikidata_items(works_clean, wd_works)
    by_author: dict[str, set[str]] = {}
    for work in works_clean:
        if work["work_key"] in items:
            by_author.setdefault(work["author_qid"], set()).update(items[work["work_key"]])
    # the dump answers each author's query from one lookup for the batch (the same rows and fingerprints)
    wikidata.prefetch_work_records(sorted({q for qids in by_author.values() for q in qids}))
    seen: dict[tuple, dict] = {}  # an item two authors share is asked twice: its rows kept once
    for author_qid in sorted(by_author):
        for r in records_of_works(wikidata, sorted(by_author[author_qid], key=lambda q: int(q[1:]))):
            seen.setdefault((r["work_qid"], r["field"], r["target"]), r)
    records = list(seen.values())
    rows, stats = wikidata_record_rows(works_clean, items, records, wikidata.source)
    return StageResult(tables={"book_records": rows}, rejects=[], stats=stats)


def fetch_author_works(author: dict, ol: OpenLibrary) -> StageResult:
    """All pages for one matched author. A work seen on two pages (the index moved under
    us) is kept once; a doc without a key cannot be traced and is rejected."""
    rows: dict[str, dict] = {}
    records: dict[str, list[dict]] = {}
    rejects, pages = [], 0
    for fetched in ol.works_pages(author["ol_author_key"]):
        pages += 1
        for doc in fetched.data.get("docs", []):
            if not doc.get("key"):
                rejects.append(
                    reject(
                        STAGE,
                        "work_without_key",
                        "work",
                        f"{author['qid']}:?",
                        author_qid=author["qid"],
                        title=doc.get("title"),
                    )
                )
                continue
            if doc["key"] not in rows:
                rows[doc["key"]] = work_row(doc, author, fetched, ol.source)
                records[doc["key"]] = record_rows(doc, author, fetched, ol.source)
    if not rows:
        rejects.append(
            reject(
                STAGE,
                "no_works_on_openlibrary",
                "author",
                author["qid"],
                author_qid=author["qid"],
                evidence={"ol_author_key": author["ol_author_key"]},
            )
        )
    return StageResult(
        tables={
            "works_raw": sorted(rows.values(), key=lambda r: r["work_key"]),
            "book_records": [r for key in sorted(records) for r in records[key]],
        },
        rejects=rejects,
        stats={"pages": pages, "works": len(rows), "works_with_records": sum(1 for v in records.values() if v)},
    )


def source_unavailable(author: dict, stage: str, exc: SourceUnavailable) -> StageResult:
    """An author whose Open Library requests did not get an answer (``stage``: where): a
    ``source_unavailable`` reject with the URL, status and attempts, and no row in any table,
    so it is not published (a later release may sample it again)."""
    return StageResult(
        tables={"authors": [], "works_raw": [], "book_records": []},
        rejects=[
            reject(
                stage, SOURCE_UNAVAILABLE, "author", author["qid"], author_qid=author["qid"], evidence=exc.evidence()
            )
        ],
        stats={SOURCE_UNAVAILABLE: 1},
    )


Matched = tuple[dict, "dict | None"] | StageResult  # (authors row, reject or None), or the author's failure


def _matched(author: dict, ol: OpenLibrary, released_ol_keys: frozenset[str]) -> Matched:
    try:
        row, rejected = match_author(author, ol)
    except SourceUnavailable as exc:
        return source_unavailable(author, "match_openlibrary", exc)
    if row["ol_author_key"] in released_ol_keys:
        rejected = reject(
            "match_openlibrary",
            "openlibrary_author_released_before",
            "author",
            row["qid"],
            author_qid=row["qid"],
            evidence={"ol_author_key": row["ol_author_key"]},
        )
    return row, rejected


def _with_works(matched: Matched, ol: OpenLibrary) -> StageResult:
    if isinstance(matched, StageResult):
        return matched
    row, rejected = matched
    result = StageResult(
        tables={"authors": [row], "works_raw": [], "book_records": []},
        rejects=[rejected] if rejected else [],
        stats={"match_method": row["match_method"]},
    )
    if row["ol_author_key"] and not rejected:
        try:
            works = fetch_author_works(row, ol)
        except SourceUnavailable as exc:
            return source_unavailable(row, STAGE, exc)
        result.tables["works_raw"] = works.tables["works_raw"]
        result.tables["book_records"] = works.tables["book_records"]
        result.rejects += works.rejects
        result.stats.update(works.stats)
    return result


def collect_author(author: dict, ol: OpenLibrary, released_ol_keys: frozenset[str] = frozenset()) -> StageResult:
    """One sampled author: its Open Library match, then all its works (none when unmatched,
    or when that Open Library author was released before under another WikiData item). If
    Open Library does not answer (:class:`SourceUnavailable`), the author is a
    ``source_unavailable`` reject and nothing else."""
    return _with_works(_matched(author, ol, released_ol_keys), ol)


def collect_authors(
    authors: list[dict],
    ol: OpenLibrary,
    released_ol_keys: frozenset[str] = frozenset(),
    on_author: Callable[[int], None] | None = None,
) -> StageResult:
    """:func:`collect_author` for a batch of authors, in their order; one author's failure does
    not stop the others. A client that looks things up in bulk (``ol.bulk_lookups``, the dump)
    is asked once per batch for every author record, name search and works list
    (``prefetch_authors``, ``prefetch_works``), instead of once per author; others go author
    by author.
    ``on_author(n)`` is told each time the first ``n`` authors are done (progress). Stats:
    ``source_unavailable``, the authors lost that way."""
    bulk = ol.bulk_lookups
    matched: list[Matched] = []
    if bulk:
        ol.prefetch_authors([k for w in authors for k in w.get("wd_ol_ids") or []], [w["name"] for w in authors])
        matched = [_matched(w, ol, released_ol_keys) for w in authors]
        ol.prefetch_works(
            [
                m[0]["ol_author_key"]
                for m in matched
                if not isinstance(m, StageResult) and m[0]["ol_author_key"] and not m[1]
            ]
        )
    results = []
    try:
        for n, author in enumerate(authors):
            results.append(_with_works(matched[n] if bulk else _matched(author, ol, released_ol_keys), ol))
            if on_author is not None:
                on_author(n + 1)
    finally:
        if bulk:
            ol.clear()
    merged = StageResult.merge(results)
    merged.stats[SOURCE_UNAVAILABLE] = sum(r.stats.get(SOURCE_UNAVAILABLE, 0) for r in results)
    return merged
