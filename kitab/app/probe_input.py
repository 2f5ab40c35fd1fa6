"""What the probes (``kitab dedup``, ``tag``, ``constraints``) read: lines from any bytes.

Whatever arrives on stdin, a probe answers: invalid UTF-8 is decoded with U+FFFD in place
of the bad bytes (and counted, so the CLI can say so), and a line whose title is longer than
``MAX_TITLE_CHARS`` is skipped (and its number reported): the pipeline rejects such a title
(``title_too_long`` in clean_books), so a probe has nothing to show for it either.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

from tasks.text import MAX_TITLE_CHARS


def decode_lines(data: bytes) -> tuple[list[str], int]:
    """``data`` split into lines (``\\n``, ``\\r\\n`` or ``\\r``) and decoded as UTF-8 (a leading
    byte-order mark dropped); returns the lines and how many of them had invalid bytes."""
    lines, invalid = [], 0
    for raw in data.removeprefix(codecs.BOM_UTF8).splitlines():
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            lines.append(raw.decode("utf-8", "replace"))
            invalid += 1
    return lines, invalid


def valid_text(text: str) -> tuple[str, bool]:
    """A command-line argument as text that can be printed: Python hands invalid UTF-8 in argv
    over as lone surrogates, which would make printing fail. Returns the text and whether it
    had invalid bytes."""
    raw = text.encode("utf-8", "surrogateescape")
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), True


def without_long_titles(
    lines: list[str], title_of: Callable[[str], str] = lambda line: line
) -> tuple[list[str], list[int]]:
    """The lines whose title (``title_of(line)``) has at most MAX_TITLE_CHARS characters, and the
    1-based numbers of the lines left out."""
    kept, skipped = [], []
    for number, line in enumerate(lines, start=1):
        if len(title_of(line)) > MAX_TITLE_CHARS:
            skipped.append(number)
        else:
            kept.append(line)
    return kept, skipped


def line_list(numbers: list[int], noun: str = "line", shown: int = 5) -> str:
    """``"line 3"``, ``"lines 1, 4, 9"``, ``"lines 1, 2, 3, 4, 5 and 7 more"``."""
    head = ", ".join(map(str, numbers[:shown]))
    more = f" and {len(numbers) - shown} more" if len(numbers) > shown else ""
    return f"{noun}{'s' if len(numbers) > 1 else ''} {head}{more}"
