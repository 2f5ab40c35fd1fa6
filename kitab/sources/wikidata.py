"""WikiData behind one small interface: ``select(query) -> Fetched`` (SPARQL 1.1 JSON results).

The HTTP implementation (live WDQS or the local mirror: same code) uses SPARQLWrapper,
runs one query at a time with a minimum interval (WDQS etiquette), retries 429/5xx and
cut bodies with the shared policy, and keeps a persistent result cache so a rerun sends
nothing. The dump implementation answers the same two questions with DuckDB over the
snapshot's triples (kitab/sources/dump/wikidata.py; docs/snapshot.md maps the SPARQL to its SQL).
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
from collections.abc import Collection
from datetime import datetime
from typing import Protocol

from requests_cache.backends.sqlite import SQLiteDict
from SPARQLWrapper import JSON, POST, SELECT, URLENCODED, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import EndPointInternalError, SPARQLWrapperException

from kitab.core.config import Settings
from kitab.core.policy import parse_retry_after
from kitab.sources.http import (
    Fetched,
    Gate,
    RequestCounter,
    RetryableError,
    ServiceError,
    fingerprint,
    parse_http_date,
    retrying,
)

# How WDQS answers a query that ran into its 60 s limit: HTTP 500 and a Java stack trace naming
# this exception. Retrying the same query cannot help; asking a smaller question can.
TIMEOUT_MARK = "java.util.concurrent.TimeoutException"


class QueryTimeout(ServiceError):
    """WDQS stopped the query at its time limit (not retried: the same query times out again)."""


class Wikidata(Protocol):
    """The two questions the pipeline asks WikiData, named after their SPARQL files in
    sql/sparql/ (the contract for live WDQS and the mirror); ``data`` is a SPARQL 1.1 JSON
    results object either way, so a dump implementation answers them without SPARQL."""

    source: str
    counter: RequestCounter
    # works_by_titles takes the titles of at most this many authors per call (None: any number)
    authors_per_query: int | None
    # work_records takes at most this many work items per call (None: any number)
    works_per_query: int | None

    def candidate_authors(self, *, from_year: int, to_year: int, min_works: int, max_works: int) -> Fetched:
        """Candidate authors whose earliest birth year is in [from_year, to_year)."""

    def works_by_titles(self, titles: list[str]) -> Fetched:
        """Works whose English label is one of ``titles``, with their authors (P50)."""

    def work_records(self, work_qids: list[str]) -> Fetched:
        """Characters (P674) and narrative locations (P840) of these work items, with labels
        (sql/sparql/work_records.rq); at most ``works_per_query`` QIDs per call."""

    def prefetch_work_records(self, work_qids: list[str]) -> None:
        """A batch's works, looked up at once where that is cheaper (the dump); work_records
        answers the same either way."""

    def close(self) -> None: ...


class SparqlQueries:
    """The questions as SPARQL text, for implementations that run SPARQL (``select``)."""

    # 50 authors' titles (~1,500) per VALUES block: a POST WDQS answers well inside its 60 s
    authors_per_query: int | None = 50
    works_per_query: int | None = 500  # 500 IRIs: a small POST, well inside WDQS's 60 s

    def select(self, query: str) -> Fetched:
        raise NotImplementedError

    def candidate_authors(self, *, from_year: int, to_year: int, min_works: int, max_works: int) -> Fetched:
        from kitab.sources.queries import sparql

        return self.select(
            sparql("candidate_authors", from_year=from_year, to_year=to_year, min_works=min_works, max_works=max_works)
        )

    def works_by_titles(self, titles: list[str]) -> Fetched:
        from kitab.sources.queries import sparql, sparql_titles

        return self.select(sparql("works_by_titles", titles=sparql_titles(titles)))

    def work_records(self, work_qids: list[str]) -> Fetched:
        from kitab.sources.queries import sparql

        return self.select(sparql("work_records", works=work_values(work_qids)))

    def prefetch_work_records(self, work_qids: list[str]) -> None:
        """Nothing: over SPARQL a request is a request; work_records asks its own."""


ENTITY = "http://www.wikidata.org/entity/"
# work_records.rq's ?property -> book_records.field (each entity kind's record_fields, tasks/entities/kinds/, reads these)
RECORD_PROPERTIES = {"P674": "characters", "P840": "narrative_locations"}


def work_values(work_qids: list[str]) -> str:
    """The VALUES block of work_records.rq: distinct, sorted ``wd:Q…`` terms (a bad QID is an error)."""
    qids = sorted(set(work_qids))
    for qid in qids:
        if not (qid[:1] == "Q" and qid[1:].isdigit()):
            raise ValueError(f"not a WikiData item id: {qid!r}")
    return " ".join(f"wd:{q}" for q in qids)


def bindings(fetched: Fetched) -> list[dict[str, str]]:
    """SPARQL JSON results -> plain rows {variable: lexical value} (unbound = absent)."""
    return [{k: v["value"] for k, v in b.items()} for b in fetched.data["results"]["bindings"]]


class HttpWikidata(SparqlQueries):
    def __init__(self, settings: Settings, source: str, cache_scope: str):
        self.source = source
        self.settings = settings
        self.endpoint = settings.wikidata_endpoint
        self.counter = RequestCounter()
        # WDQS: one query at a time per client, a pause between queries, and after a 429
        # nothing until its Retry-After has passed.
        self._lock = threading.Lock()
        self._gate = Gate(settings.wdqs_min_interval)
        # queries/s at most (None: no pause between queries, e.g. against the mirror)
        self.rate_cap = 1.0 / settings.wdqs_min_interval if settings.wdqs_min_interval else None
        settings.cache_dir.mkdir(parents=True, exist_ok=True)
        self._cache = SQLiteDict(
            settings.cache_dir / f"wikidata-{source}-{cache_scope}.sqlite", table_name="sparql", serializer=None
        )

    def _wrapper(self, query: str) -> SPARQLWrapper:
        sparql = SPARQLWrapper(self.endpoint, agent=self.settings.user_agent)
        sparql.setReturnFormat(JSON)
        sparql.setMethod(POST)  # long VALUES blocks do not fit in a URL
        sparql.setRequestMethod(URLENCODED)
        sparql.setTimeout(int(self.settings.timeout_read))
        sparql.setQuery(query)
        # SPARQLWrapper guesses the query form by regex and can take words in a comment
        # for an update (then it sends `update=`); this interface only runs SELECTs.
        sparql.queryType = SELECT
        return sparql

    def _send(self, query: str) -> tuple[dict, datetime | None]:
        with self._lock:
            self._gate.wait()
            self.counter.record(from_cache=False)
            try:
                result = self._wrapper(query).query()
                body = result.response.read()
                date = parse_http_date(result.response.headers.get("Date"))
            except urllib.error.HTTPError as exc:  # 429, 502, 503, 504 arrive here
                if exc.code == 429 or exc.code >= 500:
                    raise RetryableError(
                        f"HTTP {exc.code} from {self.endpoint}",
                        parse_retry_after(exc.headers),
                        url=self.endpoint,
                        status=exc.code,
                    ) from exc
                raise ServiceError(f"HTTP {exc.code} from {self.endpoint}") from exc
            except EndPointInternalError as exc:
                if TIMEOUT_MARK in str(exc):  # WDQS's 60 s limit: the same query times out again
                    raise QueryTimeout(f"WDQS query timed out (HTTP 500, {TIMEOUT_MARK})") from exc
                raise RetryableError(f"HTTP 500 from {self.endpoint}", url=self.endpoint, status=500) from exc
            except SPARQLWrapperException as exc:  # malformed query, 401, 404, 414: retrying cannot help
                raise ServiceError(f"SPARQL request failed: {exc}") from exc
            except (http.client.IncompleteRead, ConnectionError, TimeoutError, urllib.error.URLError) as exc:
                raise RetryableError(
                    f"cut or failed response from {self.endpoint}: {exc!r}", url=self.endpoint
                ) from exc
            try:
                return json.loads(body), date
            except ValueError as exc:
                raise RetryableError(
                    f"undecodable SPARQL results from {self.endpoint}: {exc}", url=self.endpoint, status=200
                ) from exc

    def select(self, query: str) -> Fetched:
        fp = fingerprint("POST", "/sparql", body=query)
        cached = self._cache.get(fp)
        if cached is not None:
            self.counter.record(from_cache=True)
            entry = json.loads(cached)
            return Fetched(
                entry["data"], fp, datetime.fromisoformat(entry["fetched_at"]) if entry["fetched_at"] else None, True
            )
        data, date = retrying(self.settings, self.endpoint, self._gate)(self._send, query)
        self._cache[fp] = json.dumps({"data": data, "fetched_at": date.isoformat() if date else None}).encode()
        return Fetched(data, fp, date, False)

    def close(self) -> None:
        self._cache.close()


def works_with_labels(
    wikidata: Wikidata, titles: list[str], ours: Collection[str] | None = None, crowd: int | None = None
) -> list[dict]:
    """WikiData works whose English label is one of ``titles``, with their authors: ONE query
    (sql/sparql/works_by_titles.rq) for the whole list. Rows: work_qid, title, author_qid.
    With ``ours`` and ``crowd``: only the rows :func:`narrow_crowded` keeps."""
    if not titles:
        return []
    own = getattr(wikidata, "works_with_labels", None)
    if own is not None:  # the dump: the same rows without SPARQL JSON in between
        return own(titles, ours, crowd)
    rows = label_rows(wikidata.works_by_titles(titles))
    return rows if ours is None or crowd is None else narrow_crowded(rows, ours, crowd)


def narrow_crowded(rows: list[dict], ours: Collection[str], crowd: int) -> list[dict]:
    """``works_with_labels`` rows, in their order, less what a reader that only asks "which of
    ``ours`` wrote a work of this label, and who else, up to ``crowd`` authors" cannot miss: a
    label whose works have ``crowd`` or more distinct authors (a non-empty ``author_qid``)
    keeps every row by ``ours`` and the first row of each of its first ``crowd`` authors; any
    other label keeps every row. A common title ("Home") holds every author's work of it,
    ~90,000 rows a batch of 250 at 100,000 authors: a few of them say as much."""
    authors: dict[str, list[str]] = {}
    for row in rows:
        found = authors.setdefault(row["title"], [])
        if row["author_qid"] and row["author_qid"] not in found:
            found.append(row["author_qid"])
    kept, seen = [], set()
    for row in rows:
        label, author = row["title"], row["author_qid"]
        first = author in authors[label][:crowd] and (label, author) not in seen
        seen.add((label, author))
        if len(authors[label]) < crowd or author in ours or first:
            kept.append(row)
    return kept


def label_rows(fetched: Fetched) -> list[dict]:
    """works_by_titles.rq's answer -> rows work_qid, title, author_qid."""
    return [
        {
            "work_qid": r["work"].removeprefix(ENTITY),
            "title": r["title"],
            "author_qid": r["author"].removeprefix(ENTITY),
        }
        for r in bindings(fetched)
    ]


def records_of_works(wikidata: Wikidata, work_qids: list[str]) -> list[dict]:
    """P674 / P840 of ``work_qids`` (sql/sparql/work_records.rq), one query per
    ``works_per_query`` items (the dump: one for all). Rows: work_qid, field
    (``characters`` | ``narrative_locations``), target (its IRI, or the literal), name (the
    label: English, else mul; None when the target has neither), request_fingerprint, fetched_at."""
    qids = sorted(set(work_qids))
    step = wikidata.works_per_query or max(1, len(qids))
    rows: list[dict] = []
    for start in range(0, len(qids), step):
        fetched = wikidata.work_records(qids[start : start + step])
        for r in bindings(fetched):
            prop = r["property"].rsplit("/", 1)[-1]
            rows.append(
                {
                    "work_qid": r["work"].removeprefix(ENTITY),
                    "field": RECORD_PROPERTIES[prop],
                    "target": r["target"].removeprefix(ENTITY),
                    "name": r.get("label"),
                    "request_fingerprint": fetched.fingerprint,
                    "fetched_at": fetched.fetched_at,
                }
            )
    return rows
