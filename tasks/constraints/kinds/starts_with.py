"""starts-with: "Book title starts with the letter v." (first letter: tasks/constraints/counting.py)."""
from __future__ import annotations

from dataclasses import dataclass

from tasks.constraints.counting import first_letter
from tasks.constraints.kinds._letter import LetterSpec
from tasks.constraints.registry import register


@register
@dataclass(frozen=True)
class StartsWith(LetterSpec):
    TYPE = "starts_with"
    KITAB_TYPE = "starts-with"
    ORDER = 10
    VERB = "starts"

    letter_of = staticmethod(first_letter)
