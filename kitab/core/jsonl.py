"""JSON Lines that round-trip: one record a line, whatever its strings hold (issue 39).

``json.dumps(..., ensure_ascii=False)`` escapes ``\\n``, ``\\r`` and the other C0 controls but
leaves U+0085, U+2028 and U+2029 raw: valid JSON, yet ``str.splitlines()``, editors and
some JSON Lines readers end a line there, so one model answer holding one of them used to
make a whole answers file unreadable. So:

- every JSON Lines file kitab writes goes through :func:`dumps`: UTF-8 text kept as is
  (titles stay readable), every character ``str.splitlines()`` splits on escaped as ``\\uXXXX``
  (:data:`LINE_BREAKS`), so a line holds exactly one record and ``"\\n"`` only ends it;
- every JSON Lines file kitab reads is split by ``"\\n"`` only (:func:`split_lines`,
  :func:`iter_lines`), never ``str.splitlines()``, so a file written before (raw separators
  inside its strings) reads back too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

# every character str.splitlines() ends a line at; json.dumps escapes the ASCII ones already
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
BOM = b"\xef\xbb\xbf"
_BREAK = re.compile(f"[{re.escape(LINE_BREAKS)}]")


def _escape(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


def dumps(record: Any, **kwargs) -> str:
    """``record`` as one JSON line (without its ``"\\n"``): ``json.dumps`` with ``ensure_ascii``
    off unless asked, then every line break left raw escaped. Outside strings a compact JSON
    text has no such character, so the result is the same value, on one line by any reader's
    rule. ``indent`` is refused: it is not one line."""
    if kwargs.get("indent") is not None:
        raise ValueError("a JSON line has no indent")
    kwargs.setdefault("ensure_ascii", False)
    return _BREAK.sub(_escape, json.dumps(record, **kwargs))


def write_lines(fh: IO[str], records: Iterable[Any], **kwargs) -> int:
    """Each record as one line of ``fh`` (a text file opened with ``newline=""`` or on POSIX);
    returns how many."""
    n = 0
    for record in records:
        fh.write(dumps(record, **kwargs) + "\n")
        n += 1
    return n


def split_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of ``text`` split by ``"\\n"`` only; a ``"\\r"`` ending a
    line (a file saved with CRLF) dropped. Empty lines are given too (numbers stay true)."""
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line.removesuffix("\r")


class NotUTF8(ValueError):
    """A line of a JSON Lines file that is not UTF-8: where (1-based line, byte offset in the
    file) and why."""

    def __init__(self, line: int, byte: int, reason: str):
        super().__init__(f"line {line}: not UTF-8 text ({reason} at byte {byte})")
        self.line, self.byte, self.reason = line, byte, reason


def iter_lines(fh: Iterable[bytes], *, on_bytes: Callable[[bytes], object] | None = None) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of a binary file, one line in memory at a time (iterating
    a binary file splits by ``b"\\n"`` only); each line's bytes go to ``on_bytes`` first (a
    hash of the file), a leading byte-order mark and a ``"\\r"`` ending a line are dropped.
    Raises :class:`NotUTF8` at the first line that is not UTF-8."""
    offset = 0
    for number, raw in enumerate(fh, start=1):
        if on_bytes is not None:
            on_bytes(raw)
        skip = len(BOM) if number == 1 and raw.startswith(BOM) else 0
        try:
            text = raw[skip:].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotUTF8(number, offset + skip + exc.start, exc.reason) from None
        offset += len(raw)
        yield number, text.removesuffix("\n").removesuffix("\r")
