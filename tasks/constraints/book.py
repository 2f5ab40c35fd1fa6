"""The view of a book that constraints verify against."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Book:
    """One (merged) book: its canonical title first, then every other variant title.

    A merged book satisfies a lexical constraint if any of its titles does (KITAB App. C.1:
    "Gödel, Escher, Bach" and "…: An Eternal Golden Braid" end with both "h" and "d").
    The entity flags are per book (the taggers look at all variants); None = not tagged.
    """

    book_id: str
    titles: tuple[str, ...]
    first_year: int | None = None
    has_human_name: bool | None = None
    has_city_name: bool | None = None

    def __post_init__(self) -> None:
        if not self.titles:
            raise ValueError(f"book {self.book_id!r} has no title")

    @property
    def title(self) -> str:
        return self.titles[0]
