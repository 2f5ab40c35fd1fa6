"""The queries stage: seeded sampling at the configured rates, and the query rows."""

from __future__ import annotations

import ast
import math
import random
from collections import Counter
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core.schemas import to_arrow
from tasks.constraints import parse_criteria, spec_from_json, spec_type
from tasks.generate_constraints import generate_constraints
from tasks.sample_queries import SamplingRates, sample_queries

WORDS = (
    "apple bridge candle dragon ember falcon garden harbor island jungle kettle lantern meadow night "
    "ocean palace quiet river shadow tower umbra valley window xenon yellow zephyr love war time "
    "house heart stone road king queen"
).split()


def bibliography(n_authors: int, seed: int):
    """Seeded authors/books/flags with KITAB-like spread (titles of 1-6 words, ~20% names)."""
    rng = random.Random(seed)
    authors, books, flags = [], [], {}
    for a in range(n_authors):
        qid = f"Q{a + 1}"
        authors.append({"qid": qid, "name": f"Author {a}", "birth_year": 1900 + a % 80, "sitelinks": a % 50})
        for b in range(rng.randint(5, 20)):
            title = " ".join(rng.choice(WORDS).capitalize() for _ in range(rng.choice([1, 1, 2, 2, 3, 3, 4, 5, 6])))
            variants = [title, f"{title}: A Novel"] if rng.random() < 0.2 else [title]
            book_id = f"{qid}-{b}"
            books.append(
                {
                    "book_id": book_id,
                    "author_qid": qid,
                    "canonical_title": title,
                    "first_year": rng.randint(1930, 2000),
                    "n_variants": len(variants),
                    "variant_titles": variants,
                }
            )
            flags[book_id] = {"human": rng.random() < 0.2, "city": rng.random() < 0.04}
    return authors, books, flags


def with_constraints(n_authors: int, seed: int):
    authors, books, flags = bibliography(n_authors, seed)
    return authors, books, generate_constraints(authors, books, flags).tables["constraints"]


@pytest.fixture(scope="module")
def corpus():
    """Large enough for the rate checks: pools of hundreds to ~100k pairs."""
    return with_constraints(250, seed=11)


@pytest.fixture(scope="module")
def small_corpus():
    return with_constraints(40, seed=12)


def within_binomial(kept: int, pool: int, rate: float) -> bool:
    expected = pool * rate
    return abs(kept - expected) <= 4 * math.sqrt(pool * rate * (1 - rate)) + 1


def test_one_constraint_shares_follow_the_rates(corpus):
    authors, books, constraints = corpus
    rates = SamplingRates()
    result = sample_queries(constraints, authors, books, seed=7)
    by_id = {c["constraint_id"]: c for c in constraints}
    one = [by_id[q["constraint_ids"][0]] for q in result.tables["queries"] if q["n_constraints"] == 1]
    for kind in ("starts_with", "ends_with", "word_count", "year_range"):
        pool = sum(c["constraint_type"] == kind and c["satisfiable"] for c in constraints)
        kept = sum(c["constraint_type"] == kind and c["satisfiable"] for c in one)
        assert within_binomial(kept, pool, rates.one_rate(kind)), (kind, kept, pool)
    for kind in ("human_name", "city_name"):  # asked for every author, satisfiable or not
        assert sum(c["constraint_type"] == kind for c in one) == 2 * len(authors)
    unsatisfiable = [c for c in one if not c["satisfiable"]]
    assert abs(len(unsatisfiable) / len(one) - rates.one_unsatisfiable_share) <= 1 / len(one)
    # appended "of each type": the lexical/temporal types share the top-up evenly
    appended = Counter(c["constraint_type"] for c in unsatisfiable if c["constraint_type"] not in rates.always_asked)
    assert max(appended.values()) - min(appended.values()) <= 1, appended


def test_two_constraint_shares_follow_the_rates(corpus):
    authors, books, constraints = corpus
    rates = SamplingRates()
    queries = sample_queries(constraints, authors, books, seed=7).tables["queries"]
    pools, kept = Counter(), Counter()

    def stratum(kinds, n_mapped):
        if n_mapped == 0:
            return "unsatisfiable"
        if n_mapped > 1 and set(kinds) == {"starts_with", "year_range"}:
            return "easy"
        return {1: "one_book", 2: "two_books"}.get(n_mapped, "more_books")

    satisfiable = [c for c in constraints if c["satisfiable"]]
    by_author = {}
    for c in satisfiable:
        by_author.setdefault(c["author_qid"], []).append(c)
    for rows in by_author.values():
        for a, b in combinations(rows, 2):
            if a["constraint_type"] != b["constraint_type"]:
                n = len(set(a["mapped_book_ids"]) & set(b["mapped_book_ids"]))
                pools[stratum((a["constraint_type"], b["constraint_type"]), n)] += 1
    two = [q for q in queries if q["n_constraints"] == 2]
    for q in two:
        kept[stratum(q["constraint_types"], q["n_mapped"])] += 1
    for name, rate in (
        ("easy", rates.two_easy),
        ("one_book", rates.two_one_book),
        ("two_books", rates.two_two_books),
        ("more_books", rates.two_more_books),
    ):
        assert within_binomial(kept[name], pools[name], rate), (name, kept[name], pools[name])
    share = kept["unsatisfiable"] / len(two)
    assert share < 0.01 and abs(share - rates.two_unsatisfiable_share) <= 1 / len(two)


def test_rates_are_configuration(small_corpus):
    authors, books, constraints = small_corpus
    everything = SamplingRates(
        one_constraint={"starts_with": 1.0, "ends_with": 1.0, "word_count": 1.0},
        one_unsatisfiable_share=0.0,
        two_easy=1.0,
        two_one_book=1.0,
        two_two_books=1.0,
        two_more_books=1.0,
        two_unsatisfiable_share=0.0,
    )
    queries = sample_queries(constraints, authors, books, seed=1, rates=everything).tables["queries"]
    one = [q for q in queries if q["n_constraints"] == 1]
    assert len(one) == sum(c["satisfiable"] or c["constraint_type"] in ("human_name", "city_name") for c in constraints)
    assert all(q["satisfiable"] for q in queries if q["n_constraints"] == 2)
    nothing = SamplingRates(one_constraint={"starts_with": 0.0}, two_easy=0.0, two_one_book=0.0, two_more_books=0.0)
    queries = sample_queries(constraints, authors, books, seed=1, rates=nothing).tables["queries"]
    assert not any(q["constraint_types"] == ["starts_with"] and q["satisfiable"] for q in queries)
    assert not any(q["n_constraints"] == 2 for q in queries)  # no satisfiable pairs -> no unsatisfiable top-up


@pytest.mark.parametrize(
    "bad",
    [
        {"one_constraint": {"start_with": 0.15}},
        {"one_constraint": {"starts_with": 1.5}},
        {"two_easy": -0.1},
        {"one_unsatisfiable_share": 1.0},
        {"two_easy_types": ("starts_with", "starts_with")},
    ],
)
def test_bad_rates_are_refused(bad):
    with pytest.raises(ValueError):
        SamplingRates(**bad)


def test_same_seed_same_sample_other_seed_other_sample(small_corpus):
    authors, books, constraints = small_corpus
    first = sample_queries(constraints, authors, books, seed=5)
    rng = random.Random(0)
    shuffled = [constraints[:], authors[:], books[:]]
    for rows in shuffled:
        rng.shuffle(rows)
    again = sample_queries(*shuffled, seed=5)
    assert again.tables == first.tables and again.stats == first.stats
    other = sample_queries(constraints, authors, books, seed=6).tables["queries"]
    assert {q["query_id"] for q in other} != {q["query_id"] for q in first.tables["queries"]}


@st.composite
def small_inputs(draw):
    return with_constraints(draw(st.integers(1, 3)), seed=draw(st.integers(0, 10_000)))


@settings(max_examples=30, deadline=None)
@given(small_inputs(), st.integers(0, 2**32), st.randoms(use_true_random=False))
def test_sampling_is_deterministic_for_a_seed(inputs, seed, rnd):
    authors, books, constraints = inputs
    first = sample_queries(constraints, authors, books, seed=seed).tables
    shuffled = constraints[:]
    rnd.shuffle(shuffled)
    assert sample_queries(shuffled, authors, books, seed=seed).tables == first


@settings(max_examples=20, deadline=None)
@given(small_inputs(), st.integers(0, 2**32))
def test_query_rows(inputs, seed):
    authors, books, constraints = inputs
    # everything sampled, so every row shape shows up
    rates = SamplingRates(
        one_constraint={"starts_with": 1.0, "ends_with": 1.0, "word_count": 1.0},
        two_easy=1.0,
        two_one_book=1.0,
        two_two_books=1.0,
        two_more_books=1.0,
    )
    queries = sample_queries(constraints, authors, books, seed=seed, rates=rates).tables["queries"]
    to_arrow("queries", queries)  # raises on any schema mismatch
    by_id = {c["constraint_id"]: c for c in constraints}
    author = {a["qid"]: a for a in authors}
    assert len({q["query_id"] for q in queries}) == len(queries)
    two_ids = Counter()
    for q in queries:
        members = [by_id[cid] for cid in q["constraint_ids"]]
        specs = [spec_from_json(m["spec"]) for m in members]
        assert parse_criteria(q["constraints"]) == specs
        assert q["constraint_types"] == [s.TYPE for s in specs]
        # a book is mapped when one of its titles satisfies every criterion; it is listed by
        # the first such title
        titles = [dict(zip(m["mapped_book_ids"], m["satisfying_titles"])) for m in members]
        common = {b: [t for t in titles[0][b] if all(t in other.get(b, ()) for other in titles[1:])] for b in titles[0]}
        mapped = [b for b in members[0]["mapped_book_ids"] if common[b]]
        assert q["mapped_book_ids"] == mapped and q["n_mapped"] == len(mapped)
        assert q["mapped_titles"] == [common[b][0] for b in mapped]
        assert set(mapped) <= set.intersection(*(set(m["mapped_book_ids"]) for m in members))
        assert q["constrainedness"] == pytest.approx(1 - len(mapped) / q["n_books"])
        assert q["satisfiable"] == bool(mapped)
        a = author[q["author_qid"]]
        assert q["query"].startswith(f"List all books written by {a['name']} (born in {a['birth_year']}) ")
        if q["n_constraints"] == 1:
            assert q["kitab_constraint_type"] == specs[0].KITAB_TYPE
            assert q["kitab_index"] == members[0]["constraint_index"]
            assert q["constraints"] == f"Criterion 1: {specs[0].render()}"
        else:
            assert all(m["satisfiable"] for m in members)  # individually satisfiable
            assert specs[0].ORDER < specs[1].ORDER  # different types, in type order
            assert ast.literal_eval(q["kitab_constraint_type"]) == [s.KITAB_TYPE for s in specs]
            assert q["constraints"].split(", ")[1].startswith("Criterion 2: ")
            assert q["kitab_index"] == two_ids[q["author_qid"]]
            two_ids[q["author_qid"]] += 1


def test_the_paper_example_renders():
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
    constraints = generate_constraints(authors, books, {}).tables["constraints"]
    rates = SamplingRates(two_one_book=1.0)
    sampled = sample_queries(constraints, authors, books, seed=0, rates=rates).tables["queries"]
    queries = {q["query_id"]: q for q in sampled}
    year = queries["Q72334:year_range:1970-1974"]
    assert year["query"] == (
        "List all books written by Toni Morrison (born in 1931) that were first published between 1970-1974."
    )
    assert year["mapped_titles"] == ["Sula", "The Bluest Eye"] and year["constrainedness"] == pytest.approx(0.6)
    pair = queries["Q72334:starts_with:b+year_range:1970-1974"]
    assert pair["query"] == (
        "List all books written by Toni Morrison (born in 1931) whose title starts with the "
        "letter b and that were first published between 1970-1974."
    )
    assert pair["kitab_constraint_type"] == "['starts-with', 'publishing-year']"
    assert pair["constraints"] == (
        "Criterion 1: Book title starts with the letter b., Criterion 2: Book was first published between 1970-1974."
    )
    assert pair["mapped_titles"] == ["The Bluest Eye"] and pair["sample_stratum"] == "two:one_book"


def test_stale_or_orphan_constraints_are_refused(small_corpus):
    authors, books, constraints = small_corpus
    with pytest.raises(ValueError, match="stale"):
        sample_queries(constraints, authors, books[1:], seed=0)
    with pytest.raises(ValueError, match="authors"):
        sample_queries(constraints, authors[1:], books, seed=0)
    old = [{**constraints[0], "spec_version": 0}]
    with pytest.raises(ValueError, match="spec version"):
        sample_queries(old, authors, books, seed=0)


def test_types_are_the_registry_types():
    assert set(SamplingRates().one_constraint) | SamplingRates().always_asked <= {
        cls.TYPE for cls in map(spec_type, ("starts_with", "ends_with", "word_count", "human_name", "city_name"))
    }


@st.composite
def rates_drawn(draw):
    rate = st.floats(0.0, 1.0)
    return SamplingRates(
        one_constraint={t: draw(rate) for t in ("starts_with", "ends_with", "word_count")},
        one_unsatisfiable_share=draw(st.floats(0.0, 0.5)),
        two_easy=draw(rate),
        two_one_book=draw(rate),
        two_two_books=draw(rate),
        two_more_books=draw(rate),
        two_unsatisfiable_share=draw(st.floats(0.0, 0.5)),
    )


def refresh_sample(authors, books, constraints, seed, rates, cuts, root):
    """What a refresh runs (tasks/steps.py): the per-author draws batch by batch, written as
    the constrain step writes them, then the global top-ups and numbering in DuckDB
    (sample_queries_step). ``cuts``: where the authors are split into batches."""
    from kitab.core.refs import read_rows, write_rows
    from kitab.core.workdir import StepResult, WorkDir
    from tasks.sample_queries import batch_counts, batch_tables, group_constraints, sample_authors_queries
    from tasks.steps import RunContext, sample_queries_step

    ctx = RunContext(release="r", seed=seed, today_year=2024, work=WorkDir(str(root)), sources=None)
    bounds = [0, *sorted(set(cuts)), len(authors)]
    collected, constrained = [], []
    for index, (start, stop) in enumerate(zip(bounds, bounds[1:])):
        if start >= stop:
            continue
        part = f"{index:05d}"
        batch = authors[start:stop]
        qids = {a["qid"] for a in batch}
        rows = [c for c in constraints if c["author_qid"] in qids]
        by_author, authors_by_qid = group_constraints(rows, batch, [b for b in books if b["author_qid"] in qids])
        drawn = sample_authors_queries(by_author, seed, rates)
        tables = {"constraints": rows, **batch_tables(drawn, authors_by_qid, seed)}
        outputs = {name: write_rows(name, table, ctx.work.path("c", part, name)) for name, table in tables.items()}
        constrained.append(StepResult(outputs, {"sample_queries": batch_counts(by_author, drawn)}))
        # the authors table's other columns are the collect step's: an inferred schema will do here
        collected.append(StepResult({"authors": write_rows("_authors", batch, ctx.work.path("a", part, "authors"))}))
    ref, summary = sample_queries_step(ctx, collected, constrained, rates)
    return read_rows(ref), summary


@settings(max_examples=40, deadline=None)
@given(
    small_inputs(),
    st.integers(0, 2**32),
    rates_drawn(),
    st.lists(st.integers(0, 3), max_size=3),
)
def test_the_refresh_samples_what_sample_queries_samples(inputs, seed, rates, cuts):
    """The two forms of one rule: sample_queries in memory (tests, benchmarks/table2.py) and
    the refresh's batches + DuckDB top-ups and numbering give the same queries, row for row."""
    import tempfile

    from kitab.core.schemas import to_arrow

    authors, books, constraints = inputs
    expected = sample_queries(constraints, authors, books, seed=seed, rates=rates)
    with tempfile.TemporaryDirectory() as root:
        rows, summary = refresh_sample(authors, books, constraints, seed, rates, cuts, root)
    # the same rows; their order in the file is not the release's (the warehouse writes a
    # table in its key's order, queries by query_id)
    assert sorted(rows, key=by_id) == sorted(to_arrow("queries", expected.tables["queries"]).to_pylist(), key=by_id)
    assert summary == expected.stats


def by_id(row: dict) -> str:
    return row["query_id"]


@settings(max_examples=40, deadline=None)
@given(small_inputs(), st.integers(0, 2**32), rates_drawn())
def test_the_batch_columns_write_the_batch_rows(inputs, seed, rates):
    """The constrain step writes the unsatisfiable candidates as columns (batch_columns, through
    write_columns); the rows of batch_tables, its reference, written as rows give the same bytes."""
    import tempfile
    from pathlib import Path

    from kitab.core.refs import write_columns, write_rows
    from tasks.sample_queries import (
        AuthorQueries,
        batch_columns,
        batch_tables,
        group_constraints,
        sample_authors_queries,
    )

    authors, books, constraints = inputs
    by_author, authors_by_qid = group_constraints(constraints, authors, books)
    # and a batch that drew nothing: its empty tables are written as write_rows writes no rows
    for drawn in (sample_authors_queries(by_author, seed, rates), AuthorQueries()):
        rows, columns = batch_tables(drawn, authors_by_qid, seed), batch_columns(drawn, authors_by_qid, seed)
        assert list(rows) == list(columns)
        with tempfile.TemporaryDirectory() as root:
            for name, table in rows.items():
                expected = write_rows(name, table, Path(root) / f"rows.{name}.parquet")
                write = write_columns if isinstance(columns[name], dict) else write_rows
                written = write(name, columns[name], Path(root) / f"columns.{name}.parquet")
                assert (written.rows, written.sha256) == (expected.rows, expected.sha256), name
