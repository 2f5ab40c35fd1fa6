"""The cluster bootstrap of kitab/release/intervals.py as pure functions: the interval holds
the point value, a constant metric has a zero-width interval, the order of authors (and of
rows) does not matter, the seed fixes the result, resampling is by author, and a paired
difference of a model with itself is exactly zero. Also ``--limit``'s sample across authors."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.release.intervals import clusters, compare, differs, interval, paired_difference
from kitab.release.prompts import sample_across_authors

B = 200  # enough resamples for the properties; the default (1000) is for the published numbers

rows_strategy = st.lists(
    st.tuples(
        st.integers(0, 12),  # author
        st.one_of(st.none(), st.floats(0, 1, allow_nan=False)),  # a rate (None: undefined)
        st.booleans(),  # all correct
    ),
    min_size=1,
    max_size=80,
)


def as_rows(raw) -> list[dict]:
    return [{"author_qid": f"Q{a}", "rate": r, "all_correct": c} for a, r, c in raw]


@settings(max_examples=60, deadline=None)
@given(rows_strategy, st.integers(0, 2**32 - 1))
def test_the_interval_holds_the_point_value_and_stays_in_the_metric_range(raw, seed):
    rows = as_rows(raw)
    for column in ("rate", "all_correct"):
        ci = interval(clusters(rows, column), b=B, seed=seed)
        defined = [float(r[column]) for r in rows if r[column] is not None]
        if not defined:
            assert ci == {"value": None, "low": None, "high": None}
            continue
        assert abs(ci["value"] - sum(defined) / len(defined)) < 1e-9
        assert min(defined) - 1e-9 <= ci["low"] <= ci["value"] <= ci["high"] <= max(defined) + 1e-9


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=60), st.sampled_from([0.0, 1.0, 0.25, 0.7]))
def test_a_constant_metric_has_the_interval_c_c(authors, c):
    rows = [{"author_qid": a, "rate": c} for a in authors]
    ci = interval(clusters(rows, "rate"), b=B)
    assert ci["low"] == ci["value"] == ci["high"] or (abs(ci["low"] - c) < 1e-12 and abs(ci["high"] - c) < 1e-12)
    if c in (0.0, 1.0):  # sums of 0s and 1s are exact: the perfect model's interval is [1, 1] exactly
        assert (ci["low"], ci["high"]) == (c, c)


@settings(max_examples=40, deadline=None)
@given(rows_strategy, st.randoms(use_true_random=False))
def test_the_interval_does_not_depend_on_the_order_of_rows_or_authors(raw, rnd):
    rows = as_rows(raw)
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    for column in ("rate", "all_correct"):
        assert interval(clusters(rows, column), b=B, seed=3) == interval(clusters(shuffled, column), b=B, seed=3)


def test_the_seed_fixes_the_interval_and_another_seed_moves_it():
    rng = random.Random(1)
    rows = [{"author_qid": f"Q{i % 25}", "all_correct": rng.random() < 0.4} for i in range(500)]
    cells = clusters(rows, "all_correct")
    assert interval(cells, seed=7) == interval(cells, seed=7)
    assert interval(cells, seed=7) != interval(cells, seed=8)


def test_authors_are_resampled_whole_so_correlated_queries_widen_the_interval():
    """The same 600 outcomes, once spread over 300 authors and once with each author's queries all
    alike (20 authors, all right or all wrong): clustering makes the interval wider, as it
    should (an i.i.d. bootstrap over queries would give both the same width)."""
    spread = [{"author_qid": i, "all_correct": i % 2 == 0} for i in range(600)]
    clustered = [{"author_qid": i // 30, "all_correct": (i // 30) % 2 == 0} for i in range(600)]
    a, b = interval(clusters(spread, "all_correct")), interval(clusters(clustered, "all_correct"))
    assert a["value"] == b["value"] == 0.5
    assert (b["high"] - b["low"]) > 3 * (a["high"] - a["low"])


@settings(max_examples=40, deadline=None)
@given(rows_strategy)
def test_a_model_compared_with_itself_differs_by_exactly_zero(raw):
    rows = as_rows(raw)
    d = paired_difference(clusters(rows, "all_correct"), clusters(rows, "all_correct"), b=B)
    assert (d["value"], d["low"], d["high"]) == (0.0, 0.0, 0.0) and not differs(d)


def test_a_paired_difference_of_five_points_is_told_apart_and_noise_is_not():
    """Two synthetic models on 1000 queries of 50 authors: B is A with another 5% of queries
    wrong (spread over authors); A and a relabelled copy of A are the same model."""
    rng = random.Random(5)
    a = [{"author_qid": f"Q{i % 50}", "query": i, "all_correct": rng.random() < 0.6} for i in range(1000)]
    right = [i for i, r in enumerate(a) if r["all_correct"]]
    worse = set(rng.sample(right, 50))
    b = [{**r, "all_correct": r["all_correct"] and i not in worse} for i, r in enumerate(a)]
    d = compare(a, b, metrics=["all_correct"])["all_correct"]
    assert abs(d["value"] - 0.05) < 1e-9 and differs(d) and d["low"] > 0
    assert not differs(compare(a, [dict(r) for r in a], metrics=["all_correct"])["all_correct"])
    # unpaired, the same 0.05 hides in the two models' spread (why the comparison is paired)
    ia, ib = interval(clusters(a, "all_correct")), interval(clusters(b, "all_correct"))
    assert ia["low"] < ib["high"]


def test_a_model_missing_an_author_counts_nothing_there():
    a = {"Q1": (1.0, 1), "Q2": (0.0, 1)}
    b = {"Q1": (1.0, 1)}
    d = paired_difference(a, b, b=B)
    assert d["a"] == 0.5 and d["b"] == 1.0 and d["value"] == -0.5


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 15)), min_size=1, max_size=120, unique_by=lambda t: t[0]),
    st.integers(1, 130),
    st.integers(0, 5),
)
def test_limit_samples_across_authors_before_taking_a_second_query_of_any(pairs, limit, seed):
    rows = [(f"q{q}", f"author {a}") for q, a in pairs]
    chosen = sample_across_authors(rows, limit, seed)
    assert chosen <= {q for q, _ in rows} and len(chosen) == min(limit, len(rows))
    assert chosen == sample_across_authors(list(reversed(rows)), limit, seed)  # seeded, order-free
    per_author: dict[str, int] = {}
    for q, a in rows:
        per_author[a] = per_author.get(a, 0) + (q in chosen)
    authors = {a for _, a in rows}
    available = {a: sum(1 for _, x in rows if x == a) for a in authors}
    # round robin: no author has two more than another that still had queries left
    for a in authors:
        for x in authors:
            if per_author[x] < available[x]:
                assert per_author[a] <= per_author[x] + 1
