"""The validity battery's fast forms against their references (issue 41): the claim baselines
streamed batch by batch against the list functions (kitab/release/validity/claims.py), and the
KITAB views' list strings read without compiling them against ``ast.literal_eval``."""

from __future__ import annotations

import ast
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core.refs import duck
from kitab.core.views import create_views
from kitab.release.evaluation.metrics import Matcher
from kitab.release.evaluation.run import read_py_list
from kitab.release.validity.claims import claim_scores, streamed_claim_scores
from tasks.constraints.matching import TitleMatcher

# -- the KITAB views' list strings ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def con():
    with duck() as con:
        create_views(con, {})  # (no release: the views' macros, kitab_py_list among them)
        yield con


QUOTES = st.text(alphabet=st.sampled_from("ab '\"\\\n\r\t\x00é—“”\x0c\u2028"), max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=12), QUOTES), max_size=6))
def test_a_list_string_reads_back_as_literal_eval_reads_it(con, titles):
    (literal,) = con.execute("select kitab_py_list(?::varchar[])", [titles]).fetchone()
    assert read_py_list(literal) == tuple(ast.literal_eval(literal)) == tuple(titles)


@pytest.mark.parametrize(
    "text",
    ["[]", "['a']", "['a', \"b'c\"]", "['', '']", '["a", \'b"c\']', "['a\\'b']", "['a\\nb', 'c']", "['a',  'b']"],
)
def test_hand_written_list_strings_read_as_literal_eval_reads_them(text):
    assert read_py_list(text) == tuple(ast.literal_eval(text))


def test_a_remembered_match_is_the_matchers_answer():
    keys = ["beloved", "jazz", "sula", "the bluest eye", "song of solomon", ""]
    plain, remembered = TitleMatcher(keys), Matcher(keys)
    for title in ["jazz", "bluest eye", "the bluest eyes", "solomon", "love", "", "sula", "jazz"]:
        for sentence in (False, True):
            assert remembered(title, sentence=sentence) == plain(title, sentence=sentence)


# -- the claim baselines, streamed -----------------------------------------------------------------------------------

AUTHORS = [f"Q{i}" for i in range(1, 17)]
NAMES = {q: f"Writer {q}" for q in AUTHORS}
WORDS = ["indeed", "quiet", "river", "Paris", "night"]


@st.composite
def pairs(draw, prefix: str = ""):
    """Claims as the claims table holds them: minimal pairs (sometimes one side only), each
    claim in one of the kinds' wordings; in some releases the true side's wording tells."""
    claims = []
    tell = draw(st.booleans())  # the true side's wording gives it away: the classifier learns it
    for n in range(draw(st.integers(0, 40))):
        author = prefix + draw(st.sampled_from(AUTHORS))
        kind = draw(st.sampled_from(["attribute", "authorship", "year"]))
        pair_id = f"{kind}:{author}:{n}"
        true_first = draw(st.booleans())
        word = draw(st.sampled_from(WORDS))
        year = draw(st.integers(1950, 2000))
        title = draw(st.sampled_from(["Sula", "Jazz", "Night River", "Quiet"]))
        other = prefix + draw(st.sampled_from(AUTHORS))
        sides = draw(st.sampled_from([(1, 2), (1, 2), (1, 2), (1,), (2,)]))
        for position in sides:
            label = (position == 1) == true_first
            name = NAMES[author.removeprefix(prefix)]
            if kind == "attribute":
                text = draw(
                    st.sampled_from(
                        [
                            f"{name} wrote a book whose title starts with the letter {'t' if label else 'q'}.",
                            f"{name} wrote a book whose title contains only {draw(st.integers(1, 6))} words.",
                            f"{name} wrote a book whose title doesn't contain a human name.",
                            f"{name} wrote a book that was first published between {year}-{year + 4}.",
                            f"{name} wrote a {word} book.",
                        ]
                    )
                )
                named = author
            elif kind == "year":
                text = f"“{title}” by {name} was first published in {year + (0 if label else 7)}."
                named = author
            else:
                named = author if label else other
                text = f"{NAMES[named.removeprefix(prefix)]} wrote a book titled “{title}”."
            if tell and label:
                text = text.removesuffix(".") + ", indeed."
            claims.append(
                {
                    "query_id": f"{pair_id}#{position}",
                    "pair_id": pair_id,
                    "position": position,
                    "author_qid": author,
                    "claim_author_qid": named,
                    "kind": kind,
                    "constraint_type": "starts_with" if kind == "attribute" else None,
                    "claim": text,
                    "label": label,
                }
            )
    return claims


def _batches(rows: list[dict], size: int) -> list[list[dict]]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]


@settings(max_examples=200, deadline=None)
@given(pairs(), pairs(prefix="R"), st.booleans(), st.integers(1, 7), st.randoms(use_true_random=False))
def test_streamed_claim_scores_are_the_list_functions(claims, others, trained, size, rng: random.Random):
    """Any order, any batch size, trained on other releases' claims or held out: the same pair
    scores and the same "trained on" as the reference (claim_verdicts, then pair_scores)."""
    train = [{**c, "release": "earlier"} for c in others] if trained else []
    if trained and others:  # some of the other release's claims name a scored author: never training
        train.append({**others[0], "claim_author_qid": AUTHORS[0], "release": "later"})
    expected = claim_scores(claims, train)
    shuffled = rng.sample(claims, len(claims))
    assert streamed_claim_scores(lambda: iter(_batches(shuffled, size)), iter(_batches(train, size))) == expected
