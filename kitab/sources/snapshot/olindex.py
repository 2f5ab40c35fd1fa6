"""Open Library API answers computed from a snapshot's dump records.

:class:`OLIndex` reads the three dumps once, builds in-memory indexes, and then answers the
endpoints the pipeline uses with the real API's response shapes:

=================================  ==================================
real endpoint                      method
=================================  ==================================
``/authors/{id}.json``             :meth:`OLIndex.author`
``/works/{id}.json``               :meth:`OLIndex.work`
``/works/{id}/editions.json``      :meth:`OLIndex.editions`
``/search/authors.json?q=``        :meth:`OLIndex.search_authors`
``/search.json``                   :meth:`OLIndex.search_works`
=================================  ==================================

Matching is token based (case- and accent-insensitive, every query token must occur) rather than
Solr's relevance ranking; results come in a fixed order so pagination is stable. The methods
are pure reads, cheap enough for the mirror to call per request, and every answer is a fresh
object the caller may keep or change.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from kitab.sources.snapshot.format import (
    OL_AUTHOR,
    OL_AUTHORS_FILE,
    OL_EDITIONS_FILE,
    OL_REDIRECT,
    OL_WORK,
    OL_WORKS_FILE,
    iter_ol_dump,
)

SEARCH_DOCUMENTATION_URL = "https://openlibrary.org/dev/docs/api/search"
EDITIONS_MAX_LIMIT = 1000  # the real /works/{id}/editions.json caps limit here

_KEY_NUMBER = re.compile(r"OL(\d+)[AWM]$")
_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")
_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """Search tokens: accents stripped, case-folded, split on anything not a letter or digit."""
    if not text.isascii():
        decomposed = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _TOKEN.findall(text.casefold())


def year_of(date: str | None) -> int | None:
    """The first four-digit number in an Open Library date string ("March 1987" -> 1987)."""
    match = _YEAR.search(date or "")
    return int(match.group(1)) if match else None


def _key_number(key: str) -> int:
    match = _KEY_NUMBER.search(key)
    return int(match.group(1)) if match else -1


def _sort_keys(keys: Iterable[str]) -> list[str]:
    """Keys in numeric id order (OL9W before OL10W): the fixed result order of every search."""
    return sorted(keys, key=lambda k: (_key_number(k), k))


def _full_key(prefix: str, key: str) -> str:
    """Accept "OL123A" or "/authors/OL123A" alike."""
    return key if key.startswith("/") else f"{prefix}{key}"


def project_fields(doc: dict, fields: str | list[str] | None = None) -> dict:
    """A fresh copy of ``doc`` with only the requested fields, as the real API's ``fields=`` ("*" = all)."""
    wanted = None
    if fields is not None:
        wanted = {f.strip() for f in (fields.split(",") if isinstance(fields, str) else fields)}
        if "*" in wanted:
            wanted = None
    return {k: list(v) if isinstance(v, list) else v for k, v in doc.items() if wanted is None or k in wanted}


def _pack(record: dict) -> str:
    """Records are kept as compact JSON text: a third of the memory of dicts, and every answer is a fresh copy."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _type(record: dict) -> str | None:
    return record.get("type", {}).get("key")


class OLIndex:
    """In-memory Open Library built from dump records; see the module docstring."""

    def __init__(self, authors: Iterable[dict], works: Iterable[dict], editions: Iterable[dict]):
        self._authors: dict[str, str] = {}
        self._names: dict[str, tuple[str, list[str]]] = {}  # author key -> (name, alternate names)
        self._redirects: dict[str, str] = {}  # author key -> location
        for record in authors:
            self._authors[record["key"]] = _pack(record)
            if _type(record) == OL_AUTHOR:
                self._names[record["key"]] = (record.get("name", ""), record.get("alternate_names", []))
            elif _type(record) == OL_REDIRECT:
                self._redirects[record["key"]] = record["location"]

        # Editions first: a work's search doc needs their dates and languages.
        found: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
        years: dict[str, set[int]] = defaultdict(set)
        languages: dict[str, set[str]] = defaultdict(set)
        for edition in editions:
            year = year_of(edition.get("publish_date"))
            codes = {ref["key"].rsplit("/", 1)[-1] for ref in edition.get("languages", [])}
            packed = _pack(edition)
            for ref in edition.get("works", []):
                found[ref["key"]].append((_key_number(edition["key"]), edition["key"], packed))
                if year is not None:
                    years[ref["key"]].add(year)
                languages[ref["key"]] |= codes
        self._editions = {work: [packed for *_, packed in sorted(entries)] for work, entries in found.items()}

        self._works: dict[str, str] = {}
        self._work_docs: dict[str, dict] = {}  # redirects are fetchable by key but are not search results
        for work in works:
            self._works[work["key"]] = _pack(work)
            if _type(work) == OL_WORK:
                self._work_docs[work["key"]] = self._work_doc(work, years[work["key"]], languages[work["key"]])

        works_by_author: dict[str, list[str]] = defaultdict(list)
        self._title_postings: dict[str, set[str]] = defaultdict(set)
        self._work_author_postings: dict[str, set[str]] = defaultdict(set)
        for key in _sort_keys(self._work_docs):
            doc = self._work_docs[key]
            for token in tokens(f"{doc['title']} {doc.get('subtitle', '')}"):
                self._title_postings[token].add(key)
            for author_key in doc["author_key"]:
                works_by_author[author_key].append(key)
                for token in self._name_tokens(f"/authors/{author_key}"):
                    self._work_author_postings[token].add(key)
        self._works_by_author = dict(works_by_author)

        self._author_docs = {}
        self._author_postings: dict[str, set[str]] = defaultdict(set)
        for key in self._names:
            self._author_docs[key] = self._author_doc(key)
            for token in self._name_tokens(key):
                self._author_postings[token].add(key)

    @classmethod
    def from_snapshot(cls, snapshot_dir: str | os.PathLike) -> OLIndex:
        folder = Path(snapshot_dir)
        return cls(
            (record for *_, record in iter_ol_dump(folder / OL_AUTHORS_FILE)),
            (record for *_, record in iter_ol_dump(folder / OL_WORKS_FILE)),
            (record for *_, record in iter_ol_dump(folder / OL_EDITIONS_FILE)),
        )

    # --- index building -----------------------------------------------------------------

    def _name_tokens(self, author_key: str) -> set[str]:
        """Tokens of an author's name and alternate names (one bag, as Solr's author field)."""
        name, alternates = self._names.get(author_key, ("", []))
        return {token for text in (name, *alternates) for token in tokens(text)}

    def _resolve_name(self, key: str) -> str | None:
        """An author's name, following redirects (a bounded number, in case of a cycle)."""
        for _ in range(5):
            if key not in self._redirects:
                return self._names.get(key, ("", []))[0] or None
            key = self._redirects[key]
        return None

    def _work_doc(self, work: dict, years: set[int], languages: set[str]) -> dict:
        """The Solr document /search.json returns for a work (absent values are left out, as Solr does)."""
        author_keys = [ref["author"]["key"] for ref in work.get("authors", []) if "author" in ref]
        first_years = [*sorted(years)[:1], *filter(None, [year_of(work.get("first_publish_date"))])]
        doc = {"key": work["key"], "type": "work", "title": work.get("title", "")}
        if work.get("subtitle"):
            doc["subtitle"] = work["subtitle"]
        doc["author_key"] = [key.rsplit("/", 1)[-1] for key in author_keys]
        doc["author_name"] = [name for name in map(self._resolve_name, author_keys) if name]
        doc["edition_count"] = len(self._editions.get(work["key"], []))
        if first_years:
            doc["first_publish_year"] = min(first_years)
        if years:
            doc["publish_year"] = sorted(years)
        if languages:
            doc["language"] = sorted(languages)
        # the work's subject people / places, as Solr's person / place fields (book_records)
        for field, name in (("subject_people", "person"), ("subject_places", "place")):
            if work.get(field):
                doc[name] = list(work[field])
        return doc

    def _author_doc(self, key: str) -> dict:
        """The Solr document /search/authors.json returns for an author."""
        record = json.loads(self._authors[key])
        work_keys = self._works_by_author.get(key.rsplit("/", 1)[-1], [])
        doc = {"key": key.rsplit("/", 1)[-1], "type": "author", "name": record.get("name", "")}
        for field in ("alternate_names", "birth_date", "death_date"):
            if record.get(field):
                doc[field] = record[field]
        if work_keys:
            # "top work" on OL is the most popular; the edition count stands in for popularity.
            top = min(work_keys, key=lambda k: (-self._work_docs[k]["edition_count"], _key_number(k)))
            doc["top_work"] = self._work_docs[top]["title"]
        doc["work_count"] = len(work_keys)
        return doc

    # --- endpoints ----------------------------------------------------------------------

    def author(self, key: str) -> dict | None:
        """``/authors/{id}.json``: the dump record (a redirect comes back as the redirect record)."""
        packed = self._authors.get(_full_key("/authors/", key))
        return json.loads(packed) if packed else None

    def work(self, key: str) -> dict | None:
        """``/works/{id}.json``: the dump record."""
        packed = self._works.get(_full_key("/works/", key))
        return json.loads(packed) if packed else None

    def editions(self, work_key: str, limit: int = 50, offset: int = 0) -> dict | None:
        """``/works/{id}/editions.json``: ``links``, ``size``, ``entries``; ``None`` for an unknown work."""
        key = _full_key("/works/", work_key)
        if key not in self._works:
            return None
        if limit < 0 or offset < 0:
            raise ValueError("limit and offset must be >= 0")
        limit = min(limit, EDITIONS_MAX_LIMIT)
        found = self._editions.get(key, [])
        entries = [json.loads(packed) for packed in found[offset : offset + limit]]
        base = f"{key}/editions.json"
        links = {"self": base if (limit, offset) == (50, 0) else f"{base}?limit={limit}&offset={offset}", "work": key}
        if offset > 0:
            links["prev"] = f"{base}?limit={limit}&offset={max(0, offset - limit)}"
        if offset + len(entries) < len(found):
            links["next"] = f"{base}?limit={limit}&offset={offset + limit}"
        return {"links": links, "size": len(found), "entries": entries}

    def search_authors(self, q: str, limit: int = 100, offset: int = 0) -> dict:
        """``/search/authors.json?q=``: every token of ``q`` must occur in the author's names.

        Ordered by work count (descending), then key, so the most prolific match comes first.
        """
        if limit < 0 or offset < 0:
            raise ValueError("limit and offset must be >= 0")
        wanted = tokens(q)
        matches = set.intersection(*(self._author_postings.get(t, set()) for t in wanted)) if wanted else set()
        ordered = sorted(matches, key=lambda k: (-self._author_docs[k]["work_count"], _key_number(k), k))
        docs = [project_fields(self._author_docs[k]) for k in ordered[offset : offset + limit]]
        return {"numFound": len(ordered), "start": offset, "numFoundExact": True, "docs": docs}

    def search_works(
        self,
        author_key: str | None = None,
        title: str | None = None,
        author: str | None = None,
        fields: str | list[str] | None = None,
        limit: int = 100,
        page: int = 1,
        offset: int | None = None,
    ) -> dict:
        """``/search.json`` with ``author_key=``, ``title=`` and/or ``author=`` (all given ones must match).

        ``author_key`` matches a work's author keys exactly ("OL31120A"); ``title`` must have all its
        tokens in the title or subtitle; ``author`` all its tokens among the names (and alternate
        names) of the work's authors. Works come in key order. As in the real API, ``offset`` (if given) wins over
        ``page``, ``start`` is the offset used, and ``fields`` selects the doc fields.
        """
        if author_key is None and title is None and author is None:
            raise ValueError("search_works needs author_key, title or author")
        if limit < 0 or page < 1 or (offset is not None and offset < 0):
            raise ValueError("limit must be >= 0, page >= 1, offset >= 0")
        candidates: list[set[str]] = []
        if author_key is not None:
            candidates.append(set(self._works_by_author.get(author_key.rsplit("/", 1)[-1], [])))
        for text, postings in ((title, self._title_postings), (author, self._work_author_postings)):
            if text is not None:
                wanted = tokens(text)
                # A query with nothing searchable in it matches nothing rather than everything.
                candidates.append(set.intersection(*(postings.get(t, set()) for t in wanted)) if wanted else set())
        ordered = _sort_keys(set.intersection(*candidates))
        start = offset if offset is not None else (page - 1) * limit
        docs = [project_fields(self._work_docs[k], fields) for k in ordered[start : start + limit]]
        return {
            "numFound": len(ordered),
            "start": start,
            "numFoundExact": True,
            "num_found": len(ordered),
            "documentation_url": SEARCH_DOCUMENTATION_URL,
            "q": "",
            "offset": offset,
            "docs": docs,
        }
