"""Every candidate constraint of one author, each with the books it maps to."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tasks.constraints.book import Book
from tasks.constraints.registry import Spec, spec_types


@dataclass(frozen=True)
class Candidate:
    spec: Spec
    mapped: tuple[Book, ...]  # the author's books satisfying the spec, in the author's book order
    n_books: int  # N: all the author's books

    def __post_init__(self) -> None:
        if self.n_books <= 0:
            raise ValueError("a constraint needs an author with at least one book (N > 0)")

    @property
    def n_mapped(self) -> int:
        return len(self.mapped)

    @property
    def constrainedness(self) -> float:
        """κ = 1 − S/N (paper §2), computed as (N − S)/N: the nearest float to the exact value
        (1 − 4/5 gives 0.19999999999999996, not 0.2)."""
        return (self.n_books - self.n_mapped) / self.n_books

    @property
    def satisfiable(self) -> bool:
        return self.n_mapped > 0


def author_candidates(books: Sequence[Book]) -> list[Candidate]:
    """Candidates of every registered type, in type order then each type's own order.

    Mapped books are found by running the spec's verifier over every book, so "mapped"
    and "satisfies" cannot drift apart: there is one definition, the verifier's.
    """
    if not books:
        return []
    return [
        Candidate(spec, tuple(book for book in books if spec.matches(book)), len(books))
        for kind in spec_types()
        for spec in kind.candidates(books)
    ]
