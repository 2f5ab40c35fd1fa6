"""human_v7 / city_v7 (tasks/taggers/v7.py, issue 37 item 4): big cities decide, what is no name
is no human doubt, foreign words and addressees are no names; v6 untouched beside it."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest

from tasks.entity_states import span_class
from tasks.tag_entities import tag_titles, v3_taggers
from tasks.taggers.gazetteers import load_lexicon_v6, load_lexicon_v7
from tasks.taggers.registry import DEFAULT, make_taggers

ROOT = Path(__file__).resolve().parent.parent
LABELLED = ROOT / "benchmarks" / "data" / "entity_titles.tsv"


@pytest.fixture(scope="module")
def v7():
    return make_taggers(("human_v7", "city_v7"))


@pytest.fixture(scope="module")
def v6():
    return make_taggers(("human_v6", "city_v6"))


@pytest.fixture(scope="module")
def eager7():
    """v7's rules and lists with NER on every title (v3's taggers given v7's lexicon)."""
    taggers = v3_taggers()
    for tagger in taggers:
        tagger.lex = load_lexicon_v7()
    return taggers


def classes(taggers, title: str) -> tuple[str, str]:
    """(human class, city class) of one title: its spans' class, else its doubt, else plain."""
    views = taggers[0].views([title], taggers[0].parse([title]))
    out = []
    for tagger in taggers:
        spans = tagger.spans(views[0])
        out.append(span_class(tagger.name, [s.evidence for s in spans]) if spans else tagger.doubt(views[0]) or "plain")
    return out[0], out[1]


def test_v7_is_the_default_and_v6_stays_registered(v7, v6):
    assert DEFAULT == ("human_v7", "city_v7")
    assert [t.version for t in v7] == ["human_v7", "city_v7"] and [t.version for t in v6] == ["human_v6", "city_v6"]
    v6_lex, lex = load_lexicon_v6(), load_lexicon_v7()
    assert (v6_lex.generation, lex.generation) == (6, 7) and lex.cities is v6_lex.cities
    assert {"amsterdam", "lisbon", "tokyo"} <= lex.capitals and "sommer" in lex.foreign and not v6_lex.foreign


# (human class, city class) under v6 and v7: the issue's titles, and titles of dev, holdout, dev2
@pytest.mark.parametrize(
    ("title", "v6_classes", "v7_classes"),
    [
        # capitals and big cities named alone decide (population_large is not risky)
        ("Tokyo Vice", ("unknown_word", "population"), ("plain", "population_large")),
        ("Berlin Diary", ("plain", "population"), ("plain", "population_large")),
        ("Moscow 2042", ("unknown_word", "population"), ("plain", "population_large")),
        ("The Rome Ferry", ("unknown_word", "population"), ("plain", "population_large")),
        ("Copenhagen", ("unknown_word", "population"), ("plain", "population_large")),  # a capital
        ("Boston Adventure", ("unknown_word", "population"), ("plain", "population_large")),  # 650,000
        ("Missoula", ("unknown_word", "population"), ("plain", "population")),  # 71,000: a risky city
        # a city that is also a listed given name is no human doubt
        ("Death in Venice", ("listed_name", "context"), ("plain", "context")),
        ("London Fields", ("listed_name", "population"), ("plain", "population_large")),
        ("Paris", ("listed_name", "population"), ("plain", "population_large")),  # a metropolis alone
        ("Orlando", ("listed_name", "ner"), ("listed_name", "ner")),  # the name alone, a smaller city: doubt
        ("Paris Trout", ("listed_name", "population"), ("listed_name", "population")),  # a surname after it
        ("Hong Kong", ("listed_name", "ner"), ("plain", "population_large")),  # ... not inside the city's name
        ("The Merchant of Venice", ("listed_name", "population"), ("plain", "population")),
        # foreign words and addressees are no names
        ("Ein Sommer in Hamburg", ("name_list", "context"), ("plain", "context")),
        ("Letters to Milena", ("listed_name", "context"), ("name_list", "plain")),
        # what is no name is no human doubt
        ("Texas", ("unknown_word", "plain"), ("plain", "plain")),  # a region
        ("Motherless Brooklyn", ("listed_name", "plain"), ("plain", "plain")),  # a district
        ("Mansfield Park", ("listed_name", "plain"), ("plain", "plain")),  # before a place noun
        ("Northanger Abbey", ("listed_name", "plain"), ("plain", "plain")),  # ... and the place noun
        ("B Is for Burglar", ("unknown_word", "plain"), ("plain", "plain")),  # a letter
        ("SPQR: A History of Ancient Rome", ("unknown_word", "population"), ("plain", "population_large")),
        ("The Cherry Orchard", ("listed_name", "plain"), ("plain", "plain")),  # a word after an article
        ("Les Misérables", ("unknown_word", "plain"), ("plain", "plain")),  # a foreign title
        ("East of Eden", ("listed_name", "plain"), ("plain", "plain")),  # a place genitive
        ("The Mists of Avalon", ("unknown_word", "plain"), ("plain", "plain")),  # ... of any word
        # names stay doubts
        ("The Bourne Identity", ("listed_name", "plain"), ("listed_name", "plain")),
        ("Waiting for Godot", ("unknown_word", "plain"), ("unknown_word", "plain")),
        ("Pippi Longstocking", ("unknown_word", "plain"), ("unknown_word", "plain")),
    ],
)
def test_v7_classes(v6, v7, title, v6_classes, v7_classes):
    assert classes(v6, title) == v6_classes
    assert classes(v7, title) == v7_classes


def test_v7_spans_of_the_issues_titles(v7):
    tagged = tag_titles(["Ein Sommer in Hamburg", "Letters to Milena", "The Rome Ferry", "Letters to Berlin"], v7)
    assert [[s.text for s in x] for x in tagged["human"]] == [[], ["Milena"], [], []]
    assert [[s.text for s in x] for x in tagged["city"]] == [["Hamburg"], [], ["Rome"], ["Berlin"]]
    assert tagged["city"][2][0].evidence == "gazetteer:geonames_1000+population_rule+large_city_rule"


def _dev_titles() -> list[str]:
    with LABELLED.open(encoding="utf-8", newline="") as f:
        return [r["title"] for r in csv.DictReader(f, delimiter="\t") if r["split"] in ("dev", "holdout", "dev2")]


def test_lazy_v7_equals_eager_v7(v7, eager7):
    """Skipping NER changes no span: the dev titles, re-cased, and every title of one or two
    words of a pool around the v7 rules (the addressee's "to", foreign articles, capitals)."""
    pool = ["Letters", "to", "Milena", "Ein", "Sommer", "in", "Hamburg", "Rome", "Paris", "Orlando", "Venice", "of"]
    titles = _dev_titles()
    titles += [t.upper() for t in titles[:150]] + [t.lower() for t in titles[150:300]]
    titles += sorted({" ".join(w) for n in (1, 2, 3) for w in itertools.product(pool, repeat=n)})
    lazy, full = tag_titles(titles, v7), tag_titles(titles, eager7)
    for kind in ("human", "city"):
        differ = [
            t
            for t, a, b in zip(titles, lazy[kind], full[kind])
            if [(s.start, s.end) for s in a] != [(s.start, s.end) for s in b]
        ]
        assert differ == [], kind
