"""What ``kitab snapshot from-dumps`` checks before it reads a byte: its options, and where it may write.

``--out`` follows the output-path rule (kitab/core/outputs.py): it is only ever a folder this
builder made, whose manifest lists every file in it, or an empty or missing one: the snapshot
replaces the folder whole, so any other content would be lost. A folder holding an earlier build
is replaced only with ``--overwrite``; a folder whose only claim is the marker file of an earlier
kitab (:data:`MARKER`, no file list) is refused; an ``--out`` that is, holds or lies inside an
input or a warehouse is refused outright. Each refusal is one line naming the folder.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from kitab.core.errors import BadValue
from kitab.core.outputs import OutputRefused, check_folder

MARKER = ".kitab-from-dumps"  # the only claim of a snapshot folder an earlier kitab wrote (no file list)
_MEMORY = re.compile(r"\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)\s*", re.IGNORECASE)
MIN_MEMORY_BYTES = 64 << 20  # below this DuckDB cannot run the joins at all
_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30}
_UNITS["TIB"] = 1 << 40


class OutRefused(BadValue):
    """``--out`` would overwrite something that is not this builder's own output."""


def memory_bytes(text: str) -> int:
    """DuckDB's memory-limit syntax (``1GB``, ``512 MiB``) -> bytes; a clear error otherwise."""
    match = _MEMORY.fullmatch(text or "")
    if not match:
        raise BadValue(f"--memory-limit {text!r}: expected a size such as 1GB, 512MB or 2GiB")
    number = float(text.strip()[: match.start(2) - match.start(0)].strip() or 0)
    value = int(number * _UNITS[match[2].upper()])
    if value < MIN_MEMORY_BYTES:
        raise BadValue(f"--memory-limit {text!r}: at least 64MB is needed for the joins")
    return value


def as_of_date(text: str | None) -> str | None:
    """``--as-of``: a real calendar date ``YYYY-MM-DD`` (or None: the dump's own date)."""
    if text is None:
        return None
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            raise ValueError("not YYYY-MM-DD")
        return date.fromisoformat(text).isoformat()
    except ValueError as exc:
        raise BadValue(f"--as-of {text!r}: expected a date YYYY-MM-DD ({exc})") from None


COMMAND = "kitab snapshot from-dumps"


def _old_snapshot(folder: Path) -> str | None:
    """A snapshot folder of an earlier kitab, whose only claim was the marker file."""
    if (folder / MARKER).is_file():
        return "holds an earlier from-dumps snapshot that does not list its files (only a marker file)"
    return None


def check_out(out: Path, inputs: list[Path], overwrite: bool) -> Path:
    """The resolved ``--out`` if this build may write there (kitab/core/outputs.py: no warehouse,
    no input, new or empty or an earlier snapshot of this builder whose manifest lists every file
    in it, replaced only with ``overwrite``); else :class:`OutRefused` (one line)."""
    try:
        folder = check_folder(out, "--out", COMMAND, inputs, legacy=_old_snapshot)
    except OutputRefused as exc:
        raise OutRefused(str(exc)) from None
    if folder.earlier is not None and not overwrite:
        raise OutRefused(f"--out {folder.path}: holds an earlier from-dumps snapshot; pass --overwrite to replace it")
    return folder.path
