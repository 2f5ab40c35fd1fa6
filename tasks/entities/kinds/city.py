"""city: a title names a city or town used as a place ("Death in Venice"): KITAB's city-name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tasks.book_evidence import (
    NO,
    YES,
    Gazetteer,
    contains,
    fields_of,
    is_city_place,
    place_name,
    unexplained_capitals,
    words,
)
from tasks.entities.registry import EntityKind, EvidenceClass, register_kind


def span_class(detectors: frozenset[str]) -> str:
    if detectors & {"locative_rule", "region_context_rule"}:
        return "context"
    if "alternate_name" in detectors:
        return "alternate_name"
    if "large_city_rule" in detectors:  # city_v7
        return "population_large"
    return "ner" if "ner" in detectors else "population"


def record_rule(
    title: str, variants: Sequence[str], places: Sequence[Mapping], records: Sequence[Mapping], gazetteer: Gazetteer
) -> tuple[str, str] | None:
    """The book's catalogued places (Open Library's subject places, WikiData's narrative locations P840):

    - yes: a place of the record that is a city (the gazetteer knows it as a city and not as a
      country or region, or the cataloguer qualified it as a city "Cincinnati (Ohio)") is in a title.
    - no: only when the record lists a city-level place and none of its places is in a title. A
      record of countries and regions alone says nothing about a city in the title ("Nanjing zheng
      fu…" catalogued under "China"), so it decides nothing.
    """
    titles = [words(t) for t in dict.fromkeys([title, *variants]) if t]
    cities = [r for r in places if is_city_place(r["name"], gazetteer)]
    in_title = [r for r in places if any(contains(t, place_name(r["name"])[0]) for t in titles)]
    found = [r for r in in_title if r in cities]
    if found:
        return YES, f"{found[0]['field']} {found[0]['name']!r} (a city) in the title"
    if (
        cities
        and not in_title
        and not any(
            gazetteer.is_city(w) for t in [title, *variants] if t for w in unexplained_capitals(t, records, gazetteer)
        )
    ):  # "El retrato de Valparaíso" catalogued under Santiago: a city word the record does not explain
        return NO, f"none of {len(places)} {fields_of(places)} ({len(cities)} cities) in the title"
    return None


# Measured on dev, holdout and dev2 with city_v7 (docs/tagging.md, "human_v7 / city_v7"; v6's
# titles fall into the same classes less population_large).
CITY = register_kind(
    EntityKind(
        name="city",
        entity="city name",
        order=60,
        taggers=("city_v3", "city_v4", "city_v5", "city_v6", "city_v7", "city_model_v1"),
        default_tagger="city_v7",
        in_default_release=True,
        kitab=True,
        classes=(
            EvidenceClass("context", YES, 0, 23, False, 'a locative before or ", Region" after'),
            EvidenceClass("alternate_name", YES, 0, 8, False, 'an exonym of a big city ("Peking", "Bombay")'),
            EvidenceClass(
                "population_large", YES, 0, 53, False, "city_v7: population alone, a city of 1M, or 100k / a capital"
            ),
            EvidenceClass(
                "population", YES, 0, 7, True, "population alone, a smaller city or a name: the held-out guess"
            ),
            EvidenceClass("ner", YES, 1, 7, True, "NER alone, or NER and population"),
            EvidenceClass("plain", NO, 5, 1629, False, "no city found (no candidate 1/1,181; one refused 4/448)"),
        ),
        span_class=span_class,
        record_fields=("subject_places", "narrative_locations"),
        record_rule=record_rule,
        prompt=(
            "every city name in it (a city or town used as a place, such as 'Venice' in 'Death in Venice'; not "
            "countries, states or regions, not demonyms, not a city inside a person's name such as 'Jack London')"
        ),
    )
)
