"""The indexed candidates (tasks/constraints/indexed.py) against the verifier form they replace."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.constraints import author_candidates
from tasks.constraints.counting import normalise_title
from tasks.constraints.indexed import author_candidates_indexed
from tasks.constraints.matching import answer_titles, match_title
from tasks.generate_constraints import generate_constraints

# tricky titles: articles alone and leading, punctuation only, "&", non-ASCII letters at either
# end, digits, empty, whitespace only
WORDS = ["The", "the", "A", "an", "Love", "War", "Émile", "Bogotá", "1984", "Catch-22", "&", "—", "...", "Øre"]
WORDS += ["'Salem's", "Peace…", "x", "Yes!", "Bach,", "Zorro", "of", "Night:"]
titles = st.one_of(
    st.sampled_from(["", " ", "The", "A", "&", "!!", "The The"]),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
)


@st.composite
def bibliographies(draw):
    authors, books, flags = [], [], {}
    for a in range(draw(st.integers(1, 4))):
        qid = f"Q{a + 1}"
        authors.append({"qid": qid})
        tagged = draw(st.sampled_from(["all", "none", "some"]))
        for b in range(draw(st.integers(0, 9))):
            book_id = f"{qid}-{b}"
            variants = draw(st.lists(titles, min_size=1, max_size=3))
            books.append(
                {
                    "book_id": book_id,
                    "author_qid": draw(st.sampled_from([qid, qid, qid, "Qmissing"])),
                    "canonical_title": variants[0],
                    "first_year": draw(st.none() | st.integers(1890, 2020)),
                    "variant_titles": variants[1:] if draw(st.booleans()) else variants,
                }
            )
            if tagged == "all" or (tagged == "some" and b % 2):
                state = st.sampled_from([True, False, None])
                flags[book_id] = {"human": draw(state), "city": draw(state)}
    return authors, books, flags


@settings(max_examples=300, deadline=None)
@given(bibliographies())
def test_indexed_stage_equals_the_verifier_form(data):
    """Rows, rejects and stats of the stage are the same with either candidate form."""
    authors, books, flags = data
    indexed = generate_constraints(authors, books, flags, ("city", "human"))
    reference = generate_constraints(authors, books, flags, ("city", "human"), candidates_of=author_candidates)
    assert indexed.tables == reference.tables
    assert indexed.rejects == reference.rejects
    assert indexed.stats == reference.stats


def test_indexed_candidates_equal_on_a_book_without_answer_titles():
    """A book whose every title another book claims keeps no title: it maps to no lexical or
    year candidate, yet counts in N (both forms)."""
    from tasks.constraints.book import Book

    books = [Book("b1", ("Love",), 1990), Book("b2", (), 1991, canonical="Love")]
    assert author_candidates_indexed(books) == author_candidates(books)
    years = [c for c in author_candidates_indexed(books) if c.spec.TYPE == "year_range"]
    assert [(c.n_mapped, c.n_books) for c in years] == [(1, 2)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(titles, min_size=1, max_size=3), min_size=1, max_size=7))
def test_answer_titles_equals_one_match_per_title(books):
    """One matcher per author gives what ``match_title`` per title gives."""
    canonical = [normalise_title(t[0]) for t in books]
    expected = [
        tuple(
            title
            for title in dict.fromkeys(ts)
            if (found := match_title(normalise_title(title), canonical)) is not None and found[0] == index
        )
        for index, ts in enumerate(books)
    ]
    assert answer_titles(books) == expected
