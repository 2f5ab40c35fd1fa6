"""Stated errors (issue 37): a decided book's error from the evidence that agrees with it, each
query's key error from its deciding books, the release's key quality with its interval and
ceiling, and the bound that leaves out entity queries over it."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core.proportions import wilson
from tasks.entities.calibration import SMALL, calibrated_counts, class_rate, rate
from tasks.entity_states import SOURCE_ERRORS, book_error, deciding_index, key_quality, query_key_error
from tasks.generate_constraints import generate_constraints
from tasks.sample_queries import SamplingRates, sample_queries
from tests.test_sample_queries import bibliography

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "entity_calibration.py"


def test_an_agreeing_record_never_raises_a_titles_error():
    # issue 37's bug: a plain title (~0.4% wrong) whose record agrees was given the record's 6%
    plain = book_error("city", "no", "title:plain")
    assert book_error("city", "no", "title:plain|record:no") == plain
    assert plain[0] < rate(SOURCE_ERRORS["record"])[0]
    # a record that decides against the title: the record's error, the title lends nothing
    assert book_error("city", "yes", "title:plain|record:yes") == rate(SOURCE_ERRORS["record"])
    # a reviewer's label is the truth; unsure is in no key
    assert book_error("human", "no", "title:name_list|review:no") == (0.0, 0.0, 0.0)
    assert book_error("human", "unsure", "title:proper_title") == (0.0, 0.0, 0.0)
    # the model has no measurement here: it earns no credit of its own
    assert book_error("human", "yes", "title:plain|model:yes") == (1.0, 1.0, 1.0)


def test_a_class_rate_is_calibrated_on_held_out_counts_with_the_upper_end_when_small():
    version = "city_v6"
    counts = calibrated_counts(version, "plain")
    assert counts is not None and counts[1] >= SMALL
    assert class_rate("city", version, "plain") == rate(counts)
    assert rate(counts)[0] == (counts[0] + 1) / (counts[1] + 2)
    low, high = wilson(3, 10)
    assert rate((3, 10)) == (high, low, high)  # small: the upper end is stated
    # a class the held-out sets never saw: the kind's own counts, at their upper end
    assert class_rate("city", version, "plain", fitted={}) == rate((5, 1629), small=True)
    assert class_rate("city", "nonexistent_v0", "no_such_class") == (1.0, 1.0, 1.0)


def _states(errors: dict[str, float | None], author: str = "Q1", kind: str = "human") -> list[dict]:
    return [
        {
            "book_id": b,
            "author_qid": author,
            "kind": kind,
            "state": "unsure" if e is None else "yes",
            "evidence": "",
            "error": e,
            "error_low": None if e is None else e / 2,
            "error_high": None if e is None else min(1.0, 2 * e),
        }
        for b, e in errors.items()
    ]


def test_a_querys_key_error_is_one_minus_the_product_over_its_decided_deciding_books():
    books = deciding_index(_states({"b1": 0.1, "b2": 0.2, "b3": None, "b4": 0.05}))
    entity = {"constraint_id": "c1", "entity_kind": "human", "mapped_book_ids": ["b1"]}
    (p, low, high), per = query_key_error("Q1", [entity], books)
    assert math.isclose(p, 1 - 0.9 * 0.8 * 0.95)
    assert low < p < high
    assert per == [(entity, 1, 4)]  # one unsure of four deciding books
    # two constraints: only the books meeting the other criterion decide
    other = {"constraint_id": "c2", "entity_kind": None, "mapped_book_ids": ["b2", "b3"]}
    (p, _, _), per = query_key_error("Q1", [entity, other], books)
    assert math.isclose(p, 0.2)
    assert per == [(entity, 1, 2)]


@settings(max_examples=60)
@given(st.lists(st.one_of(st.none(), st.floats(0.0, 0.5)), min_size=1, max_size=12), st.data())
def test_a_book_more_or_labelled_moves_the_key_error_the_right_way(errors, data):
    named = {f"b{i}": e for i, e in enumerate(errors)}
    entity = {"constraint_id": "c", "entity_kind": "human", "mapped_book_ids": []}
    (p, low, high), _ = query_key_error("Q1", [entity], deciding_index(_states(named)))
    assert 0.0 <= low <= p <= high <= 1.0
    # a reviewer labelling one book (its error 0) never raises the key's error
    pick = data.draw(st.sampled_from(sorted(named)))
    labelled = {**named, pick: 0.0}
    (q, _, _), _ = query_key_error("Q1", [entity], deciding_index(_states(labelled)))
    assert q <= p + 1e-12
    # one more decided book never lowers it
    (r, _, _), _ = query_key_error("Q1", [entity], deciding_index(_states({**named, "new": 0.01})))
    assert r >= p - 1e-12


def _corpus(seed: int = 5):
    authors, books, flags = bibliography(30, seed)
    rng = random.Random(seed)
    states = []
    for b in books:
        for kind in ("human", "city"):
            e = rng.choice([0.002, 0.01, 0.05, 0.2])
            states.append(
                {
                    "book_id": b["book_id"],
                    "author_qid": b["author_qid"],
                    "kind": kind,
                    "state": "yes" if flags[b["book_id"]][kind] else "no",
                    "evidence": "",
                    "error": e,
                    "error_low": e / 2,
                    "error_high": 2 * e,
                }
            )
    constraints = generate_constraints(authors, books, flags).tables["constraints"]
    return authors, books, constraints, states


def test_the_bound_drops_only_entity_queries_over_it_each_as_a_reject_and_moves_no_other_draw():
    authors, books, constraints, states = _corpus()
    free = sample_queries(constraints, authors, books, seed=3, rates=SamplingRates(max_key_error=None))
    assert free.rejects == []
    bounded = sample_queries(
        constraints, authors, books, seed=3, rates=SamplingRates(max_key_error=0.10), states=states
    )
    by_id = {c["constraint_id"]: c for c in constraints}
    books_index = deciding_index(states)
    kept = {tuple(q["constraint_ids"]) for q in bounded.tables["queries"]}
    dropped = {tuple(r["record_id"].split("+")) for r in bounded.rejects}
    assert dropped and not kept & dropped
    for r in bounded.rejects:
        evidence = json.loads(r["evidence"])
        assert r["reason"] == "key_error_over_bound" and evidence["key_error"] > 0.10
        assert evidence["slices"]  # which entity slice it cost
    for ids in kept:
        members = [by_id[c] for c in ids]
        if any(m["entity_kind"] for m in members):
            (p, _, _), _ = query_key_error(members[0]["author_qid"], members, books_index)
            assert p <= 0.10 + 1e-9
    # the satisfiable queries the bound keeps are exactly the unbounded draw's minus the drops
    # (hash draws: the bound moves no other query; only the unsatisfiable top-ups may differ)
    satisfiable = lambda result: {  # noqa: E731
        tuple(q["constraint_ids"]) for q in result.tables["queries"] if q["satisfiable"]
    }
    assert satisfiable(bounded) == satisfiable(free) - dropped
    # a bound of 1 keeps everything
    loose = sample_queries(constraints, authors, books, seed=3, rates=SamplingRates(max_key_error=1.0), states=states)
    assert loose.rejects == [] and loose.tables["queries"] == free.tables["queries"]


def test_key_quality_states_an_interval_and_the_ceiling_of_a_perfect_model():
    authors, books, constraints, states = _corpus(seed=8)
    result = sample_queries(constraints, authors, books, seed=1, rates=SamplingRates(max_key_error=None))
    quality = key_quality(result.tables["queries"], constraints, states)
    assert {"human-name", "no-human-name"} <= set(quality)
    for q in quality.values():
        assert q["wrong_key_low"] <= q["wrong_key"] <= q["wrong_key_high"]
        assert math.isclose(q["ceiling"], 1 - q["wrong_key"], abs_tol=1e-4)
        assert q["ceiling_low"] <= q["ceiling"] <= q["ceiling_high"]


def test_the_calibration_file_is_what_the_taggers_give_on_the_held_out_titles_today():
    """calibration.json must be re-fitted whenever a tagger's rules or the held-out sets change:
    benchmarks/entity_calibration.py --verify compares it with a fit made now."""
    done = subprocess.run([sys.executable, str(BENCH), "--verify"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_stated_range_is_what_a_full_labelling_would_measure():
    from tasks.entity_states import wrong_count_quantile, wrong_share_range

    # exact Poisson-binomial: 4 queries at 8% each: P(0 wrong) = 0.92^4 = 0.716
    assert wrong_count_quantile([0.08] * 4, 0.025) == 0
    assert wrong_count_quantile([0.08] * 4, 0.975) == 2  # P(<= 1) = 0.965 < 0.975
    assert wrong_count_quantile([0.0] * 10, 0.975) == 0 and wrong_count_quantile([1.0] * 10, 0.025) == 10
    # large: the normal approximation agrees with the exact count within one
    ps = [0.05 + 0.1 * (i % 7) / 7 for i in range(700)]
    exact_like = wrong_count_quantile(ps[:600], 0.975)
    assert abs(wrong_count_quantile(ps[:600] + [0.0] * 100, 0.975) - exact_like) <= 1
    low, high = wrong_share_range([(0.08, 0.05, 0.12)] * 4)
    assert low == 0.0 and high == 0.5  # 2 of 4 at 12% each is past the 97.5% point


def _key_error_per_book(author_qid, members, books):
    """query_key_error's reference form: every deciding book tested against every other criterion."""
    ok, per = [1.0, 1.0, 1.0], []
    for c in members:
        if not c.get("entity_kind"):
            continue
        others = [set(o["mapped_book_ids"]) for o in members if o is not c]
        deciding = [b for b in books.get((author_qid, c["entity_kind"]), []) if all(b[0] in o for o in others)]
        for _, state, err in deciding:
            if state != "unsure":
                for i in range(3):
                    ok[i] *= 1.0 - err[i]
        per.append((c, sum(1 for b in deciding if b[1] == "unsure"), len(deciding)))
    return (1.0 - ok[0], 1.0 - ok[1], 1.0 - ok[2]), per


BOOK_IDS = [f"b{i}" for i in range(8)]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(BOOK_IDS), st.one_of(st.none(), st.floats(0.0, 0.5)), max_size=8),
    st.lists(
        st.tuples(st.sampled_from([None, "human", "city"]), st.lists(st.sampled_from(BOOK_IDS), unique=True)),
        min_size=1,
        max_size=3,
    ),
)
def test_query_key_error_by_set_intersection_agrees_with_the_per_book_form(errors, shape):
    books = deciding_index(_states(errors, kind="human") + _states(errors, kind="city"))
    members = [
        {"constraint_id": f"c{i}", "author_qid": "Q1", "entity_kind": kind, "mapped_book_ids": ids}
        for i, (kind, ids) in enumerate(shape)
    ]
    assert query_key_error("Q1", members, books) == _key_error_per_book("Q1", members, books)
