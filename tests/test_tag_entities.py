"""The title_entities stage and the `kitab tag` probe: rows, dedup, schema, determinism."""

from __future__ import annotations

import json

import pytest

from kitab.core.schemas import to_arrow
from tasks.tag_entities import PROBE_BATCH, TABLE, default_taggers, tag_entities, tag_probe, tag_titles
from tasks.taggers import Span


class FakeTagger:
    """Tags every capitalised word "Zed" as `kind`, and counts what it was asked."""

    def __init__(self, name: str, kind: str) -> None:
        self.name, self.version, self.kind = name, f"{name}_test", kind
        self.seen: list[str] = []

    def tag_many(self, titles: list[str]) -> list[list[Span]]:
        self.seen += titles
        out = []
        for t in titles:
            at = t.find("Zed")
            out.append([Span(at, at + 3, self.kind, "Zed", "fake")] if at >= 0 else [])
        return out


BOOKS = [
    {"book_id": "b1", "author_qid": "Q1", "canonical_title": "Zed and Me", "variant_titles": ["Zed and Me: A Novel"]},
    {"book_id": "b2", "author_qid": "Q1", "canonical_title": "Nobody", "variant_titles": []},
    {"book_id": "b3", "author_qid": "Q2", "canonical_title": "", "variant_titles": []},
]
VARIANTS = [
    {"variant_id": "v1", "book_id": "b1", "author_qid": "Q1", "title": "Zed and Me: A Novel"},
    {"variant_id": "v2", "book_id": "b2", "author_qid": "Q1", "title": "Zed and Me"},
]


def test_rows_for_books_and_variants_with_stable_ids():
    fake = FakeTagger("human", "human")
    result = tag_entities(BOOKS, VARIANTS, taggers=[fake])
    rows = result.tables[TABLE]
    assert [(r["target_kind"], r["target_id"], r["book_id"]) for r in rows] == [
        ("book", "b1", "b1"),
        ("variant", "v1", "b1"),
        ("variant", "v2", "b2"),
    ]
    assert rows[0] == {
        "entity_id": "book:b1:human:0",
        "target_kind": "book",
        "target_id": "b1",
        "book_id": "b1",
        "author_qid": "Q1",
        "kind": "human",
        "text": "Zed",
        "start": 0,
        "end": 3,
        "tagger": "human",
        "version": "human_test",
        "evidence": "fake",
    }
    assert len({r["entity_id"] for r in rows}) == len(rows)
    to_arrow(TABLE, rows)  # matches schemas/title_entities.json


def test_each_distinct_title_is_tagged_once_and_stats_count():
    fake = FakeTagger("human", "human")
    result = tag_entities(BOOKS, VARIANTS, taggers=[fake])
    assert sorted(fake.seen) == ["Nobody", "Zed and Me", "Zed and Me: A Novel"]
    stats = result.stats
    assert (stats["targets"], stats["titles_tagged"], stats["empty_titles"]) == (5, 3, 1)
    assert stats["spans_per_kind"] == {"human": 3}
    assert stats["targets_with_kind"] == {"human": 3}
    assert stats["taggers"] == {"human": "human_test"}


def test_rows_do_not_depend_on_input_order():
    a = tag_entities(BOOKS, VARIANTS, taggers=[FakeTagger("human", "human")]).tables[TABLE]
    b = tag_entities(BOOKS[::-1], VARIANTS[::-1], taggers=[FakeTagger("human", "human")]).tables[TABLE]
    assert a == b


def test_probe_streams_one_json_line_per_title_in_order():
    titles = (f"Zed {n}\n" if n % 2 else f"title {n}\n" for n in range(PROBE_BATCH + 3))
    lines = list(tag_probe(titles, taggers=[FakeTagger("human", "human"), FakeTagger("city", "city")]))
    assert len(lines) == PROBE_BATCH + 3
    first, second = json.loads(lines[0]), json.loads(lines[1])
    # a non-pipeline tagger has no doubt: a title without a span is a plain (decided) "no"; its
    # spans' evidence is no class the states know, so a "yes" is unsure (tasks/entity_states.py)
    assert first == {"title": "title 0", "human_names": [], "city_names": [], "human": "no", "city": "no"}
    assert second["human_names"] == ["Zed"] and second["city_names"] == ["Zed"]
    assert {second["human"], second["city"]} <= {"yes", "unsure"}


@pytest.fixture(scope="module")
def real_taggers():
    return default_taggers()


def test_real_taggers_share_one_parse(real_taggers, monkeypatch):
    human, city = real_taggers
    calls = []
    original = human.parse

    def counting_parse(titles):
        calls.append(len(titles))
        return original(titles)

    monkeypatch.setattr(human, "parse", counting_parse)
    monkeypatch.setattr(city, "parse", counting_parse)
    tagged = tag_titles(["Death in Venice", "Gerald's Game"], real_taggers)
    assert calls == [2]
    assert [[s.text for s in spans] for spans in tagged["human"]] == [[], ["Gerald"]]
    assert [[s.text for s in spans] for spans in tagged["city"]] == [["Venice"], []]


def test_real_stage_end_to_end(real_taggers):
    books = [{"book_id": "b1", "author_qid": "Q1", "canonical_title": "Reading Lolita in Tehran", "variant_titles": []}]
    variants = [{"variant_id": "v1", "book_id": "b1", "author_qid": "Q1", "title": "READING LOLITA IN TEHRAN"}]
    rows = tag_entities(books, variants, taggers=real_taggers).tables[TABLE]
    assert [(r["target_id"], r["kind"], r["text"], r["version"]) for r in rows] == [
        ("b1", "human", "Lolita", "human_v7"),
        ("b1", "city", "Tehran", "city_v7"),
        ("v1", "human", "LOLITA", "human_v7"),
        ("v1", "city", "TEHRAN", "city_v7"),
    ]
    to_arrow(TABLE, rows)


def test_real_probe(real_taggers):
    [line] = tag_probe(["Down and Out in Paris and London"], taggers=real_taggers)
    assert json.loads(line) == {
        "title": "Down and Out in Paris and London",
        "human_names": [],
        "city_names": ["Paris", "London"],
        "city": "yes",  # "in": the context class decides alone
        # Paris and London are listed given names too, but the city tagger found them as cities:
        # since human_v7 no doubt, so "no" (human_v6: unsure)
        "human": "no",
    }


def test_titles_over_the_bound_are_not_parsed():
    """A 1.1 MB title made spaCy fail (E088: over its 1,000,000 characters); any title over
    MAX_TITLE_CHARS is junk (clean_books rejects it) and gets no spans, its neighbours theirs."""
    from tasks.text import MAX_TITLE_CHARS

    titles = ["Death in Venice " * 70_000, "x" * MAX_TITLE_CHARS + " Death in Venice", "Death in Venice"]
    tagged = tag_titles(titles, default_taggers())
    assert tagged["city"][0] == [] and tagged["city"][1] == [] and [s.text for s in tagged["city"][2]] == ["Venice"]
    assert tagged["human"][0] == [] and tagged["human"][1] == []
