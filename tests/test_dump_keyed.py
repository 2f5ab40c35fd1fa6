"""Lookups by key in the dump cache (kitab.sources.dump.keyed.KeyedTable): the rows of a batch's keys,
exactly those a full scan finds, read without touching the rest of the table."""

from __future__ import annotations

import shutil
import sys

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kitab.sources.dump import keyed
from kitab.sources.dump.keyed import KeyedTable, key_hash, keyed_files, write_keyed

ARROW_BATCH_ROWS = 200  # small record batches: a table of many, so what a lookup touches shows
N_KEYS = 6_000
# keys of every kind the cache holds: ASCII, accents, astral plane, quotes, the empty string
KEY = (
    "(CASE WHEN i % 7 = 0 THEN 'Ünï ' || i WHEN i % 11 = 0 THEN '𝔅𝔬𝔬𝔨 ' || i WHEN i % 13 = 0 THEN 'O''Brien ' || i "
    "WHEN i = 1 THEN '' ELSE 'key ' || i END)"
)


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory):
    """A table sorted by ``k``: key i has i % 5 rows (0 to 4: some keys have none), a list column
    and a few rows with a NULL key, in many record batches."""
    out = tmp_path_factory.mktemp("keyed")
    con = duckdb.connect()
    con.execute(f"""
        COPY (SELECT {KEY} AS k, i, j, [i, j] AS pair, repeat('x', (i * j) % 40) AS text
              FROM range({N_KEYS}) a(i), range(4) b(j) WHERE j < i % 5
              UNION ALL SELECT NULL, -1, j, [], 'no key' FROM range(3) b(j)
              ORDER BY k, i, j)
        TO '{out / "t.parquet"}' (FORMAT parquet, ROW_GROUP_SIZE 2048)""")
    write_keyed(con, out, "t", "k", arrow_batch_rows=ARROW_BATCH_ROWS)
    con.close()
    return out


@pytest.fixture(scope="module")
def table(table_dir):
    return KeyedTable(table_dir, "t", key="k")


def all_keys() -> list[str]:
    return duckdb.execute(f"SELECT {KEY} FROM range({N_KEYS}) a(i)").fetchall()


def full_scan(folder, keys: list[str]) -> list[dict]:
    """The plain query: every row of the Parquet file whose key is one of ``keys``, in file order."""
    with duckdb.connect() as con:  # its own connection: the default one is shared by every test
        return (
            con.sql(
                f"""
            SELECT * EXCLUDE (file_row_number) FROM read_parquet('{folder / "t.parquet"}', file_row_number = true)
            WHERE k IN (SELECT unnest(?::VARCHAR[])) ORDER BY file_row_number""",
                params=[keys],
            )
            .to_arrow_table()
            .to_pylist()
        )


KEYS = [k for (k,) in all_keys()]
some_keys = st.lists(st.one_of(st.sampled_from(KEYS), st.text(max_size=12)), max_size=60)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=some_keys)
def test_rows_equal_a_full_scan(table_dir, table, keys):
    before = (table.rows_read, table.batches_read)
    got = table.rows(keys).to_pylist()
    assert got == full_scan(table_dir, keys)
    # what it cost: exactly the matching rows, in the record batches they sit in
    batches = {row_number // ARROW_BATCH_ROWS for row_number in row_numbers(table_dir, keys)}
    assert (table.rows_read - before[0], table.batches_read - before[1]) == (len(got), len(batches))


def row_numbers(folder, keys: list[str]) -> list[int]:
    return [
        n
        for (n,) in duckdb.execute(
            f"""
        SELECT file_row_number FROM read_parquet('{folder / "t.parquet"}', file_row_number = true)
        WHERE k IN (SELECT unnest(?::VARCHAR[]))""",
            [keys],
        ).fetchall()
    ]


def test_a_lookup_reads_its_keys_rows_not_the_table(table_dir, table):
    total_batches = len(table.offsets) - 1
    assert total_batches > 40  # the table is large next to one lookup
    before = (table.rows_read, table.batches_read)
    got = table.rows(["key 4", "key 9", "no such key"])
    assert got.column("k").to_pylist() == ["key 4"] * 4 + ["key 9"] * 4
    assert (table.rows_read - before[0], table.batches_read - before[1]) <= (8, 2)
    # a batch of scattered keys: a batch per key at most, however many the table has
    scattered = KEYS[::150]
    before = table.batches_read
    table.rows(scattered)
    assert table.batches_read - before <= len(scattered) < total_batches


def test_no_keys_and_absent_keys(table):
    assert table.rows([]).num_rows == 0
    assert table.rows(["nope", "key 5"]).num_rows == 0  # 5 % 5 = 0 rows
    assert table.rows(["lone \ud800 surrogate", "key 4"]).column("k").to_pylist() == ["key 4"] * 4
    assert table.rows([]).schema == table.schema


def test_keys_sharing_a_hash_still_get_only_their_rows(table_dir, tmp_path, monkeypatch):
    """Two keys with one 64-bit hash: the index sends both runs, the exact test keeps the right one."""
    folder = tmp_path / "collide"
    shutil.copytree(table_dir, folder)
    index_path = folder / keyed_files("t")[1]
    index = np.load(index_path)
    index[0] = 0  # every key the same hash (still sorted)
    np.save(index_path, index)
    monkeypatch.setattr(keyed, "key_hash", lambda key: 0)
    colliding = KeyedTable(folder, "t", key="k")
    keys = ["key 3", "Ünï 7", "O'Brien 13", "absent"]
    assert colliding.rows(keys).to_pylist() == full_scan(table_dir, keys)


def test_a_table_not_sorted_by_its_key_is_refused(tmp_path):
    con = duckdb.connect()
    con.execute(f"COPY (SELECT (i % 3)::VARCHAR AS k, i FROM range(10) t(i) ORDER BY i) TO '{tmp_path / 't.parquet'}'")
    with pytest.raises(RuntimeError, match="not sorted by k"):
        write_keyed(con, tmp_path, "t", "k")


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"])), max_size=20))
def test_key_hash_is_duckdbs_md5_number_lower(keys):
    """The index is built by DuckDB's md5_number_lower and searched with key_hash: the same numbers."""
    ((expected,),) = duckdb.execute(
        "SELECT list_transform(?::VARCHAR[], lambda x: md5_number_lower(x))", [keys]
    ).fetchall()
    assert [key_hash(k) for k in keys] == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise(MADV_DONTNEED)")
def test_a_mapped_files_pages_leave_the_process_once_dropped(tmp_path):
    """drop_pages: what a lookup touched of a memory-mapped data file no longer counts in this
    process's RSS (a 100,000-author dump's lookups touched up to 400 MiB of it), and the map
    still reads the same bytes after."""
    import pyarrow as pa

    from kitab.sources.dump.keyed import drop_pages

    path = tmp_path / "big.bin"
    data = np.arange(8 << 20, dtype=np.int64)  # 64 MiB
    data.tofile(path)

    def file_rss_mib() -> float:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("RssFile")) / 1024

    source = pa.memory_map(str(path), "r")
    try:
        base = file_rss_mib()
        whole = source.read_buffer()
        mapped = np.frombuffer(whole, dtype=np.int64)
        total = int(mapped.sum())  # every page touched
        touched = file_rss_mib()
        assert touched - base > 48
        assert drop_pages([None, whole.slice(1 << 20, 1 << 20)]) is True  # its span only: 1 MiB
        assert touched - file_rss_mib() < 4
        assert drop_pages([whole.slice(0, 1 << 20), None, whole.slice(40 << 20)]) is True  # the span between too
        assert file_rss_mib() - base < 8
        assert int(mapped.sum()) == total == int(data.sum())  # read again, the same
    finally:
        del mapped, whole
        source.close()
