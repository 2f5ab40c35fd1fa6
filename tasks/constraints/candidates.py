"""Every candidate constraint of one author, each with the books it maps to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tasks.constraints.book import Book
from tasks.constraints.kinds._entity import EntitySpec
from tasks.constraints.registry import Spec, spec_types


@dataclass(frozen=True)
class Candidate:
    spec: Spec
    mapped: tuple[Book, ...]  # the author's books satisfying the spec, in the author's book order
    n_books: int  # N: all the author's books
    satisfying: tuple[tuple[str, ...], ...]  # per mapped book (same order), its titles that satisfy the spec
    # the books the key leaves out: unsure for the spec's entity kind ("don't care", issue 28)
    unsure: tuple[str, ...] = ()

    @property
    def answers(self) -> list[str]:
        """KITAB's ``mapped_books``: per mapped book, the first of its titles that satisfies the
        spec (the canonical title when it does). KITAB's evaluator checks the title a model
        writes, so the ground truth names each book by a title that satisfies the constraint."""
        return [titles[0] for titles in self.satisfying]

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

    Mapped books are found by running the spec's verifier over every title of every book
    (``Spec.titles_satisfying``), so "mapped" and "satisfies" cannot drift apart: there is
    one definition, the verifier's.
    """
    if not books:
        return []
    out = []
    for kind in spec_types():
        for spec in kind.candidates(books):
            pairs = [(book, titles) for book in books if (titles := spec.titles_satisfying(book))]
            unsure = tuple(b.book_id for b in books if isinstance(spec, EntitySpec) and b.unsure(spec.KIND))
            out.append(Candidate(spec, tuple(b for b, _ in pairs), len(books), tuple(t for _, t in pairs), unsure))
    return out
