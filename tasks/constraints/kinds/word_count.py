"""word-count: "Book title contains only 4 words." (words: tasks/constraints/counting.py).

Exact count: KITAB's evaluator adds a ±1 tolerance when it scores a model (``accepts``), but
the ground truth (mapped books) is the exact count so that the tolerance stays the evaluator's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tasks.constraints.book import Book
from tasks.constraints.counting import undisputed, word_count
from tasks.constraints.registry import Spec, register

EVALUATOR_TOLERANCE = 1  # words more or fewer that KITAB's evaluator still accepts (paper §4.1)


@register
@dataclass(frozen=True)
class WordCount(Spec):
    TYPE = "word_count"
    KITAB_TYPE = "word-count"
    ORDER = 30

    count: int

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"word_count: count must be an int >= 1, got {self.count!r}")

    @property
    def value(self) -> str:
        return str(self.count)

    def satisfied_by(self, book: Book, title: str) -> bool:
        return word_count(title) == self.count

    def accepts(self, answer: str, book: Book) -> bool:
        return abs(word_count(answer) - self.count) <= EVALUATOR_TOLERANCE

    def claim_holds(self, books: Sequence[Book]) -> bool | None:
        # a count that changes with the leading article ("The Waves": 1 or 2) is disputable
        return undisputed((t for b in books for t in b.titles), lambda words: len(words) == self.count)

    def render(self) -> str:
        return f"Book title contains only {self._words()}."

    def clause(self) -> str:
        return f"whose title contains only {self._words()}"

    def _words(self) -> str:
        return f"{self.count} word" if self.count == 1 else f"{self.count} words"

    @classmethod
    def parse(cls, text: str) -> WordCount | None:
        found = re.fullmatch(r"Book title contains only (\d+) words?\.?", text.strip())
        return cls(int(found[1])) if found else None

    @classmethod
    def candidates(cls, books: Sequence[Book]) -> Iterator[WordCount]:
        # 1..the longest title: counts no title has (gaps) are the unsatisfiable candidates,
        # drawn from the author's own range so they stay plausible questions.
        longest = max((word_count(title) for book in books for title in book.titles), default=0)
        for count in range(1, longest + 1):
            yield cls(count)
