"""Entity kinds are generic: a third kind (country names in titles) is a tagger registered in
tasks/taggers/registry.py plus one EntitySpec constraint type; nothing else changes. This
test adds a throwaway one, a tagger over a five-word list, and takes it end to end: tagging,
flags, every candidate constraint with its mapped books and κ, query sampling, and the
``kitab constraints``-style probe. Then it removes both registrations again."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from tasks.constraints import EntitySpec, constraints_probe, entity_kinds, parse_criterion, register
from tasks.constraints import registry as constraint_registry
from tasks.generate_constraints import entity_flags, generate_constraints, tagged_kinds
from tasks.sample_queries import SamplingRates
from tasks.tag_entities import tag_entities
from tasks.taggers import Span
from tasks.taggers import registry as tagger_registry

COUNTRIES = ("France", "Japan", "Peru", "Kenya", "Norway")


class CountryTagger:
    """The throwaway tagger: whole words from a five-word list."""

    name = "country"
    version = "country_v1"

    def __init__(self, **options) -> None:
        self.pattern = re.compile(r"\b(" + "|".join(COUNTRIES) + r")\b")

    def tag_many(self, titles: list[str]) -> list[list[Span]]:
        return [
            [Span(m.start(), m.end(), "country", m.group(1), "country_list") for m in self.pattern.finditer(t)]
            for t in titles
        ]

    def fingerprint(self) -> dict:
        return {"list": ",".join(COUNTRIES)}


@dataclass(frozen=True)
class CountryName(EntitySpec):
    TYPE = "country_name"
    KITAB_TYPE = "country-name"
    ORDER = 70
    ENTITY = "country name"
    KIND = "country"


@pytest.fixture
def country_kind():
    """Both registrations for the test's duration only."""
    tagger_registry.register_tagger(CountryTagger)
    register(CountryName)
    try:
        yield
    finally:
        del tagger_registry.TAGGERS[CountryTagger.version]
        del constraint_registry._TYPES[CountryName.TYPE]


BOOKS = [
    ("b1", "A Year in France"),
    ("b2", "Norway Rising"),
    ("b3", "The Quiet Garden"),
    ("b4", "Letters"),
    ("b5", "The Last Train"),
]


def test_a_country_kind_generates_its_constraints_end_to_end(country_kind, monkeypatch):
    assert "country" in entity_kinds()
    [tagger] = tagger_registry.make_taggers(("country_v1",))  # the run's selection, passed in
    books = [
        {"book_id": b, "author_qid": "Q1", "canonical_title": t, "first_year": 1990 + n, "variant_titles": [t]}
        for n, (b, t) in enumerate(BOOKS)
    ]

    tagged = tag_entities(books, [], taggers=[tagger]).tables["title_entities"]
    assert {(r["book_id"], r["text"], r["version"]) for r in tagged} == {
        ("b1", "France", "country_v1"),
        ("b2", "Norway", "country_v1"),
    }
    kinds = tagged_kinds(("country_v1",))
    flags = entity_flags(books, tagged, kinds)
    assert flags["b1"]["country"] is True and flags["b3"]["country"] is False

    rows = generate_constraints([{"qid": "Q1"}], books, flags, kinds).tables["constraints"]
    country = {r["text"]: r for r in rows if r["constraint_type"] == "country_name"}
    assert set(country) == {
        "Book contains a country name in its title.",
        "Book doesn't contain a country name in its title.",
    }
    present = country["Book contains a country name in its title."]
    assert (present["mapped_book_ids"], present["n_mapped"], present["n_books"]) == (["b1", "b2"], 2, 5)
    assert present["constrainedness"] == pytest.approx(1 - 2 / 5)
    absent = country["Book doesn't contain a country name in its title."]
    assert sorted(absent["mapped_book_ids"]) == ["b3", "b4", "b5"]
    # the other entity kinds were not tagged this run, so they generate nothing
    assert not any(r["constraint_type"] in ("human_name", "city_name") for r in rows)

    # sampling asks every entity type of every author, as the paper does for human and city
    assert "country_name" in SamplingRates().always_asked
    # the rendered criterion parses back to the spec (what evaluation reads)
    assert parse_criterion(present["text"]) == CountryName(True)


def test_the_probe_takes_any_kind(country_kind):
    tagger = CountryTagger()
    lines = [f"{title} (2001)" for _, title in BOOKS]
    found = {t: bool(s) for t, s in zip((t for _, t in BOOKS), tagger.tag_many([t for _, t in BOOKS]))}
    out = list(constraints_probe(lines, taggers={"country": found.get}))
    assert any('"type": "country_name"' in line for line in out)


def test_without_the_registration_there_is_no_country_kind():
    assert "country" not in entity_kinds()
    assert "country_v1" not in tagger_registry.TAGGERS
    with pytest.raises(Exception, match="unknown tagger country_v1"):
        tagger_registry.selected_versions("country_v1")


def test_the_tag_steps_key_changes_with_the_taggers_versions(country_kind):
    """Another tagger, or the same tagger over another model or list, is another cache key."""
    [one] = tagger_registry.fingerprints([CountryTagger()])
    assert one == {"name": "country", "version": "country_v1", "list": ",".join(COUNTRIES)}
    books = [{"book_id": "b", "author_qid": "Q1", "canonical_title": "Kenya", "first_year": 2000}]
    assert entity_flags(books, [], kinds=["country"]) == {"b": {"country": False}}
