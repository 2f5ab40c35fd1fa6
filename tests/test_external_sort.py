"""Publishing's sort: parts sorted by key in buckets give the bytes of sorting all rows at once."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kitab.core.external_sort import boundaries, sort_key, write_sorted
from kitab.core.refs import write_rows
from kitab.core.schemas import arrow_schema, table_spec
from kitab.core.warehouse import Warehouse

# Short values from a few characters, so keys collide, prefix one another and are null.
_value = st.one_of(st.none(), st.text(alphabet="ab\x01é☃", max_size=3))
_reject = st.fixed_dictionaries(
    {
        "stage": st.sampled_from(["clean", "dedup"]),
        "reason": st.sampled_from(["x", "y"]),
        "record_kind": st.sampled_from(["work", "book"]),
        "record_id": st.text(alphabet="ab", max_size=2),
        "author_qid": _value,
        "title": st.text(max_size=5),
        "evidence": _value,
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(_reject, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=5), bucket_rows=st.integers(1, 50)
)
def test_sorted_parts_equal_write_table_of_all_rows(tmp_path_factory, rows, cuts, bucket_rows):
    tmp = tmp_path_factory.mktemp("sort")
    edges = sorted({0, len(rows), *(c for c in cuts if c <= len(rows))})
    parts = [
        write_rows("rejects", rows[a:b], tmp / f"part-{i}.parquet")
        for i, (a, b) in enumerate(itertools.pairwise(edges))
    ]
    expected = Warehouse(tmp / "one").write_table("rejects", "r1", rows)
    got = write_sorted(
        parts,
        table_spec("rejects")["key"],
        "rejects",
        tmp / "sorted.parquet",
        arrow_schema("rejects"),
        spill_dir=tmp / "spill",
        bucket_rows=bucket_rows,
    )
    assert (got.rows, got.sha256) == (expected.rows, expected.sha256)
    assert not any((tmp / "spill").glob("*/*")) if (tmp / "spill").exists() else True


@pytest.mark.parametrize("part_rows", [100, 7])  # 7: parts smaller than a bucket, joined into runs
def test_buckets_stay_near_their_size(tmp_path, part_rows):
    rows = [
        {
            "stage": "s",
            "reason": "r",
            "record_kind": "k",
            "record_id": f"{(i * 7919) % 1000:04d}",
            "author_qid": None,
            "title": "t",
            "evidence": None,
        }
        for i in range(1000)
    ]
    parts = [
        write_rows("rejects", rows[i : i + part_rows], tmp_path / f"p{i}.parquet") for i in range(0, 1000, part_rows)
    ]
    cuts = boundaries(parts, table_spec("rejects")["key"], arrow_schema("rejects"), bucket_rows=100)
    keys = sorted(sort_key(pa.Table.from_pylist(rows), table_spec("rejects")["key"]).to_pylist())
    sizes = [sum(1 for k in keys if lo <= k < hi) for lo, hi in zip(["", *cuts], [*cuts, "\U0010ffff"])]
    assert len(sizes) >= 10 and max(sizes) <= 100 and sum(sizes) == 1000


def test_key_with_nul_is_a_clear_error(tmp_path):
    row = {
        "stage": "s",
        "reason": "r",
        "record_kind": "k",
        "record_id": "a\x00b",
        "author_qid": None,
        "title": "t",
        "evidence": None,
    }
    part = write_rows("rejects", [row], tmp_path / "p.parquet")
    with pytest.raises(ValueError, match="NUL"):
        write_sorted(
            [part],
            table_spec("rejects")["key"],
            "rejects",
            tmp_path / "out.parquet",
            arrow_schema("rejects"),
            spill_dir=tmp_path / "spill",
        )
    assert not (tmp_path / "out.parquet").exists()


def test_ties_keep_part_order_when_small_parts_are_joined(tmp_path):
    """Parts smaller than a bucket are sorted together: rows with equal keys keep part, then row order."""
    rows = [
        {"stage": "s", "reason": "r", "record_kind": "k", "record_id": f"{i % 3}", "author_qid": None,
         "title": f"t{i}", "evidence": None}
        for i in range(60)
    ]  # fmt: skip
    parts = [write_rows("rejects", rows[i : i + 4], tmp_path / f"p{i:02d}.parquet") for i in range(0, 60, 4)]
    expected = Warehouse(tmp_path / "one").write_table("rejects", "r1", rows)
    for bucket_rows in (10, 25, 1000):
        got = write_sorted(
            parts,
            table_spec("rejects")["key"],
            "rejects",
            tmp_path / f"sorted-{bucket_rows}.parquet",
            arrow_schema("rejects"),
            spill_dir=tmp_path / "spill",
            bucket_rows=bucket_rows,
        )
        assert (got.rows, got.sha256) == (expected.rows, expected.sha256)
