"""ends-with: "Book title ends with the letter a." (last letter: tasks/constraints/counting.py)."""
from __future__ import annotations

from dataclasses import dataclass

from tasks.constraints.counting import last_letter
from tasks.constraints.kinds._letter import LetterSpec
from tasks.constraints.registry import register


@register
@dataclass(frozen=True)
class EndsWith(LetterSpec):
    TYPE = "ends_with"
    KITAB_TYPE = "ends-with"
    ORDER = 20
    VERB = "ends"

    letter_of = staticmethod(last_letter)
