"""The labelled titles behind benchmarks/entity_quality.py, and its title-level gate."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "entity_quality.py"


@pytest.fixture(scope="module")
def quality():
    spec = importlib.util.spec_from_file_location("entity_quality", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_labelled_set_is_large_well_formed_and_has_the_hard_cases(quality):
    items = quality.load()
    titles = [x.title for x in items]
    assert len(items) >= 250 and len(set(titles)) == len(titles)
    assert {x.split for x in items} == {"dev", "holdout", "holdout2", "dev2"}
    assert sum(x.split == "holdout2" for x in items) >= 300
    for x in items:
        for spans in x.gold.values():
            assert all(s in x.title for s in spans), x.title
    hard = {
        "Johnston McCulley's Zorro",
        "Jazz",
        "Paradise",
        "Home",
        "Nice Work",
        "Reading Lolita in Tehran",
        "Florence Nightingale",
        "Lincoln in the Bardo",
        "A Tale of Two Cities",
        "Texas",
    }
    assert hard <= set(titles)


def test_title_level_precision_and_recall_reach_the_bar(quality):
    # issue 12: precision >= 0.95 at recall >= 0.90 on dev + holdout, both kinds (holdout2 is
    # measured, not gated: a gate would make it a set to tune on)
    args = ["--split", "dev,holdout", "--errors", "0"]
    assert quality.main([*args, "--min-precision", "0.95", "--min-recall", "0.9"]) == 0
    assert quality.main([*args, "--min-precision", "0.99"]) == 1  # the gate can fail


def test_blind_set_is_large_well_formed_and_new(quality):
    # issue 20: >= 500 titles, labelled before any v4 change, none of them in the other sets;
    # only its structure is checked here (the benchmark reads it as totals only)
    blind = quality.load(quality.BLIND)
    titles = [x.title.casefold() for x in blind]
    assert len(blind) >= 500 and len(set(titles)) == len(titles) and {x.split for x in blind} == {"blind"}
    assert not set(titles) & {x.title.casefold() for x in quality.load()}
    for x in blind:
        for spans in x.gold.values():
            assert all(s in x.title for s in spans), x.title


def test_class_counts_and_the_share_of_true_titles_unsure(quality):
    """--classes: a class's wrong / titles (a span where gold has none, or none where it has one);
    the state report's gold_unsure: the unsure share of the titles that have the kind."""
    L = quality.Labelled
    items = [
        L("Tokyo Vice", "a", {"human": [], "city": ["Tokyo"]}, "dev"),
        L("Milena", "a", {"human": ["Milena"], "city": []}, "dev"),
        L("Venice", "a", {"human": [], "city": ["Venice"]}, "dev"),
    ]
    spans = [["Tokyo"], ["Milena"], []]
    evidence = [["gazetteer:geonames_1000+population_rule+large_city_rule"], ["gazetteer:geonames_1000+ner"], []]
    counts = quality.class_counts("city", items, spans, evidence, [None, None, None])
    assert counts == {"population_large": (0, 1), "ner": (1, 1), "plain": (1, 1)}
    states = {"human": ["no", "yes", "no"], "city": ["yes", "unsure", "unsure"]}
    report = quality.state_report(items, {"human": [[], ["Milena"], []], "city": spans}, states)
    assert report["city"]["gold_unsure"] == pytest.approx(1 / 2) and report["city"]["unsure"] == pytest.approx(2 / 3)
    assert report["human"]["gold_unsure"] == 0.0
