"""Stage 2: find each sampled author's Open Library author.

P648 (WikiData's Open Library id) first, when it resolves to an author record; otherwise
an author search by name, chosen by birth year. An author with no match is a reject with
the candidates seen as evidence, never a silent drop.
"""

from __future__ import annotations

import re

from kitab.core.stages import MATCH_OPENLIBRARY
from kitab.sources.openlibrary import OpenLibrary, bare_key, is_author_key
from tasks.base import StageResult, reject
from tasks.text import fold

STAGE = MATCH_OPENLIBRARY  # rejects.stage of what this stage drops (kitab/core/stages.py)
_YEAR = re.compile(r"\b(\d{3,4})\b")
_NON_WORD = re.compile(r"[\W_]+")


def year_of(ol_date: str | None) -> int | None:
    """Open Library writes dates as free text ("18 February 1931", "1931", "c. 1931")."""
    match = _YEAR.search(ol_date or "")
    return int(match.group(1)) if match else None


def name_key(name: str) -> str:
    """Folded like titles (tasks.text.fold: case, accents), punctuation dropped, spaces collapsed:
    "García Márquez, Gabriel" and "garcia marquez gabriel" compare equal."""
    return " ".join(_NON_WORD.sub(" ", fold(name)).split())


def choose_by_name_and_birth_year(docs: list[dict], name: str, birth_year: int) -> tuple[dict | None, str, dict]:
    """Pick the search hit whose name (or an alternate name) equals ``name`` and whose birth
    year equals ``birth_year``. Several equal hits (OL has duplicate author records): the one
    with most works, ties by key. Returns (doc or None, reason, evidence)."""
    wanted = name_key(name)
    seen = [
        {
            "key": d.get("key"),
            "name": d.get("name"),
            "birth_year": year_of(d.get("birth_date")),
            "work_count": d.get("work_count", 0),
        }
        for d in docs
    ]
    named = [
        (d, s)
        for d, s in zip(docs, seen)
        if wanted in {name_key(n) for n in [d.get("name", ""), *d.get("alternate_names", [])]}
    ]
    evidence = {"query": name, "birth_year": birth_year, "candidates": seen[:20]}
    if not named:
        return None, "no_openlibrary_match", evidence
    dated = [(d, s) for d, s in named if s["birth_year"] == birth_year]
    if not dated:
        return None, "birth_year_mismatch", evidence
    dated.sort(key=lambda ds: (-(ds[1]["work_count"] or 0), ds[1]["key"]))
    if len(dated) > 1:
        evidence["ambiguous"] = [s["key"] for _, s in dated]
    return dated[0][0], "name_birth_year", evidence


def match_author(author: dict, ol: OpenLibrary) -> tuple[dict, dict | None]:
    """One sampled author -> (authors row, reject row or None)."""
    row = {
        "qid": author["qid"],
        "name": author["name"],
        "birth_year": author["birth_year"],
        "sitelinks": author["sitelinks"],
        "wd_work_count": author["wd_work_count"],
        "wd_ol_id": " ".join(author.get("wd_ol_ids", [])) or None,
        "ol_author_key": None,
        "ol_name": None,
        "match_method": "unmatched",
        "source": ol.source,
        "request_fingerprint": None,
        "fetched_at": None,
    }
    tried = []
    for ol_id in author.get("wd_ol_ids", []):
        if not is_author_key(ol_id):  # e.g. a work id (OL..W) entered as P648
            tried.append({"p648": ol_id, "valid": False})
            continue
        fetched = ol.author(ol_id)
        tried.append({"p648": ol_id, "found": fetched.data is not None})
        if fetched.data:
            return {
                **row,
                "ol_author_key": bare_key(fetched.data["key"]),
                "ol_name": fetched.data.get("name"),
                "match_method": "p648",
                "request_fingerprint": fetched.fingerprint,
                "fetched_at": fetched.fetched_at,
            }, None
    fetched = ol.search_authors(author["name"])
    doc, reason, evidence = choose_by_name_and_birth_year(
        fetched.data.get("docs", []), author["name"], author["birth_year"]
    )
    provenance = {"request_fingerprint": fetched.fingerprint, "fetched_at": fetched.fetched_at}
    if doc is None:
        evidence["p648_tried"] = tried
        return {**row, **provenance}, reject(
            STAGE, reason, "author", author["qid"], author_qid=author["qid"], evidence=evidence
        )
    return {
        **row,
        **provenance,
        "ol_author_key": bare_key(doc["key"]),
        "ol_name": doc.get("name"),
        "match_method": "name_birth_year",
    }, None


def match_authors(sampled: list[dict], ol: OpenLibrary) -> StageResult:
    rows, rejects = [], []
    for author in sampled:
        row, rej = match_author(author, ol)
        rows.append(row)
        if rej:
            rejects.append(rej)
    methods = [r["match_method"] for r in rows]
    return StageResult(
        tables={"authors": rows},
        rejects=rejects,
        stats={m: methods.count(m) for m in ("p648", "name_birth_year", "unmatched")},
    )
