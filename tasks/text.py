"""Title normalisation shared by dedup (tasks/dedup_titles.py) and the constraint stage.

Public API (pure functions, no I/O):

- ``fold(text)``: Unicode folding: compatibility decomposition, diacritics removed, case
  folded, a few letters without a decomposition mapped ("Gödel" -> "godel", "Ærø" -> "aero").
- ``match_key(title)``: the matching key: ``fold``, ``&`` -> "and", apostrophes dropped,
  other punctuation -> space, number words -> digits ("Nineteen Eighty-Four" -> "1984"),
  the abbreviations Dr/Mr/St/Vol spelled out, leading "the"/"a"/"an" removed, whitespace
  collapsed. Idempotent:
  ``match_key(match_key(t)) == match_key(t)``.
- ``main_title(title)``: the raw title before its first subtitle separator
  ("Gödel, Escher, Bach: An Eternal Golden Braid" -> "Gödel, Escher, Bach").

Differences from the original evaluator's ``process_title`` (kitab-original.md §5), on purpose:
punctuation becomes a space instead of vanishing ("Half-Blood" and "Half Blood" agree),
diacritics are folded, number words equal digits, and "Dr." equals "Doctor".
"""

from __future__ import annotations

import re
import unicodedata

from kitab.core.step_memory import step_cache

__all__ = ["ARTICLES", "MAX_TITLE_CHARS", "fold", "main_title", "match_key", "split_title_year"]

ARTICLES = frozenset({"the", "a", "an"})
# No book title is longer (Open Library's longest real ones are a few hundred characters);
# longer text is junk: clean_books rejects it (title_too_long), the probes skip it, the
# taggers do not parse it (spaCy refuses texts over 1,000,000 characters, E088).
MAX_TITLE_CHARS = 1_000

# Letters that NFKD leaves alone but readers treat as their base letter(s).
_LETTERS = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})
_APOSTROPHES = re.compile(r"['\u2019\u02bc`]")  # dropped, not spaced: "Philosopher's" -> "philosophers"
_DIGIT_GROUPING = re.compile(r"(?<=\d)[,.](?=\d{3}(?!\d))")  # "20,000 Leagues" -> "20000 leagues"
_NON_WORD = re.compile(r"[\W_]+")
# Open Library spells these both ways ("Dr. Zhivago" / "Doctor Zhivago"); in titles "St." is Saint.
_ABBREVIATIONS = {"dr": "doctor", "mr": "mister", "st": "saint", "vol": "volume"}

_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine".split())}
_TEENS = {
    w: i + 10
    for i, w in enumerate("ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split())
}
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"thousand": 1000, "million": 1_000_000}
_NUMBER_WORDS = {**_UNITS, **_TEENS, **_TENS, "hundred": 100, **_SCALES}

# Subtitle separators as Open Library writes them: colon, bracketed series/edition notes,
# dashes with spaces, semicolon, " / author" statements, ", or" alternative titles.
# A bare comma is not one: "Gödel, Escher, Bach" is a single title.
# No leading \s*: main_title strips what precedes the separator anyway, and a leading \s* made
# a long run of spaces quadratic (the regex retried the run from each of its positions).
_SUBTITLE_SEPARATOR = re.compile(r"(?::|\(|\[|;|\s/\s|\s[-\u2013\u2014]\s|,\s+or\s)", re.IGNORECASE)


def fold(text: str) -> str:
    """Unicode-fold and case-fold ``text`` (punctuation and spacing untouched)."""
    if text.isascii():
        return text.lower()  # what the steps below give for ASCII, 10x faster
    # casefold between two NFKDs: NFKD can yield capitals ("ℍ" -> "H") and casefold can
    # yield precomposed letters again, so folding twice makes the result a fixed point.
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    return "".join(ch for ch in text if not unicodedata.combining(ch)).translate(_LETTERS)


def _numbers_to_digits(tokens: list[str]) -> list[str]:
    """Replace runs of English number words with digits; other tokens pass through.

    Cardinals compose as usual ("one hundred and one" -> "101", "twenty thousand" -> "20000");
    two adjacent two-digit numbers are read as a year ("nineteen eighty four" -> "1984").
    """
    if _NUMBER_WORDS.keys().isdisjoint(tokens):
        return tokens
    out: list[str] = []
    numbers: list[int] = []  # completed numbers of the current run
    total = current = 0
    last = ""  # kind of the previous number word: unit | teen | tens | hundred | scale
    in_run = False

    def close_number() -> None:
        nonlocal total, current, last
        numbers.append(total + current)
        total = current = 0
        last = ""

    def flush() -> None:
        nonlocal in_run
        if in_run:
            close_number()
            merged: list[int] = []
            for n in numbers:
                if merged and 10 <= merged[-1] <= 99 and 10 <= n <= 99:
                    merged[-1] = merged[-1] * 100 + n  # year reading
                else:
                    merged.append(n)
            out.extend(str(n) for n in merged)
            numbers.clear()
            in_run = False

    for i, tok in enumerate(tokens):
        if tok == "and" and last in ("hundred", "scale") and i + 1 < len(tokens) and tokens[i + 1] in _NUMBER_WORDS:
            continue  # "one hundred and one"
        if tok not in _NUMBER_WORDS:
            flush()
            out.append(tok)
            continue
        kind = (
            "unit"
            if tok in _UNITS
            else "teen"
            if tok in _TEENS
            else "tens"
            if tok in _TENS
            else "hundred"
            if tok == "hundred"
            else "scale"
        )
        value = _NUMBER_WORDS[tok]
        if in_run:
            extends = (
                (kind == "unit" and last in ("tens", "hundred", "scale"))
                or (kind in ("teen", "tens") and last in ("hundred", "scale"))
                or (kind == "hundred" and last in ("unit", "teen", "tens") and current < 100)
                or (kind == "scale" and last != "scale")
            )
            if not extends:
                close_number()
        in_run = True
        if kind == "hundred":
            current = (current or 1) * 100
        elif kind == "scale":
            total, current = total + (current or 1) * value, 0
        else:
            current += value
        last = kind
    flush()
    return out


@step_cache(maxsize=1 << 16)  # a title is keyed several times per stage (clusters, subsets, output rows)
def match_key(title: str) -> str:
    """The normalised key two titles must share to be the same title (see module doc)."""
    text = fold(title).replace("&", " and ")
    text = _DIGIT_GROUPING.sub("", _APOSTROPHES.sub("", text))
    tokens = _numbers_to_digits([_ABBREVIATIONS.get(t, t) for t in _NON_WORD.sub(" ", text).split()])
    # Strip every leading article, but never the last word: "The A-Team" -> "team" in one
    # pass (so the key is idempotent) and the title "A" keeps its only word.
    while len(tokens) > 1 and tokens[0] in ARTICLES:
        tokens.pop(0)
    return " ".join(tokens)


def main_title(title: str) -> str:
    """The raw title up to its first subtitle separator (the whole title if it has none)."""
    return _SUBTITLE_SEPARATOR.split(title, maxsplit=1)[0].strip()


# KITAB writes a book as "Title (YYYY)"; its evaluator strips a trailing (\d{3,4}).
_YEAR_SUFFIX = re.compile(r"\((\d{3,4})\)$")  # on the stripped line; no \s*, which is quadratic on space runs


def split_title_year(line: str) -> tuple[str, int | None]:
    """``"Beloved (1987)"`` -> ``("Beloved", 1987)``; no ``(YYYY)`` suffix -> ``(title, None)``.
    The one parser of KITAB's book format, for every probe that reads it."""
    line = line.strip()
    m = _YEAR_SUFFIX.search(line)
    if m is None or not line[: m.start()].strip():  # "(1949)" alone is a title, not a year
        return line, None
    return line[: m.start()].strip(), int(m.group(1))
