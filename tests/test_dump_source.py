"""The DuckDB dump source (kitab/sources/dump/) against the in-memory references: the same
answers as pyoxigraph over the N-Triples and as OLIndex over the Open Library dumps, on the
bundled snapshot and on a small snapshot of deliberately awkward records."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyoxigraph
import pytest

from kitab.core.config import Settings
from kitab.simulate.mirror.rdfstore import load_store, query_json
from kitab.sources.dates import xsd_year_bounds
from kitab.sources.dump.keyed import keyed_files
from kitab.sources.dump.openlibrary import DumpOpenLibrary
from kitab.sources.dump.scan import KEYED, TABLES
from kitab.sources.dump.store import DumpStore
from kitab.sources.dump.wikidata import DumpWikidata
from kitab.sources.http import Fetched, RequestCounter, ServiceError, fingerprint
from kitab.sources.ntriples import nt_unescape
from kitab.sources.openlibrary import MAX_REDIRECTS, OpenLibraryBase
from kitab.sources.queries import sparql, sparql_titles
from kitab.sources.snapshot.format import (
    DATA_FILES,
    MANIFEST_FILE,
    OL_AUTHORS_FILE,
    OL_EDITIONS_FILE,
    OL_WORKS_FILE,
    WIKIDATA_FILE,
    SnapshotFormatError,
    deterministic_gzip,
    iter_ol_dump,
    ol_dump_line,
    read_manifest,
)
from kitab.sources.snapshot.manifest import write_manifest
from kitab.sources.wikidata import label_rows, works_with_labels

X = "http://www.w3.org/2001/XMLSchema#"
WINDOWS = [(start, min(start + 25, 2026)) for start in range(1850, 2026, 25)]


# --- helpers ------------------------------------------------------------------------------


class ReferenceOpenLibrary(OpenLibraryBase):
    """The answers the mirror gives (kitab.sources.snapshot.olindex.OLIndex, everything in memory),
    behind the same client interface: what the DuckDB source must equal."""

    source = "dump"

    def __init__(self, snapshot, settings):
        from datetime import datetime

        from kitab.sources.snapshot.olindex import OLIndex

        self.index = OLIndex.from_snapshot(snapshot)
        self.page_size = settings.ol_page_size
        self.counter = RequestCounter()
        self.fetched_at = datetime.fromisoformat(read_manifest(snapshot)["created_at"].replace("Z", "+00:00"))

    def _fetched(self, path, params, data):
        return Fetched(data, fingerprint("GET", path, params), self.fetched_at, True)

    def _author(self, key):
        return self._fetched(f"/authors/{key}.json", {}, self.index.author(key))

    def search_authors(self, name):
        return self._fetched("/search/authors.json", {"q": name}, self.index.search_authors(name))

    def _search(self, params):
        data = self.index.search_works(
            author_key=params["author_key"], fields=params["fields"], limit=params["limit"], page=params["page"]
        )
        return self._fetched("/search.json", params, data)


def reference_select(store: pyoxigraph.Store, query: str) -> dict:
    return json.loads(query_json(store, query))


def sorted_ol_ids(data: dict) -> dict:
    """GROUP_CONCAT's order is unspecified (the caller sorts): compare the ids as a sorted list."""
    for row in data["results"]["bindings"]:
        if "ol_ids" in row:
            row["ol_ids"]["value"] = " ".join(sorted(row["ol_ids"]["value"].split()))
    return data


def answer(call, *args):
    """(data, fingerprint, fetched_at) or the error, so failures compare too."""
    try:
        fetched = call(*args)
    except ServiceError as exc:
        return ("error", str(exc))
    return fetched.data, fetched.fingerprint, fetched.fetched_at


def pages(ol, key):
    return [(p.data, p.fingerprint, p.fetched_at) for p in ol.works_pages(key)]


def assert_same_authors(dump: DumpWikidata, store: pyoxigraph.Store, windows, min_works=10, max_works=300):
    for start, end in windows:
        mine = dump.candidate_authors(from_year=start, to_year=end, min_works=min_works, max_works=max_works)
        query = sparql("candidate_authors", from_year=start, to_year=end, min_works=min_works, max_works=max_works)
        assert sorted_ol_ids(mine.data) == sorted_ol_ids(reference_select(store, query)), (start, end)
        assert mine.fingerprint == fingerprint("POST", "/sparql", body=query)


def assert_same_titles(dump: DumpWikidata, store: pyoxigraph.Store, titles: list[str]):
    mine = dump.works_by_titles(titles)
    query = sparql("works_by_titles", titles=sparql_titles(titles))  # each title @en and @mul
    assert mine.data == reference_select(store, query)
    assert mine.fingerprint == fingerprint("POST", "/sparql", body=query)


# --- fixtures: the bundled snapshot -------------------------------------------------------


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory) -> Settings:
    return Settings(warehouse=tmp_path_factory.mktemp("dump-warehouse"))


@pytest.fixture(scope="module")
def dump_wd(snapshot_dir, module_settings):
    source = DumpWikidata(snapshot_dir, module_settings)
    yield source
    source.close()


@pytest.fixture(scope="module")
def dump_ol(snapshot_dir, module_settings):
    source = DumpOpenLibrary(snapshot_dir, module_settings)
    yield source
    source.close()


@pytest.fixture(scope="module")
def store(snapshot_dir):
    return load_store(snapshot_dir)


@pytest.fixture(scope="module")
def reference_ol(snapshot_dir, module_settings):
    return ReferenceOpenLibrary(snapshot_dir, module_settings)


@pytest.fixture(scope="module")
def author_keys(snapshot_dir) -> list[str]:
    """Every key of the authors dump (authors and redirects), bare, plus one that does not exist."""
    return [key.rsplit("/", 1)[-1] for _, key, *_ in iter_ol_dump(snapshot_dir / OL_AUTHORS_FILE)] + ["OL1A"]


@pytest.fixture(scope="module")
def wikidata_labels(store) -> list[str]:
    rows = reference_select(store, "SELECT DISTINCT ?label WHERE { ?s rdfs:label ?label }")
    return sorted(row["label"]["value"] for row in rows["results"]["bindings"])


@pytest.fixture(scope="module")
def person_labels(store) -> list[str]:
    rows = reference_select(store, "SELECT DISTINCT ?label WHERE { ?s wdt:P31 wd:Q5 ; rdfs:label ?label }")
    return sorted(row["label"]["value"] for row in rows["results"]["bindings"])


# --- WikiData -----------------------------------------------------------------------------


def test_sample_authors_equal_pyoxigraph_for_every_window(dump_wd, store, manifest):
    assert_same_authors(dump_wd, store, WINDOWS)
    # wider filters too: every author with a work, and a window around the 1850 boundary case
    assert_same_authors(dump_wd, store, [(1700, 2100), (1849, 1851)], min_works=1, max_works=10_000)
    fetched = dump_wd.candidate_authors(from_year=1850, to_year=1875, min_works=10, max_works=300)
    assert fetched.from_cache and fetched.fetched_at.isoformat().startswith(manifest["created_at"][:10])


def test_works_by_titles_equal_pyoxigraph(dump_wd, store, wikidata_labels, reference_ol):
    ol_titles = sorted({json.loads(p).get("title") or "" for p in reference_ol.index._works.values()})
    titles = wikidata_labels[::10][:250] + ol_titles[::20][:100]
    titles += ["", "Beloved", 'A "quoted" title', "back\\slash", "Ünïcödé", "no such title at all"]
    assert_same_titles(dump_wd, store, titles)
    assert dump_wd.works_by_titles([]).data["results"]["bindings"] == []


def test_works_with_labels_equal_the_rows_of_works_by_titles(dump_wd, wikidata_labels, reference_ol):
    """The dump's own works_with_labels (no SPARQL JSON, Arrow's sort) gives the rows, in order,
    that reading works_by_titles' answer gives (label_rows, the reference form)."""
    ol_titles = sorted({json.loads(p).get("title") or "" for p in reference_ol.index._works.values()})
    titles = wikidata_labels[::3] + ol_titles[::7] + ["", "Ünïcödé", "no such title at all"]
    cached = dump_wd.counter.cached
    rows = works_with_labels(dump_wd, titles)
    assert dump_wd.counter.cached == cached + 1  # counted as works_by_titles counts its answer
    assert rows == label_rows(dump_wd.works_by_titles(titles))
    assert len({r["title"] for r in rows}) > 20 and any(r["work_qid"].startswith("Q") for r in rows)
    assert works_with_labels(dump_wd, []) == []


def test_counter_and_provenance(snapshot_dir, module_settings):
    source = DumpWikidata(snapshot_dir, module_settings)
    source.works_by_titles(["Beloved"])
    source.candidate_authors(from_year=1900, to_year=1925, min_works=10, max_works=300)
    assert (source.counter.sent, source.counter.cached) == (0, 2)
    source.close()


# --- Open Library -------------------------------------------------------------------------


def test_author_equal_olindex_for_every_key(dump_ol, reference_ol, author_keys):
    for key in author_keys:
        assert answer(dump_ol.author, key) == answer(reference_ol.author, key), key


def test_search_authors_equal_olindex(
    snapshot_dir, module_settings, dump_ol, reference_ol, wikidata_labels, person_labels
):
    tricky = [
        "",
        "   ",
        "!!!",
        "García Márquez",
        "GARCIA MARQUEZ",
        "márquez, gabriel",
        "Toni",
        "O'Brien",
        "ß",
        "x" * 300,
        "a b c d e f",
        "Morrison Toni",
        "12",
        "_",
    ]
    for name in person_labels + tricky:  # one query per call
        assert answer(dump_ol.search_authors, name) == answer(reference_ol.search_authors, name), name
    batch = DumpOpenLibrary(snapshot_dir, module_settings)
    batch.prefetch_authors([], wikidata_labels)  # every label (works too) in one set-based query
    for name in wikidata_labels:
        assert answer(batch.search_authors, name) == answer(reference_ol.search_authors, name), name
    batch.close()


def test_works_pages_equal_olindex_for_every_author(dump_ol, reference_ol, author_keys):
    for key in author_keys:
        assert pages(dump_ol, key) == pages(reference_ol, key), key


def test_prefetch_gives_the_same_answers_without_queries(
    snapshot_dir, module_settings, dump_ol, author_keys, wikidata_labels, monkeypatch
):
    fresh = DumpOpenLibrary(snapshot_dir, module_settings)
    names = wikidata_labels[:120] + ["", "García Márquez"]
    fresh.prefetch_authors(author_keys, names)
    fresh.prefetch_works(author_keys)

    # the expected answers first: both sources share this process's store, which is patched below
    expected = {key: (answer(dump_ol.author, key), pages(dump_ol, key)) for key in author_keys}
    searched = {name: answer(dump_ol.search_authors, name) for name in names}

    def no_query(*_):
        raise AssertionError("a prefetched answer went to DuckDB")

    monkeypatch.setattr(fresh.store, "query", no_query)
    for key in author_keys:
        assert (answer(fresh.author, key), pages(fresh, key)) == expected[key], key
    for name in names:
        assert answer(fresh.search_authors, name) == searched[name], name
    # answers are fresh objects: changing one does not change the next
    first = fresh.search_authors(names[0]).data
    first["docs"].clear()
    assert fresh.search_authors(names[0]).data == searched[names[0]][0]
    monkeypatch.undo()
    fresh.clear()  # after clear() the same calls go back to DuckDB and still agree
    assert answer(fresh.author, author_keys[0]) == answer(dump_ol.author, author_keys[0])
    fresh.close()


def test_batch_lookups_read_their_rows_not_the_tables(dump_ol, dump_wd, author_keys, wikidata_labels):
    """A batch's lookups read the rows of its keys from the cache, never a whole table: collecting
    from a dump then grows with the authors, not with their square (issue 18)."""
    keyed = dump_ol.store.keyed
    works = keyed["author_works"]
    before = works.rows_read
    dump_ol.prefetch_works(author_keys[::5])
    found = sum(len(docs) for docs in dump_ol._works.values())
    assert 0 < works.rows_read - before == found < works.offsets[-1] / 2
    dump_ol.clear()

    labels = keyed["wd_work_labels"]
    before = labels.rows_read
    answer = dump_wd.works_by_titles(wikidata_labels[::9])
    assert 0 < labels.rows_read - before == len(answer.data["results"]["bindings"]) < labels.offsets[-1] / 4

    authors = keyed["authors"]
    before = authors.rows_read
    dump_ol.prefetch_authors(author_keys[:3], [])
    assert authors.rows_read - before <= 3 + 3 * MAX_REDIRECTS  # each key and its redirect chain
    dump_ol.clear()


def test_threads_share_one_source(dump_ol, reference_ol, author_keys):
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda key: (pages(dump_ol, key), answer(dump_ol.author, key)), author_keys))
    assert got == [(pages(reference_ol, key), answer(reference_ol.author, key)) for key in author_keys]


# --- the cache ----------------------------------------------------------------------------


def test_cache_is_built_once(snapshot_dir, tmp_path):
    first = DumpStore.open(snapshot_dir, tmp_path)
    assert first.scan_seconds is not None
    folder = tmp_path / read_manifest(snapshot_dir)["snapshot_id"]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"{t}.parquet" for t in TABLES] + [name for t in KEYED for name in keyed_files(t)] + ["READY.json"]
    )
    mtimes = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    first.close()
    again = DumpStore.open(snapshot_dir, tmp_path)
    assert again.scan_seconds is None
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == mtimes
    again.close()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_concurrent_openers_scan_once(snapshot_dir, tmp_path):
    """Two processes opening the same snapshot at once: one scans, the other waits and reuses it."""
    script = (
        "import sys; from kitab.sources.dump.store import DumpStore; "
        "s = DumpStore.open(sys.argv[1], sys.argv[2]); "
        "print(s.scan_seconds is not None, s.query('SELECT count(*) FROM authors')[0][0])"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(snapshot_dir), str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = sorted(run.communicate(timeout=120)[0].split() for run in runs)
    assert [run.returncode for run in runs] == [0, 0]
    assert [scanned for scanned, _ in outputs] == ["False", "True"] and outputs[0][1] == outputs[1][1] != "0"


def test_a_stale_or_broken_cache_is_scanned_again_and_swapped_in(snapshot_dir, tmp_path):
    """A cache folder of another version, or one cut short, is not read: the snapshot is
    scanned again and the new folder takes its place whole."""
    first = DumpStore.open(snapshot_dir, tmp_path)
    first.close()
    folder, ready = first.folder, first.folder / "READY.json"
    marker = json.loads(ready.read_text())
    ready.write_text(json.dumps({**marker, "version": marker["version"] - 1}))  # an older cache
    (folder / "left-over").write_text("from the old cache")
    again = DumpStore.open(snapshot_dir, tmp_path)
    assert again.scan_seconds is not None and not (folder / "left-over").exists()
    assert json.loads(ready.read_text())["version"] == marker["version"]
    again.close()
    (folder / "authors.parquet").unlink()  # broken: a table missing
    third = DumpStore.open(snapshot_dir, tmp_path)
    assert third.scan_seconds is not None and third.query("SELECT count(*) FROM authors")[0][0] > 0
    third.close()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == [folder.name]


def _corrupt(lines: list[str], name: str) -> list[str]:
    if name == WIKIDATA_FILE:
        return lines[:3] + ["<http://example.org/a> <http://example.org/b> not-a-term ."] + lines[3:]
    if name == OL_AUTHORS_FILE:
        return lines[:3] + ["\t".join(lines[3].split("\t")[:4])] + lines[4:]  # four fields
    return lines[:3] + [lines[3][:-5]] + lines[4:]  # JSON cut short


@pytest.mark.parametrize(
    "name,damage",
    [(name, "bad line") for name in DATA_FILES]
    + [(OL_EDITIONS_FILE, "truncated"), (WIKIDATA_FILE, "truncated"), (OL_WORKS_FILE, "missing")],
)
def test_bad_input_names_the_file(snapshot_dir, tmp_path, name, damage):
    snapshot = tmp_path / "snapshot"
    shutil.copytree(snapshot_dir, snapshot)
    path = snapshot / name
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "missing":
        path.unlink()
    else:
        lines = gzip.decompress(path.read_bytes()).decode().split("\n")
        path.write_bytes(gzip.compress("\n".join(_corrupt(lines, name)).encode()))
    with pytest.raises(SnapshotFormatError, match=name.replace(".", r"\.")):
        DumpStore.open(snapshot, tmp_path / "cache")
    leftovers = [p.name for p in (tmp_path / "cache").iterdir()] if (tmp_path / "cache").exists() else []
    assert all(p.endswith(".lock") for p in leftovers)  # no cache, no temp folder left behind


def test_a_failed_chain_stops_the_others_between_queries(tmp_path):
    """build_cache's chains, once a sibling failed: the query running finishes, the next one
    never starts (no interrupt inside a query: a COPY once hung there, see _StoppableCursor)."""
    import threading

    import duckdb

    from kitab.sources.dump.scan import _StoppableCursor, _Stopped

    con = duckdb.connect(str(tmp_path / "scratch.duckdb"))
    stopping = threading.Event()
    chain = _StoppableCursor(con.cursor(), stopping)
    chain.execute("CREATE TABLE first AS SELECT 1 AS x")
    assert chain.sql("SELECT x FROM first").fetchall() == [(1,)]
    stopping.set()
    with pytest.raises(_Stopped):
        chain.execute("CREATE TABLE second AS SELECT 2 AS x")
    with pytest.raises(_Stopped):
        chain.sql("SELECT 1")
    tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert tables == {"first"}


# --- a snapshot of awkward records --------------------------------------------------------

WD, WDT = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
LABEL, LINKS = "<http://www.w3.org/2000/01/rdf-schema#label>", "<http://wikiba.se/ontology#sitelinks>"


def _author(
    qid: str,
    births: list[str],
    *,
    label: str | None = None,
    links: str = '"5"',
    ol: list[str] = (),
    works: int = 2,
    occupation: str = "Q36180",
    title: str | None = None,
) -> list[str]:
    me = f"<{WD}{qid}>"
    lines = [
        f"{me} <{WDT}P31> <{WD}Q5> .",
        f"{me} <{WDT}P106> <{WD}{occupation}> .",
        f"{me} {LINKS} {links}^^<{X}integer> .",
    ]
    lines += [f"{me} <{WDT}P569> {birth} ." for birth in births]
    lines += [f"{me} <{WDT}P648> {value} ." for value in ol]
    if label is not None:
        lines.append(f"{me} {LABEL} {label} .")
    for i in range(works):
        work = f"<{WD}{qid}W{i}>"
        lines.append(f"{work} <{WDT}P50> {me} .")
        if title is not None:
            lines.append(f"{work} {LABEL} {title} .")
    return lines


def _dt(text: str) -> str:
    return f'"{text}"^^<{X}dateTime>'


WIKIDATA_LINES = [
    "# a comment, then a blank line",
    "",
    *_author(
        "Q1",
        [_dt("1900-05-01T00:00:00Z")],
        label='"Jos\\u00E9 \\"Pepe\\" O\'Brien \\U0001F600"@en',
        ol=['"OL1A"', '"OL2A"', '"OL2A"'],
        title='"Tab\\there"@en',
    ),
    *_author("Q2", [_dt("1900-01-01T00:00:00Z")], label='"Upper"@EN', links='"07"', title='"Upper"@en'),
    *_author("Q3", [_dt("1910-01-01T00:00:00Z"), _dt("1870-01-01T00:00:00Z")], label='"Two births"@en'),
    *_author("Q4", [_dt("1900-01-01T00:00:00Z"), '"1890"'], label='"String birth"@en'),
    *_author("Q5", [_dt("1899-12-31T10:00:00")], label='"No zone, 14 h from 1900"@en'),
    *_author("Q6", [_dt("1899-12-31T09:59:59")], label='"No zone, more than 14 h"@en'),
    *_author("Q7", [_dt("1900-01-01T00:00:00+05:00")], label='"East of UTC"@en'),
    *_author("Q8", [_dt("1900-02-29T00:00:00Z")], label='"Not a leap year"@en'),
    *_author("Q9", [_dt("1899-12-31T24:00:00Z")], label='"Midnight is tomorrow"@en', ol=['"OL9A"@en']),
    *_author("Q10", [_dt("1905-01-01T00:00:00Z"), f'"1901-03"^^<{X}gYearMonth>'], label='"Month precision"@en'),
    *_author("Q11", [_dt("1901-01-01T00:00:00Z")], label='"Poet"@fr', occupation="Q49757", works=1),
    *_author("Q12", [_dt("1901-01-01T00:00:00Z")], label='"Journalist"@en', occupation="Q1930187"),
    *_author("Q13", [f"<{WD}genid1>"], label='"Unknown birth"@en'),
    *_author("Q14", [_dt("1902-01-01T00:00:00Z")], works=0, label='"No works"@en'),
    f"<{WD}Q1W0>\t<{WDT}P50>\t<{WD}Q1> .",  # the same triple again, tab-separated
    f"_:b1 <{WDT}P50> <{WD}Q2> .",
    f'<{WD}T1> {LABEL} "Same title"@en .',
    f"<{WD}T1> <{WDT}P50> <{WD}Q1> .",
    f"<{WD}T1> <{WDT}P50> <{WD}Q2> .",
    f'<{WD}T2> {LABEL} "Same title"@en .',
    f"<{WD}T2> <{WDT}P50> <{WD}Q3> .",
    f'<{WD}T3> {LABEL} "back\\\\slash \\"q\\""@en .',
    f"<{WD}T3> <{WDT}P50> <{WD}Q3> .",
    f'<{WD}T4> {LABEL} "Same title"@de .',
    f"<{WD}T4> <{WDT}P50> <{WD}Q3> .",
    f'<{WD}T5> {LABEL} ""@en .',
    f"<{WD}T5> <{WDT}P50> <{WD}Q4> .",
    f'<{WD}T6> {LABEL} "C:\\\\u0041"@en .',
    f"<{WD}T6> <{WDT}P50> <{WD}Q4> .",  # a backslash, then "u0041"
    f'<{WD}T7> {LABEL} "C:A"@en .',
    f"<{WD}T7> <{WDT}P50> <{WD}Q4> .",
]
TRICKY_TITLES = ["Tab\there", "Upper", "Same title", 'back\\slash "q"', "", "missing", "José", "C:\\u0041"]


def _author(key: str, name: str | None = None, **fields) -> tuple:
    record = {"key": f"/authors/{key}", "type": {"key": "/type/author"}, **fields}
    if name is not None:
        record["name"] = name
    return ("/type/author", record)


def _redirect(key: str, to: str) -> tuple:
    return (
        "/type/redirect",
        {"key": f"/authors/{key}", "type": {"key": "/type/redirect"}, "location": f"/authors/{to}"},
    )


def _work(key: str, authors: list[str], **fields) -> tuple:
    refs = [{"author": {"key": f"/authors/{a}"}, "type": {"key": "/type/author_role"}} for a in authors]
    return ("/type/work", {"key": f"/works/{key}", "type": {"key": "/type/work"}, "authors": refs, **fields})


def _edition(key: str, works: list[str], **fields) -> tuple:
    return (
        "/type/edition",
        {
            "key": f"/books/{key}",
            "type": {"key": "/type/edition"},
            "works": [{"key": f"/works/{w}"} for w in works],
            **fields,
        },
    )


AUTHORS = [
    _author("OL1A", "José García-Márquez", alternate_names=["Jose Garcia", "ГАРСИЯ"], birth_date="6 March 1927"),
    _author("OL2A", "Straße Müller", death_date="1990"),
    _author("OL3A", "Zoe\u0308 Smith", birth_date=""),  # combining diaeresis
    _author("OL10A", "Tie Smith"),
    _author("OL9A", "Tie Smith"),
    _author("OL11A", ""),
    _author("OL12A", "Agent 007"),
    _author("OL13A"),
    _redirect("OL20A", "OL21A"),
    _redirect("OL21A", "OL22A"),
    _redirect("OL22A", "OL23A"),
    _redirect("OL23A", "OL24A"),
    _redirect("OL24A", "OL25A"),
    _author("OL25A", "Five Hops"),
    _redirect("OL31A", "OL32A"),
    _redirect("OL32A", "OL33A"),
    _redirect("OL33A", "OL34A"),
    _redirect("OL34A", "OL35A"),
    _author("OL35A", "Four Hops"),
    _redirect("OL40A", "OL41A"),
    _redirect("OL41A", "OL40A"),  # a loop
    ("/type/delete", {"key": "/authors/OL50A", "type": {"key": "/type/delete"}}),
]
WORKS = [
    _work("OL1W", ["OL1A", "OL1A"], title="Twice by one author", first_publish_date="c. \u0661\u0669\u0668\u0667"),
    _work("OL2W", ["OL20A", "OL31A", "OL1A", "OL404A", "OL40A"], title="Redirected", subtitle=""),
    _work("OL3W", ["OL1A"], subtitle="Only a subtitle", first_publish_date="0000"),
    _work("OL4W", ["OL9A"], title="Tie one"),
    _work("OL5W", ["OL10A"], title="Tie two"),
    _work("OL6W", ["OL2A", "OL3A"], title=None, first_publish_date="1999, reprinted 2001"),
    _work("OL7W", ["OL12A"], title="Years", first_publish_date="12345 then 1950"),
    ("/type/redirect", {"key": "/works/OL8W", "type": {"key": "/type/redirect"}, "location": "/works/OL1W"}),
    (
        "/type/work",
        {
            "key": "/works/OL9W",
            "type": {"key": "/type/work"},
            "title": "Odd authors",
            "authors": [{"type": {"key": "/type/author_role"}}, {"author": {"key": "/authors/OL2A"}}],
        },
    ),
    *[_work(f"OL{100 + i}W", ["OL2A"], title=f"Many {i}") for i in range(7)],
]
EDITIONS = [
    _edition("OL1M", ["OL1W", "OL1W"], publish_date="May 1990", languages=[{"key": "/languages/fre"}]),
    _edition("OL2M", ["OL1W"], publish_date="\u0661\u0669\u0668\u0660", languages=[{"key": "/languages/eng"}]),
    _edition("OL3M", ["OL3W", "OL404W"], publish_date="0000"),
    _edition(
        "OL4M", ["OL4W"], publish_date="1999-2000", languages=[{"key": "/languages/eng"}, {"key": "/languages/eng"}]
    ),
    _edition("OL5M", ["OL5W"]),
    _edition("OL6M", ["OL5W"], publish_date="no year"),
    _edition("OL7M", ["OL7W"], publish_date="12345"),
    _edition("OL8M", [], publish_date="1900"),
]


@pytest.fixture(scope="module")
def tricky(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tricky")
    with deterministic_gzip(folder / WIKIDATA_FILE) as out:
        out.write("\n".join(WIKIDATA_LINES) + "\n")
    for name, records in ((OL_AUTHORS_FILE, AUTHORS), (OL_WORKS_FILE, WORKS), (OL_EDITIONS_FILE, EDITIONS)):
        with deterministic_gzip(folder / name) as out:
            for i, (record_type, record) in enumerate(records):
                out.write(ol_dump_line(record_type, record["key"], i + 1, "2024-01-01T00:00:00", record) + "\n")
    write_manifest(folder, as_of="2024-06-01")
    return folder


def test_awkward_wikidata_records_equal_pyoxigraph(tricky, tmp_path):
    source = DumpWikidata(tricky, Settings(warehouse=tmp_path))
    reference = load_store(tricky)
    assert_same_authors(source, reference, [(1850, 1900), (1900, 1925), (1890, 1910), (1800, 2000)], 1, 300)
    assert_same_authors(source, reference, [(1900, 1901), (1899, 1900)], 0, 1)
    got = {
        b["author"]["value"].rsplit("/", 1)[1]: b
        for b in source.candidate_authors(from_year=1900, to_year=1925, min_works=1, max_works=300).data["results"][
            "bindings"
        ]
    }
    # a sanity check that the edge cases are exercised, not only agreed on
    assert {"Q1", "Q2", "Q9", "Q11"} <= got.keys() and not {"Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "Q12"} & got.keys()
    assert got["Q1"]["name"]["value"] == 'José "Pepe" O\'Brien \U0001f600' and got["Q2"]["sitelinks"]["value"] == "7"
    assert_same_titles(source, reference, TRICKY_TITLES)
    # the dump's own works_with_labels: blank nodes, literal authors, several works and authors a label
    assert works_with_labels(source, TRICKY_TITLES) == label_rows(source.works_by_titles(TRICKY_TITLES))
    source.close()


def test_awkward_openlibrary_records_equal_olindex(tricky, tmp_path):
    settings = Settings(warehouse=tmp_path, ol_page_size=3)
    source, reference = DumpOpenLibrary(tricky, settings), ReferenceOpenLibrary(tricky, settings)
    keys = [record["key"].rsplit("/", 1)[1] for _, record in AUTHORS] + ["OL404A"]
    names = [
        "José",
        "jose garcia",
        "ГАРСИЯ",
        "гарсия",
        "Strasse",
        "STRASSE MÜLLER",
        "zoë",
        "Zoe",
        "smith",
        "Tie",
        "agent 007",
        "007",
        "Four Hops",
        "five",
        "",
        "-",
    ]
    for key in keys:
        assert answer(source.author, key) == answer(reference.author, key), key
        assert pages(source, key) == pages(reference, key), key
    for name in names:
        assert answer(source.search_authors, name) == answer(reference.search_authors, name), name
    source.prefetch_authors(keys, names)
    source.prefetch_works(keys)
    for key in keys:
        assert answer(source.author, key) == answer(reference.author, key), key
        assert pages(source, key) == pages(reference, key), key
    for name in names:
        assert answer(source.search_authors, name) == answer(reference.search_authors, name), name
    docs = {d["key"]: d for d in reference.index.search_works(author_key="OL1A", limit=10)["docs"]}
    assert docs["/works/OL1W"]["edition_count"] == 3 and docs["/works/OL1W"]["first_publish_year"] == 1980
    assert answer(source.author, "OL20A")[0] == "error"  # more redirects than OpenLibraryBase.author follows
    source.close()


# --- pure functions -----------------------------------------------------------------------


def test_nt_unescape():
    assert nt_unescape(r"a\"b\\c\nd\re\tf\u00E9\U0001F600\'") == "a\"b\\c\nd\re\tfé\U0001f600'"
    with pytest.raises(ValueError):
        nt_unescape(r"\uD800")


def test_xsd_year_bounds_match_pyoxigraph():
    """YEAR() and the window comparisons of candidate_authors.rq, for random (often invalid)
    dateTime spellings, against pyoxigraph itself."""
    rng = random.Random(7)
    parts = [
        ["1889", "1890", "0000", "-0004", "-0001", "12345", "01890", "999"],
        ["01", "12", "02", "13", "1"],
        ["01", "31", "29", "30", "00"],
        ["00", "23", "24", "13", "14", "10"],
        ["00", "59", "60"],
        ["00", "59", "60"],
        ["", ".0", ".5", "."],
        ["Z", "", "", "+14:00", "-14:00", "+14:01", "-05:00", "-00:00", "z"],
    ]
    values = sorted({"{}-{}-{}T{}:{}:{}{}{}".format(*(rng.choice(p) for p in parts)) for _ in range(800)})
    typed = [(X + "dateTime", v) for v in values] + [
        (X + "date", "1890-02-29"),
        (X + "date", "2000-02-29Z"),
        (X + "gYear", "1890"),
        (X + "gYear", "01890"),
        (X + "gYearMonth", "1890-13"),
        (X + "gYearMonth", "1890-12Z"),
        (X + "dateTimeStamp", "1890-01-01T00:00:00"),
        (X + "string", "1890-01-01T00:00:00Z"),
    ]
    store = pyoxigraph.Store()
    store.load(
        input="\n".join(f'<http://x/{i}> <http://p> "{v}"^^<{dt}> .' for i, (dt, v) in enumerate(typed)).encode(),
        format=pyoxigraph.RdfFormat.N_TRIPLES,
    )
    bounds = [1889, 1890, 1891, 0, 1, -3, 12345, 12346, 2000, 2001]
    start = {b: f'"{"-" if b < 0 else ""}{abs(b):04d}-01-01T00:00:00Z"^^xsd:dateTime' for b in bounds}
    columns = " ".join(f"(?o >= {start[b]} AS ?ge{i}) (?o < {start[b]} AS ?lt{i})" for i, b in enumerate(bounds))
    for row in store.query(f"SELECT ?s (YEAR(?o) AS ?y) {columns} WHERE {{ ?s <http://p> ?o }}", prefixes={"xsd": X}):
        datatype, value = typed[int(row["s"].value.rsplit("/", 1)[1])]
        year, low, high = xsd_year_bounds(datatype, value)
        assert year == (int(row["y"].value) if row["y"] is not None else None), value

        def true(term) -> bool:
            return term is not None and term.value == "true"

        for i, bound in enumerate(bounds):
            assert true(row[f"ge{i}"]) == (low is not None and bound <= low), (value, bound)
            assert true(row[f"lt{i}"]) == (high is not None and high < bound), (value, bound)


# --- manifest -----------------------------------------------------------------------------


def test_write_manifest(snapshot_dir, tmp_path):
    folder = tmp_path / "dumps"
    folder.mkdir()
    for name in DATA_FILES:
        shutil.copy(snapshot_dir / name, folder / name)
    manifest = write_manifest(folder, as_of="2024-06-01")
    bundled = read_manifest(snapshot_dir)
    # the digest rule of the generator: same files, same 12 hex digits
    assert manifest["snapshot_id"] == "dump-" + bundled["snapshot_id"].rsplit("-", 1)[1]
    assert manifest["checksums"] == bundled["checksums"] and manifest["created_at"] == "2024-06-01T00:00:00Z"
    assert manifest["counts"]["bytes"] == sum((folder / n).stat().st_size for n in DATA_FILES)
    assert read_manifest(folder) == manifest
    assert write_manifest(folder, as_of="2024-06-01T14:30:00+02:00")["created_at"] == "2024-06-01T12:30:00Z"
    os.utime(folder / WIKIDATA_FILE, (1_700_000_000, 1_700_000_000))
    for name in DATA_FILES[1:]:
        os.utime(folder / name, (1_600_000_000, 1_600_000_000))
    assert write_manifest(folder)["created_at"] == "2023-11-14T22:13:20Z"
    (folder / OL_WORKS_FILE).unlink()
    with pytest.raises(SnapshotFormatError, match=OL_WORKS_FILE):
        write_manifest(folder)
    assert (folder / MANIFEST_FILE).exists()  # the earlier manifest is left as it was
