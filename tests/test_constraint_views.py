"""The KITAB-compatible views (sql/marts/kitab_*.sql) over in-memory DuckDB tables, and their
Parquet export read back by Hugging Face ``datasets`` offline."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core.schemas import to_arrow
from tasks.generate_constraints import generate_constraints
from tasks.sample_queries import SamplingRates, sample_queries

ROOT = Path(__file__).resolve().parents[1]
MARTS = sorted((ROOT / "sql" / "marts").glob("kitab_*.sql"))
STAGING = [ROOT / "sql" / "staging" / "synthetic_ids.sql"]
ONE_BOOK = [
    "Author",
    "Birth Year",
    "# of sitelinks",
    "constraint_id",
    "constraint_type",
    "constraints",
    "mapped_books",
    "all_books",
    "raw_books",
    "query_id",
    "unsure_books",
    "release",
]
AUTHOR_METADATA = ["Author", "Birth Year", "# of sitelinks", "WikiData ID", "OpenLibrary ID", "synthetic", "release"]

AUTHORS = [
    {
        "qid": "Q72334",
        "name": "Toni Morrison",
        "birth_year": 1931,
        "sitelinks": 122,
        "wd_work_count": 40,
        "ol_author_key": "OL31120A",
        "match_method": "p648",
        "source": "dump",
    },
    {
        "qid": "Q5878",
        "name": "Gabriel García Márquez",
        "birth_year": 1927,
        "sitelinks": 190,
        "wd_work_count": 60,
        "ol_author_key": "OL4586796A",
        "match_method": "p648",
        "source": "dump",
    },
    {
        "qid": "Q1",
        "name": "Nobody Unmatched",
        "birth_year": 1950,
        "sitelinks": 1,
        "wd_work_count": 12,
        "ol_author_key": None,
        "match_method": "unmatched",
        "source": "dump",
    },
]
TITLES = {  # title, first year, variants, human name?
    "Q72334": [
        ("Beloved", 1987, [], True),
        ("The Bluest Eye", 1970, ["Bluest Eye"], False),
        ("Sula", 1973, [], True),
        ("Jazz", 1992, [], False),
        ("Song of Solomon", 1977, [], True),
        ("Tar Baby", None, [], False),
    ],
    "Q5878": [
        ("Cien años de soledad", 1967, ["One Hundred Years of Solitude"], False),
        ("Love in the Time of Cholera", 1985, [], False),
        ("Of Love and Other Demons", 1994, [], False),
        ("Memories of My Melancholy Whores", 2004, [], False),
        ("The General in His Labyrinth", 1989, [], False),
        ('Tomás "El" Sánchez', 2003, [], True),
        ("Chronicle of a Death Foretold", 1981, [], False),
        ("Leaf Storm \\ Other Stories", 1955, [], False),
        ("Gulliver's 'Travels'", 1960, [], False),
        ("The Autumn of the Patriarch", 1975, [], False),
    ],
}


REJECTED = [
    ("not_english_tagged", "Cien años de soledad"),
    ("language_unknown", "Effi Briest"),
    ("empty_title", "?!..."),
    ("wikidata_other_author", "Somebody Else's Novel"),
    ("title_is_author_name", "Morrison, Toni"),
]


def rejects_rows():
    return [
        {
            "stage": "clean_books",
            "reason": reason,
            "record_kind": "work",
            "record_id": f"/works/{qid}-{reason}",
            "author_qid": qid,
            "title": title,
            "evidence": None,
        }
        for qid in TITLES
        for reason, title in REJECTED
    ]


def rows():
    books, flags, works = [], {}, []
    for qid, titles in TITLES.items():
        for i, (title, year, variants, human) in enumerate(titles):
            book_id = f"{qid}-b{i}"
            books.append(
                {
                    "book_id": book_id,
                    "author_qid": qid,
                    "canonical_title": title,
                    "first_year": year,
                    "n_variants": 1 + len(variants),
                    "variant_titles": [title, *variants],
                }
            )
            flags[book_id] = {"human": human, "city": title.startswith("Love")}
            works.extend(
                {
                    "author_qid": qid,
                    "ol_author_key": "OL1A",
                    "work_key": f"/works/{book_id}-{j}W",
                    "title": t,
                    "source": "dump",
                    "request_fingerprint": "x",
                }
                for j, t in enumerate([title, *variants])
            )
        works.append(
            {
                "author_qid": qid,
                "ol_author_key": "OL1A",
                "work_key": f"/works/{qid}-anthology",
                "title": "Best Stories 2022",
                "source": "dump",
                "request_fingerprint": "x",
            }
        )
        # fetched, then rejected by clean_books: only the language reject stays in raw_books
        for reason, title in REJECTED:
            works.append(
                {
                    "author_qid": qid,
                    "ol_author_key": "OL1A",
                    "work_key": f"/works/{qid}-{reason}",
                    "title": title,
                    "source": "dump",
                    "request_fingerprint": "x",
                }
            )
    constraints = generate_constraints(AUTHORS, books, flags).tables["constraints"]
    rates = SamplingRates(
        one_constraint={"starts_with": 1.0, "ends_with": 1.0, "word_count": 1.0},
        two_easy=1.0,
        two_one_book=1.0,
        two_two_books=1.0,
        two_more_books=1.0,
    )
    queries = sample_queries(constraints, AUTHORS, books, seed=3, rates=rates).tables["queries"]
    return books, works, constraints, queries


def with_release(table: pa.Table, release: str) -> pa.Table:
    """The warehouse's raw views add the hive partition column ``release``."""
    return table.append_column("release", pa.array([release] * table.num_rows, pa.string()))


@pytest.fixture(scope="module")
def catalog():
    books, works, constraints, queries = rows()
    # an earlier release sampled Toni Morrison too, unmatched there: nothing of it may leak in
    earlier_author = {**AUTHORS[0], "ol_author_key": None, "match_method": "unmatched", "sitelinks": 99}
    earlier_work = {**works[0], "title": "Not In This Release"}
    tables = {
        "authors": [to_arrow("authors", AUTHORS), to_arrow("authors", [earlier_author])],
        "works_raw": [to_arrow("works_raw", works), to_arrow("works_raw", [earlier_work])],
        "books": [to_arrow("books", books)],
        "constraints": [to_arrow("constraints", constraints)],
        "queries": [to_arrow("queries", queries)],
        "rejects": [to_arrow("rejects", rejects_rows())],
    }
    con = duckdb.connect()
    for name, (current, *earlier) in tables.items():
        table = pa.concat_tables([with_release(current, "r2"), *(with_release(t, "r1") for t in earlier)])
        con.register(f"{name}_arrow", table)
        con.execute(f"create table {name} as select * from {name}_arrow")
    for path in [*STAGING, *MARTS]:  # in name order, as the catalog runs them
        con.execute(path.read_text())
    yield con, books, queries
    con.close()


def fetch(con, sql):
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def test_one_book_rows_have_kitab_columns_and_formats(catalog):
    con, books, queries = catalog
    out = fetch(con, "select * from kitab_one_book_constraints")
    assert list(out[0]) == ONE_BOOK
    by_query = {q["query_id"]: q for q in queries}
    assert len(out) == sum(q["n_constraints"] == 1 for q in queries)
    for row in out:
        q = by_query[row["query_id"]]
        assert row["constraint_type"] == q["kitab_constraint_type"]
        assert row["constraints"] == q["constraints"] and row["constraints"].startswith("Criterion 1: ")
        assert row["constraint_id"] == q["kitab_index"]
        assert ast.literal_eval(row["mapped_books"]) == q["mapped_titles"]
        assert row["mapped_books"] == repr(q["mapped_titles"])  # Python's own repr, quote choice included
        author_books = sorted(
            (b for b in books if b["author_qid"] == q["author_qid"]), key=lambda b: (b["canonical_title"], b["book_id"])
        )
        expected = [
            f"{b['canonical_title']} ({b['first_year']})" if b["first_year"] else b["canonical_title"]
            for b in author_books
        ]
        assert row["all_books"] == repr(expected)
        raw = ast.literal_eval(row["raw_books"])
        assert {"Best Stories 2022", "Cien años de soledad", "Effi Briest"} <= set(
            raw
        )  # kept; dropped for language only
        assert not {"?!...", "Somebody Else's Novel", "Morrison, Toni"} & set(raw)  # junk, or not the author's
        assert "Not In This Release" not in row["raw_books"] and row["release"] == "r2"
    assert [type(out[0][c]) for c in ("Birth Year", "# of sitelinks", "constraint_id")] == [int, int, int]
    assert [r["Author"] for r in out][0] == "Gabriel García Márquez"  # most sitelinks first
    human = [r for r in out if r["constraint_type"] == "human-name"]
    assert {r["constraints"] for r in human} == {
        "Criterion 1: Book contains a human name in its title.",
        "Criterion 1: Book doesn't contain a human name in its title.",
    }


def test_two_book_rows(catalog):
    con, _, queries = catalog
    out = fetch(con, "select * from kitab_two_book_constraints")
    assert list(out[0]) == ONE_BOOK
    assert len(out) == sum(q["n_constraints"] == 2 for q in queries) > 0
    for row in out:
        kinds = ast.literal_eval(row["constraint_type"])
        criteria = row["constraints"].split(",")  # as KITAB's evaluator does
        assert len(kinds) == len(criteria) == 2
        assert criteria[0].startswith("Criterion 1: ") and criteria[1].startswith(" Criterion 2: ")
        assert isinstance(ast.literal_eval(row["mapped_books"]), list)
    assert "['starts-with', 'publishing-year']" in {r["constraint_type"] for r in out}


def test_author_metadata(catalog):
    con, _, _ = catalog
    out = fetch(con, "select * from kitab_author_metadata")
    assert out == [
        {
            "Author": "Gabriel García Márquez",
            "Birth Year": 1927,
            "# of sitelinks": 190,
            "WikiData ID": "Q5878",
            "OpenLibrary ID": "OL4586796A",
            "synthetic": False,
            "release": "r2",
        },
        {
            "Author": "Toni Morrison",
            "Birth Year": 1931,
            "# of sitelinks": 122,
            "WikiData ID": "Q72334",
            "OpenLibrary ID": "OL31120A",
            "synthetic": False,
            "release": "r2",
        },
    ]
    types = {name: str(t) for name, t, *_ in con.execute("describe kitab_author_metadata").fetchall()}
    assert types == {
        "Author": "VARCHAR",
        "Birth Year": "BIGINT",
        "# of sitelinks": "BIGINT",
        "WikiData ID": "VARCHAR",
        "OpenLibrary ID": "VARCHAR",
        "synthetic": "BOOLEAN",
        "release": "VARCHAR",
    }


@pytest.mark.parametrize(
    ("record_id", "source", "synthetic"),
    [
        ("Q990000050", "dump", True),
        ("OL990000032A", "mirror", True),
        ("/works/OL990000001W", "dump", True),
        ("Q990000050", "live", False),  # live ids are real whatever their number
        ("Q990000000", "dump", False),
        ("Q72334", "dump", False),
        ("OL31120A", "dump", False),
        ("/works/OL45804W", "dump", False),
        (None, "dump", False),
        ("", "dump", False),
    ],
)
def test_synthetic_ids_follow_the_snapshot_rule(catalog, record_id, source, synthetic):
    from kitab.simulate.generator.spec import SYNTHETIC_ID_BASE

    con, _, _ = catalog
    assert SYNTHETIC_ID_BASE == 990_000_000  # the number sql/staging/synthetic_ids.sql hard-codes
    assert con.execute("select kitab_synthetic_id(?, ?)", [record_id, source]).fetchone()[0] is synthetic


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(), max_size=5))
def test_python_list_literal_reads_back(catalog, titles):
    con, _, _ = catalog
    (literal,) = con.execute("select kitab_py_list(?::varchar[])", [titles]).fetchone()
    assert ast.literal_eval(literal) == titles
    if all(t.isprintable() for t in titles):
        assert literal == repr(titles)


def test_views_export_to_parquet_and_load_with_datasets(catalog, tmp_path):
    con, _, _ = catalog
    counts = {}
    for view in ("kitab_one_book_constraints", "kitab_two_book_constraints", "kitab_author_metadata"):
        con.execute(f"copy (select * from {view}) to '{tmp_path / view}.parquet' (format parquet)")
        counts[view] = con.execute(f"select count(*) from {view}").fetchone()[0]
    script = """
import json, sys
from datasets import load_dataset
out = {}
for view in json.loads(sys.argv[1]):
    ds = load_dataset("parquet", data_files={"test": f"{sys.argv[2]}/{view}.parquet"}, split="test",
                      cache_dir=f"{sys.argv[2]}/hf-cache")
    out[view] = [ds.num_rows, ds.column_names, ds[0]]
print(json.dumps(out))
"""
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(sorted(counts)), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert {view: n for view, (n, _, _) in loaded.items()} == counts
    assert loaded["kitab_one_book_constraints"][1] == ONE_BOOK
    assert loaded["kitab_author_metadata"][1] == AUTHOR_METADATA
    first = loaded["kitab_one_book_constraints"][2]
    assert isinstance(first["Birth Year"], int) and ast.literal_eval(first["all_books"])
