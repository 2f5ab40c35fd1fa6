"""KITAB's metrics for one answer to one query (paper §4.1), as pure functions.

1. Each title the model gave is mapped to one of the author's books (``all_books``) by
   ``tasks.constraints.matching.match_title``; a title that names none is looked up in
   ``raw_books`` (the author's titles cleaning did not score: forgiven, left out of every
   rate), and otherwise is **not from the author**. A listed book is "don't care" (match kind
   ``unsure``, issues 28 and 38) when the query's key leaves it out as unsure
   (``QueryTruth.unsure``) or when its verdict would hinge on an unsure entity state alone
   (every other criterion accepts a listed title of it, with the evaluator's leniency: ±1
   word, a leading stopword): in no cluster, rate or completeness, so listing it neither
   rewards nor penalises.
2. Titles mapped to the same book form one cluster; each not-from-author title (after
   normalisation) is a cluster of its own.
3. A book cluster **satisfies** the query when, for every criterion, one of the model's
   titles in it is accepted (``Spec.accepts``: KITAB's evaluator, with its stopword and ±1
   word leniency; the year and entity criteria read the book), else it is unsatisfied.
   satisfied + unsatisfied + not-from-author rates = 1 over the clusters.
4. **Completeness**: the share of ``mapped_books`` whose book is a satisfied cluster.
5. **All correct**: completeness 1, satisfied 1, not-from-author 0.

6. **Abstention** (an answer listing no titles to a satisfiable query: a refusal, null or
   filtered content, an empty list): completeness 0, not all correct, and the three rates over
   listed books undefined (None, as KITAB's evaluator leaves them NaN). ``abstained`` flags it.
7. **Unsatisfiable query** (``mapped_books`` empty): completeness is undefined (None, nothing
   to recall, for every answer); all correct only for an explicit empty answer
   (``no_books``: "No books found.", ``[]``, ``Title: None``, an empty list after the
   answer marker) or a list of "don't care" books only (the same list once they are set
   aside), whose rates are then perfect. A refusal lists nothing but claims nothing:
   rates undefined, not all correct. Titles listed: not all correct.
8. **Unanswered** (the answers file has nothing for the query): nothing listed, so the rates
   are undefined; completeness 0 (None on an unsatisfiable query), not all correct
   (:func:`unanswered_score`). No metric of any answer is worse than skipping the query (an
   undefined rate is no better than a defined one), so answering less never raises
   completeness or all-correct; the rates are conditional on listing something, and the
   abstention rate and coverage say how often nothing was listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from kitab.release.evaluation.parse import is_sentence
from tasks.constraints import Book, EntitySpec, Spec
from tasks.constraints.counting import normalise_title
from tasks.constraints.matching import TitleMatcher

RAW, NOT_FROM_AUTHOR = "raw", "none"  # match kinds besides matching.KINDS
UNSURE = "unsure"  # a title naming a book the key leaves out (issue 28): neither rewarded nor penalised


@dataclass(frozen=True)
class QueryTruth:
    """What one query's row of a release says: its criteria, the author's books (``all_books``
    order, each with the year and entity flags the release gives it), and its
    ``mapped_books`` and ``raw_books`` strings as exported."""

    query_id: str
    specs: tuple[Spec, ...]
    books: tuple[Book, ...]
    mapped: tuple[str, ...]
    raw: tuple[str, ...] = ()
    unsure: frozenset[str] = frozenset()  # book ids the key leaves out (queries.unsure_book_ids)

    @cached_property
    def book_keys(self) -> tuple[str, ...]:
        return normalised(tuple(book.title for book in self.books))

    @cached_property
    def raw_keys(self) -> tuple[str, ...]:
        return normalised(self.raw)

    @cached_property
    def book_matcher(self) -> Matcher:
        return matcher_of(self.book_keys)

    @cached_property
    def raw_matcher(self) -> Matcher:
        return matcher_of(self.raw_keys)

    @cached_property
    def key_books(self) -> tuple[int | None, ...]:
        """Per ``mapped`` title, the index of the book it names (every answer to the query is
        scored against the same key)."""
        return tuple(
            None if (found := self.book_matcher(normalise_title(m))) is None else found[0] for m in self.mapped
        )


@lru_cache(maxsize=1024)
def normalised(titles: tuple[str, ...]) -> tuple[str, ...]:
    """``titles`` normalised, once per list: an author's queries share its books' and raw titles' lists."""
    return tuple(normalise_title(title) for title in titles)


@lru_cache(maxsize=1024)
def matcher_of(keys: tuple[str, ...]) -> Matcher:
    """One matcher per list of titles: an author's queries (and every model scored on them)
    share their books' list, and a matcher only reads what it was built from."""
    return Matcher(keys)


class Matcher:
    """A :class:`TitleMatcher` that answers each (title, sentence) once: an author's queries
    ask it the same titles (their keys' titles, a baseline's answers, a model's favourites)."""

    __slots__ = ("_match", "_seen")

    def __init__(self, keys: Sequence[str]):
        self._match = TitleMatcher(keys)
        self._seen: dict[tuple[str, bool], tuple[int, str] | None] = {}

    def __call__(self, title: str, *, sentence: bool = False) -> tuple[int, str] | None:
        key = (title, sentence)
        if key not in self._seen:
            self._seen[key] = self._match(title, sentence=sentence)
        return self._seen[key]


@lru_cache(maxsize=4096)
def title_key(title: str) -> tuple[str, bool]:
    """A model title's normalised form and whether it reads as a sentence (titles repeat across
    an author's queries and a model's answers)."""
    return normalise_title(title), is_sentence(title)


@dataclass(frozen=True)
class QueryScore:
    model_titles: list[str]
    matched_titles: list[str | None]  # the all_books title each model title names (None: none)
    match_kinds: list[str]  # exact | subset | fuzzy | raw | none
    n_clusters: int
    n_satisfied: int
    n_unsatisfied: int
    n_not_from_author: int
    n_raw_unmapped: int
    satisfied_rate: float | None
    unsatisfied_rate: float | None
    not_from_author_rate: float | None
    completeness: float | None
    all_correct: bool
    abstained: bool = False  # a satisfiable query answered with no titles


def map_titles(truth: QueryTruth, titles: Sequence[str]) -> list[tuple[int | None, str]]:
    """Per model title: (index of the book it names, or None; match kind)."""
    return _map_keys(truth, [(normalise_title(title), is_sentence(title)) for title in titles])


def _map_keys(truth: QueryTruth, keys: Sequence[tuple[str, bool]]) -> list[tuple[int | None, str]]:
    """:func:`map_titles` of (normalised title, whether the title reads as a sentence); a title
    the answer repeats is matched once (a long answer lists the same few titles many times). A
    sentence (a ``Title:`` slot or a JSON string holding prose) is guarded: a short title inside
    it is not credited, so "The book is a love story about …" never names "Love"."""
    out: list[tuple[int | None, str]] = []
    seen: dict[tuple[str, bool], tuple[int | None, str]] = {}
    for key in keys:
        if key not in seen:
            found = truth.book_matcher(key[0], sentence=key[1])
            if found is not None:
                seen[key] = (found[0], UNSURE) if truth.books[found[0]].book_id in truth.unsure else found
            elif truth.raw_matcher(key[0], sentence=key[1]) is not None:
                seen[key] = (None, RAW)
            else:
                seen[key] = (None, NOT_FROM_AUTHOR)
        out.append(seen[key])
    return out


def score_answer(truth: QueryTruth, titles: Sequence[str], *, no_books: bool = False) -> QueryScore:
    """KITAB's metrics of the model ``titles`` (already parsed from its answer) for ``truth``;
    ``no_books``: the answer said explicitly that no book satisfies the query."""
    read = [(t, *title_key(t)) for t in titles]  # (normalised once)
    keyed = [(t, key) for t, key, _ in read if key]
    titles = [t for t, _ in keyed]
    mapped = _map_keys(truth, [(key, sentence) for _, key, sentence in read if key])
    clusters: dict[int, list[str]] = {}
    irrelevant: set[str] = set()
    n_raw = 0
    for (title, key), (index, kind) in zip(keyed, mapped):
        if kind == UNSURE:  # "don't care": in no cluster, no rate, no completeness
            continue
        if index is not None:
            clusters.setdefault(index, []).append(title)
        elif kind == RAW:
            n_raw += 1
        else:
            irrelevant.add(key)
    dont_care = {i for i, answers in clusters.items() if _dont_care(truth, truth.books[i], answers)}
    for index in dont_care:  # its verdict would hinge on a state the key does not know
        del clusters[index]
    mapped = [(i, UNSURE) if i in dont_care else (i, kind) for i, kind in mapped]
    satisfied = {
        index
        for index, answers in clusters.items()
        # (each distinct title once: whether a spec accepts it depends on the title and the book only)
        if all(
            any(spec.accepts(answer, truth.books[index]) for answer in dict.fromkeys(answers)) for spec in truth.specs
        )
    }
    n_clusters = len(clusters) + len(irrelevant)

    def rate(n: int) -> float | None:
        return n / n_clusters if n_clusters else None

    scored = [t for t, (_, kind) in zip(titles, mapped) if kind != UNSURE]
    sat, unsat, nfa = rate(len(satisfied)), rate(len(clusters) - len(satisfied)), rate(len(irrelevant))
    completeness = None
    if truth.mapped:
        completeness = sum(1 for index in truth.key_books if index in satisfied) / len(truth.mapped)
        all_correct = completeness == 1.0 and sat == 1.0 and nfa == 0.0
    else:  # nothing to list: right when the answer says so, or lists only "don't care" books
        all_correct = not scored and (no_books or bool(titles))
        if all_correct:
            sat, unsat, nfa = 1.0, 0.0, 0.0
    return QueryScore(
        model_titles=list(titles),
        matched_titles=[truth.books[i].title if i is not None else None for i, _ in mapped],
        match_kinds=[kind for _, kind in mapped],
        n_clusters=n_clusters,
        n_satisfied=len(satisfied),
        n_unsatisfied=len(clusters) - len(satisfied),
        n_not_from_author=len(irrelevant),
        n_raw_unmapped=n_raw,
        satisfied_rate=sat,
        unsatisfied_rate=unsat,
        not_from_author_rate=nfa,
        completeness=completeness,
        all_correct=all_correct,
        abstained=bool(truth.mapped) and not scored,
    )


def _dont_care(truth: QueryTruth, book: Book, answers: Sequence[str]) -> bool:
    """Whether a listed book is "don't care": the key leaves it out as unsure, or its verdict
    hinges on an unsure state alone (some criterion's entity state is unsure, and every other
    criterion accepts one of the listed titles under the evaluator's own leniency, e.g. ±1 word:
    the key's exact rule would miss "A Tower in Calcutta" for a 2-word query)."""
    if book.book_id in truth.unsure:
        return True
    open_ = [isinstance(spec, EntitySpec) and book.unsure(spec.KIND) for spec in truth.specs]
    return any(open_) and all(
        unsure or any(spec.accepts(answer, book) for answer in dict.fromkeys(answers))
        for spec, unsure in zip(truth.specs, open_)
    )


def unanswered_score(*, satisfiable: bool = True) -> QueryScore:
    """The score of a query the answers file does not answer: nothing listed (rates undefined),
    completeness 0 (undefined when the key is empty), not all correct."""
    return QueryScore(
        model_titles=[],
        matched_titles=[],
        match_kinds=[],
        n_clusters=0,
        n_satisfied=0,
        n_unsatisfied=0,
        n_not_from_author=0,
        n_raw_unmapped=0,
        satisfied_rate=None,
        unsatisfied_rate=None,
        not_from_author_rate=None,
        completeness=0.0 if satisfiable else None,
        all_correct=False,
    )
