"""The snapshot package: format helpers, the generator, the bundled snapshot and its cases,
and the Open Library / SPARQL answers the mirror and the dump source serve from it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core import files
from kitab.core.env import BUNDLED_SNAPSHOT, PROJECT_ROOT
from kitab.simulate.generator.generate import generate_snapshot
from kitab.simulate.mirror.rdfstore import load_store, query_json
from kitab.sources.snapshot import format as fmt
from kitab.sources.snapshot.olindex import OLIndex, tokens, year_of

FIXTURES = PROJECT_ROOT / "snapshots" / "seed" / "ol_api_fixtures"
# /search.json's top-level keys, from openlibrary's FastAPI search endpoint (it adds q,
# documentation_url and offset to the Solr response and puts docs last).
SEARCH_JSON_KEYS = {"numFound", "start", "numFoundExact", "num_found", "documentation_url", "q", "offset", "docs"}
# Solr work fields the real /search.json returns that this index computes.
SEARCH_DOC_FIELDS = {
    "key",
    "type",
    "title",
    "subtitle",
    "author_key",
    "author_name",
    "edition_count",
    "first_publish_year",
    "publish_year",
    "language",
    "person",  # the work's subject_people (book_records)
    "place",  # its subject_places
}
CANDIDATES_QUERY = """
SELECT ?a WHERE {
  ?a wdt:P31 wd:Q5 ; wdt:P106/wdt:P279* wd:Q36180 ; wdt:P569 ?birth .
  FILTER(YEAR(?birth) >= 1850)
  ?work wdt:P50 ?a .
} GROUP BY ?a HAVING (COUNT(DISTINCT ?work) >= 10 && COUNT(DISTINCT ?work) <= 300)
"""


# --- fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def manifest() -> dict:
    return fmt.read_manifest(BUNDLED_SNAPSHOT)


@pytest.fixture(scope="session")
def store():
    return load_store(BUNDLED_SNAPSHOT)


@pytest.fixture(scope="session")
def index() -> OLIndex:
    return OLIndex.from_snapshot(BUNDLED_SNAPSHOT)


def select(store, query: str) -> list[dict[str, str]]:
    """SELECT rows as {variable: lexical value}, through the same bytes the mirror serves."""
    data = json.loads(query_json(store, query))
    return [{k: v["value"] for k, v in row.items()} for row in data["results"]["bindings"]]


def ask(store, query: str) -> bool:
    return json.loads(query_json(store, query))["boolean"]


def candidates(store) -> set[str]:
    return {row["a"].rsplit("/", 1)[-1] for row in select(store, CANDIDATES_QUERY)}


def items(manifest: dict, case: str) -> list[dict]:
    return manifest["cases"][case]["items"]


def all_work_keys(index: OLIndex, author: str) -> list[str]:
    """Bare keys ("OL123W") of every work listing the author."""
    docs = index.search_works(author_key=author, limit=1000, fields="key")["docs"]
    return [d["key"].rsplit("/", 1)[-1] for d in docs]


# --- generator: determinism and the bundled snapshot ------------------------------------


def test_bundled_snapshot_is_what_the_generator_makes(tmp_path):
    """Regenerating seed 42 / 160 authors gives the bundled files byte for byte."""
    manifest = generate_snapshot(tmp_path / "again", seed=42, n_authors=160)
    for name in (*fmt.DATA_FILES, fmt.MANIFEST_FILE):
        assert (tmp_path / "again" / name).read_bytes() == (BUNDLED_SNAPSHOT / name).read_bytes(), name
    assert manifest == fmt.read_manifest(BUNDLED_SNAPSHOT)


def test_generation_is_deterministic_and_seeded(tmp_path):
    first = generate_snapshot(tmp_path / "a", seed=7, n_authors=40)
    second = generate_snapshot(tmp_path / "b", seed=7, n_authors=40)
    other = generate_snapshot(tmp_path / "c", seed=8, n_authors=40)
    assert first == second
    for name in (*fmt.DATA_FILES, fmt.MANIFEST_FILE):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert first["checksums"] != other["checksums"]
    assert first["cases"].keys() == other["cases"].keys()
    assert candidates(load_store(tmp_path / "a")) and len(candidates(load_store(tmp_path / "a"))) == 40


def test_too_few_authors_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="n_authors must be at least"):
        generate_snapshot(tmp_path / "x", seed=1, n_authors=3)
    assert not (tmp_path / "x").exists()


def test_bundled_checksums_size_and_gzip_headers(manifest):
    assert fmt.checksum_mismatches(BUNDLED_SNAPSHOT) == []
    assert sum(p.stat().st_size for p in BUNDLED_SNAPSHOT.iterdir()) < 5_000_000
    for name in fmt.DATA_FILES:
        header = (BUNDLED_SNAPSHOT / name).read_bytes()[:10]
        assert header[3] & 0x08 == 0, f"{name}: gzip header names a file"
        assert header[4:8] == b"\0\0\0\0", f"{name}: gzip mtime is not 0"
    assert manifest["created_at"] == "2024-06-01T00:00:00Z"
    assert manifest["seed"] == 42 and manifest["generator"]["module"] == "kitab.simulate.generator.generate"


def test_ntriples_are_sorted_unique_and_use_full_iris():
    with gzip.open(BUNDLED_SNAPSHOT / fmt.WIKIDATA_FILE, "rt", encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert lines == sorted(set(lines))
    assert all(line.startswith("<http://www.wikidata.org/entity/Q") and line.endswith(" .") for line in lines)


def test_manifest_ids_follow_the_synthetic_rule(manifest, store, index):
    rule = manifest["synthetic"]
    base = 990_000_000
    assert all(int(q[1:]) < base for q in rule["real"]["qids"])
    assert {"Q5878", "Q72334"} <= set(rule["real"]["qids"])
    assert len(rule["real"]["ol_works"]) == 100 and all(index.work(k) for k in rule["real"]["ol_works"])
    assert all(int(k[2:-1]) > base for k in rule["curated"]["ol_works"])
    morrison = {d["title"] for d in index.search_works(author_key="OL31120A")["docs"]}
    assert {"Beloved", "The Bluest Eye", "God Help the Child"} <= morrison


# --- the candidate filter ---------------------------------------------------------------


def test_candidate_count_is_n_authors(manifest, store):
    assert len(candidates(store)) == manifest["n_authors"] == manifest["counts"]["candidates"] == 160


@pytest.mark.parametrize(
    "case", ["born_before_1850", "too_few_wd_works", "too_many_wd_works", "not_human", "not_writer", "no_birth_date"]
)
def test_failing_cases_are_not_candidates_but_have_works(case, manifest, store):
    chosen = candidates(store)
    for item in items(manifest, case):
        assert item["qid"] not in chosen
        assert ask(store, f"ASK {{ ?w wdt:P50 wd:{item['qid']} }}")


def test_failing_cases_fail_for_their_stated_reason(manifest, store):
    def works(qid):
        return int(select(store, f"SELECT (COUNT(DISTINCT ?w) AS ?n) WHERE {{ ?w wdt:P50 wd:{qid} }}")[0]["n"])

    for item in items(manifest, "born_before_1850"):
        year = select(store, f"SELECT (YEAR(?b) AS ?y) WHERE {{ wd:{item['qid']} wdt:P569 ?b }}")[0]["y"]
        assert int(year) < 1850
    for case in ("too_few_wd_works", "too_many_wd_works"):
        for item in items(manifest, case):
            assert works(item["qid"]) == item["wd_works"]
    for item in items(manifest, "not_human"):
        assert not ask(store, f"ASK {{ wd:{item['qid']} wdt:P31 wd:Q5 }}")
    for item in items(manifest, "not_writer"):
        assert not ask(store, f"ASK {{ wd:{item['qid']} wdt:P106/wdt:P279* wd:Q36180 }}")
    for item in items(manifest, "no_birth_date"):
        assert not ask(store, f"ASK {{ wd:{item['qid']} wdt:P569 ?b }}")


def test_boundary_and_subclass_cases_are_candidates(manifest, store):
    chosen = candidates(store)
    for case in (
        "filter_boundaries",
        "writer_by_subclass_only",
        "seed_birth_year_2000",
        "no_p648",
        "no_ol_match",
        "p648_missing_ol_author",
        "p648_redirect",
        "works_under_5",
    ):
        for item in items(manifest, case):
            assert item["qid"] in chosen, (case, item)
    subclass_only = items(manifest, "writer_by_subclass_only")[0]["qid"]
    assert not ask(store, f"ASK {{ wd:{subclass_only} wdt:P106 ?o . ?o wdt:P279 wd:Q36180 }}")
    assert not ask(store, f"ASK {{ wd:{subclass_only} wdt:P106 wd:Q36180 }}")


# --- matching WikiData to Open Library --------------------------------------------------


def label(store, qid: str) -> str:
    return select(store, f'SELECT ?l WHERE {{ wd:{qid} rdfs:label ?l FILTER(LANG(?l) = "en") }}')[0]["l"]


def birth_year(store, qid: str) -> int:
    return int(select(store, f"SELECT (YEAR(?b) AS ?y) WHERE {{ wd:{qid} wdt:P569 ?b }}")[0]["y"])


def test_no_p648_authors_are_found_by_name_and_birth_year(manifest, store, index):
    for item in items(manifest, "no_p648"):
        assert not ask(store, f"ASK {{ wd:{item['qid']} wdt:P648 ?ol }}")
        docs = index.search_authors(label(store, item["qid"]))["docs"]
        matching = [d["key"] for d in docs if year_of(d.get("birth_date")) == birth_year(store, item["qid"])]
        assert matching == [item["expected_ol_author"]]


def test_homonyms_are_both_returned_and_only_the_birth_year_decides(manifest, store, index):
    item = items(manifest, "homonym_ol_authors")[0]
    docs = index.search_authors(label(store, item["qid"]))["docs"]
    assert {d["key"] for d in docs} == set(item["ol_authors"])
    assert len({d["name"] for d in docs}) == 1
    assert docs[0]["key"] != item["expected_ol_author"]  # the naive "first hit" is wrong
    years = {d["key"]: year_of(d["birth_date"]) for d in docs}
    assert years[item["expected_ol_author"]] == birth_year(store, item["qid"])
    assert len(set(years.values())) == 2


def test_unmatchable_and_broken_p648_cases(manifest, store, index):
    for item in items(manifest, "no_ol_match"):
        assert index.search_authors(label(store, item["qid"]))["numFound"] == 0
    missing = items(manifest, "p648_missing_ol_author")[0]
    assert select(store, f"SELECT ?ol WHERE {{ wd:{missing['qid']} wdt:P648 ?ol }}") == [{"ol": missing["ol_author"]}]
    assert index.author(missing["ol_author"]) is None
    redirect = items(manifest, "p648_redirect")[0]
    record = index.author(redirect["ol_author"])
    assert record["type"] == {"key": fmt.OL_REDIRECT}
    assert record["location"] == f"/authors/{redirect['redirect_to']}"
    assert index.author(redirect["redirect_to"])["type"] == {"key": fmt.OL_AUTHOR}
    assert index.search_works(author_key=redirect["ol_author"])["numFound"] == 0
    assert index.search_works(author_key=redirect["redirect_to"])["numFound"] > 0


# --- fetching works: pagination ---------------------------------------------------------


def test_many_result_pages_author_needs_four_pages(manifest, index):
    item = items(manifest, "many_result_pages")[0]
    pages = [index.search_works(author_key=item["ol_author"], limit=100, page=p) for p in (1, 2, 3, 4, 5)]
    assert [len(p["docs"]) for p in pages] == [100, 100, 100, 1, 0]
    assert all(p["numFound"] == item["work_count"] for p in pages)
    assert [p["start"] for p in pages] == [0, 100, 200, 300, 400]


@settings(max_examples=40, deadline=None)
@given(limit=st.integers(1, 400), by_offset=st.booleans())
def test_pagination_covers_every_work_exactly_once(manifest, index, limit, by_offset):
    author = items(manifest, "many_result_pages")[0]["ol_author"]
    seen: list[str] = []
    for page in range(1, 1000):
        offset = (page - 1) * limit if by_offset else None
        response = index.search_works(author_key=author, fields=["key"], limit=limit, page=page, offset=offset)
        if not response["docs"]:
            break
        assert response["start"] == (page - 1) * limit and response["offset"] == offset
        seen += [d["key"] for d in response["docs"]]
    assert len(seen) == len(set(seen)) == response["numFound"] == 301


def test_works_under_5(manifest, index):
    for item in items(manifest, "works_under_5"):
        assert 0 < index.search_works(author_key=item["ol_author"])["numFound"] < 5


# --- titles -----------------------------------------------------------------------------


def test_every_case_id_exists(manifest, store, index):
    for case, spec in manifest["cases"].items():
        assert spec["description"] and spec["items"], case
        for item in spec["items"]:
            for work in [item.get("ol_work"), *item.get("ol_works", [])]:
                assert work is None or index.work(work) is not None, (case, work)
            if "qid" in item:
                assert ask(store, f"ASK {{ wd:{item['qid']} rdfs:label ?l }}"), (case, item)
            if "title" in item and "ol_work" in item:
                assert index.work(item["ol_work"])["title"] == item["title"], (case, item)


def test_title_variants_belong_to_one_author(manifest, index):
    groups = items(manifest, "title_variants")
    titles = [t for g in groups for t in g["titles"]]
    for pair in (
        ("One Hundred Years of Solitude", "100 Years of Solitude"),
        ("Mason & Dixon", "Mason and Dixon"),
        ("The Winter Garden", "THE WINTER GARDEN"),
        ("The Winter Garden", "A Winter Garden"),
    ):
        assert set(pair) <= set(titles)
    for group in groups:
        assert len(group["ol_works"]) >= 2
        for work in group["ol_works"]:
            assert work in all_work_keys(index, group["ol_author"])
    winter = index.search_works(title="winter garden", author_key=groups[0]["ol_author"], fields="title,subtitle")
    assert {"title": "Winter Garden", "subtitle": "A Novel"} in winter["docs"]


def test_non_english_titles_tagged_and_untagged(manifest, index):
    by_title = {i["title"]: i for i in items(manifest, "non_english_titles")}
    assert by_title["Cien años de soledad"]["language"] is None
    for item in by_title.values():
        doc = index.search_works(title=item["title"], fields="key,language")["docs"]
        doc = next(d for d in doc if d["key"] == f"/works/{item['ol_work']}")
        if item["language"] is None:
            assert "language" not in doc
            entries = index.editions(item["ol_work"])["entries"]
            assert entries and all("languages" not in e for e in entries)
        else:
            assert item["language"] in doc["language"]


def test_multi_author_works(manifest, index):
    counts = sorted(i["n_authors"] for i in items(manifest, "multi_author_works"))
    assert counts == [2, 3, 4]
    for item in items(manifest, "multi_author_works"):
        work = index.work(item["ol_work"])
        assert len(work["authors"]) == item["n_authors"]
        for ref in work["authors"][1:]:  # every co-author finds it by author_key
            assert item["ol_work"] in all_work_keys(index, ref["author"]["key"])


def test_wikidata_credits_another_author(manifest, store, index):
    item = items(manifest, "wikidata_other_author")[0]
    assert item["ol_work"] in all_work_keys(index, item["ol_author"])
    rows = select(
        store,
        f'SELECT ?a ?ol WHERE {{ ?w rdfs:label "{item["title"]}"@en ; wdt:P50 ?a . OPTIONAL {{ ?a wdt:P648 ?ol }} }}',
    )
    assert [r["a"].rsplit("/", 1)[-1] for r in rows] == [item["wd_author"]]
    assert rows[0].get("ol") != item["ol_author"]


def test_impossible_years_and_empty_titles(manifest, index):
    for item in items(manifest, "impossible_years"):
        entries = index.editions(item["ol_work"])["entries"]
        assert [e["publish_date"] for e in entries] == [item["publish_date"]]
        doc = index.search_works(author_key=index.work(item["ol_work"])["authors"][0]["author"]["key"], limit=1000)
        doc = next(d for d in doc["docs"] if d["key"] == f"/works/{item['ol_work']}")
        assert doc["first_publish_year"] == int(item["publish_date"])
    assert {9999, 1901} <= {int(i["publish_date"]) for i in items(manifest, "impossible_years")}
    for item in items(manifest, "empty_titles"):
        assert tokens(index.work(item["ol_work"])["title"]) == []


def test_entity_title_cases(manifest):
    human = {i["title"] for i in items(manifest, "human_name_titles")}
    city = {i["title"] for i in items(manifest, "city_name_titles")}
    assert {"Johnston McCulley's Zorro", "Florence Nightingale", "Lincoln in the Bardo"} <= human
    assert {"Reading Lolita in Tehran", "Death in Venice"} <= city
    assert [i["title"] for i in items(manifest, "city_word_without_city")] == ["A Tale of Two Cities"]


# --- response shapes against the real API -------------------------------------------------


def test_search_authors_shape_matches_the_real_response(index):
    real = json.loads((FIXTURES / "search_authors_rowling.json").read_text())
    ours = index.search_authors("Toni Morrison")
    assert ours.keys() == real.keys()
    doc = ours["docs"][0]
    assert doc["key"] == "OL31120A" and doc["type"] == "author"
    assert set(doc) <= set(real["docs"][0]) | {"death_date"}
    for key, value in doc.items():
        if key in real["docs"][0]:
            assert type(value) is type(real["docs"][0][key]), key
    assert index.search_authors("gabriel garcia marquez")["docs"][0]["key"] == "OL4586796A"  # accents folded
    assert index.search_authors("")["numFound"] == 0


def test_work_record_shape_matches_the_real_record(index):
    real = json.loads((FIXTURES / "work_OL3616800W.json").read_text())
    ours = index.work(index.search_works(author_key="OL31120A", limit=1)["docs"][0]["key"])
    assert set(ours) <= set(real) | {"subtitle"}
    assert {"key", "title", "type", "authors", "revision", "latest_revision", "created", "last_modified"} <= set(ours)
    assert ours["type"] == {"key": fmt.OL_WORK}
    assert set(ours["created"]) == set(real["created"]) and ours["created"]["type"] == "/type/datetime"
    assert all(set(ref) == set(real["authors"][0]) for ref in ours["authors"])


def test_search_works_shape_and_fields(index):
    response = index.search_works(author_key="OL4586796A")
    assert set(response) == SEARCH_JSON_KEYS and list(response)[-1] == "docs"
    assert response["numFound"] == response["num_found"] and response["numFoundExact"] is True
    assert response["q"] == "" and response["offset"] is None
    for doc in response["docs"]:
        assert {"key", "title", "author_key", "author_name", "edition_count"} <= set(doc) <= SEARCH_DOC_FIELDS
        assert doc["key"].startswith("/works/") and "OL4586796A" in doc["author_key"]
    keys = [d["key"] for d in response["docs"]]
    assert keys == sorted(keys, key=lambda k: int(k[len("/works/OL") : -1]))
    projected = index.search_works(author_key="OL4586796A", fields="key,first_publish_year")["docs"]
    assert all(set(d) <= {"key", "first_publish_year"} for d in projected)
    assert index.search_works(author_key="OL4586796A", fields="*")["docs"] == response["docs"]
    solitude = index.search_works(title="one hundred years of solitude", author="García Márquez")["docs"]
    assert [d["first_publish_year"] for d in solitude] == [1967]
    with pytest.raises(ValueError):
        index.search_works()


def test_editions_shape_and_paging(index):
    work = index.search_works(author_key="OL31120A", limit=1)["docs"][0]["key"]
    everything = index.editions(work)
    assert set(everything) == {"links", "size", "entries"}
    assert everything["links"] == {"self": f"{work}/editions.json", "work": work}
    assert everything["size"] == len(everything["entries"]) >= 2
    first = index.editions(work, limit=1)
    assert first["entries"] == everything["entries"][:1] and "next" in first["links"]
    last = index.editions(work, limit=1, offset=everything["size"] - 1)
    assert "next" not in last["links"] and "prev" in last["links"]
    assert all(e["works"] == [{"key": work}] for e in everything["entries"])
    assert index.editions("OL1W") is None


# --- format and rdfstore helpers ----------------------------------------------------------


def test_ntriples_terms():
    assert fmt.wd("Q5") == "<http://www.wikidata.org/entity/Q5>"
    assert fmt.literal('say "hi"\n', lang="en") == '"say \\"hi\\"\\n"@en'
    assert fmt.integer_literal(122) == '"122"^^<http://www.w3.org/2001/XMLSchema#integer>'
    assert fmt.date_literal(1931, 2, 18) == '"1931-02-18T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>'
    with pytest.raises(ValueError):
        fmt.iri("http://a b")


def test_iter_ol_dump_round_trip_and_errors(tmp_path):
    record = {"key": "/authors/OL1A", "type": {"key": fmt.OL_AUTHOR}, "name": "Zoë"}
    good = tmp_path / "good.txt.gz"
    with fmt.deterministic_gzip(good) as out:
        out.write(fmt.ol_dump_line(fmt.OL_AUTHOR, "/authors/OL1A", 3, "2021-03-02T12:00:00.000000", record) + "\n")
    assert list(fmt.iter_ol_dump(good)) == [(fmt.OL_AUTHOR, "/authors/OL1A", 3, "2021-03-02T12:00:00.000000", record)]
    for bad_line, message in (
        ("/type/author\t/authors/OL1A\t1\t{}", "expected 5 tab-separated fields"),
        ("/type/author\t/authors/OL1A\tx\tt\t{}", "revision 'x'"),
        ("/type/author\t/authors/OL1A\t1\tt\t{oops", "bad JSON"),
        ('/type/author\t/authors/OL1A\t1\tt\t{"key": "/authors/OL2A"}', "JSON record is not an object with key"),
    ):
        bad = tmp_path / "bad.txt"
        bad.write_text('/type/author\t/authors/OL9A\t1\tt\t{"key": "/authors/OL9A"}\n' + bad_line + "\n")
        with pytest.raises(fmt.SnapshotFormatError, match=rf"bad\.txt:2: {message}"):
            list(fmt.iter_ol_dump(bad))


def test_atomic_writes_leave_nothing_behind_on_failure(tmp_path):
    target = tmp_path / "snap"
    target.mkdir()
    (target / "old").write_text("old")
    with pytest.raises(RuntimeError), files.atomic_dir(target) as folder:
        (folder / "new").write_text("new")
        raise RuntimeError
    assert [p.name for p in tmp_path.iterdir()] == ["snap"] and (target / "old").exists()
    with files.atomic_dir(target) as folder:
        (folder / "new").write_text("new")
    assert [p.name for p in target.iterdir()] == ["new"]
    assert [p.name for p in tmp_path.iterdir()] == ["snap"]


def test_read_manifest_errors(tmp_path):
    with pytest.raises(fmt.SnapshotFormatError, match="no manifest"):
        fmt.read_manifest(tmp_path)


def test_query_json_errors_and_formats(store, tmp_path):
    with pytest.raises(ValueError, match="malformed SPARQL"):
        query_json(store, "SELEC ?x WHERE { }")
    with pytest.raises(ValueError, match="CONSTRUCT"):
        query_json(store, "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 1")
    declared = "PREFIX wd: <http://www.wikidata.org/entity/>\nASK { wd:Q72334 ?p ?o }"
    assert query_json(store, declared) == query_json(store, "ASK { wd:Q72334 ?p ?o }") == b'{"head":{},"boolean":true}'
    rows = select(store, "SELECT ?n WHERE { wd:Q72334 wikibase:sitelinks ?n }")
    assert rows == [{"n": "122"}]
    broken = tmp_path / "broken"
    broken.mkdir()
    with gzip.open(broken / fmt.WIKIDATA_FILE, "wt") as out:
        out.write('<http://a> <http://b> "unterminated .\n')
    with pytest.raises(fmt.SnapshotFormatError, match="wikidata.nt.gz"):
        load_store(broken)


def test_seed_rows_are_all_used(manifest, store, index):
    seed = PROJECT_ROOT / "snapshots" / "seed"
    kitab = [json.loads(line) for line in (seed / "kitab_hf" / "KITAB-author-metadata.partial.jsonl").open()]
    rows = {
        r["a"].rsplit("/", 1)[-1]: r
        for r in select(store, "SELECT ?a ?n ?ol WHERE { ?a wikibase:sitelinks ?n ; wdt:P648 ?ol }")
    }
    for row in kitab:
        assert rows[row["WikiData ID"]]["n"] == str(row["# of sitelinks"])
        assert rows[row["WikiData ID"]]["ol"] == row["OpenLibrary ID"]
        assert index.author(row["OpenLibrary ID"])["name"] == row["Author"]
    romance = Path(seed / "ol_etl_romance_sample" / "authors_compact.tsv").read_text().splitlines()[1:]
    for line in romance:
        key, name = line.split("\t")[:2]
        assert index.author(key)["name"] == name


def test_atomic_file_replaces_in_one_step(tmp_path):
    target = tmp_path / "MANIFEST.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), files.atomic_file(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["MANIFEST.json"]
    with files.atomic_file(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["MANIFEST.json"]


def test_load_store_rejects_a_file_that_is_not_gzip(tmp_path):
    (tmp_path / fmt.WIKIDATA_FILE).write_text("<http://a> <http://b> <http://c> .\n")
    with pytest.raises(fmt.SnapshotFormatError, match="unreadable gzip"):
        load_store(tmp_path)
