"""kitab.core.refs.read_slice: a batch's rows of a step's output, the same as slicing them all;
iter_rows: every row of several refs, streamed, the same as read_rows."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kitab.core.refs import TableRef, iter_rows, read_rows, read_slice

ROWS = 1_000


@pytest.fixture(scope="module")
def ref(tmp_path_factory) -> TableRef:
    """A file of many row groups of uneven sizes, with a list and a null column."""
    path = tmp_path_factory.mktemp("refs") / "t.parquet"
    table = pa.table(
        {
            "i": list(range(ROWS)),
            "name": [f"author {i}" for i in range(ROWS)],
            "ids": [[f"OL{i}A"] * (i % 3) for i in range(ROWS)],
            "none": [None] * ROWS,
        }
    )
    with pq.ParquetWriter(path, table.schema) as writer:
        start = 0
        for size in [1, 99, 300, 7, 93, 500]:
            writer.write_table(table.slice(start, size))
            start += size
    assert pq.ParquetFile(path).metadata.num_row_groups == 6
    return TableRef("t", str(path), ROWS, "")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(0, ROWS + 5), length=st.integers(0, ROWS + 5))
def test_read_slice_equals_slicing_every_row(ref, start, length):
    assert read_slice(ref, start, start + length) == read_rows(ref)[start : start + length]


def test_an_empty_ref(tmp_path):
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"i": pa.array([], pa.int64())}), path)
    assert read_slice(TableRef("t", str(path), 0, ""), 0, 250) == []


def test_iter_rows_streams_what_read_rows_reads(ref, tmp_path):
    """Several refs (one empty, one of many uneven row groups), in file order; ``columns`` keeps
    only those, in the same order."""
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"i": pa.array([], pa.int64())}), empty)
    small = tmp_path / "small.parquet"
    pq.write_table(pa.table({"i": [-1, -2], "name": ["x", None], "ids": [[], ["a"]], "none": [None, None]}), small)
    refs = [ref, TableRef("t", str(empty), 0, ""), TableRef("t", str(small), 2, ""), ref]
    streamed = iter_rows(refs)
    assert next(streamed) == read_rows(ref)[0]  # a generator: nothing read before it is asked
    assert [read_rows(ref)[0], *streamed] == read_rows(refs)
    assert len(read_rows(refs)) == 2 * ROWS + 2
    assert list(iter_rows(refs, columns=["name", "i"])) == [{"name": r["name"], "i": r["i"]} for r in read_rows(refs)]


def test_duck_takes_this_process_share_of_the_threads():
    from kitab.core.refs import duck, set_duck_threads

    try:
        set_duck_threads(1)
        with duck() as con:
            assert con.execute("SELECT current_setting('threads')").fetchone()[0] == 1
        with duck(threads=3) as con:  # a caller's own number wins
            assert con.execute("SELECT current_setting('threads')").fetchone()[0] == 3
    finally:
        set_duck_threads(None)


def test_each_worker_process_gets_its_share_of_the_cores():
    """Two worker processes on this machine: each DuckDB gets cores // 2 threads, not all of them."""
    import os

    from flows.runners import LocalRunner
    from kitab.core.refs import duck_threads

    runner = LocalRunner(workers=2)
    try:
        shares = runner.map(duck_threads, [(), ()], cpu=True)
    finally:
        runner.close()
    assert shares == [max(1, (os.cpu_count() or 1) // 2)] * 2
    assert duck_threads() is None  # the parent's own DuckDB is not limited


def test_read_parquet_file_is_read_table(ref, tmp_path):
    """read_arrow's reader: the table pq.read_table gives (types, values, schema metadata), for a
    file of many row groups and for a warehouse table's file written in its schema (Snappy)."""
    from kitab.core.refs import read_parquet_file, write_rows

    table = read_parquet_file(ref.path)
    assert table.equals(pq.read_table(ref.path), check_metadata=True)
    written = write_rows(
        "rejects",
        [{"stage": "s", "reason": "r", "record_kind": "book", "record_id": "b1"}],
        tmp_path / "r.parquet",
        "snappy",
    )
    assert pq.ParquetFile(written.path).metadata.row_group(0).column(0).compression == "SNAPPY"
    assert read_parquet_file(written.path).equals(pq.read_table(written.path), check_metadata=True)
    assert read_parquet_file(written.path).schema.metadata[b"kitab.table"] == b"rejects"
