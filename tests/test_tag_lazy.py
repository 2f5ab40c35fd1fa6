"""human_v4 / city_v4 (tasks/taggers/lazy.py): NER only where a cheap pass finds it can matter,
and the same spans as human_v3 / city_v3 everywhere."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tasks.tag_entities import tag_titles, v3_taggers
from tasks.taggers.lazy import ner_matters
from tasks.taggers.pipeline import recase
from tasks.taggers.registry import make_taggers
from tasks.taggers.view import build_view

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"


@pytest.fixture(scope="module")
def both():
    return v3_taggers(), make_taggers(("human_v4", "city_v4"))


def cheap_view(taggers, title: str):
    human = taggers[0]
    return build_view(title, human.nlp.make_doc(recase(title)), human.lex)


@pytest.mark.parametrize(
    ("title", "matters"),
    [
        ("The Silent Patient", False),  # common words only
        ("Schindler's List", False),  # a listed name that is no word: the list decides
        ("Gerald's Game", True),  # ... unless it is also a town's name (Gerald, Missouri): NER may say place
        ("Death in Venice", False),  # a big city after "in"
        ("Pnin", True),  # unknown: an entity PERSON may anchor it
        ("Alias Grace", False),  # a listed name that is also a word, alone: no rule takes it, NER or not
        ("The Collected Stories of Grace Paley", True),  # ... beside a name: an entity PERSON may hold both
        ("Walking with Destiny", True),  # a listed name that is a less frequent word: NER may vouch
        ("East of Eden", True),  # a lone listed name after "of"
        ("Reading Is Fun", True),  # a word that is a city: NER and population decide
        ("The Stones of Florence", False),  # a name that is a big city after "of": the city reading
        ("Florence Takes a Bow", True),  # the same name with nothing else to say city: NER decides
    ],
)
def test_ner_matters(both, title, matters):
    assert ner_matters(cheap_view(both[1], title)) is matters


def test_ner_runs_only_where_it_matters(both):
    _, (human, city) = both
    tagged = tag_titles(["The Silent Patient", "Schindler's List", "Pnin", "Death in Venice"], [human, city])
    assert human.ner_titles == 1
    assert [[s.text for s in x] for x in tagged["human"]] == [[], ["Schindler"], ["Pnin"], []]
    assert [[s.text for s in x] for x in tagged["city"]] == [[], [], [], ["Venice"]]
    # evidence names NER only where it ran: "Schindler" was decided by the lists
    assert "ner" not in tagged["human"][1][0].evidence.split("+")
    assert (human.version, city.version) == ("human_v4", "city_v4")


def test_same_spans_as_v3_on_every_labelled_title(both):
    titles = []
    for name in ("entity_titles.tsv", "entity_blind.tsv"):  # titles only: the labels are not read
        with (DATA / name).open(encoding="utf-8", newline="") as f:
            titles += [r["title"] for r in csv.DictReader(f, delimiter="\t")]
    titles += [t.upper() for t in titles[:300]] + [t.lower() for t in titles[300:600]]  # re-cased
    old, new = (tag_titles(titles, taggers) for taggers in both)
    for kind in ("human", "city"):
        differ = [
            t
            for t, a, b in zip(titles, old[kind], new[kind])
            if [(s.start, s.end, s.text) for s in a] != [(s.start, s.end, s.text) for s in b]
        ]
        assert differ == [], kind
    assert both[1][0].ner_titles < 0.6 * len(titles)  # the point: most titles skip NER
