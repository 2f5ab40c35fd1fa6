"""The site's between-release differences (kitab/release/site/differences.py) and page names
(kitab/release/site/pages.py slug): pure functions, tested on generated data."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.release.site.differences import differences, release_pairs, told_apart, two_sample_difference
from kitab.release.site.pages import slug

# an author's (sum, count) of a 0/1 metric: count queries, sum of them right
cell = st.integers(min_value=0, max_value=6).flatmap(lambda n: st.tuples(st.integers(0, n).map(float), st.just(n)))
cells = st.dictionaries(st.text("QABCDEFGHIJ0123456789", min_size=1, max_size=5), cell, min_size=1, max_size=25)


def ratio(c: dict) -> float | None:
    n = sum(v[1] for v in c.values())
    return None if n == 0 else sum(v[0] for v in c.values()) / n


@settings(max_examples=150, deadline=None)
@given(cells, cells, st.integers(0, 2**16))
def test_the_value_is_older_minus_newer_and_the_interval_holds_it(older, newer, seed):
    d = two_sample_difference(older, newer, b=200, seed=seed)
    if ratio(older) is None or ratio(newer) is None:
        assert d == {"value": None, "low": None, "high": None, "older": None, "newer": None}
        return
    assert d["value"] == ratio(older) - ratio(newer)
    assert (d["older"], d["newer"]) == (ratio(older), ratio(newer))
    assert -1.0 <= d["low"] <= d["value"] <= d["high"] <= 1.0
    # the same scores in another order, the same seed: the same interval
    again = two_sample_difference(
        dict(reversed(list(older.items()))), dict(reversed(list(newer.items()))), b=200, seed=seed
    )
    assert again == d


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), st.integers(1, 5))
def test_releases_where_every_author_scores_the_same_have_a_point_interval(n_old, n_new, per_author):
    older = {f"Q{i}": (float(per_author), per_author) for i in range(n_old)}  # all right
    newer = {f"Q{i}": (0.0, per_author) for i in range(n_new)}  # all wrong
    d = two_sample_difference(older, newer, b=100, seed=1)
    assert (d["value"], d["low"], d["high"]) == (1.0, 1.0, 1.0) and told_apart(d)


def test_the_interval_covers_a_true_difference_of_zero_about_95_times_in_100():
    """Two releases drawn from one population (authors with their own skill, 4-12 queries
    each): the 95% interval of older − newer holds 0 in 287 of 300 draws (95.7%). Broken on
    purpose (the newer release's resampling left out, its point value used): 251 (83.7%), the
    test fails."""
    rng = np.random.default_rng(2026)

    def release(n_authors: int) -> dict:
        out = {}
        for i in range(n_authors):
            skill, n = rng.beta(2, 3), int(rng.integers(4, 13))
            out[f"Q{i}"] = (float(rng.binomial(n, skill)), n)
        return out

    trials = 300
    held = sum(
        (d := two_sample_difference(release(25), release(30), b=400, seed=t))["low"] <= 0 <= d["high"]
        for t in range(trials)
    )
    assert 0.90 <= held / trials <= 0.99, held / trials


def test_pairs_put_each_newer_release_against_each_older():
    assert release_pairs(["a"]) == []
    assert release_pairs(["a", "b", "c"]) == [("b", "c"), ("a", "c"), ("a", "b")]
    scores = [
        ("r1", {"all_correct": {"Q1": (1.0, 1)}, "pair_accuracy": {"Q1": (1.0, 2)}}),
        ("r2", {"all_correct": {"Q2": (0.0, 1)}}),
    ]
    (only,) = differences(scores, b=50)  # a metric one release lacks is not compared
    assert (only["older_release"], only["newer_release"], only["metric"], only["value"]) == (
        "r1",
        "r2",
        "all_correct",
        1.0,
    )
    assert differences(scores[:1]) == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60))
def test_a_page_name_is_safe_and_two_names_get_two_pages(a, b):
    for name in (a, b):
        s = slug(name)
        assert re.fullmatch(r"[a-z0-9_-]{1,40}-[0-9a-f]{10}", s), s
        assert "/" not in s and ".." not in s
    assert (slug(a) == slug(b)) == (a == b)


def test_names_that_read_alike_get_two_pages():
    alike = ["GPT 4", "gpt-4", "GPT/4", "gpt\u202e4", "../gpt-4"]
    assert len({slug(n) for n in alike}) == len(alike)
    assert slug("../../etc/passwd").startswith("etc-passwd-")
