"""How kitab reads letters and words in a title: KITAB's own title processing.

One rule, used to generate constraints (which books a spec maps to), to verify them and to
score a model's answers (kitab/release/evaluation/), so the three can never disagree. It is the
processing KITAB's evaluator applies to a title (``process_title`` in microsoft's
eureka-ml-insights port, kitab-original.md §5), so the exported ground truth scores exactly
under that evaluator too. docs/constraints.md states it for readers; it is deliberately not
dedup's matching key (``tasks/text.py``), which folds more for clustering reasons.

1. Lower-cased (``str.lower``); "&" is read as the word "and".
2. ASCII punctuation (``string.punctuation``) is deleted, never a word boundary:
   "Catch-22" is one word "catch22", "Salem's" is "salems". Nothing else is deleted or
   folded: "Émile" keeps its "é", a curly apostrophe or an ellipsis stays part of its word,
   a spaced em dash is a word of its own. KITAB's evaluator reads titles this way.
3. Words are the whitespace-separated tokens (whitespace runs collapse).
4. One leading English article ("the", "a", "an") is dropped, unless it is the only word:
   "The Bluest Eye" has 2 words and starts with "b".
5. A title's first letter is the first character of its first word and its last letter the
   last character of its last word, but only if that character is a-z: "1984", "Émile",
   "Bogotá" or "Peace…" have no letter there.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable

from kitab.core.step_memory import step_cache

ARTICLES = frozenset({"the", "a", "an"})
LETTERS = "abcdefghijklmnopqrstuvwxyz"
_DELETE = str.maketrans("", "", string.punctuation)


@step_cache(maxsize=1 << 16)
def title_words(title: str) -> tuple[str, ...]:
    """The words of ``title`` under the rules above (cached: every spec of an author asks)."""
    words = _all_words(title)
    if len(words) > 1 and words[0] in ARTICLES:
        words = words[1:]
    return words


@step_cache(maxsize=1 << 16)
def _all_words(title: str) -> tuple[str, ...]:
    return tuple(title.lower().replace("&", "and").translate(_DELETE).split())


@step_cache(maxsize=1 << 16)  # claims read every title once per letter and constraint type
def title_readings(title: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The two readings of ``title`` a person could give it: rule 4 applied (KITAB's) and
    not (the leading article kept). A claim (tasks/claims.py) is stated only where both agree."""
    return title_words(title), _all_words(title)


def undisputed(titles: Iterable[str], holds: Callable[[tuple[str, ...]], bool]) -> bool | None:
    """Whether some title has a property beyond dispute: True when one title has it under
    both readings, False when none has it under either, None when that depends on the reading."""
    some = False
    for title in titles:
        kitab, kept = title_readings(title)
        first = holds(kitab)
        # most titles read the same both ways (no leading article): one test, not two
        second = first if kept == kitab else holds(kept)
        if first and second:
            return True
        some = some or bool(first) or bool(second)
    return None if some else False


def normalise_title(title: str) -> str:
    """The title as KITAB's evaluator compares it: its words joined by single spaces."""
    return " ".join(title_words(title))


def word_count(title: str) -> int:
    return len(title_words(title))


def first_letter(title: str) -> str | None:
    return first_letter_in(title_words(title))


def last_letter(title: str) -> str | None:
    return last_letter_in(title_words(title))


def first_letter_in(words: tuple[str, ...]) -> str | None:
    return _as_letter(words[0][0]) if words else None


def last_letter_in(words: tuple[str, ...]) -> str | None:
    return _as_letter(words[-1][-1]) if words else None


def _as_letter(ch: str) -> str | None:
    return ch if ch in LETTERS else None
