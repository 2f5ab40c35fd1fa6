"""Every candidate constraint of one author, the lexical and year types read off one index.

``author_candidates`` (candidates.py) asks each spec's verifier about every title of every
book: 26 starts-with letters, 26 ends-with letters, each word count and each year window
re-read the same titles (about 60 passes per author). Here each title's facts (first letter,
last letter, word count: counting.py, the one definition) are read once per distinct title,
and one pass over the author's books files every (book, title) under the value it has;
a candidate's mapped books and satisfying titles are then that value's entry, already in
book order and title order. Other types (the entity names) keep the verifier path. A
property test (tests/test_constraint_indexed.py) ties this to ``author_candidates``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kitab.core.step_memory import step_cache
from tasks.constraints.book import Book
from tasks.constraints.candidates import Candidate
from tasks.constraints.counting import first_letter_in, last_letter_in, title_words
from tasks.constraints.kinds._entity import EntitySpec
from tasks.constraints.kinds.ends_with import EndsWith
from tasks.constraints.kinds.starts_with import StartsWith
from tasks.constraints.kinds.word_count import WordCount
from tasks.constraints.kinds.year_range import YearRange
from tasks.constraints.registry import Spec, spec_types

# per value: {book index: its titles with that value, in title order}; dicts keep insertion
# order, and books are filed in the author's order, so an entry reads in book order
Index = dict[object, dict[int, list[str]]]


@step_cache(maxsize=1 << 16)
def title_facts(title: str) -> tuple[str | None, str | None, int]:
    """(first letter, last letter, word count) of ``title``, read once per distinct title."""
    words = title_words(title)
    return first_letter_in(words), last_letter_in(words), len(words)


def _index(books: Sequence[Book]) -> tuple[Index, Index, Index]:
    first: Index = {}
    last: Index = {}
    count: Index = {}
    for i, book in enumerate(books):
        for title in book.titles:
            f, la, n = title_facts(title)
            for index, value in ((first, f), (last, la), (count, n)):
                if value is not None:
                    index.setdefault(value, {}).setdefault(i, []).append(title)
    return first, last, count


def _candidate(spec: Spec, books: Sequence[Book], entry: dict[int, list[str]]) -> Candidate:
    return Candidate(spec, tuple(books[i] for i in entry), len(books), tuple(tuple(t) for t in entry.values()))


def _years(books: Sequence[Book], spec: YearRange) -> dict[int, list[str]]:
    # a book satisfies a window by every one of its titles (a book with none maps nowhere)
    return {
        i: list(b.titles)
        for i, b in enumerate(books)
        if b.titles and b.first_year is not None and spec.start <= b.first_year <= spec.end
    }


def _generic(kind: type[Spec], books: Sequence[Book]) -> list[Candidate]:
    """The verifier path of ``author_candidates``, for the types without an index here."""
    out = []
    for spec in kind.candidates(books):
        pairs = [(book, titles) for book in books if (titles := spec.titles_satisfying(book))]
        unsure = tuple(b.book_id for b in books if isinstance(spec, EntitySpec) and b.unsure(spec.KIND))
        out.append(Candidate(spec, tuple(b for b, _ in pairs), len(books), tuple(t for _, t in pairs), unsure))
    return out


def author_candidates_indexed(books: Sequence[Book]) -> list[Candidate]:
    """The same candidates as ``author_candidates`` (same order, same mapped books and
    satisfying titles), the lexical and year types read off one index of the author's titles."""
    if not books:
        return []
    first, last, count = _index(books)
    # the exact registered classes only: a subclass may verify differently, so it takes the verifier path
    lookups: dict[type[Spec], Callable[[Spec], dict[int, list[str]]]] = {
        StartsWith: lambda spec: first.get(spec.letter, {}),
        EndsWith: lambda spec: last.get(spec.letter, {}),
        WordCount: lambda spec: count.get(spec.count, {}),
        YearRange: lambda spec: _years(books, spec),
    }
    out: list[Candidate] = []
    for kind in spec_types():
        lookup = lookups.get(kind)
        if lookup is None:
            out.extend(_generic(kind, books))
            continue
        out.extend(_candidate(spec, books, lookup(spec)) for spec in kind.candidates(books))
    return out
