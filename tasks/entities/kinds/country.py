"""country: a title names a country, or a nationality's country ("A Passage to India", "The Quiet
American"). Not KITAB's: opt-in (``--taggers human_v6,city_v6,country_v1``); its rule, labelled
set and measured classes are in docs/tagging.md, "Countries in titles"."""

from __future__ import annotations

from tasks.entities.registry import NO, YES, EntityKind, EvidenceClass, register_kind
from tasks.taggers.country import CLASS_ORDER, COUNTRY_CLASSES, COUNTRY_RISKY, KIND, VERSION, country_span_class


def span_class(detectors: frozenset[str]) -> str:
    """The detectors of a title's spans -> its class: country_v1's own rule over them as one
    span's evidence (tasks/taggers/country.py), so an ambiguous name ("Turkey") beside a sure one
    makes the title ``ambiguous``: the kind sees the spans' detectors together and takes the
    cautious reading."""
    return country_span_class(["+".join(sorted(detectors))])


_NOTES = {
    "name": 'GeoNames\' own name ("A Passage to India")',
    "alternate_name": '"Burma", "Holland", "Scotland", "America"',
    "demonym": '"The Quiet American", "Zorba the Greek"',
    "ambiguous": 'also a word, a given name or a US state ("Turkey", "Jordan")',
    "plain": "no candidate at all",
    "refused": 'a person\'s name or another place held the name ("Michael Jordan", "New Mexico")',
}

# The counts and risk are country_v1's own (tasks/taggers/country.py, measured by
# benchmarks/country_quality.py on the labelled set's dev split; tests/test_tag_country.py
# checks they still hold), so they are written once.
COUNTRY = register_kind(
    EntityKind(
        name=KIND,
        entity="country name",
        order=70,
        taggers=(VERSION,),
        default_tagger=VERSION,
        in_default_release=False,
        kitab=False,
        classes=tuple(
            EvidenceClass(cls, YES if cls in CLASS_ORDER else NO, *COUNTRY_CLASSES[cls], COUNTRY_RISKY[cls], note)
            for cls, note in _NOTES.items()
        ),
        span_class=span_class,
        # no record rule: a record's subject places name countries for setting, not for the title
        # (measured for cities, issue 28); the model tagger's prompt has no country clause yet
        # (adding one changes every cached prompt: PROMPT_VERSION in tasks/taggers/model.py)
    )
)
