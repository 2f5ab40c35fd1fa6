"""publishing-year: "Book was first published between 1970-1974." (inclusive, on first_year).

A book without a year satisfies no range (``all_books`` lists it as a bare title).

Candidate windows lie on a fixed 5-year grid aligned to multiples of 5 (1970-1974,
1975-1979, …): every book falls in exactly one window, and a window means the same
years for every author. Any range parses and verifies; only candidates use the grid.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tasks.constraints.book import Book
from tasks.constraints.registry import Spec, register

WINDOW_YEARS = 5


def window_start(year: int) -> int:
    return year - year % WINDOW_YEARS


@register
@dataclass(frozen=True)
class YearRange(Spec):
    TYPE = "year_range"
    KITAB_TYPE = "publishing-year"
    ORDER = 40

    start: int
    end: int

    def __post_init__(self) -> None:
        if not all(isinstance(y, int) and not isinstance(y, bool) and 0 <= y <= 9999 for y in (self.start, self.end)):
            raise ValueError(f"year_range: years must be ints in 0..9999, got {self.start!r}-{self.end!r}")
        if self.start > self.end:
            raise ValueError(f"year_range: from {self.start} is after to {self.end}")

    @property
    def value(self) -> str:
        return f"{self.start}-{self.end}"

    def satisfied_by(self, book: Book, title: str) -> bool:
        return book.first_year is not None and self.start <= book.first_year <= self.end

    def accepts(self, answer: str, book: Book) -> bool:
        # KITAB's evaluator reads the year of the book the answer maps to, not the answer
        return self.satisfied_by(book, answer)

    def claim_holds(self, books: Sequence[Book]) -> bool | None:
        # false only when every book has a year: a book without one could be in the range
        if any(self.matches(book) for book in books):
            return True
        return False if all(book.first_year is not None for book in books) else None

    def claim_clause(self) -> str:
        return f"that was first published between {self.start}-{self.end}"

    def render(self) -> str:
        return f"Book was first published between {self.start}-{self.end}."

    def clause(self) -> str:
        return f"that were first published between {self.start}-{self.end}"

    def to_dict(self) -> dict[str, Any]:
        # "from"/"to" in the JSON spec (the vocabulary); Python keeps start/end.
        return {"type": self.TYPE, "from": self.start, "to": self.end}

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> YearRange:
        if set(fields) != {"from", "to"}:
            raise ValueError(f"year_range: expected fields from, to; got {sorted(fields)}")
        return cls(fields["from"], fields["to"])

    @classmethod
    def parse(cls, text: str) -> YearRange | None:
        found = re.fullmatch(r"Book was first published between (\d{1,4})\s*-\s*(\d{1,4})\.?", text.strip())
        return cls(int(found[1]), int(found[2])) if found else None

    @classmethod
    def candidates(cls, books: Sequence[Book]) -> Iterator[YearRange]:
        # Every window from the author's first to last: empty ones inside that span are
        # the unsatisfiable candidates.
        years = [book.first_year for book in books if book.first_year is not None]
        if not years:
            return
        for start in range(window_start(min(years)), window_start(max(years)) + 1, WINDOW_YEARS):
            yield cls(start, start + WINDOW_YEARS - 1)
