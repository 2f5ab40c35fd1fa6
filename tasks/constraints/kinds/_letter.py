"""Shared shape of the two letter constraints (starts-with, ends-with)."""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tasks.constraints.book import Book
from tasks.constraints.counting import LETTERS, title_readings, undisputed
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

    @classmethod
    def claims_over(cls, books: Sequence[Book]) -> Callable[[Spec], bool | None]:
        # claim_holds for all 26 letters in one pass over the titles: a letter holds when a title
        # has it under both readings, is disputable when some title has it under one (undisputed)
        if cls.claim_holds is not LetterSpec.claim_holds:  # a subclass that reads claims its own way
            return super().claims_over(books)
        both: set[str | None] = set()
        either: set[str | None] = set()
        for title in (t for b in books for t in b.titles):
            kitab, kept = title_readings(title)
            first = cls.letter_in(kitab)
            second = first if kept == kitab else cls.letter_in(kept)
            if first == second:
                both.add(first)
            either.update((first, second))
        return lambda spec: True if spec.letter in both else (None if spec.letter in either else False)

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
