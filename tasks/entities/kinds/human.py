"""human: a title names a person ("Mrs Dalloway", "Gerald's Game"): KITAB's human-name."""

from __future__ import annotations

from functools import partial

from tasks.book_evidence import NO, YES, record_verdict
from tasks.entities.registry import EntityKind, EvidenceClass, register_kind

# the naming patterns of human_v4..v6 (tasks/taggers/human.py): a span found by one is class "rule"
_RULES = frozenset(
    "honorific_rule possessive_rule epithet_rule group_rule of_rule biography_rule coordination_rule".split()
)


def span_class(detectors: frozenset[str]) -> str:
    if detectors & _RULES:
        return "rule"
    if detectors & {"first_name", "surname"}:
        return "name_list"
    return "proper_title" if "proper_title_rule" in detectors else "ner_only"


# Measured on dev, holdout and dev2 with human_v7 (docs/tagging.md, "human_v7 / city_v7"): a
# class whose error on those sets is several times the rest's is risky.
HUMAN = register_kind(
    EntityKind(
        name="human",
        entity="human name",
        order=50,
        taggers=("human_v3", "human_v4", "human_v5", "human_v6", "human_v7", "human_model_v1"),
        default_tagger="human_v7",
        in_default_release=True,
        kitab=True,
        classes=(
            # "yes": the name was found by ...
            EvidenceClass("rule", YES, 1, 148, False, "a naming pattern (honorific, possessive, epithet, group, ...)"),
            EvidenceClass("name_list", YES, 8, 205, False, "a listed given name or surname the rules accept"),
            EvidenceClass(
                "proper_title", YES, 9, 23, True, 'only an unknown main title that looks like a name ("Pnin")'
            ),
            EvidenceClass("ner_only", YES, 0, 5, True, "NER's PERSON on a token no list knows: too few to trust"),
            # "no": nothing found, and the title has ...
            EvidenceClass(
                "plain", NO, 14, 1255, False, "no unknown capitalised word, no listed name but a common word"
            ),
            EvidenceClass(
                "listed_name", NO, 4, 14, True, "a listed name that is no common word, which the rules refused"
            ),
            EvidenceClass("unknown_word", NO, 12, 77, True, "a capitalised token no list knows (coined or foreign)"),
        ),
        span_class=span_class,
        record_fields=("subject_people", "characters"),
        record_rule=partial(record_verdict, "human"),  # tasks/book_evidence.py
        prompt=(
            "every human name in it (a person's given name, surname or full name, real or fictional, including a "
            "character's single name such as 'Emma' or 'Gatsby'; not the honorific, so 'Mrs Dalloway' gives "
            "'Dalloway'; not words that only happen to be names, roles, or places named after people such as "
            "'Peyton Place')"
        ),
    )
)
