"""The constrain step's faster forms (issue 41) against the plain forms they stand for: the claim
readers (``Spec.claims_over``) against ``claim_holds``, the pair draws against ``uniform``, and
the pause of the cycle collector around the step's compute."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core.cycles import cycle_collection_paused
from tasks.constraints import Book
from tasks.constraints.registry import spec_types
from tasks.query_pairs import first_draws, uniform
from tests.test_constraint_indexed import titles


@st.composite
def authors_books(draw) -> list[Book]:
    """One author's books as claims read them: every title, a year or none, a state per kind
    (yes / no / unsure) or the kind untagged."""
    books = []
    for b in range(draw(st.integers(0, 7))):
        states = {k: draw(st.sampled_from([True, False, None, "untagged"])) for k in ("city", "human")}
        books.append(
            Book(
                f"b{b}",
                tuple(dict.fromkeys(draw(st.lists(titles, min_size=1, max_size=3)))),
                draw(st.none() | st.integers(1890, 2020)),
                tuple(sorted((k, v) for k, v in states.items() if v != "untagged")),
            )
        )
    return books


@settings(max_examples=300, deadline=None)
@given(authors_books())
def test_claim_readers_agree_with_claim_holds(books):
    """Every registered type's reader gives each of its candidates' claim_holds over the same books
    (the letter types read all 26 letters in one pass over the titles)."""
    tagged = [b for b in books if {"city", "human"} <= {k for k, _ in b.entities}]
    for kind in spec_types():
        for over in (books, tagged):
            read = kind.claims_over(over)
            for spec in kind.candidates(over or books[:1]):
                assert read(spec) == spec.claim_holds(over), (spec, over)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from(["two", "two-unsatisfiable"]), st.text(), st.text())
def test_pair_draws_are_uniform(seed, purpose, first, second):
    of_first = first_draws(seed, purpose)
    assert of_first(first)(second.encode()) == uniform(seed, purpose, first, second)
    assert of_first(second)(first.encode()) == uniform(seed, purpose, second, first)  # the prefix is not spent


def test_the_collector_is_paused_inside_and_restored_after():
    assert gc.isenabled()
    with cycle_collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), cycle_collection_paused():
        raise RuntimeError("the compute failed")
    assert gc.isenabled()
    gc.disable()  # a caller that had it off keeps it off
    try:
        with cycle_collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
