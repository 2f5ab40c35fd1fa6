"""The constraints stage and the ``kitab constraints`` probe."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core.schemas import to_arrow
from tasks.constraints import SPEC_VERSION, spec_from_json
from tasks.constraints.counting import first_letter, last_letter, word_count
from tasks.constraints.matching import author_books
from tasks.constraints.probe import constraints_probe
from tasks.generate_constraints import book_view, generate_constraints
from tasks.text import split_title_year

VOCAB = [
    "The",
    "A",
    "an",
    "Love",
    "War",
    "Émile",
    "1984",
    "Catch-22",
    "Zorro",
    "of",
    "&",
    "Night:",
    "Øre",
    "'Salem's",
    "Quiet",
    "x",
    "Yes!",
    "Bach,",
]

titles = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6).map(" ".join)


@st.composite
def bibliographies(draw, max_authors=3):
    """authors, books and entity flags; some authors untagged, some books untagged."""
    authors, books, flags = [], [], {}
    for a in range(draw(st.integers(1, max_authors))):
        qid = f"Q{a + 1}"
        authors.append({"qid": qid, "name": f"Author {a}", "birth_year": 1900, "sitelinks": 3})
        tagged = draw(st.sampled_from(["all", "none", "some"]))
        for b in range(draw(st.integers(0, 8))):
            book_id = f"{qid}-{b}"
            variants = draw(st.lists(titles, min_size=1, max_size=3))
            books.append(
                {
                    "book_id": book_id,
                    "author_qid": qid,
                    "canonical_title": variants[0],
                    "first_year": draw(st.none() | st.integers(1890, 2020)),
                    "n_variants": len(variants),
                    "variant_titles": variants,
                }
            )
            if tagged == "all" or (tagged == "some" and b % 2):
                flags[book_id] = {"human": draw(st.booleans()), "city": draw(st.booleans())}
    return authors, books, flags


def books_by_author(books, flags):
    """Each author's Books as the stage sees them: all_books order, answer titles only."""
    out = {}
    for row in books:
        out.setdefault(row["author_qid"], []).append(book_view(row, flags.get(row["book_id"])))
    return {qid: author_books(sorted(rows, key=lambda b: (b.title, b.book_id))) for qid, rows in out.items()}


@settings(max_examples=60, deadline=None)
@given(bibliographies())
def test_mapped_books_are_exactly_the_satisfying_ones(data):
    authors, books, flags = data
    rows = generate_constraints(authors, books, flags).tables["constraints"]
    by_author = books_by_author(books, flags)
    for row in rows:
        spec = spec_from_json(row["spec"])
        shelf = by_author[row["author_qid"]]
        satisfying = [b for b in shelf if spec.matches(b)]
        assert set(row["mapped_book_ids"]) == {b.book_id for b in satisfying}
        n, s = len(shelf), len(satisfying)
        assert (row["n_books"], row["n_mapped"]) == (n, s)
        assert row["constrainedness"] == pytest.approx(1 - s / n) and 0.0 <= row["constrainedness"] <= 1.0
        assert row["satisfiable"] == (s > 0)
        assert row["text"] == spec.render() and row["constraint_type"] == spec.TYPE
        assert row["spec_version"] == SPEC_VERSION


@settings(max_examples=40, deadline=None)
@given(bibliographies())
def test_candidates_cover_every_letter_count_window_and_entity(data):
    authors, books, flags = data
    rows = generate_constraints(authors, books, flags).tables["constraints"]
    for qid, shelf in books_by_author(books, flags).items():
        specs = {spec_from_json(r["spec"]) for r in rows if r["author_qid"] == qid}
        by_type = {}
        for spec in specs:
            by_type.setdefault(spec.TYPE, set()).add(spec)
        assert {s.letter for s in by_type["starts_with"]} == set("abcdefghijklmnopqrstuvwxyz")
        assert {s.letter for s in by_type["ends_with"]} == set("abcdefghijklmnopqrstuvwxyz")
        all_titles = [t for b in shelf for t in b.titles]
        longest = max(map(word_count, all_titles))
        assert {s.count for s in by_type.get("word_count", ())} == set(range(1, longest + 1))
        years = [b.first_year for b in shelf if b.first_year is not None]
        windows = sorted((s.start, s.end) for s in by_type.get("year_range", ()))
        if years:  # contiguous 5-year windows on multiples of 5, from first to last book
            assert windows[0][0] == min(years) - min(years) % 5 and windows[-1][0] <= max(years) <= windows[-1][1]
            assert all(end - start == 4 and start % 5 == 0 for start, end in windows)
            assert all(b[0] == a[1] + 1 for a, b in zip(windows, windows[1:]))
        else:
            assert not windows
        tagged = all(b.has("human") is not None and b.has("city") is not None for b in shelf)
        assert len(by_type.get("human_name", ())) == len(by_type.get("city_name", ())) == (2 if tagged else 0)
        # every letter a title actually has is a satisfiable candidate
        present = {first_letter(t) for t in all_titles} - {None}
        assert present == {
            spec_from_json(r["spec"]).letter
            for r in rows
            if r["author_qid"] == qid and r["constraint_type"] == "starts_with" and r["satisfiable"]
        }
        ends = {last_letter(t) for t in all_titles} - {None}
        assert ends == {
            spec_from_json(r["spec"]).letter
            for r in rows
            if r["author_qid"] == qid and r["constraint_type"] == "ends_with" and r["satisfiable"]
        }


@settings(max_examples=30, deadline=None)
@given(bibliographies(), st.randoms(use_true_random=False))
def test_ids_are_unique_stable_and_order_independent(data, rnd):
    authors, books, flags = data
    rows = generate_constraints(authors, books, flags).tables["constraints"]
    assert len({r["constraint_id"] for r in rows}) == len(rows)
    for r in rows:
        spec = spec_from_json(r["spec"])
        assert r["constraint_id"] == f"{r['author_qid']}:{spec.TYPE}:{spec.value}"
    for qid in {r["author_qid"] for r in rows}:
        assert [r["constraint_index"] for r in rows if r["author_qid"] == qid] == list(
            range(sum(r["author_qid"] == qid for r in rows))
        )
    shuffled_books, shuffled_authors = books[:], authors[:]
    rnd.shuffle(shuffled_books)
    rnd.shuffle(shuffled_authors)
    assert generate_constraints(shuffled_authors, shuffled_books, flags).tables["constraints"] == rows


def test_rows_match_the_schema_and_read_like_kitab():
    authors = [{"qid": "Q72334", "name": "Toni Morrison", "birth_year": 1931, "sitelinks": 122}]
    titles = [("Beloved", 1987), ("The Bluest Eye", 1970), ("Sula", 1973), ("Jazz", 1992), ("Song of Solomon", 1977)]
    books = [
        {
            "book_id": f"b{i}",
            "author_qid": "Q72334",
            "canonical_title": t,
            "first_year": y,
            "n_variants": 1,
            "variant_titles": [t],
        }
        for i, (t, y) in enumerate(titles)
    ]
    flags = {f"b{i}": {"human": t in ("Sula", "Song of Solomon"), "city": False} for i, (t, _) in enumerate(titles)}
    result = generate_constraints(authors, books, flags)
    rows = {r["constraint_id"]: r for r in result.tables["constraints"]}
    to_arrow("constraints", result.tables["constraints"])  # raises on any schema mismatch
    b = rows["Q72334:starts_with:b"]
    assert b["text"] == "Book title starts with the letter b."
    assert b["mapped_titles"] == ["Beloved", "The Bluest Eye"] and b["constrainedness"] == pytest.approx(0.6)
    assert rows["Q72334:starts_with:v"]["satisfiable"] is False
    assert rows["Q72334:year_range:1970-1974"]["mapped_titles"] == ["Sula", "The Bluest Eye"]
    assert rows["Q72334:year_range:1980-1984"]["n_mapped"] == 0  # a gap inside the career
    assert rows["Q72334:human_name:absent"]["text"] == "Book doesn't contain a human name in its title."
    assert rows["Q72334:city_name:present"]["constrainedness"] == 1.0
    assert result.stats["constraints"] == len(rows) and not result.rejects


def test_books_of_unknown_authors_are_rejected_not_dropped():
    result = generate_constraints(
        [],
        [
            {
                "book_id": "b1",
                "author_qid": "Q9",
                "canonical_title": "Sula",
                "first_year": 1973,
                "n_variants": 1,
                "variant_titles": ["Sula"],
            }
        ],
        {},
    )
    assert result.tables["constraints"] == []
    assert [(r["reason"], r["record_id"]) for r in result.rejects] == [("author_not_in_authors", "b1")]


# --- probe ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("Beloved (1987)\n", ("Beloved", 1987)),
        ("Gödel, Escher, Bach (1979)", ("Gödel, Escher, Bach", 1979)),
        ("Bach (1985) (1999)", ("Bach (1985)", 1999)),
        ("Paradise\n", ("Paradise", None)),
        ("(1999)", ("(1999)", None)),
    ],
)
def test_probe_line_format(line, parsed):
    assert split_title_year(line) == parsed


def test_probe_prints_every_candidate_as_json():
    lines = ["Beloved (1987)\n", "The Bluest Eye (1970)\n", "\n", "Sula (1973)\n", "Paradise\n"]
    out = [json.loads(line) for line in constraints_probe(lines)]
    assert {o["type"] for o in out} == {"starts_with", "ends_with", "word_count", "year_range"}
    b = next(o for o in out if o["spec"] == {"type": "starts_with", "letter": "b"})
    assert b == {
        "type": "starts_with",
        "spec": {"type": "starts_with", "letter": "b"},
        "text": "Book title starts with the letter b.",
        "mapped_titles": ["Beloved", "The Bluest Eye"],
        "S": 2,
        "N": 4,
        "kappa": 0.5,
    }
    assert sum(o["type"] == "starts_with" for o in out) == 26

    tagged = [json.loads(line) for line in constraints_probe(lines, taggers={"human": lambda t: t == "Sula"})]
    human = [o for o in tagged if o["type"] == "human_name"]
    assert [(o["text"], o["mapped_titles"]) for o in human] == [
        ("Book contains a human name in its title.", ["Sula"]),
        ("Book doesn't contain a human name in its title.", ["Beloved", "The Bluest Eye", "Paradise"]),
    ]
    assert not any(o["type"] == "city_name" for o in tagged)


def test_probe_agrees_with_the_stage():
    rng = random.Random(3)
    lines = [f"{' '.join(rng.sample(VOCAB, 3))} ({rng.randint(1950, 1999)})" for _ in range(12)]
    probe = [json.loads(line) for line in constraints_probe(lines)]
    books = [
        {
            "book_id": f"line:{n}",
            "author_qid": "Q1",
            "canonical_title": split_title_year(line)[0],
            "first_year": split_title_year(line)[1],
            "n_variants": 1,
            "variant_titles": [],
        }
        for n, line in enumerate(lines, start=1)
    ]
    rows = generate_constraints([{"qid": "Q1"}], books, {}).tables["constraints"]
    assert [(o["spec"], sorted(o["mapped_titles"]), o["S"]) for o in probe] == [
        (json.loads(r["spec"]), sorted(r["mapped_titles"]), r["n_mapped"]) for r in rows
    ]
