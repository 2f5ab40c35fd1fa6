"""How kitab reads letters and words in a title: the semantics of the lexical constraints.

One rule, used both to generate constraints (which books a spec maps to) and to verify
them, so the two can never disagree. docs/constraints.md states it for readers; it is
deliberately not dedup's matching key (``tasks/text.py``), which may change for
clustering reasons without changing what "starts with the letter v" means.

1. Diacritics are folded (NFKD, combining marks dropped): "Émile" starts with "e".
2. Lower-cased; "&" is read as the word "and" (as KITAB's evaluator does).
3. Every punctuation, symbol, control or format character is deleted, never a word
   boundary: "Catch-22" is one word "catch22", "Salem's" is "salems". Words are the
   whitespace-separated tokens that remain.
4. One leading English article ("the", "a", "an") is dropped, unless it is the only word:
   "The Bluest Eye" has 2 words and starts with "b" (library filing order, and KITAB's
   own processing of titles at evaluation).
5. A title's first letter is the first character of its first word and its last letter the
   last character of its last word, but only if that character is a-z: a digit or a
   letter outside a-z after folding ("1984", "Øystein", "ß") gives no letter at all.
"""
from __future__ import annotations

import unicodedata
from functools import lru_cache

ARTICLES = frozenset({"the", "a", "an"})
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@lru_cache(maxsize=1 << 16)
def title_words(title: str) -> tuple[str, ...]:
    """The words of ``title`` under the rules above (cached: every spec of an author asks)."""
    folded = "".join(ch for ch in unicodedata.normalize("NFKD", title) if not unicodedata.combining(ch))
    folded = folded.lower().replace("&", "and")
    kept = "".join(ch for ch in folded if ch.isspace() or unicodedata.category(ch)[0] not in "PSC")
    words = kept.split()
    if len(words) > 1 and words[0] in ARTICLES:
        words = words[1:]
    return tuple(words)


def word_count(title: str) -> int:
    return len(title_words(title))


def first_letter(title: str) -> str | None:
    words = title_words(title)
    return _as_letter(words[0][0]) if words else None


def last_letter(title: str) -> str | None:
    words = title_words(title)
    return _as_letter(words[-1][-1]) if words else None


def _as_letter(ch: str) -> str | None:
    return ch if ch in LETTERS else None
