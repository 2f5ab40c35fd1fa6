"""Open Library behind one small interface, with an HTTP implementation (live or mirror:
the same code, another base URL); the dump implementation, which answers from the snapshot's
dump files through DuckDB, is kitab/sources/dump/openlibrary.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

from kitab.core.config import Settings
from kitab.sources.http import Fetched, Gate, RequestCounter, ServiceError, get_json, make_session

# Only what the pipeline reads: the original fetched whole documents, one page of 500.
WORK_FIELDS = (
    "key",
    "title",
    "subtitle",
    "first_publish_year",
    "language",
    "author_key",
    "author_name",
    "edition_count",
    "person",  # subject_people: the book's record (tasks/book_evidence.py)
    "place",  # subject_places
)
MAX_REDIRECTS = 3


class OpenLibrary(Protocol):
    source: str
    counter: RequestCounter
    # True: prefetch_authors / prefetch_works answer a whole batch's lookups in a few queries
    # and the per-author calls are then served from memory until clear(); False: they do
    # nothing and every call asks the service (one request each, rate-limited, cached).
    bulk_lookups: bool

    def author(self, key: str) -> Fetched:
        """``/authors/{key}.json`` (redirects followed); ``data`` is None if there is none."""

    def search_authors(self, name: str) -> Fetched:
        """``/search/authors.json?q=name``."""

    def works_pages(self, author_key: str) -> Iterator[Fetched]:
        """Every page of ``/search.json?author_key=…`` with only WORK_FIELDS."""

    def prefetch_authors(self, keys: list[str], names: list[str]) -> None:
        """Load the author records of ``keys`` and the author searches of ``names`` at once."""

    def prefetch_works(self, author_keys: list[str]) -> None:
        """Load every works page of ``author_keys`` at once."""

    def clear(self) -> None:
        """Forget this thread's prefetched answers."""

    def close(self) -> None: ...


def bare_key(key: str) -> str:
    """'/authors/OL1A' -> 'OL1A' (the search API and WikiData P648 use the bare form)."""
    return key.rstrip("/").rsplit("/", 1)[-1]


_AUTHOR_KEY = re.compile(r"^OL\d+A$")


def is_author_key(key: str) -> bool:
    return bool(_AUTHOR_KEY.match(bare_key(key)))


class OpenLibraryBase:
    """What every implementation shares: paging through /search.json and following author
    redirects, over two primitives (``_author``, ``_search``) each one answers its own way."""

    page_size: int

    def _search_params(self, author_key: str, page: int) -> dict:
        return {"author_key": author_key, "fields": ",".join(WORK_FIELDS), "limit": self.page_size, "page": page}

    def works_pages(self, author_key: str) -> Iterator[Fetched]:
        page, seen = 1, 0
        while True:
            fetched = self._search(self._search_params(author_key, page))
            docs = fetched.data.get("docs", [])
            yield fetched
            seen += len(docs)
            total = fetched.data.get("numFound", fetched.data.get("num_found", 0))
            if not docs or seen >= total:
                return
            page += 1

    def author(self, key: str) -> Fetched:
        key = bare_key(key)
        if not is_author_key(key):  # P648 is free text on WikiData; it goes into a URL path
            raise ServiceError(f"not an Open Library author key: {key!r}")
        for _ in range(MAX_REDIRECTS + 1):
            fetched = self._author(key)
            record = fetched.data
            if not record or record.get("type", {}).get("key") != "/type/redirect":
                return fetched
            key = bare_key(record["location"])
        raise ServiceError(f"Open Library author {key}: more than {MAX_REDIRECTS} redirects")


class HttpOpenLibrary(OpenLibraryBase):
    bulk_lookups = False  # one request per call: nothing to load ahead

    def __init__(self, settings: Settings, source: str, cache_scope: str):
        self.source = source
        self.base = settings.openlibrary_base.rstrip("/")
        self.settings = settings
        self.page_size = settings.ol_page_size
        self.counter = RequestCounter()
        self.gate = Gate()
        self.rate_cap = settings.ol_rate  # requests/s: the limiter's, shown beside the achieved rate
        self.session = make_session(
            settings, cache_name=f"openlibrary-{source}-{cache_scope}", per_second=settings.ol_rate, gate=self.gate
        )

    def _get(self, path: str, params: dict, allow_404: bool = False) -> Fetched:
        return get_json(
            self.session, self.base + path, params, self.settings, self.counter, self.gate, allow_404=allow_404
        )

    def _author(self, key: str) -> Fetched:
        return self._get(f"/authors/{key}.json", {}, allow_404=True)

    def search_authors(self, name: str) -> Fetched:
        return self._get("/search/authors.json", {"q": name})

    def _search(self, params: dict) -> Fetched:
        return self._get("/search.json", params)

    def prefetch_authors(self, keys: list[str], names: list[str]) -> None:
        pass

    def prefetch_works(self, author_keys: list[str]) -> None:
        pass

    def clear(self) -> None:
        pass

    def close(self) -> None:
        self.session.close()
