"""What ``kitab snapshot from-dumps`` checks before it reads a byte: its options, and where it may write.

``--out`` is only ever a folder this builder made (it writes a marker file, :data:`MARKER`, into
every snapshot it builds) or an empty or missing one: the snapshot replaces the folder whole, so
any other content would be lost. A folder holding an earlier build is replaced only with
``--overwrite``; an ``--out`` that is, holds or lies inside an input is refused outright (it would
delete the downloads). Each refusal is one line naming the folder.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from kitab.core.errors import BadValue

MARKER = ".kitab-from-dumps"  # in every snapshot folder this builder wrote
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


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_out(out: Path, inputs: list[Path], overwrite: bool) -> Path:
    """The resolved ``--out`` if this build may write there; else :class:`OutRefused` (one line)."""
    out = Path(out).expanduser().resolve()
    for item in inputs:
        item = Path(item).expanduser().resolve()
        if _within(out, item) or _within(item, out):
            raise OutRefused(f"--out {out}: it is, holds or lies inside the input {item}; choose another folder")
    if out.exists() and not out.is_dir():
        raise OutRefused(f"--out {out}: exists and is not a folder; choose another path")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            raise OutRefused(
                f"--out {out}: a non-empty folder that is not a snapshot built by from-dumps; "
                "nothing was changed: choose a new or empty folder"
            )
        if not overwrite:
            raise OutRefused(f"--out {out}: holds an earlier from-dumps snapshot; pass --overwrite to replace it")
    return out
