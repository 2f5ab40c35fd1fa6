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
