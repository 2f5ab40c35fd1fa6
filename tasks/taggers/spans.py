"""What a tagger returns for one title."""

from __future__ import annotations

from dataclasses import dataclass

# Detectors, in the order they are written in an evidence string ("ner+first_name+surname").
EVIDENCE_ORDER = (
    "gazetteer:geonames_1000",
    "alternate_name",
    "ner",
    "first_name",
    "surname",
    "honorific_rule",
    "possessive_rule",
    "epithet_rule",
    "group_rule",
    "of_rule",
    "biography_rule",
    "proper_title_rule",
    "coordination_rule",
    "locative_rule",
    "population_rule",
    "region_context_rule",
    "large_city_rule",  # city_v7: a city of LARGE_CITY_MIN_POPULATION or a capital
    # country_v1 (tasks/taggers/country.py)
    "country_name",
    "demonym",
    "ambiguous",
)


@dataclass(frozen=True, order=True)
class Span:
    """A name found in a title: `title[start:end] == text`; `evidence` says which detectors agreed."""

    start: int
    end: int
    kind: str  # "human" | "city" | "country"
    text: str
    evidence: str


def evidence_string(detectors: set[str]) -> str:
    unknown = detectors.difference(EVIDENCE_ORDER)
    if unknown:
        raise ValueError(f"unknown detectors {sorted(unknown)}")
    return "+".join(d for d in EVIDENCE_ORDER if d in detectors)
