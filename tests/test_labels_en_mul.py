"""WikiData's label rule, "en, else mul", on items that have both (since 2024 WikiData keeps a
name the same in many languages under `mul`; an item may have an English label as well). The
bundled snapshot has no such item, and must stay as it is (tests/test_snapshot.py regenerates it
byte for byte), so these tests generate their own world with ``both_labels=True``: a third of
the people and characters labelled in English also get a different `mul` label, "(mul) <name>".
The mirror's SPARQL (pyoxigraph over the N-Triples) and the dump source must both name them in
English."""

from __future__ import annotations

import gzip

import pytest

from kitab.core.config import Settings
from kitab.simulate.generator.generate import generate_snapshot
from kitab.simulate.mirror.rdfstore import load_store
from kitab.sources.dump.wikidata import DumpWikidata
from kitab.sources.queries import sparql
from kitab.sources.snapshot.format import WIKIDATA_FILE
from tests.test_dump_source import assert_same_authors, reference_select

WINDOWS = [(start, min(start + 25, 2026)) for start in range(1850, 2026, 25)]
BOTH = """SELECT ?s ?en ?mul WHERE { ?s rdfs:label ?en . ?s rdfs:label ?mul .
          FILTER(LANG(?en) = "en" && LANG(?mul) = "mul") }"""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("both-labels") / "world"
    generate_snapshot(folder, 3, 40, both_labels=True)
    return folder


@pytest.fixture(scope="module")
def store(world):
    return load_store(world)


@pytest.fixture(scope="module")
def dump(world, tmp_path_factory):
    source = DumpWikidata(world, Settings(warehouse=tmp_path_factory.mktemp("both-labels-wh")))
    yield source
    source.close()


def _english(store) -> dict[str, str]:
    """Item URI -> its English label, for the items that have both."""
    rows = reference_select(store, BOTH)["results"]["bindings"]
    return {r["s"]["value"]: r["en"]["value"] for r in rows if r["mul"]["value"] == "(mul) " + r["en"]["value"]}


def test_the_world_has_items_with_both_labels_and_the_default_has_none(world, store, tmp_path):
    assert len(_english(store)) >= 50
    plain = tmp_path / "plain"
    generate_snapshot(plain, 3, 40)
    with gzip.open(plain / WIKIDATA_FILE, "rt", encoding="utf-8") as f:
        assert not any('"(mul) ' in line for line in f)


def test_authors_are_named_in_english_by_the_mirror_and_the_dump_source(world, store, dump):
    english = _english(store)
    assert_same_authors(dump, store, WINDOWS)  # the dump source answers as the mirror's SPARQL
    checked = 0
    for start, end in WINDOWS:
        query = dict(from_year=start, to_year=end, min_works=10, max_works=300)
        for source in (
            dump.candidate_authors(**query).data,
            reference_select(store, sparql("candidate_authors", **query)),
        ):
            for row in source["results"]["bindings"]:
                uri, label = row["author"]["value"], row.get("name", {})
                assert not (label.get("value") or "").startswith("(mul) "), row
                if uri in english:
                    assert label["value"] == english[uri] and label.get("xml:lang") == "en", row
                    checked += 1
    assert checked >= 10, checked  # people with both labels were among the candidates
