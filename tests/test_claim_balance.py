"""Claim pairs no wording answers (issue 38): each attribute value as often true as false, the
true claim first about half the time over seeds, and the no-knowledge floor
(benchmarks/claim_floor.py) within chance + 0.07 on a second release's claims."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core.warehouse import Warehouse
from tasks.claims import candidate_pairs, select_claims
from tests.releases import dump_release

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import claim_floor  # noqa: E402

INPUTS = ("authors", "books", "title_variants", "book_entities", "constraints")
RELEASES = {"test": ("2026.11.27-s13", 13), "train": ("2026.11.27-s14", 14)}


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, dict]:
    out = {}
    for role, (release, seed) in RELEASES.items():
        root = dump_release(tmp_path_factory.mktemp(role) / "warehouse", authors=30, seed=seed, release=release)
        with Warehouse(root).connect(release=release) as con:
            out[role] = {t: con.sql(f"SELECT * FROM {t}").to_arrow_table().to_pylist() for t in (*INPUTS, "claims")}
    return out


def _value_balance(claims: list[dict], constraints: list[dict]) -> Counter:
    """Per (constraint type, value): times true minus times false over the attribute claims."""
    spec = {c["constraint_id"]: json.loads(c["spec"]) for c in constraints}
    balance: Counter = Counter()
    for c in claims:
        if c["kind"] == "attribute":
            fields = spec[c["constraint_id"]]
            value = json.dumps([fields[k] for k in sorted(fields) if k != "type"])
            balance[c["constraint_type"], value] += 1 if c["label"] else -1
    return balance


def test_every_attribute_value_is_as_often_true_as_false(releases):
    for tables in releases.values():
        balance = _value_balance(tables["claims"], tables["constraints"])
        assert balance and all(abs(n) <= 1 for n in balance.values()), balance
        # entity pairs: "contains" true in half (within the slack), not the negated claim always
        for (ctype, value), n in balance.items():
            if value in ("[true]", "[false]"):
                assert abs(n) <= 1, (ctype, value, n)


def test_year_pairs_put_the_false_year_later_and_earlier_alike(releases):
    claims = releases["test"]["claims"]
    truth = {c["pair_id"]: c["year"] for c in claims if c["kind"] == "year" and c["label"]}
    later = [c["year"] > truth[c["pair_id"]] for c in claims if c["kind"] == "year" and not c["label"]]
    assert len(later) >= 30 and abs(sum(later) - len(later) / 2) <= 1
    # and no title is quoted by both an authorship and a year pair (a year claim names its author)
    quoted = {k: {c["book_id"] for c in claims if c["kind"] == k} for k in ("authorship", "year")}
    assert quoted["authorship"] and not quoted["authorship"] & quoted["year"]


@pytest.fixture(scope="module")
def candidates(releases) -> dict:
    return candidate_pairs(*(releases["test"][t] for t in INPUTS), seed=13)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_over_seeds_the_true_claim_is_first_about_half_the_time_and_values_stay_balanced(candidates, releases, seed):
    n_authors = len({b["author_qid"] for b in releases["test"]["books"]})
    rows, stats = select_claims(candidates, n_authors, seed=seed)
    assert 0.35 <= stats["true_first"] / stats["pairs"] <= 0.65, stats
    balance = _value_balance(rows, releases["test"]["constraints"])
    assert all(abs(n) <= 1 for n in balance.values()), balance


def test_no_knowledge_baselines_stay_within_chance_on_another_releases_claims(releases):
    result = claim_floor.floor(releases["train"]["claims"], releases["test"]["claims"])
    assert result["always-true"]["overall"]["all"]["pair_accuracy"] == 0
    for name in ("wording-rule", "naive-bayes"):  # the coin is chance itself: its noise may pass 0.35
        scores = result[name]
        assert scores["overall"]["all"]["pair_accuracy"] <= claim_floor.TARGET_OVERALL, (name, scores["overall"])
        for kind, s in scores["kind"].items():
            if s["pairs"] >= claim_floor.MIN_PAIRS:
                assert s["pair_accuracy"] <= claim_floor.TARGET_KIND, (name, kind, s)
        assert scores["meets_target"]


def test_the_wording_rule_finds_the_old_give_aways():
    """The floor is a real test: on pairs where the negated claim is always true and "only 1
    word" always false (the old draws), the fixed rule answers every pair."""
    claims = []
    for i in range(40):
        pair = f"attribute:Q{i}:p"
        texts = (
            [("Ann wrote a book whose title doesn't contain a human name.", True),
             ("Ann wrote a book whose title contains a human name.", False)]
            if i % 2 else
            [("Ann wrote a book whose title contains only 3 words.", True),
             ("Ann wrote a book whose title contains only 1 word.", False)]
        )  # fmt: skip
        for position, (text, label) in enumerate(texts, 1):
            claims.append({"query_id": f"{pair}#{position}", "pair_id": pair, "position": position, "kind": "attribute",
                           "constraint_type": "t", "claim": text, "label": label, "author_qid": f"Q{i}",
                           "claim_author_qid": f"Q{i}"})  # fmt: skip
    result = claim_floor.floor([], claims)
    assert result["wording-rule"]["overall"]["all"]["pair_accuracy"] == 1.0
    assert not result["wording-rule"]["meets_target"]
