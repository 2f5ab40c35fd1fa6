"""Text from the data (titles, model names) made safe to show: bidirectional controls shown as
``[U+202E]`` and markdown table cells escaped. A leaf module: the report, the leaderboard, its
plots and the HTML page all use it."""

from __future__ import annotations

import re

# LRE RLE PDF LRO RLO, LRI RLI FSI PDI, LRM RLM, ALM: what can reorder the text around it
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def neutral_bidi(text: str) -> str:
    """``text`` with every bidirectional control shown as ``[U+202E]``: an override in a title or a
    model's name would otherwise reorder what the page shows ("evil" read as "live")."""
    return BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", text)


def markdown_cell(value) -> str:
    """``value`` as one cell of a markdown table: a ``|`` escaped (else it starts a new column),
    line breaks made spaces (else they end the row), bidi controls shown (:func:`neutral_bidi`)."""
    return neutral_bidi(" ".join(str(value).replace("|", "\\|").splitlines()))
