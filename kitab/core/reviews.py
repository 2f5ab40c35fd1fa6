"""The review labels a warehouse keeps beside its releases (issue 28): a person's yes / no per
(title, author, kind), imported by ``kitab review import`` (kitab/release/review.py) and read by
every later build's constrain step as ``review`` evidence (tasks/book_evidence.review_evidence).

One small Parquet file, ``<warehouse>/reviews/review_labels.parquet``, outside every release
(as evaluations are beside theirs): a label is about a book wherever it appears, not about one
release. Its rows carry their tagger version (``review_v1``); rewritten whole on import (temp
file + rename)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kitab.core.errors import KitabError
from kitab.core.files import write_via_temp

VERSION = "review_v1"
COLUMNS = ("version", "title", "author", "kind", "label", "release", "book_id", "exported_state")
SCHEMA = pa.schema([(c, pa.string()) for c in COLUMNS])


def labels_path(warehouse: Path | str) -> Path:
    return Path(warehouse) / "reviews" / "review_labels.parquet"


class ReviewBusy(KitabError):
    """Another ``kitab review import`` held the labels for longer than this one would wait."""


@contextlib.contextmanager
def import_lock(warehouse: Path | str, wait: float) -> Iterator[None]:
    """Hold ``<warehouse>/reviews/.import.lock`` (an ``flock``: the kernel drops it however its
    holder dies) while reading, merging and writing the labels; wait up to ``wait`` seconds for
    another holder, then raise :class:`ReviewBusy`. (A blocking flock has no timeout: polled.)"""
    folder = labels_path(warehouse).parent
    folder.mkdir(exist_ok=True)
    fd = os.open(folder / ".import.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ReviewBusy(
                        f"another `kitab review import` is storing labels in {folder} (waited {wait:g} s); "
                        "nothing stored: import again when it is done"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing releases the flock


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
