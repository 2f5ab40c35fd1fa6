"""Stage 3: every Open Library work of each matched author, every result page, only the
fields the pipeline reads, with provenance on each row."""
from __future__ import annotations

from kitab.sources.http import Fetched
from kitab.sources.openlibrary import OpenLibrary
from tasks.base import StageResult, reject

STAGE = "fetch_works"


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


def fetch_author_works(author: dict, ol: OpenLibrary) -> StageResult:
    """All pages for one matched author. A work seen on two pages (the index moved under
    us) is kept once; a doc without a key cannot be traced and is rejected."""
    rows: dict[str, dict] = {}
    rejects, pages = [], 0
    for fetched in ol.works_pages(author["ol_author_key"]):
        pages += 1
        for doc in fetched.data.get("docs", []):
            if not doc.get("key"):
                rejects.append(reject(STAGE, "work_without_key", "work", f"{author['qid']}:?",
                                      author_qid=author["qid"], title=doc.get("title")))
                continue
            rows.setdefault(doc["key"], work_row(doc, author, fetched, ol.source))
    if not rows:
        rejects.append(reject(STAGE, "no_works_on_openlibrary", "author", author["qid"],
                              author_qid=author["qid"], evidence={"ol_author_key": author["ol_author_key"]}))
    return StageResult(tables={"works_raw": sorted(rows.values(), key=lambda r: r["work_key"])},
                       rejects=rejects, stats={"pages": pages, "works": len(rows)})
