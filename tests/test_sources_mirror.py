"""The real clients against the local mirror: sampling, matching, paging, politeness
(429 + Retry-After, 5xx and cut responses retried), cache, and dump/mirror equivalence."""

from __future__ import annotations

import gzip
import json
import re
import time
from collections import defaultdict

import pytest

from kitab.simulate.mirror.faults import Fault
from kitab.sources import open_sources
from kitab.sources.http import SourceUnavailable
from tasks.base import StageResult
from tasks.fetch_works import collect_author, fetch_author_works
from tasks.match_openlibrary import match_authors
from tasks.sample_authors import fetch_candidates, sample_authors

WD = "http://www.wikidata.org/entity/"
# The documented author occupations (sql/sparql/candidate_authors.rq): author and its
# book-writing subclasses, not the whole P279* closure.
WRITER_OCCUPATIONS = {
    "Q36180",
    "Q6625963",
    "Q49757",
    "Q482980",
    "Q214917",
    "Q11774202",
    "Q15949613",
    "Q4853732",
    "Q18844224",
    "Q15980158",
}
TRIPLE = re.compile(r"^<([^>]+)> <([^>]+)> (.+) \.$")
PROVENANCE = {"source", "request_fingerprint", "fetched_at"}


def authors_passing_filters(snapshot_dir) -> set[str]:
    """The filters computed independently of any SPARQL engine, straight from the N-Triples."""
    humans, authors, births, links, works = set(), set(), defaultdict(list), {}, defaultdict(set)
    with gzip.open(snapshot_dir / "wikidata.nt.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            s, p, o = TRIPLE.match(line.strip()).groups()
            prop = p.rsplit("/", 1)[-1]
            if prop == "P31" and o == f"<{WD}Q5>":
                humans.add(s)
            elif prop == "P106" and o.strip("<>").removeprefix(WD) in WRITER_OCCUPATIONS:
                authors.add(s)
            elif prop == "P569":
                births[s].append(int(re.match(r'"(-?\d+)-', o).group(1)))
            elif p == "http://wikiba.se/ontology#sitelinks":
                links[s] = o
            elif prop == "P50":
                works[o.strip("<>")].add(s)
    return {
        s.removeprefix(WD)
        for s in humans & authors & set(links)
        if births[s] and min(births[s]) >= 1850 and 10 <= len(works[s]) <= 300
    }


def candidates(sources, settings):
    found, _ = fetch_candidates(
        sources.wikidata,
        first_year=settings.birth_year_min,
        last_year_exclusive=2027,
        window=settings.birth_year_window,
        min_works=settings.min_works,
        max_works=settings.max_works,
    )
    return found


def collect(sources, settings, n=40, seed=42):
    """sample -> match -> fetch with the flow's stage functions, no Prefect."""
    sampled = sample_authors(candidates(sources, settings), n=n, seed=seed, exclude_qids=set())
    collected = StageResult.merge([collect_author(a, sources.openlibrary) for a in sampled.tables["sampled"]])
    return collected, collected.tables["works_raw"]


@pytest.fixture
def via_mirror(mirror, settings):
    sources = open_sources("mirror", settings, mirror_url=mirror.url)
    yield sources
    sources.close()


def log_since(mirror, mark, path):
    return [e for e in mirror.log()[mark:] if e.path == path]


def test_sampling_query_returns_exactly_the_authors_that_pass_the_filters(via_mirror, settings, snapshot_dir):
    found = {c["qid"] for c in candidates(via_mirror, settings)}
    assert found == authors_passing_filters(snapshot_dir)
    assert len(found) >= 150


def test_sample_is_seeded_and_excludes_released(via_mirror, settings):
    pool = candidates(via_mirror, settings)
    first = sample_authors(pool, n=30, seed=7, exclude_qids=set()).tables["sampled"]
    again = sample_authors(list(reversed(pool)), n=30, seed=7, exclude_qids=set()).tables["sampled"]
    assert first == again
    released = {a["qid"] for a in first}
    later = sample_authors(pool, n=30, seed=8, exclude_qids=released)
    assert not released & {a["qid"] for a in later.tables["sampled"]}
    assert later.stats["excluded_released"] == 30


def test_429_with_retry_after_is_honoured_by_open_library_client(mirror, via_mirror):
    mark = len(mirror.log())
    mirror.faults.add(Fault("status", path_prefix="/search/authors.json", status=429, retry_after=2))
    via_mirror.openlibrary.search_authors("Toni Morrison")
    entries = log_since(mirror, mark, "/search/authors.json")
    assert [e.status for e in entries] == [429, 200]
    assert entries[1].t - entries[0].t >= 2.0  # nothing was sent before Retry-After elapsed


def test_429_with_retry_after_is_honoured_by_sparql_client(mirror, via_mirror):
    mark = len(mirror.log())
    mirror.faults.add(Fault("status", path_prefix="/sparql", status=429, retry_after=1))
    via_mirror.wikidata.select("SELECT ?s WHERE { ?s ?p ?o } LIMIT 1")
    entries = log_since(mirror, mark, "/sparql")
    assert [e.status for e in entries] == [429, 200]
    assert entries[1].t - entries[0].t >= 1.0


@pytest.mark.parametrize(
    "fault",
    [
        Fault("status", status=503, times=2),
        Fault("status", status=500),
        Fault("status", status=502),
        Fault("cut", times=2),
    ],
    ids=["503x2", "500", "502", "cut-x2"],
)
@pytest.mark.parametrize("path", ["/search.json", "/sparql"])
def test_5xx_and_cut_responses_are_retried(mirror, via_mirror, fault, path):
    mark = len(mirror.log())
    mirror.faults.add(Fault(fault.kind, path_prefix=path, status=fault.status, times=fault.times))
    if path == "/sparql":
        rows = via_mirror.wikidata.select("SELECT ?s WHERE { ?s ?p ?o } LIMIT 3").data["results"]["bindings"]
    else:
        rows = next(via_mirror.openlibrary.works_pages("OL31120A")).data["docs"]
    assert rows
    statuses = [e.status for e in log_since(mirror, mark, path)]
    assert len(statuses) == fault.times + 1 and statuses[-1] == 200


def test_retries_give_up_after_max_attempts(mirror, settings):
    tight = settings.model_copy(update={"max_attempts": 3})
    sources = open_sources("mirror", tight, mirror_url=mirror.url)
    mark = len(mirror.log())
    mirror.faults.add(Fault("status", path_prefix="/search/authors.json", status=503, times=10))
    try:
        with pytest.raises(SourceUnavailable) as failed:
            sources.openlibrary.search_authors("Nobody At All")
    finally:
        mirror.faults.clear()
        sources.close()
    # the mirror logs a request after answering it: the last entry may land just after the client gave up
    deadline = time.monotonic() + 10
    while len(log_since(mirror, mark, "/search/authors.json")) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(log_since(mirror, mark, "/search/authors.json")) == 3
    assert (failed.value.status, failed.value.attempts) == (503, 3)
    assert failed.value.url.endswith("/search/authors.json?q=Nobody+At+All")


def test_every_unmatched_author_is_rejected_with_evidence(via_mirror, settings, manifest):
    pool = candidates(via_mirror, settings)
    matched = match_authors(pool, via_mirror.openlibrary)
    unmatched = {a["qid"] for a in matched.tables["authors"] if a["match_method"] == "unmatched"}
    rejected = {r["record_id"] for r in matched.rejects}
    assert unmatched and unmatched == rejected
    assert all(r["evidence"] for r in matched.rejects)
    assert matched.stats["p648"] and matched.stats["name_birth_year"]


def test_rerun_is_served_from_the_http_cache(mirror, settings):
    first = open_sources("mirror", settings, mirror_url=mirror.url)
    rows_first = collect(first, settings, n=8)
    first.close()
    mark = len(mirror.log())
    second = open_sources("mirror", settings, mirror_url=mirror.url)  # new clients, same cache dir
    rows_second = collect(second, settings, n=8)
    second.close()
    assert len(mirror.log()) == mark
    assert second.requests_sent() == 0
    assert rows_first[1] == rows_second[1]


def test_dump_and_mirror_give_identical_rows(via_mirror, settings, snapshot_dir):
    def strip(rows):
        return [{k: v for k, v in r.items() if k not in PROVENANCE} for r in rows]

    dump = open_sources("dump", settings, snapshot=snapshot_dir)
    authors_dump, works_dump = collect(dump, settings)
    authors_mirror, works_mirror = collect(via_mirror, settings)
    assert strip(authors_dump.tables["authors"]) == strip(authors_mirror.tables["authors"])
    assert strip(works_dump) == strip(works_mirror)
    assert authors_dump.rejects == authors_mirror.rejects
    assert len(works_mirror) > 500


def test_planted_match_cases_resolve_as_expected(via_mirror, settings, manifest):
    """Each planted case of the snapshot: homonyms told apart by birth year, name search
    without P648, a P648 that points nowhere (then name search), a P648 redirect followed,
    and an author nobody on Open Library matches."""
    cases = manifest["cases"]
    by_qid = {c["qid"]: c for c in candidates(via_mirror, settings)}
    expected = {
        item["qid"]: item["expected_ol_author"]
        for case in ("homonym_ol_authors", "no_p648")
        for item in cases[case]["items"]
    }
    expected.update({item["qid"]: item["redirect_to"] for item in cases["p648_redirect"]["items"]})
    matched = match_authors(
        [by_qid[q] for q in sorted({*expected, *(i["qid"] for i in cases["no_ol_match"]["items"])})],
        via_mirror.openlibrary,
    )
    got = {a["qid"]: a for a in matched.tables["authors"]}
    assert {q: got[q]["ol_author_key"] for q in expected} == expected
    homonym = cases["homonym_ol_authors"]["items"][0]["qid"]
    assert got[homonym]["match_method"] == "name_birth_year"
    for item in cases["no_ol_match"]["items"]:
        assert got[item["qid"]]["match_method"] == "unmatched"
        assert [r["reason"] for r in matched.rejects if r["record_id"] == item["qid"]] == ["no_openlibrary_match"]


def test_every_result_page_is_fetched(via_mirror, manifest):
    item = manifest["cases"]["many_result_pages"]["items"][0]
    result = fetch_author_works({"qid": item["qid"], "ol_author_key": item["ol_author"]}, via_mirror.openlibrary)
    assert result.stats["pages"] == -(-item["work_count"] // 100)
    assert len(result.tables["works_raw"]) == item["work_count"]
    assert len({w["request_fingerprint"] for w in result.tables["works_raw"]}) == result.stats["pages"]


def test_retry_after_holds_every_thread_of_the_client(mirror, via_mirror):
    """Prefect runs collect_author in a thread pool: after one thread's 429 with
    Retry-After, no thread of the same client may send before it has passed."""
    from concurrent.futures import ThreadPoolExecutor

    mark = len(mirror.log())
    mirror.faults.add(Fault("status", path_prefix="/search/authors.json", status=429, retry_after=2))
    names = ["Toni Morrison", "Isabel Allende", "Arundhati Roy", "Nadine Gordimer", "James Herbert", "Roger Grenier"]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(via_mirror.openlibrary.search_authors, names))
    entries = log_since(mirror, mark, "/search/authors.json")
    refused = next(e for e in entries if e.status == 429)
    # Only requests already in flight when the 429 was sent (one per other worker: 3) may
    # arrive before Retry-After has passed: a count, not a time window a busy machine can miss.
    early = [round(e.t - refused.t, 3) for e in entries if refused.t < e.t < refused.t + 2.0]
    assert len(early) <= 3, early
    assert sum(e.status == 200 for e in entries) == len(names)


def test_authors_with_several_birth_dates_land_once_with_the_earliest(tmp_path):
    """The sampling query over a tiny store: an author born '1849 or 1851' is out (born before
    1850 by its earliest date); one born '1874 or 1876' is in one window only, as 1874."""
    import pyoxigraph

    from kitab.simulate.mirror.rdfstore import query_json
    from kitab.sources.queries import sparql

    wd, wdt = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
    store = pyoxigraph.Store()

    def date(y):
        return pyoxigraph.Literal(
            f"{y}-01-01T00:00:00Z", datatype=pyoxigraph.NamedNode("http://www.w3.org/2001/XMLSchema#dateTime")
        )

    for author, years in (("Q1", (1849, 1851)), ("Q2", (1874, 1876))):
        w = pyoxigraph.NamedNode(wd + author)
        store.add(pyoxigraph.Quad(w, pyoxigraph.NamedNode(wdt + "P31"), pyoxigraph.NamedNode(wd + "Q5")))
        store.add(pyoxigraph.Quad(w, pyoxigraph.NamedNode(wdt + "P106"), pyoxigraph.NamedNode(wd + "Q36180")))
        store.add(
            pyoxigraph.Quad(
                w,
                pyoxigraph.NamedNode("http://wikiba.se/ontology#sitelinks"),
                pyoxigraph.Literal("3", datatype=pyoxigraph.NamedNode("http://www.w3.org/2001/XMLSchema#integer")),
            )
        )
        for y in years:
            store.add(pyoxigraph.Quad(w, pyoxigraph.NamedNode(wdt + "P569"), date(y)))
        for i in range(12):
            store.add(pyoxigraph.Quad(pyoxigraph.NamedNode(f"{wd}{author}W{i}"), pyoxigraph.NamedNode(wdt + "P50"), w))
    found = {}
    for start, end in ((1825, 1850), (1850, 1875), (1875, 1900)):
        rows = json.loads(
            query_json(store, sparql("candidate_authors", from_year=start, to_year=end, min_works=10, max_works=300))
        )["results"]["bindings"]
        for row in rows:
            found.setdefault(row["author"]["value"].removeprefix(wd), []).append(
                ((start, end), int(row["birth_year"]["value"]))
            )
    assert found == {"Q1": [((1825, 1850), 1849)], "Q2": [((1850, 1875), 1874)]}


def test_a_p648_that_is_not_an_author_key_is_skipped(via_mirror):
    from tasks.match_openlibrary import match_author

    author = {
        "qid": "Q72334",
        "name": "Toni Morrison",
        "birth_year": 1931,
        "sitelinks": 1,
        "wd_work_count": 12,
        "wd_ol_ids": ["../works/OL1W", "OL31120A"],
    }
    row, rejected = match_author(author, via_mirror.openlibrary)
    assert rejected is None and row["ol_author_key"] == "OL31120A" and row["match_method"] == "p648"


def test_a_request_is_logged_before_it_is_answered(snapshot_dir):
    """A client that has its answer finds its request in the log (a test that counts requests
    right after a call relies on it): while the log is held, the mirror cannot answer."""
    import requests

    from kitab.simulate.mirror.server import Mirror

    with Mirror(snapshot_dir, ol_rate=None) as m:
        with m._log_lock:  # the mirror's logging blocks here, and so must its answer
            with pytest.raises(requests.exceptions.ReadTimeout):
                requests.get(m.url + "/works/OL0W.json", timeout=0.5)
        answer = requests.get(m.url + "/works/OL0W.json", timeout=5)
        assert answer.status_code == 404
        assert [e.status for e in m.log() if e.path == "/works/OL0W.json"][-1] == 404
