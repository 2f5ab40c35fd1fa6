"""Issue 39, item 8: an evaluation is stored in bounded memory. Its rows go to a scratch Parquet
file a batch at a time (``write_rows``) and the release's annex file is rewritten streaming
(``WarehouseFiles.write_annex``): the same rows, in the same order, as the whole-table writer
(``write_table``) gives, an earlier run of the same evaluation replaced, an older file's
missing columns filled with their defaults. (The memory itself: benchmarks/evaluate_memory.py.)"""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq

from kitab.core import ledger
from kitab.core.ledger import WarehouseFiles, write_rows
from kitab.core.schemas import arrow_schema

TABLE = "evaluations"
RELEASE = "r1"


def _value(field: pa.Field, i: int):
    t = field.type
    if pa.types.is_string(t):
        return f"{field.name}-{i % 3}"
    if pa.types.is_boolean(t):
        return i % 2 == 0
    if pa.types.is_integer(t):
        return i
    if pa.types.is_floating(t):
        return i / 7
    if pa.types.is_timestamp(t):
        return datetime(2026, 1, 1, tzinfo=UTC)
    if pa.types.is_list(t):
        return [f"t{i}-{j}" for j in range(i % 4)]
    raise AssertionError(t)


def _rows(model: str, sha: str, n: int, response: str = "") -> list[dict]:
    rows = []
    for i in range(n):
        row = {f.name: _value(f, i) for f in arrow_schema(TABLE)}
        row.update(model=model, answers_sha256=sha, query_id=f"q{i:04d}", sample=i % 2, response=response or f"r{i}")
        rows.append(row)
    return rows


def _read(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def test_the_streamed_file_holds_the_rows_the_whole_table_writer_gives(tmp_path):
    files = WarehouseFiles(tmp_path / "wh")
    kept = _rows("a", "s1", 30) + _rows("b", "s2", 20) + _rows("c", "s3", 25)
    files.write_table(TABLE, RELEASE, kept)
    new = _rows("b", "s2", 40, response="again")  # the same evaluation again: replaces b's 20 rows
    write_rows(TABLE, new, tmp_path / "rows.parquet")
    streamed = files.write_annex(TABLE, RELEASE, tmp_path / "rows.parquet", {"model": "b", "answers_sha256": "s2"})
    expected = _read(
        WarehouseFiles(tmp_path / "whole")
        .write_table(TABLE, RELEASE, _rows("a", "s1", 30) + new + _rows("c", "s3", 25))
        .path
    )
    assert streamed.rows == 95
    assert _read(streamed.path) == expected

    # a new evaluation sorting first, and one sorting last
    for model in ("0", "z"):
        write_rows(TABLE, _rows(model, "s", 3), tmp_path / f"{model}.parquet")
        files.write_annex(TABLE, RELEASE, tmp_path / f"{model}.parquet", {"model": model, "answers_sha256": "s"})
    models = [r["model"] for r in _read(files.annex_file(TABLE, RELEASE))]
    assert models == ["0"] * 3 + ["a"] * 30 + ["b"] * 40 + ["c"] * 25 + ["z"] * 3


def test_an_older_file_without_a_column_gets_its_default(tmp_path):
    files = WarehouseFiles(tmp_path / "wh")
    old = files.write_table(TABLE, RELEASE, _rows("a", "s1", 5))
    pq.write_table(pq.read_table(old.path).drop_columns(["abstained", "reasoning"]), old.path)  # as written before them
    write_rows(TABLE, _rows("b", "s2", 2), tmp_path / "rows.parquet")
    written = files.write_annex(
        TABLE, RELEASE, tmp_path / "rows.parquet", {"model": "b", "answers_sha256": "s2"}, {"abstained": False}
    )
    rows = _read(written.path)
    assert [(r["model"], r["abstained"], r["reasoning"]) for r in rows[:5]] == [("a", False, None)] * 5
    assert len(rows) == 7


def test_long_answers_are_written_a_few_megabytes_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger, "ANNEX_BATCH_CHARS", 100_000)
    rows = _rows("m", "s", 40, response="x" * 20_000)
    assert write_rows(TABLE, iter(rows), tmp_path / "rows.parquet") == 40
    meta = pq.ParquetFile(tmp_path / "rows.parquet").metadata
    assert meta.num_row_groups == 8  # 5 rows of 20,000 characters reach 100,000
    assert _read(tmp_path / "rows.parquet") == _read(
        WarehouseFiles(tmp_path / "w").write_table(TABLE, RELEASE, rows).path
    )
