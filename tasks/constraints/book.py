"""The view of a book that constraints verify against."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Book:
    """One (merged) book: the titles an answer may name it by, then its year and entity flags.

    ``titles`` holds the canonical title first, then every variant title that KITAB's
    evaluator would credit to this book (tasks/constraints/matching.py: ``answer_titles``).
    A merged book satisfies a lexical constraint if any of those titles does (KITAB App.
    C.1: "Gödel, Escher, Bach" and "…: An Eternal Golden Braid" end with both "h" and "d");
    a variant the evaluator would not map back to the book cannot make it satisfy anything,
    since a model writing it would not be credited. ``canonical`` is the title ``all_books``
    lists, when it is not ``titles[0]`` (it may even be missing from ``titles`` if another
    book's canonical title reads the same). The entity flags are per book (the taggers look
    at all variants): ``entities`` holds (kind, found) for every kind tagged, e.g.
    ``(("city", False), ("human", True))``, found None where the book's state is ``unsure``
    (tasks/entity_states.py: a "don't care" book, in no such query's key); a kind not there
    was not tagged.
    """

    book_id: str
    titles: tuple[str, ...]
    first_year: int | None = None
    entities: tuple[tuple[str, bool | None], ...] = ()
    canonical: str | None = None

    def __post_init__(self) -> None:
        if not self.titles and self.canonical is None:
            raise ValueError(f"book {self.book_id!r} has no title")
        # kind -> found, read once: every entity spec of the author asks each book (not a field:
        # equality, hashing and the repr stay those of the fields)
        object.__setattr__(self, "_found", dict(self.entities))

    def has(self, kind: str) -> bool | None:
        """Whether a title of this book names an entity of ``kind`` (None: not tagged, or unsure)."""
        return self._found.get(kind)

    def tagged(self, kind: str) -> bool:
        """Whether the book has a state for ``kind`` (yes, no or unsure)."""
        return kind in self._found

    def unsure(self, kind: str) -> bool:
        """Tagged for ``kind``, and its state is unsure."""
        return self.tagged(kind) and self.has(kind) is None

    @property
    def title(self) -> str:
        """The title ``all_books`` lists (the canonical title)."""
        return self.canonical if self.canonical is not None else self.titles[0]
