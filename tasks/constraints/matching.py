"""Which of an author's books a title names: KITAB's matching (paper §4.1), made unambiguous.

KITAB maps each title a model gives to a book of the author's ``all_books`` when one is "a
string subset match (in both directions)" of the other or "at 80% match in Levenshtein
distance". Titles are compared after ``normalise_title`` (counting.py). kitab keeps those
two tests and fixes what they leave open, in this order:

1. **exact**: the normalised titles are equal. A model naming "The Old Clock" means that
   book, even when the author also wrote "Clock" (KITAB's port takes the first book with a
   substring relation in list order, so it would answer "Clock").
2. **subset**: one title's words are a contiguous run of the other's ("Gödel, Escher,
   Bach" / "Gödel, Escher, Bach: An Eternal Golden Braid"). Whole words, not characters:
   "It" is not a subset of "Spirit", "Sula" not of "Consular". Several candidates: the
   most similar (``fuzz.ratio``) wins, then the first in list order.
3. **fuzzy**, only when no title is a subset (KITAB's port tries the substring test first
   too): ``fuzz.ratio`` >= 80, the most similar wins, then the first in list order. So
   "Saving the Wind" names "Saving the Wind: A Novel", not "Saving the Rain" (87% alike);
   the price is that a misspelt "Clock in Buenos Aries" names "Clock", nested in it.

The same function decides, at generation, which variant titles a KITAB evaluator would
credit to their own book (``answer_titles``), and, at evaluation, which book an answer
names; so every title kitab exports as an answer maps back to its book.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rapidfuzz import fuzz, process

from tasks.constraints.book import Book
from tasks.constraints.counting import normalise_title

FUZZY_MIN_RATIO = 80  # the paper's threshold (fuzzywuzzy's ratio, 0-100)
KINDS = ("exact", "subset", "fuzzy")  # how a title was matched (the evaluations table records it)


def _padded(title: str) -> str:
    """A title's words between single spaces, with a space at each end ("" when it has none):
    one title's words are a contiguous run of another's exactly when its padded form is a
    substring of the other's (words hold no whitespace), a test Python runs in C."""
    words = title.split()
    return f" {' '.join(words)} " if words else ""


def is_subset(a: str, b: str) -> bool:
    """Whether one normalised title's words are a contiguous run of the other's."""
    pa, pb = _padded(a), _padded(b)
    return bool(pa and pb) and (pa in pb or pb in pa)


class TitleMatcher:
    """:func:`match_title` against one list of candidates, prepared once (an evaluation asks
    it for every title of every answer to an author's queries: the exact test is a lookup,
    the subset test a substring search, the fuzzy one rapidfuzz's loop in C)."""

    def __init__(self, candidates: Sequence[str]):
        self.candidates = list(candidates)
        self._first: dict[str, int] = {}
        for i, candidate in enumerate(self.candidates):
            if candidate:
                self._first.setdefault(candidate, i)
        padded = [(i, _padded(c)) for i, c in enumerate(self.candidates) if c]
        self._padded = [(i, c) for i, c in padded if c]
        # every candidate once, so a title not inside any is told by one substring search
        # (padded titles hold no double space: no match spans two of them)
        self._joined = "".join(c for _, c in self._padded)
        self._by_first: dict[str, list[tuple[int, str]]] = {}
        for i, c in self._padded:
            self._by_first.setdefault(c[1:-1].split(" ", 1)[0], []).append((i, c))

    def _subsets(self, padded: str, guard: bool = False) -> list[int]:
        """The candidates whose words are a run of the title's (only those starting with one
        of its words can be), then those holding the title's words as a run. ``guard``: a
        candidate inside the title counts only as its head or when the title is at most twice
        as long (a padded candidate of n words holds n + 1 spaces)."""
        hits: set[int] = set()
        words = padded[1:-1].split(" ")
        for word in words:
            hits.update(
                i
                for i, c in self._by_first.get(word, ())
                if c in padded and (not guard or padded.startswith(c) or len(words) <= 2 * c.count(" ") - 2)
            )
        if padded in self._joined:
            hits.update(i for i, c in self._padded if padded in c)
        return sorted(hits)

    def __call__(self, title: str, *, sentence: bool = False) -> tuple[int, str] | None:
        """``sentence``: the title as the model wrote it reads as prose (an evaluation's guard):
        a short title it holds is not what it names ("the book is a love story …" is not "Love")."""
        if not title:
            return None
        if title in self._first:
            return self._first[title], "exact"
        padded = _padded(title)
        if padded:
            subsets = self._subsets(padded, guard=sentence)
            if subsets:
                return _most_similar(title, self.candidates, subsets), "subset"
        # rapidfuzz's loop finds the candidates near the threshold; the same fuzz.ratio as
        # before decides which pass it, so the result is the one-by-one test's
        near = process.extract(title, self.candidates, scorer=fuzz.ratio, score_cutoff=FUZZY_MIN_RATIO - 1, limit=None)
        close = sorted(
            i for _, _, i in near if self.candidates[i] and fuzz.ratio(title, self.candidates[i]) >= FUZZY_MIN_RATIO
        )
        if close:
            return _most_similar(title, self.candidates, close), "fuzzy"
        return None


def _most_similar(title: str, candidates: Sequence[str], indices: list[int]) -> int:
    """The index of the candidate most similar to ``title``; ties go to the first."""
    return max(indices, key=lambda i: (fuzz.ratio(title, candidates[i]), -i))


def match_title(title: str, candidates: Sequence[str]) -> tuple[int, str] | None:
    """(index into ``candidates``, kind) of the book ``title`` names, or None.

    ``title`` and ``candidates`` are normalised titles (``normalise_title``); an empty title
    names nothing, and an empty candidate is never named. (Many titles against the same
    candidates: :class:`TitleMatcher`.)
    """
    return TitleMatcher(candidates)(title)


def answer_titles(books: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """Per book (its titles, canonical first; books in ``all_books`` order), the titles that
    name that book under ``match_title`` against the books' canonical titles: the titles an
    evaluator credits to it. A variant naming another book, or none, is left out; so is a
    canonical title another book's canonical title already claims (the same normalised text)."""
    canonical = [normalise_title(titles[0]) for titles in books]
    matcher = TitleMatcher(canonical)  # once per author, not per title: the same match_title
    out = []
    for index, titles in enumerate(books):
        kept = []
        for title in dict.fromkeys(titles):
            found = matcher(normalise_title(title))
            if found is not None and found[0] == index:
                kept.append(title)
        out.append(tuple(kept))
    return out


def author_books(books: Sequence[Book]) -> list[Book]:
    """One author's books (in ``all_books`` order: ties go to the earlier book), each keeping
    only its answer titles (``answer_titles``): the titles constraints are checked on."""
    kept = answer_titles([(book.title, *book.titles) for book in books])
    return [replace(book, titles=titles, canonical=book.title) for book, titles in zip(books, kept)]
