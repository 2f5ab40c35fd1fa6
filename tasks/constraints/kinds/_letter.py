"""Shared shape of the two letter constraints (starts-with, ends-with)."""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tasks.constraints.book import Book
from tasks.constraints.counting import LETTERS, undisputed
from tasks.constraints.registry import Spec


@dataclass(frozen=True)
class LetterSpec(Spec):
    letter: str

    VERB: ClassVar[str]  # "starts" | "ends", as in KITAB's phrasing

    def __post_init__(self) -> None:
        if not (isinstance(self.letter, str) and len(self.letter) == 1 and self.letter in LETTERS):
            raise ValueError(f"{self.TYPE}: letter must be one of a-z, got {self.letter!r}")

    @staticmethod
    @abstractmethod
    def letter_of(title: str) -> str | None:
        """The letter of ``title`` this type looks at (None: no a-z letter there)."""

    @property
    def value(self) -> str:
        return self.letter

    @staticmethod
    @abstractmethod
    def letter_in(words: tuple[str, ...]) -> str | None:
        """The same letter of a title already split into words (one reading of it)."""

    def satisfied_by(self, book: Book, title: str) -> bool:
        return self.letter_of(title) == self.letter

    def claim_holds(self, books: Sequence[Book]) -> bool | None:
        # a title whose letter changes with its leading article ("The Bluest Eye") is disputable
        return undisputed((t for b in books for t in b.titles), lambda words: self.letter_in(words) == self.letter)

    def render(self) -> str:
        return f"Book title {self.VERB} with the letter {self.letter}."

    def clause(self) -> str:
        return f"whose title {self.VERB} with the letter {self.letter}"

    @classmethod
    def parse(cls, text: str) -> LetterSpec | None:
        found = re.fullmatch(rf"Book title {cls.VERB} with the letter ([A-Za-z])\.?", text.strip())
        return cls(found[1].lower()) if found else None

    @classmethod
    def candidates(cls, books: Sequence[Book]) -> Iterator[LetterSpec]:
        # All 26: letters no title has are the unsatisfiable candidates (paper App. C.2).
        for letter in LETTERS:
            yield cls(letter)
