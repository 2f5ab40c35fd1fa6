"""Open Library for ``--source dump``: the endpoints the pipeline reads, answered from the
scanned tables with :class:`kitab.sources.snapshot.olindex.OLIndex`'s answers (the mirror's),
the same fingerprints and the same ``fetched_at``. Batch prefetch (``prefetch_authors``,
``prefetch_works``) turns the per-author calls of a batch into a few set-based queries.

Semantics that are easy to get wrong, and are reproduced on purpose: a work's
``edition_count`` counts every edition reference (an edition listing a work twice counts
twice), an author's ``work_count`` counts every author reference (a work listing the author
twice counts twice) while ``/search.json?author_key=`` lists the work once; names are resolved
through at most 4 redirects; ``year_of`` takes the first run of exactly four Unicode digits."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from kitab.core.config import Settings
from kitab.sources.dump.search import search_names, token_index
from kitab.sources.dump.store import open_store
from kitab.sources.http import Fetched, RequestCounter, fingerprint
from kitab.sources.openlibrary import MAX_REDIRECTS, OpenLibraryBase, bare_key
from kitab.sources.snapshot.format import OL_REDIRECT
from kitab.sources.snapshot.olindex import SEARCH_DOCUMENTATION_URL, project_fields, tokens

SEARCH_AUTHORS_LIMIT = 100  # OLIndex.search_authors' default, what DumpOpenLibrary asks for


WORK_COLUMNS = "key, title, subtitle, author_keys, author_name, edition_count, first_publish_year, publish_year, language, person, place"
WORK_COLUMN_NAMES = tuple(name.strip() for name in WORK_COLUMNS.split(","))
AUTHOR_COLUMNS = "key, record, work_count, top_work"


def work_doc(row: tuple | list) -> dict:
    """An author_works row -> the /search.json doc (OLIndex._work_doc; absent values left out)."""
    key, title, subtitle, author_keys, author_name, edition_count, first_publish_year, publish_year, language = row[:9]
    doc = {"key": key, "type": "work", "title": json.loads(title)}
    subtitle = json.loads(subtitle) if subtitle is not None else None
    if subtitle:
        doc["subtitle"] = subtitle
    doc["author_key"] = list(author_keys)
    doc["author_name"] = list(author_name)
    doc["edition_count"] = edition_count
    if first_publish_year is not None:
        doc["first_publish_year"] = first_publish_year
    if publish_year:
        doc["publish_year"] = list(publish_year)
    if language:
        doc["language"] = list(language)
    for name, text in zip(("person", "place"), row[9:], strict=True):
        value = json.loads(text) if text is not None else None
        if value:  # the dump's subject_people / subject_places (a list; OLIndex keeps what is there)
            doc[name] = list(value)
    return doc


def author_doc(row: tuple) -> dict:
    """An authors row -> the /search/authors.json doc (OLIndex._author_doc)."""
    key, record, work_count, top_work = row
    record = json.loads(record)
    doc = {"key": key.rsplit("/", 1)[-1], "type": "author", "name": record.get("name", "")}
    for field in ("alternate_names", "birth_date", "death_date"):
        if record.get(field):
            doc[field] = record[field]
    if work_count:
        doc["top_work"] = json.loads(top_work)
    doc["work_count"] = work_count
    return doc


_NOT_PREFETCHED = object()


def _full_author_key(key: str) -> str:
    return key if key.startswith("/") else f"/authors/{key}"


def _search_authors_data(total: int, docs: list[dict]) -> dict:
    return {"numFound": total, "start": 0, "numFoundExact": True, "docs": docs}


class DumpOpenLibrary(OpenLibraryBase):
    """The Open Library endpoints the pipeline reads, answered from the scanned tables.

    Answers equal ``OLIndex``'s; ``prefetch_*`` load a batch's answers with a few set-based
    queries, and later calls for those keys and names are served from memory until ``clear()``.
    """

    source = "dump"
    bulk_lookups = True

    def __init__(self, snapshot_dir: Path, settings: Settings):
        self.store = open_store(snapshot_dir, settings)
        self.page_size = settings.ol_page_size
        self.counter = RequestCounter()
        self.fetched_at = self.store.fetched_at
        # Prefetched answers are per thread: batches on several threads share this client, and
        # one batch's clear() must not drop another's prefetch.
        self._local = threading.local()

    @property
    def _authors(self) -> dict[str, str | None]:  # full key -> record JSON (None: no such record)
        return self._prefetched("authors")

    @property
    def _searches(self) -> dict[str, dict]:  # name -> search_authors data
        return self._prefetched("searches")

    @property
    def _works(self) -> dict[str, list[dict]]:  # bare author key -> every work doc, in result order
        return self._prefetched("works")

    def _prefetched(self, name: str) -> dict:
        if not hasattr(self._local, name):
            setattr(self._local, name, {})
        return getattr(self._local, name)

    # -- answers ---------------------------------------------------------------------------

    def _fetched(self, path: str, params: dict, data: Any) -> Fetched:
        self.counter.record(from_cache=True)  # no request leaves the process
        return Fetched(data, fingerprint("GET", path, params), self.fetched_at, True)

    def _author(self, key: str) -> Fetched:
        full = _full_author_key(key)
        record = self._authors.get(full, _NOT_PREFETCHED)
        if record is _NOT_PREFETCHED:
            found = self.store.query("SELECT record FROM authors_rows", rows_of={"authors": [full]})
            record = found[0][0] if found else None
        return self._fetched(f"/authors/{key}.json", {}, json.loads(record) if record is not None else None)

    def search_authors(self, name: str) -> Fetched:
        data = self._searches.get(name)
        if data is None:
            data = self._search_authors_batch([name])[name]
        else:
            data = json.loads(json.dumps(data))  # every answer is a fresh object
        return self._fetched("/search/authors.json", {"q": name}, data)

    def _search(self, params: dict) -> Fetched:
        limit, page = int(params["limit"]), int(params["page"])
        if limit < 0 or page < 1:
            raise ValueError("limit must be >= 0, page >= 1")
        author_key = str(params["author_key"]).rsplit("/", 1)[-1]
        start = (page - 1) * limit
        docs = self._works.get(author_key)
        if docs is not None:
            total, page_docs = len(docs), docs[start : start + limit]
        else:
            total, page_docs = self._works_page(author_key, start, limit)
        data = {
            "numFound": total,
            "start": start,
            "numFoundExact": True,
            "num_found": total,
            "documentation_url": SEARCH_DOCUMENTATION_URL,
            "q": "",
            "offset": None,
            "docs": [project_fields(doc, params["fields"]) for doc in page_docs],
        }
        return self._fetched("/search.json", params, data)

    # -- queries ---------------------------------------------------------------------------

    def _works_page(self, author_key: str, start: int, limit: int) -> tuple[int, list[dict]]:
        rows_of = {"author_works": [author_key]}
        rows = self.store.query(
            f"""
            SELECT {WORK_COLUMNS}, count(*) OVER () AS total FROM author_works_rows
            ORDER BY key_num, key LIMIT ? OFFSET ?""",
            [limit, start],
            rows_of=rows_of,
        )
        if rows:
            return rows[0][-1], [work_doc(row[:-1]) for row in rows]
        return self.store.query("SELECT count(*) FROM author_works_rows", rows_of=rows_of)[0][0], []

    def _search_authors_batch(self, names: list[str]) -> dict[str, dict]:
        """search_authors data for every name, in one query: every token of a name must be among
        the author's name tokens; ordered by work_count desc, key number, key; first 100."""
        names = list(dict.fromkeys(names))
        wanted = {name: sorted(set(tokens(name))) for name in names}
        queries = [(i, token) for i, name in enumerate(names) for token in wanted[name]]
        results = {name: _search_authors_data(0, []) for name in names}
        if not queries:
            return results  # a query with no tokens matches nothing
        toks = sorted({token for _, token in queries})
        index = token_index(self.store.keyed["author_tokens"], toks)
        top = [
            (qid, key, total)
            for qid, (total, keys) in enumerate(search_names([wanted[n] for n in names], index, SEARCH_AUTHORS_LIMIT))
            for key in keys
        ]
        keys = {key for _, key, _ in top}
        found = {
            row[0]: row
            for row in self.store.query(f"SELECT {AUTHOR_COLUMNS} FROM authors_rows", rows_of={"authors": keys})
        }
        for qid, key, total in top:
            data = results[names[qid]]
            data["numFound"] = total
            data["docs"].append(author_doc(found[key]))  # a fresh doc per answer
        return results

    # -- batch prefetch --------------------------------------------------------------------

    def prefetch_authors(self, keys: list[str], names: list[str]) -> None:
        """Load the author records of ``keys`` (with their redirect chains) and the search
        results of ``names`` with a few set-based queries."""
        pending = {_full_author_key(k) for k in keys} - self._authors.keys()
        found: dict[str, str | None] = {}
        for _ in range(MAX_REDIRECTS + 1):  # as many hops as OpenLibraryBase.author follows
            if not pending:
                break
            rows = self.store.query(
                "SELECT key, record, type, location FROM authors_rows", rows_of={"authors": pending}
            )
            found.update(dict.fromkeys(pending))
            follow = set()
            for key, record, record_type, location in rows:
                found[key] = record
                if record_type == OL_REDIRECT and location:
                    follow.add(f"/authors/{bare_key(location)}")
            pending = follow - found.keys() - self._authors.keys()
        searches = self._search_authors_batch(sorted(set(names) - self._searches.keys())) if names else {}
        self._authors.update(found)
        self._searches.update(searches)

    def prefetch_works(self, author_keys: list[str]) -> None:
        """Load every work doc of ``author_keys`` (bare or full keys) in one query."""
        wanted = {str(k).rsplit("/", 1)[-1] for k in author_keys} - self._works.keys()
        if not wanted:
            return
        docs: dict[str, list[dict]] = {k: [] for k in wanted}
        # the keyed rows through Arrow, column by column: a DuckDB query's fetchall of the same
        # rows cost 6x more (list columns); the file's order already is this sort's
        found = self.store.keyed["author_works"].rows(wanted)
        found = found.sort_by([("author_key", "ascending"), ("key_num", "ascending"), ("key", "ascending")])
        columns = [found.column(name).to_pylist() for name in ("author_key", *WORK_COLUMN_NAMES)]
        for author_key, *row in zip(*columns, strict=True):
            docs[author_key].append(work_doc(row))
        self._works.update(docs)

    def clear(self) -> None:
        """Forget this thread's prefetched answers (call between batches: memory stays bounded by
        one batch per thread)."""
        for name in ("authors", "searches", "works"):
            setattr(self._local, name, {})

    def close(self) -> None:
        self.clear()
        self.store.close()
