"""Titles read from small models' prose (issue 40): only quoted or delimited titles, never a
whole sentence; a sentence naming no title is an unread line; and a sentence is never
credited a short title it happens to contain ("The book is a love story …" is not "Love").

tests/data/small_model_answers.jsonl: one JSON line per reply, ``{"id", "source", "response",
"expected_titles", "no_books", "unread", "note"}``; ``source`` is "written" (modelled on what
SmolLM2-135M-Instruct replies) or the model that wrote it (its 39 real query replies, labelled by
hand; ``unread`` null: not labelled). Add a reply as one more line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kitab.release.evaluation.metrics import QueryTruth, score_answer
from kitab.release.evaluation.parse import MAX_LINE_CHARS, is_sentence, item_titles, read_answer
from tasks.constraints import Book, parse_criteria

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "small_model_answers.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]


def test_the_corpus_is_well_formed():
    assert len(CORPUS) >= 25 and len({c["id"] for c in CORPUS}) == len(CORPUS)
    for case in CORPUS:
        assert {"id", "source", "response", "expected_titles", "no_books", "unread"} <= set(case), case["id"]
        assert not (case["no_books"] and case["expected_titles"]), case["id"]


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_a_small_model_reply_reads_to_its_titles(case):
    parsed = read_answer(case["response"])
    unread = parsed.unread if case["unread"] is None else case["unread"]  # None: a real reply, its lines not labelled
    assert (parsed.titles, parsed.no_books, parsed.unread) == (
        case["expected_titles"],
        case["no_books"],
        unread,
    ), case["note"]


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("The book is a love story about a young woman.", True),
        ("Beloved is great.", True),
        ("It is a novel about love, loss and friendship.", True),
        ("Their Eyes Were Watching God", False),
        ("And Then There Were None", False),
        ("The Lord of the Rings", False),
        ("Blood Meridian, or the Evening Redness in the West", False),
        ("Words Are My Matter: Writings About Life and Books", False),
        ("the god of small things", False),  # all lower case: no verb, no full stop, a title
        ("the book is a love story", True),
        ("toni morrison wrote many books", True),
    ],
)
def test_a_sentence_is_told_from_a_title(text, sentence):
    assert is_sentence(text) is sentence


def test_item_titles_reads_quoted_and_delimited_titles_only():
    assert item_titles('The book "The Nightingale" by Kristin Hannah is a must-read.') == ["The Nightingale"]
    assert item_titles("The Great Gatsby by F. Scott Fitzgerald is a classic.") == ["The Great Gatsby"]
    assert item_titles("Beloved (1987) is set near Cincinnati.") == ["Beloved"]
    assert item_titles("The book is a love story about a young woman.") == []
    assert item_titles("Stand by Me") == ["Stand by Me"]  # "by" one capitalised word: still the title's
    assert item_titles("Kristin Hannah's 'The Four Winds' is set in Texas.") == ["The Four Winds"]


LOVE = QueryTruth(
    "q",
    tuple(parse_criteria("Criterion 1: Book title starts with the letter l.")),
    (Book("b1", ("Love",), 2003), Book("b2", ("Beloved",), 1987), Book("b3", ("Clock",), 1990)),
    ("Love",),
)


def test_a_sentence_is_never_credited_a_short_title_it_holds():
    sentence = "The book is a love story about a young woman who falls in love with a man"
    scored = score_answer(LOVE, [sentence])
    assert scored.match_kinds == ["none"] and scored.completeness == 0.0
    # a subtitle after the title, or a title at most twice its length, still names the book
    assert score_answer(LOVE, ["Love: A Novel"]).match_kinds == ["subset"]
    assert score_answer(LOVE, ["A Love Story"]).matched_titles == ["Love"]
    assert score_answer(LOVE, ["Love"]).all_correct


def test_reading_quotes_stays_linear_on_a_hostile_line():
    # a line of unmatched openers and apostrophes: each search for a closing mark is bounded
    line = ("'a \"b *c _d «e 's " * (MAX_LINE_CHARS // 18))[:MAX_LINE_CHARS]
    started = time.perf_counter()
    read_answer("\n".join(f"{i}. {line}" for i in range(1, 41)))
    assert time.perf_counter() - started < 5.0
