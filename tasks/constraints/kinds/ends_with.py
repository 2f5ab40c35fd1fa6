"""ends-with: "Book title ends with the letter a." (last letter: tasks/constraints/counting.py)."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.constraints.book import Book
from tasks.constraints.counting import last_letter, last_letter_in, title_words
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
    letter_in = staticmethod(last_letter_in)

    def accepts(self, answer: str, book: Book) -> bool:
        words = title_words(answer)
        return bool(words) and words[-1].endswith(self.letter)
