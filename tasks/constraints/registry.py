"""The constraint-type registry.

A constraint is a small frozen spec: data (``to_dict`` gives e.g.
``{"type": "starts_with", "letter": "v"}``) plus what the benchmark needs from it:
``matches`` (the verifier), ``render`` (KITAB's criterion text), ``parse`` (its inverse),
``clause`` (its part of the query sentence), ``candidates`` (the specs an author's
books give rise to) and ``claim_holds`` / ``claim_clause`` (the claim pairs' truth and wording). A new type is one module in ``kinds/`` whose spec class is
``@register``-ed; generation, sampling, parsing and Table 2 find it here (COLLIE §3:
constraint structures as data, extraction and rendering derived from them).
"""

from __future__ import annotations

import dataclasses
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

from tasks.constraints.book import Book

# Bump on any change to what a spec maps to or how it renders (counting rules, window
# grid, phrasing): constraint rows carry it so releases built under different rules are
# never compared as if equal.
SPEC_VERSION = 2  # 2: KITAB's title processing, answer titles, one title satisfying a whole query

_CRITERION_PREFIX = re.compile(r"^\s*Criterion\s+\d+\s*:\s*")
# Criteria are joined with ", " (KITAB's two-book format); split only before the next
# "Criterion N:" so a comma inside a criterion can never split it.
_CRITERIA_SPLIT = re.compile(r",\s*(?=Criterion\s+\d+\s*:)")


class Spec(ABC):
    """Base of every constraint spec (subclasses are frozen dataclasses)."""

    TYPE: ClassVar[str]  # "type" in the JSON spec and in constraint ids, e.g. starts_with
    KITAB_TYPE: ClassVar[str]  # KITAB's constraint_type, e.g. starts-with
    ORDER: ClassVar[int]  # candidate order, and criterion order inside a query

    @property
    @abstractmethod
    def value(self) -> str:
        """The spec's values as the last part of its constraint id (unique within its type)."""

    @property
    def label(self) -> str:
        """Its row in Table 2 (negated entity constraints have their own rows)."""
        return self.KITAB_TYPE

    @abstractmethod
    def satisfied_by(self, book: Book, title: str) -> bool:
        """True iff ``book`` satisfies the constraint when named by ``title``, one of its
        ``titles``: the lexical types read the title, the others read the book."""

    @abstractmethod
    def accepts(self, answer: str, book: Book) -> bool:
        """KITAB's evaluator: whether a model's ``answer``, mapped to ``book``, satisfies the
        constraint. More lenient than ``satisfied_by`` where the evaluator is (a stopword
        before the letter, ±1 word), never stricter, so every ground-truth title passes."""

    def titles_satisfying(self, book: Book) -> tuple[str, ...]:
        """The book's titles by which it satisfies the constraint, in the book's title order."""
        return tuple(title for title in book.titles if self.satisfied_by(book, title))

    def matches(self, book: Book) -> bool:
        """True iff the book satisfies the constraint through at least one of its titles."""
        return any(self.satisfied_by(book, title) for title in book.titles)

    @abstractmethod
    def render(self) -> str:
        """KITAB's natural-language criterion, e.g. "Book title starts with the letter v."."""

    @abstractmethod
    def clause(self) -> str:
        """The spec inside the query sentence, e.g. "whose title starts with the letter v"."""

    def claim_holds(self, books: Sequence[Book]) -> bool | None:
        """The claim "the author wrote a book <clause>" over the author's ``books`` (every
        title of each, tasks/claims.py): True or False when that is beyond dispute, None when
        it is not (then no claim is made from this spec). By default the verifier's answer;
        a type whose reading a person could dispute, or whose fact may be missing, overrides it."""
        return any(self.matches(book) for book in books)

    @classmethod
    def claims_over(cls, books: Sequence[Book]) -> Callable[[Spec], bool | None]:
        """``spec.claim_holds(books)`` for many specs of this type over the same ``books`` (claims
        ask every candidate of an author): a type may read the books once here; it must agree
        with ``claim_holds`` (tests/test_claims_over.py)."""
        return lambda spec: spec.claim_holds(books)

    def claim_clause(self) -> str:
        """The spec inside a claim about one book ("<author> wrote a book <claim_clause>.")."""
        return self.clause()

    @classmethod
    @abstractmethod
    def parse(cls, text: str) -> Spec | None:
        """The spec a rendered criterion (without "Criterion N: ") stands for; None if not this type."""

    @classmethod
    @abstractmethod
    def candidates(cls, books: Sequence[Book]) -> Iterator[Spec]:
        """Every spec of this type worth asking about one author's books, satisfiable or not."""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, **dataclasses.asdict(self)}

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Spec:
        return cls(**fields)


SpecT = TypeVar("SpecT", bound=type[Spec])
_TYPES: dict[str, type[Spec]] = {}
# functions that give types made from other registries (the entity kinds' <kind>_name), asked
# at every lookup so a type registered there later is known here too
_SOURCES: list[Callable[[], Sequence[type[Spec]]]] = []
_SYNCED: list = []  # what the sources gave at the last sync (the same objects: nothing to do)


def register(cls: SpecT) -> SpecT:
    """Class decorator: make a spec type known to generation, sampling and parsing."""
    if cls.TYPE in _TYPES and _TYPES[cls.TYPE] is not cls:
        raise ValueError(f"constraint type {cls.TYPE!r} registered twice")
    if any(other.ORDER == cls.ORDER and other is not cls for other in _TYPES.values()):
        raise ValueError(f"constraint type {cls.TYPE!r}: ORDER {cls.ORDER} already taken")
    _TYPES[cls.TYPE] = cls
    return cls


def add_types_from(source: Callable[[], Sequence[type[Spec]]]) -> None:
    """Types derived from another registry: ``source()`` gives them, asked at each lookup."""
    _SOURCES.append(source)
    _sync()


def _sync() -> None:
    """Register the derived types; drop a derived type whose source no longer gives it (a
    test's kind, unregistered)."""
    given = [source() for source in _SOURCES]
    if len(given) == len(_SYNCED) and all(a is b for a, b in zip(given, _SYNCED)):
        return
    _SYNCED[:] = given
    derived = {cls.TYPE: cls for types in given for cls in types}
    for name, cls in list(_TYPES.items()):
        if getattr(cls, "DERIVED", False) and derived.get(name) is not cls:
            del _TYPES[name]
    for cls in derived.values():
        cls.DERIVED = True
        register(cls)


def spec_types() -> list[type[Spec]]:
    """Registered types in their fixed order."""
    _sync()
    return sorted(_TYPES.values(), key=lambda cls: cls.ORDER)


def spec_type(name: str) -> type[Spec]:
    _sync()
    try:
        return _TYPES[name]
    except KeyError:
        raise ValueError(f"unknown constraint type {name!r} (known: {sorted(_TYPES)})") from None


def spec_from_dict(data: dict[str, Any]) -> Spec:
    fields = dict(data)
    return spec_type(fields.pop("type")).from_fields(fields)


def spec_to_json(spec: Spec) -> str:
    """Canonical JSON (sorted keys): equal specs give equal strings."""
    return json.dumps(spec.to_dict(), sort_keys=True)


def spec_from_json(text: str) -> Spec:
    return spec_from_dict(json.loads(text))


def constraint_id(author_qid: str, spec: Spec) -> str:
    """Stable id of one author's constraint, e.g. Q72334:starts_with:v."""
    return f"{author_qid}:{spec.TYPE}:{spec.value}"


def parse_criterion(text: str) -> Spec:
    """KITAB's text of one criterion (with or without "Criterion N: ") -> its spec."""
    body = _CRITERION_PREFIX.sub("", text).strip()
    found = [spec for cls in spec_types() if (spec := cls.parse(body)) is not None]
    if len(found) != 1:
        raise ValueError(f"{text!r} is {'ambiguous' if found else 'not a known constraint'}")
    return found[0]


def parse_criteria(text: str) -> list[Spec]:
    """KITAB's ``constraints`` field ("Criterion 1: …., Criterion 2: ….") -> its specs."""
    return [parse_criterion(part) for part in _CRITERIA_SPLIT.split(text)]


def render_criteria(specs: Sequence[Spec]) -> str:
    """Specs -> KITAB's ``constraints`` field. Every criterion carries "Criterion N: "
    because KITAB's evaluator drops the first number it finds in a year criterion."""
    return ", ".join(f"Criterion {n}: {spec.render()}" for n, spec in enumerate(specs, start=1))
