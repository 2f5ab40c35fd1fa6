"""The dump's author name search (kitab/sources/dump/search.py): the NumPy intersections give
exactly the join's answers (SEARCH_SQL, the reference form) on generated token tables."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.sources.dump import search
from kitab.sources.dump.keyed import KeyedTable, write_keyed
from kitab.sources.dump.search import SEARCH_SQL, TokenIndex, search_names, token_index

TOKENS = ["a", "b", "c", "d", "é", "zz"]
KEYS = [f"/authors/OL{n}A" for n in (1, 2, 3, 10, 11, 20)] + [
    "/authors/x",
    "/authors/É",
    "/authors/OL01A",
    "/authors/OL002A",
]


def _reference(wanted: list[list[str]], rows: pa.Table, limit: int) -> list[tuple[int, list[str]]]:
    queries = [(i, t) for i, tokens in enumerate(wanted) for t in tokens]
    found = [(0, []) for _ in wanted]
    if not queries:
        return found
    con = duckdb.connect()
    con.register("author_tokens_rows", rows)
    ids, toks = zip(*queries)
    for qid, key, total in con.execute(SEARCH_SQL.format(limit=limit), [list(ids), list(toks)]).fetchall():
        found[qid] = (total, found[qid][1] + [key])
    return found


@st.composite
def token_tables(draw):
    # each author: a key number (ties and the -1 of a key without one), a work count (ties), a token bag
    authors = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=len(KEYS)))
    rows = []
    for key in authors:
        num = -1 if not key[-2].isdigit() else int(key.removeprefix("/authors/OL")[:-1])
        count = draw(st.integers(0, 3))
        for token in draw(st.sets(st.sampled_from(TOKENS), max_size=4)):
            rows.append((token, key, num, count))
    rows.sort(key=lambda r: (r[0], r[1]))
    table = pa.table(
        {name: [r[i] for r in rows] for i, name in enumerate(("token", "key", "key_num", "work_count"))},
        schema=pa.schema(
            [("token", pa.string()), ("key", pa.string()), ("key_num", pa.int64()), ("work_count", pa.int64())]
        ),
    )
    wanted = draw(st.lists(st.lists(st.sampled_from(TOKENS + ["missing"]), unique=True, max_size=3), max_size=6))
    return wanted, table, draw(st.integers(1, 4))


@settings(max_examples=150, deadline=None)
@given(token_tables())
def test_search_names_equals_the_join(case):
    wanted, rows, limit = case
    assert search_names(wanted, rows, limit) == _reference(wanted, rows, limit)


def test_search_names_orders_by_work_count_then_key_number_then_key():
    rows = pa.table(
        {
            "token": ["a", "a", "a", "a", "b", "b"],
            "key": ["/authors/OL1A", "/authors/OL2A", "/authors/OL3A", "/authors/x", "/authors/OL2A", "/authors/x"],
            "key_num": [1, 2, 3, -1, 2, -1],
            "work_count": [5, 7, 7, 7, 7, 7],
        }
    )
    assert search_names([["a"], ["a", "b"], [], ["a", "c"]], rows, 3) == [
        (4, ["/authors/x", "/authors/OL2A", "/authors/OL3A"]),
        (2, ["/authors/x", "/authors/OL2A"]),
        (0, []),
        (0, []),
    ]


def test_keys_sharing_a_number_are_told_apart():
    """Two keys with one key number in different tokens' runs match by number only: the keys
    themselves decide (and a run holding both, or a key without a number, goes the exact way)."""
    rows = pa.table(
        {
            "token": ["a", "a", "b", "b", "c", "c", "d"],
            "key": [
                "/authors/OL1A",
                "/authors/OL2A",
                "/authors/OL01A",
                "/authors/OL2A",
                "/authors/OL01A",
                "/authors/OL1A",
                "/authors/x",
            ],
            "key_num": [1, 2, 1, 2, 1, 1, -1],
            "work_count": [3, 1, 3, 1, 3, 3, 2],
        }
    )
    wanted = [["a", "b"], ["a", "c"], ["b", "c"], ["d"], ["a"]]
    expected = [
        (1, ["/authors/OL2A"]),
        (1, ["/authors/OL1A"]),
        (1, ["/authors/OL01A"]),
        (1, ["/authors/x"]),
        (2, ["/authors/OL1A", "/authors/OL2A"]),
    ]
    assert search_names(wanted, rows, 5) == expected == _reference(wanted, rows, 5)


@settings(max_examples=60, deadline=None)
@given(
    token_tables(),
    st.lists(st.lists(st.lists(st.sampled_from(TOKENS), unique=True, max_size=3), max_size=4), max_size=3),
)
def test_one_index_answers_every_batch_as_its_own_rows_do(case, later):
    """A TokenIndex of the whole table, reused by batch after batch (as a worker reuses the
    whole-table index), answers each batch as that batch's rows alone (and the join) do."""
    wanted, rows, limit = case
    index = TokenIndex(rows)
    for names in [wanted, *later]:
        asked = sorted({t for name in names for t in name})
        own = rows.filter(pc.is_in(rows["token"], value_set=pa.array(asked, pa.string())))
        assert search_names(names, index, limit) == search_names(names, own, limit) == _reference(names, own, limit)


def test_a_small_token_table_is_read_once_per_process(tmp_path, monkeypatch):
    """token_index: the whole small table, read once and reused; past WHOLE_TOKEN_TABLE_BYTES
    the asked tokens' rows alone; both give the same answers."""
    con = duckdb.connect()
    con.execute(f"""
        COPY (SELECT * FROM (VALUES ('a', '/authors/OL1A', 1, 3), ('a', '/authors/OL2A', 2, 1),
                                    ('b', '/authors/OL2A', 2, 1), ('c', '/authors/OL3A', 3, 0))
                     t(token, key, key_num, work_count) ORDER BY token, key)
        TO '{tmp_path / "author_tokens.parquet"}' (FORMAT parquet)""")
    write_keyed(con, tmp_path, "author_tokens", "token")
    table = KeyedTable(tmp_path, "author_tokens", key="token")
    whole = token_index(table, ["a"])
    assert whole is token_index(table, ["b", "c"]) and whole.rows.num_rows == 4
    monkeypatch.setattr(search, "WHOLE_TOKEN_TABLE_BYTES", 0)
    own = token_index(table, ["a", "b"])
    assert own is not whole and own.rows.num_rows == 3
    names = [["a"], ["a", "b"], ["b"]]
    expected = [(2, ["/authors/OL1A", "/authors/OL2A"]), (1, ["/authors/OL2A"]), (1, ["/authors/OL2A"])]
    assert search_names(names, whole, 5) == search_names(names, own, 5) == expected
    assert search_names([["c"]], whole, 5) == [(1, ["/authors/OL3A"])]
