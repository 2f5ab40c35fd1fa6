"""city: a title names a city or town used as a place ("Death in Venice"): KITAB's city-name."""

from __future__ import annotations

from functools import partial

from tasks.book_evidence import NO, YES, record_verdict
from tasks.entities.registry import EntityKind, EvidenceClass, register_kind


def span_class(detectors: frozenset[str]) -> str:
    if detectors & {"locative_rule", "region_context_rule"}:
        return "context"
    if "alternate_name" in detectors:
        return "alternate_name"
    if "large_city_rule" in detectors:  # city_v7
        return "population_large"
    return "ner" if "ner" in detectors else "population"


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
        record_rule=partial(record_verdict, "city"),  # tasks/book_evidence.py
        prompt=(
            "every city name in it (a city or town used as a place, such as 'Venice' in 'Death in Venice'; not "
            "countries, states or regions, not demonyms, not a city inside a person's name such as 'Jack London')"
        ),
    )
)
