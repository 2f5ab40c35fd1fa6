"""human_v6 / city_v6 (tasks/taggers/v6.py, issue 20): v5 grown from WordNet 3.0, v5 untouched
beside it; and the builder of the WordNet lists (tools/build_v6_lists.py) on WordNet-format lines."""

from __future__ import annotations

import csv
import importlib.util
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tasks.tag_entities import tag_titles, v3_taggers
from tasks.taggers.gazetteers import DATA_DIR, load_lexicon_v5, load_lexicon_v6
from tasks.taggers.registry import DEFAULT, make_taggers

ROOT = Path(__file__).resolve().parent.parent
LABELLED = ROOT / "benchmarks" / "data" / "entity_titles.tsv"


@pytest.fixture(scope="module")
def v6():
    return make_taggers(("human_v6", "city_v6"))


@pytest.fixture(scope="module")
def v5():
    return make_taggers(("human_v5", "city_v5"))


@pytest.fixture(scope="module")
def eager6():
    """v6's rules and lists with NER on every title (v3's taggers given v6's lexicon)."""
    taggers = v3_taggers()
    for tagger in taggers:
        tagger.lex = load_lexicon_v6()
    return taggers


def texts(taggers, titles):
    tagged = tag_titles(titles, taggers)
    return [[s.text for s in spans] for spans in tagged["human"]], [[s.text for s in spans] for spans in tagged["city"]]


def test_v6_and_v5_stay_registered(v6, v5):
    assert DEFAULT == ("human_v7", "city_v7")  # issue 37 (tests/test_tag_v7.py)
    assert [t.version for t in v6] == ["human_v6", "city_v6"] and [t.version for t in v5] == ["human_v5", "city_v5"]


# titles of the dev, holdout and dev2 splits (never holdout2 or the blind set), and two made up
@pytest.mark.parametrize(
    ("title", "human_v5", "human_v6", "city_v5", "city_v6"),
    [
        ("Faust", [], ["Faust"], [], []),  # WordNet: a named individual, and nothing else
        ("Hamlet", [], ["Hamlet"], [], []),  # ... a less frequent word too: alone, the whole title, a name
        ("Burr", [], ["Burr"], [], []),
        ("The Fall of the House of Usher", [], ["Usher"], [], []),
        ("The Unknown Ajax", [], ["Ajax"], ["Ajax"], []),  # a person, so no town (Ajax, Ontario)
        ("Arcadia", [], [], ["Arcadia"], []),  # WordNet: a region of Greece, never a city
        ("Salvador", [], [], ["Salvador"], []),  # ... El Salvador
        ("Atlantis Found", [], [], ["Atlantis"], []),  # ... an imaginary place
        ("Arcadia, California", [], [], ["Arcadia"], ["Arcadia"]),  # (made up) a region after it: the town
        ("Orlando", [], [], ["Orlando"], ["Orlando"]),  # WordNet knows the city: still v5's reading
        ("Death in Venice", [], [], ["Venice"], ["Venice"]),
        ("Fahrenheit 451", [], [], [], []),  # WordNet: also an adjective, so no person
        ("The Dubliners of Dublin", [], [], ["Dublin"], ["Dublin"]),  # (made up) a kind of person, no individual
    ],
)
def test_v6_on_labelled_titles(v5, v6, title, human_v5, human_v6, city_v5, city_v6):
    assert texts(v5, [title]) == ([human_v5], [city_v5])
    assert texts(v6, [title]) == ([human_v6], [city_v6])


def test_v6_evidence_names_the_list(v6):
    tagged = tag_titles(["Faust"], v6)
    assert [(s.text, s.evidence) for s in tagged["human"][0]] == [("Faust", "surname+proper_title_rule")]


def test_v6_lexicon_grows_v5s():
    v5, lex = load_lexicon_v5(), load_lexicon_v6()
    assert load_lexicon_v6() is lex and (v5.generation, lex.generation) == (5, 6)
    assert lex.cities is v5.cities and lex.first_names is v5.first_names and v5.not_cities == frozenset()
    added = lex.surnames - v5.surnames
    assert {"faust", "hamlet", "burr", "usher", "ajax"} <= added
    assert not (added & v5.frequent_words) and not any(v5.is_region(k) for k in added) and not (added & v5.demonyms)
    assert {"arcadia", "atlantis", "salvador", "eden"} <= lex.not_cities
    assert not (
        {"orlando", "troy", "paris", "venice", "pompeii", "edinburgh", "belfast", "york", "stockton"} & lex.not_cities
    )
    assert lex.not_cities <= lex.cities.keys()  # a veto on GeoNames names only


def test_v6_data_files_are_well_formed():
    for name in ("wordnet_people.txt", "wordnet_not_cities.txt"):
        lines = (DATA_DIR / name).read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith("# Princeton WordNet 3.0")
        entries = lines[1:]
        assert entries and entries == sorted(set(entries)), name
        assert all(x[0].isupper() for x in entries), name
    people = (DATA_DIR / "wordnet_people.txt").read_text(encoding="utf-8").splitlines()[1:]
    assert all(x.isalpha() for x in people) and {"Faust", "Hamlet"} <= set(people)
    assert not {"Dubliner", "Quaker", "Fahrenheit"} & set(people)


def test_lazy_v6_equals_eager_v6_on_the_labelled_titles(v6, eager6):
    with LABELLED.open(encoding="utf-8", newline="") as f:
        titles = [r["title"] for r in csv.DictReader(f, delimiter="\t")]
    titles += [t.upper() for t in titles[:200]] + [t.lower() for t in titles[200:400]]
    lazy, full = tag_titles(titles, v6), tag_titles(titles, eager6)
    for kind in ("human", "city"):
        assert [[(s.start, s.end) for s in x] for x in lazy[kind]] == [
            [(s.start, s.end) for s in x] for x in full[kind]
        ]


_POOL = [
    "Faust",
    "Hamlet",
    "Burr",
    "Usher",
    "Ajax",
    "Arcadia",
    "Atlantis",
    "Salvador",
    "Eden",
    "Orlando",
    "Troy",
    "Jack",
    "Grace",
    "Paris",
    "Venice",
    "Reading",
    "California",
    "Ontario",
    "Mrs.",
    "the",
    "The",
    "and",
    "of",
    "in",
    "from",
    "to",
    "House",
    "Fall",
    "Life",
    ":",
    ",",
    "'s",
    "Unknown",
]


def _title(words) -> str:
    return " ".join(words).replace(" 's", "'s").replace(" ,", ",").replace(" :", ":")


# Each pins one rule of tasks/taggers/lazy.py's ner_matters: with that rule's `return True`
# removed (one at a time), lazy v6 tagged it otherwise than v6 with NER on every title. Found by
# running every title of one or two pool words through both, for each rule broken.
@example(words=["Paris", "'s"])  # a city's possessive
@example(words=["Salvador", "Grace"])  # a listed name that is also a word, beside a name
@example(words=["Atlantis", "Burr"])  # a listed name that is a less frequent word
@example(words=["'s", "Orlando"])  # a city with no other reason to read as one
@example(words=["in", "Reading"])  # a big city that is a word
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_POOL), min_size=1, max_size=7))
def test_v6_spans_quote_the_title_and_skipping_ner_changes_nothing(v6, eager6, words):
    title = _title(words)
    tagged = tag_titles([title], v6)
    for kind in ("human", "city"):
        assert all(title[s.start : s.end] == s.text and s.kind == kind for s in tagged[kind][0])
    people = {(s.start, s.end) for s in tagged["human"][0]}
    assert not any(c.start < p[1] and p[0] < c.end for c in tagged["city"][0] for p in people)
    full = tag_titles([title], eager6)
    assert [[(s.start, s.end) for s in full[k][0]] for k in ("human", "city")] == [
        [(s.start, s.end) for s in tagged[k][0]] for k in ("human", "city")
    ]


def test_every_short_title_of_the_pool_tags_the_same_lazy_and_full(v6, eager6):
    """Every title of one or two pool words (1,122), not a sample: lazy v6 = v6 with NER on
    every title, span for span. (Five of ner_matters' ten rules, each removed alone, make at
    least one of these differ.)"""
    titles = sorted({_title(w) for n in (1, 2) for w in itertools.product(_POOL, repeat=n)})
    assert len(titles) > 1000
    lazy, full = tag_titles(titles, v6), tag_titles(titles, eager6)
    for kind in ("human", "city"):
        differ = [
            t
            for t, a, b in zip(titles, lazy[kind], full[kind])
            if [(s.start, s.end) for s in a] != [(s.start, s.end) for s in b]
        ]
        assert differ == [], kind


# --- tools/build_v6_lists.py, on lines in WordNet's data-file format --------------------------

_NOUN = """\
  1 This software and database is being provided to you, the LICENSEE, by Princeton University
08524735 15 n 03 city 0 metropolis 0 urban_center 0 000 | a large and densely populated urban area
08574314 15 n 01 geographical_area 0 000 | a demarcated area of the Earth
08790353 15 n 01 Arcadia 0 001 @i 08574314 n 0000 | a department of Greece in the central Peloponnese
09074140 15 n 01 Orlando 0 001 @i 08524735 n 0000 | a city in central Florida
09587565 18 n 01 fictional_character 0 000 | an imaginary person represented in a work of fiction
09599023 18 n 02 Faust 0 Faustus 0 001 @i 09587565 n 0000 | an alchemist of German legend
09714952 18 n 01 European 0 000 | a native or inhabitant of Europe
09715427 18 n 01 Dubliner 0 001 @ 09714952 n 0000 | a resident of Dublin
10965151 18 n 02 Fahrenheit 0 Gabriel_Daniel_Fahrenheit 0 001 @i 09587565 n 0000 | German physicist
08518505 15 n 01 capital 0 000 | a seat of government
08970445 15 n 01 Edinburgh 0 001 @i 08518505 n 0000 | the capital of Scotland
99999999 15 n 01 Springfield 0 001 @i 99999998 n 0000 | a town (its kind is a town's kind's kind)
99999998 15 n 01 county_town 0 001 @ 08524735 n 0000 | a town that is the seat of a county
"""
_ADJ = "02725549 01 a 01 Fahrenheit(ip) 0 000 | of or relating to a temperature scale\n"


def _builder():
    spec = importlib.util.spec_from_file_location("build_v6_lists", ROOT / "tools" / "build_v6_lists.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_builder_reads_wordnet_people_and_non_cities(tmp_path):
    (tmp_path / "data.noun").write_text(_NOUN, encoding="latin-1")
    (tmp_path / "data.adj").write_text(_ADJ, encoding="latin-1")
    (tmp_path / "data.verb").write_text("", encoding="latin-1")
    (tmp_path / "data.adv").write_text("", encoding="latin-1")
    build = _builder()
    nouns, senses = build.proper_nouns(tmp_path)
    assert nouns["09599023"].instance and nouns["09599023"].lexfile == 18
    assert senses["Fahrenheit"] == [("noun", "10965151"), ("adj", "02725549")]
    # one-word named individuals known only as people: not a kind of person, not an adjective
    assert build.people(nouns, senses) == ["Faust", "Faustus"]
    # GeoNames names that WordNet knows as a place, never as a city (Springfield: a county town
    # is a city; Edinburgh: a capital is one; Faust: only a person, which says nothing of a town)
    keys = {"arcadia", "orlando", "springfield", "faust", "dublin", "edinburgh"}
    assert build.not_cities(nouns, senses, keys) == ["Arcadia"]
