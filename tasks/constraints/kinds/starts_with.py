"""starts-with: "Book title starts with the letter v." (first letter: tasks/constraints/counting.py).

KITAB's evaluator also accepts a title whose first word is one of a few stopwords when the
next word starts with the letter ("Of Mice and Men" for "m"); the ground truth does not.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.constraints.book import Book
from tasks.constraints.counting import first_letter, first_letter_in, title_words
from tasks.constraints.kinds._letter import LetterSpec
from tasks.constraints.registry import register

# KITAB's evaluator skips one of these as the first word (kitab-original.md §5).
EVALUATOR_STOPWORDS = frozenset({"a", "an", "the", "in", "is", "of", "on", "for", "with", "to", "and"})


@register
@dataclass(frozen=True)
class StartsWith(LetterSpec):
    TYPE = "starts_with"
    KITAB_TYPE = "starts-with"
    ORDER = 10
    VERB = "starts"

    letter_of = staticmethod(first_letter)
    letter_in = staticmethod(first_letter_in)

    def accepts(self, answer: str, book: Book) -> bool:
        words = title_words(answer)
        return bool(words) and (
            words[0].startswith(self.letter)
            or (words[0] in EVALUATOR_STOPWORDS and len(words) > 1 and words[1].startswith(self.letter))
        )
