"""A throwaway entity kind for tests/test_entity_kinds.py: "colour", a title names a colour
("The Red Hour"). Importing this module registers its tagger (colour_v1) and its kind, as a
kind module in tasks/entities/kinds/ would; a run selects it as
``tests.entity_colour:colour_v1``, which imports this module in every process that runs a step
(spawned workers included), so the kind is known wherever its rows are made.

Its evidence classes are measured here, on LABELLED, by the tagger itself: a kind registers
with counts, never without (tasks/entities/registry.py)."""

from __future__ import annotations

import os
import re

from tasks.entities.registry import NO, YES, EntityKind, EvidenceClass, register_kind
from tasks.taggers.registry import register_tagger
from tasks.taggers.spans import Span

COLOURS = ("Red", "Blue", "Green", "Black", "White", "Yellow", "Purple", "Scarlet", "Golden", "Grey", "Gray")
PIDS = "KITAB_TEST_COLOUR_PIDS"  # a file the tagger appends its process id to (the test reads it)


@register_tagger
class ColourTagger:
    name = "colour"
    version = "colour_v1"

    def __init__(self, **options) -> None:
        self.pattern = re.compile(r"\b(" + "|".join(COLOURS) + r")\b")

    def tag_many(self, titles: list[str]) -> list[list[Span]]:
        if os.environ.get(PIDS):
            with open(os.environ[PIDS], "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
        return [
            [Span(m.start(), m.end(), "colour", m.group(1), "colour_list") for m in self.pattern.finditer(t)]
            for t in titles
        ]

    def fingerprint(self) -> dict:
        return {"list": ",".join(COLOURS)}


# (title, names a colour?): the tiny labelled set the classes are measured on
LABELLED = [
    ("The Red Hour", True),
    ("The Color Purple", True),
    ("Blue Highways", True),
    ("The Scarlet Letter", True),
    ("Black Beauty", True),
    ("White Fang", True),
    ("Golden Ocean", False),  # a colour word that is no colour here: the list's error
    ("Beloved", False),
    ("Jazz", False),
    ("Sula", False),
    ("The Quiet Garden", False),
    ("Crimson Peak", True),  # a colour the list does not know: the plain class's error
    ("Letters", False),
    ("The Last Train", False),
]


def _measured() -> tuple[EvidenceClass, ...]:
    found = [bool(s) for s in ColourTagger().tag_many([t for t, _ in LABELLED])]
    listed = [truth for hit, (_, truth) in zip(found, LABELLED) if hit]
    plain = [truth for hit, (_, truth) in zip(found, LABELLED) if not hit]
    return (
        EvidenceClass("listed", YES, sum(not t for t in listed), len(listed), False, "a listed colour word"),
        EvidenceClass("plain", NO, sum(plain), len(plain), False, "no listed colour word"),
    )


COLOUR = register_kind(
    EntityKind(
        name="colour",
        entity="colour name",
        order=90,
        taggers=("colour_v1",),
        default_tagger="colour_v1",
        classes=_measured(),
        span_class=lambda detectors: "listed",
    )
)
