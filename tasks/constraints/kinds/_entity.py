"""Shared shape of the named-entity constraints (human name, city name, ...), each with a
negation. The flags are the books' states per entity kind (book_entities): a kind's constraint
reads kind ``KIND``. An author's books must all be tagged for these candidates to exist (an
untagged book could be either). The subclasses are made from the registered entity kinds
(entity_name.py; tasks/entities/registry.py), not written per kind."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tasks.constraints.book import Book
from tasks.constraints.registry import Spec


@dataclass(frozen=True)
class EntitySpec(Spec):
    present: bool

    ENTITY: ClassVar[str]  # "human name" | "city name", as in KITAB's phrasing
    KIND: ClassVar[str]  # the kind of span that sets the flag: "human" | "city" (title_entities.kind)

    def __post_init__(self) -> None:
        if not isinstance(self.present, bool):
            raise ValueError(f"{self.TYPE}: present must be a bool, got {self.present!r}")

    @property
    def value(self) -> str:
        return "present" if self.present else "absent"

    @property
    def label(self) -> str:
        return self.KITAB_TYPE if self.present else f"no-{self.KITAB_TYPE}"

    def satisfied_by(self, book: Book, title: str) -> bool:
        if not book.tagged(self.KIND):
            raise ValueError(f"book {book.book_id!r} is not tagged for {self.KIND} names")
        # an unsure book satisfies neither the constraint nor its negation: it is in no key
        return book.has(self.KIND) == self.present

    def accepts(self, answer: str, book: Book) -> bool:
        # the book's flag, as the release's taggers set it: KITAB's NER services are not
        # reproducible, and the flags are the release's metadata (paper §3.1)
        return book.has(self.KIND) == self.present

    def claim_holds(self, books: Sequence[Book]) -> bool | None:
        # true: a decided book in the wanted state; false: every book decided, none in it
        found = [book.has(self.KIND) for book in books]
        if self.present in found:
            return True
        return False if None not in found else None

    def render(self) -> str:
        # "doesn't" is load-bearing: KITAB's evaluator detects negation by that substring.
        verb = "contains" if self.present else "doesn't contain"
        return f"Book {verb} a {self.ENTITY} in its title."

    def clause(self) -> str:
        verb = "contains" if self.present else "doesn't contain"
        return f"whose title {verb} a {self.ENTITY}"

    @classmethod
    def parse(cls, text: str) -> EntitySpec | None:
        found = re.fullmatch(rf"Book (contains|doesn['’]t contain) an? {cls.ENTITY} in its title\.?", text.strip())
        return cls(found[1] == "contains") if found else None

    @classmethod
    def candidates(cls, books: Sequence[Book]) -> Iterator[EntitySpec]:
        if books and all(book.tagged(cls.KIND) for book in books):
            yield cls(True)
            yield cls(False)


def entity_kinds() -> tuple[str, ...]:
    """The span kinds some registered constraint type reads, sorted."""
    from tasks.constraints.registry import spec_types

    return tuple(sorted({cls.KIND for cls in spec_types() if issubclass(cls, EntitySpec)}))


def entity_types() -> frozenset[str]:
    """The registered entity constraint types (``human_name``, ``city_name``, ...)."""
    from tasks.constraints.registry import spec_types

    return frozenset(cls.TYPE for cls in spec_types() if issubclass(cls, EntitySpec))
