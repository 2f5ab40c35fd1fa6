"""WikiData's half of the works' own records: P674 (characters) and P840 (narrative location)
labels as book_records, through the real client against the mirror and through the dump source
(issue 28, item 3)."""

from __future__ import annotations

import json

import pytest

from kitab.simulate.mirror.rdfstore import load_store, query_json
from kitab.sources import open_sources
from kitab.sources.queries import sparql
from kitab.sources.wikidata import bindings, records_of_works, work_values, works_with_labels
from tasks.book_evidence import record_evidence
from tasks.fetch_works import wikidata_items, wikidata_record_rows, wikidata_records

P50_WORKS = "SELECT DISTINCT ?w WHERE { ?w wdt:P50 ?a }"
RECORD_WORKS = "SELECT DISTINCT ?w WHERE { ?w wdt:P674|wdt:P840 ?t }"


def _qids(store, query: str) -> list[str]:
    rows = json.loads(query_json(store, query))["results"]["bindings"]
    return sorted(r["w"]["value"].rsplit("/", 1)[-1] for r in rows)


@pytest.fixture(scope="module")
def store(snapshot_dir):
    return load_store(snapshot_dir)


def test_mirror_and_dump_give_the_same_records(mirror, settings, snapshot_dir, store):
    """Every work with a P50: the client through the mirror (pyoxigraph) in batches and the dump
    source in one lookup give the same rows; the dump's answer is pyoxigraph's, byte for byte."""
    works = _qids(store, P50_WORKS)
    via_mirror = open_sources("mirror", settings, mirror_url=mirror.url)
    dump = open_sources("dump", settings, snapshot=snapshot_dir)
    try:
        sent = len(mirror.log())
        mirrored = records_of_works(via_mirror.wikidata, works)
        assert len(mirror.log()) - sent == -(-len(works) // via_mirror.wikidata.works_per_query)
        dumped = records_of_works(dump.wikidata, works)
        some = works[:700]
        assert dump.wikidata.work_records(some).data == json.loads(
            query_json(store, sparql("work_records", works=work_values(some)))
        )
        assert dump.wikidata.work_records(some).fingerprint == via_mirror.wikidata.work_records(some).fingerprint
    finally:
        via_mirror.close()
        dump.close()

    def strip(rows):
        return [{k: r[k] for k in ("work_qid", "field", "target", "name")} for r in rows]

    assert strip(mirrored) == strip(dumped)
    assert {r["field"] for r in mirrored} == {"characters", "narrative_locations"}
    # every work of the snapshot that has a P674 / P840 is answered, and only those
    assert sorted({r["work_qid"] for r in mirrored}) == _qids(store, RECORD_WORKS)
    assert all(r["name"] for r in mirrored)  # the generator labels every target


def test_labels_are_english_else_mul(mirror, settings, store):
    """A character with only a "mul" label comes back under it; one with en has en."""
    rows = json.loads(query_json(store, "SELECT ?w ?t ?l WHERE { ?w wdt:P674 ?t . ?t rdfs:label ?l } ORDER BY ?w ?t"))[
        "results"
    ]["bindings"]
    mul = next(r for r in rows if r["l"].get("xml:lang") == "mul")
    en = next(r for r in rows if r["l"].get("xml:lang") == "en")
    sources = open_sources("mirror", settings, mirror_url=mirror.url)
    try:
        for expected in (mul, en):
            work = expected["w"]["value"].rsplit("/", 1)[-1]
            found = bindings(sources.wikidata.work_records([work]))
            labels = {r["target"]: r["label"] for r in found}
            assert labels[expected["t"]["value"]] == expected["l"]["value"]
    finally:
        sources.close()


def test_work_values_refuses_what_is_not_an_item():
    assert work_values(["Q2", "Q10", "Q2"]) == "wd:Q10 wd:Q2"
    for bad in ("P50", "Q", "Q1 }", "wd:Q1"):
        with pytest.raises(ValueError, match="not a WikiData item id"):
            work_values([bad])


def test_items_match_by_title_and_author():
    clean = [
        {"author_qid": "Q1", "work_key": "/works/OL1W", "title": "Jane  Eyre"},
        {"author_qid": "Q1", "work_key": "/works/OL2W", "title": "Villette"},
        {"author_qid": "Q2", "work_key": "/works/OL3W", "title": "Shirley"},
    ]
    wd = [
        {"work_qid": "Q10", "title": "jane eyre", "author_qid": "Q1"},
        {"work_qid": "Q9", "title": "Jane Eyre", "author_qid": "Q1"},
        {"work_qid": "Q11", "title": "Villette", "author_qid": "Q7"},  # another author's item
        {"work_qid": "Q12", "title": "Shirley", "author_qid": "Q2"},
    ]
    items = wikidata_items(clean, wd)
    assert items == {"/works/OL1W": ["Q9", "Q10"], "/works/OL3W": ["Q12"]}
    records = [
        {"work_qid": "Q9", "field": "characters", "target": "Q100", "name": "Jane Eyre", "request_fingerprint": "f"},
        {"work_qid": "Q10", "field": "characters", "target": "Q101", "name": "Edward Rochester"},
        {"work_qid": "Q10", "field": "narrative_locations", "target": "Q102", "name": None},
        {"work_qid": "Q12", "field": "narrative_locations", "target": "Q103", "name": "Yorkshire"},
    ]
    records = [{"request_fingerprint": "f", "fetched_at": None, **r} for r in records]
    rows, stats = wikidata_record_rows(clean, items, records, "mirror")
    assert [(r["work_key"], r["field"], r["position"], r["name"]) for r in rows] == [
        ("/works/OL1W", "characters", 0, "Jane Eyre"),
        ("/works/OL1W", "characters", 1, "Edward Rochester"),
        ("/works/OL3W", "narrative_locations", 0, "Yorkshire"),
    ]
    assert {r["source"] for r in rows} == {"mirror"}
    assert stats == {"works_with_item": 2, "works_with_records": 2, "records": 3, "targets_unlabelled": 1}


def test_collected_records_decide_books_as_open_library_records_do(mirror, settings, snapshot_dir, store):
    """The pipeline's path: the cross-check's WikiData works of real Open Library works -> their
    P674 / P840 as book_records (mirror and dump alike) -> record evidence for the book."""
    titles_of_record_works = json.loads(
        query_json(
            store,
            "SELECT DISTINCT ?w ?title ?a WHERE { ?w wdt:P674|wdt:P840 ?t ; rdfs:label ?title ; wdt:P50 ?a } "
            "ORDER BY ?w",
        )
    )["results"]["bindings"]
    assert titles_of_record_works
    # our "clean works": one Open Library work per such item, keyed by title and author
    clean = [
        {
            "author_qid": r["a"]["value"].rsplit("/", 1)[-1],
            "work_key": f"/works/OL{n}W",
            "title": r["title"]["value"].upper(),  # the cross-check's key ignores case
        }
        for n, r in enumerate(titles_of_record_works)
    ]
    found = {}
    for kind in ("mirror", "dump"):
        sources = (
            open_sources("mirror", settings, mirror_url=mirror.url)
            if kind == "mirror"
            else open_sources("dump", settings, snapshot=snapshot_dir)
        )
        try:
            wd_works = works_with_labels(sources.wikidata, [r["title"]["value"] for r in titles_of_record_works])
            result = wikidata_records(clean, wd_works, sources.wikidata)
        finally:
            sources.close()
        found[kind] = result
    strip = [
        {k: v for k, v in r.items() if k not in ("source", "fetched_at")}
        for r in found["mirror"].tables["book_records"]
    ]
    assert strip == [
        {k: v for k, v in r.items() if k not in ("source", "fetched_at")} for r in found["dump"].tables["book_records"]
    ]
    rows = found["mirror"].tables["book_records"]
    assert found["mirror"].stats["works_with_records"] == len({r["work_key"] for r in rows}) > 0
    assert {r["source"] for r in rows} == {"mirror"} and {
        r["source"] for r in found["dump"].tables["book_records"]
    } == {"dump"}
    # the record decides: a work whose title names one of its characters is a human "yes"
    by_work: dict[str, list[dict]] = {}
    for r in rows:
        by_work.setdefault(r["work_key"], []).append(r)
    decided = {
        w["work_key"]: record_evidence(w["title"], [], by_work[w["work_key"]]).get("human")
        for w in clean
        if w["work_key"] in by_work
    }
    verdicts = {e["verdict"] for e in decided.values() if e}
    assert "yes" in verdicts, decided


def test_prefetched_work_records_answer_as_the_lookup_alone(snapshot_dir, tmp_path_factory, store):
    """A batch's prefetch (one lookup) answers each subset of its works with the rows, order and
    fingerprint of that subset's own lookup (the reference), works without records included."""
    from hypothesis import given
    from hypothesis import settings as h_settings
    from hypothesis import strategies as st

    from kitab.core.config import Settings

    works = _qids(store, P50_WORKS)
    dump = open_sources("dump", Settings(warehouse=tmp_path_factory.mktemp("wh")), snapshot=snapshot_dir)

    @h_settings(max_examples=40, deadline=None)
    @given(st.data())
    def check(data):
        batch = data.draw(st.lists(st.sampled_from(works), min_size=1, max_size=60, unique=True))
        subsets = data.draw(st.lists(st.lists(st.sampled_from(batch), max_size=12), min_size=1, max_size=4))
        dump.wikidata.prefetch_work_records([])  # nothing held: each subset is looked up alone
        alone = [dump.wikidata.work_records(s) for s in subsets]
        dump.wikidata.prefetch_work_records(batch)
        for subset, expected in zip(subsets, alone, strict=True):
            got = dump.wikidata.work_records(subset)
            assert (got.data, got.fingerprint) == (expected.data, expected.fingerprint)

    try:
        check()
    finally:
        dump.close()
