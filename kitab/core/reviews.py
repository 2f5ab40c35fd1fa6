"""The review labels a warehouse keeps beside its releases (issue 28): a person's yes / no per
(title, author, kind), imported by ``kitab review import`` (kitab/release/review.py) and read by
every later build's constrain step as ``review`` evidence (tasks/book_evidence.review_evidence).

One small Parquet file, ``<warehouse>/reviews/review_labels.parquet``, outside every release
(as evaluations are beside theirs): a label is about a book wherever it appears, not about one
release. Its rows carry their tagger version (``review_v1``); rewritten whole on import (temp
file + rename)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kitab.core.files import write_via_temp

VERSION = "review_v1"
COLUMNS = ("version", "title", "author", "kind", "label", "release", "book_id", "exported_state")
SCHEMA = pa.schema([(c, pa.string()) for c in COLUMNS])


def labels_path(warehouse: Path | str) -> Path:
    return Path(warehouse) / "reviews" / "review_labels.parquet"


def read_labels(warehouse: Path | str) -> list[dict]:
    """Every stored label row, in import order (none: [])."""
    path = labels_path(warehouse)
    return pq.read_table(path).to_pylist() if path.exists() else []


def write_labels(warehouse: Path | str, rows: Sequence[dict]) -> None:
    table = pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in rows], schema=SCHEMA)
    write_via_temp(labels_path(warehouse), lambda tmp: pq.write_table(table, tmp))


def label_tuples(warehouse: Path | str) -> tuple[tuple[str, str, str, str], ...]:
    """(title, author, kind, label) per stored label, in import order: what a build reads
    (RunContext.review_labels; a later label for the same book and kind wins)."""
    return tuple((r["title"], r["author"], r["kind"], r["label"]) for r in read_labels(warehouse))
