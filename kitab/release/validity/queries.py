"""The list queries' no-knowledge baselines (issue 38, docs/evaluate.md): answers written
without knowing which books satisfy a query, scored by the code that scores a model
(kitab/release/evaluation: the parser, then KITAB's metrics).

- **none**: "None" everywhere, the explicit empty list ``[]`` on every query (all correct on
  exactly the unsatisfiable ones);
- **longest-titles**: the author's ``k`` longest titles among the release's books, whatever the
  constraint (``k``: the release's median key size, the median count of books a satisfiable
  query's key lists);
- **title-pattern**: one made-up title built to fit the query's lexical criteria (its first
  and last letter, its word count, a person's or a city's name when the query asks for one); it
  knows no book.

Each baseline is a dict query_id -> response text, as a model's answers file holds it.
"""

from __future__ import annotations

import json
import statistics

from tasks.constraints import EntitySpec
from tasks.constraints.kinds.ends_with import EndsWith
from tasks.constraints.kinds.starts_with import StartsWith
from tasks.constraints.kinds.word_count import WordCount

# one plain word per first / last letter, a filler, and a name per entity kind: the guesser's vocabulary
FIRST_WORDS = dict(
    zip(
        "abcdefghijklmnopqrstuvwxyz",
        "Autumn Bridges Candles Distant Echoes Fields Gardens Harbor Islands Journey Kingdom Letters Mountains "
        "Night Orchard Passage Quiet River Summer Tides Under Voices Winter Xenia Years Zephyr".split(),
    )
)
LAST_WORDS = dict(
    zip(
        "abcdefghijklmnopqrstuvwxyz",
        "Sonata Lamb Magic Road House Leaf Song Path Safari Raj Book Hill Dream Garden Echo Ship Iraq River "
        "Stories Light Bayou Kiev Snow Box Story Waltz".split(),
    )
)
FILLER = ("of", "the", "long", "dark", "quiet", "green", "old", "last")
ENTITY_WORDS = {"human": "Anna", "city": "Paris"}


def answer_text(titles: list[str]) -> str:
    """A response listing ``titles`` (a JSON list, which the parser reads as it is; [] says no books)."""
    return json.dumps(titles, ensure_ascii=False)


def none_everywhere(truths: dict) -> dict[str, str]:
    return {query_id: answer_text([]) for query_id in truths}


def median_key_size(truths: dict) -> int:
    """The median number of books a satisfiable query's key lists (at least 1)."""
    sizes = [len(t.mapped) for t in truths.values() if t.mapped]
    return max(1, round(statistics.median(sizes))) if sizes else 1


def longest_titles(truths: dict, k: int) -> dict[str, str]:
    """The author's ``k`` longest titles (characters, then the title, for ties) on every query."""

    # an author's queries share one tuple of its books: each answered once (keyed by the
    # tuple's id, which stays the tuple's while ``truths`` holds it)
    answers: dict[int, str] = {}

    def longest(books) -> str:
        found = answers.get(id(books))
        if found is None:
            titles = sorted({b.title for b in books}, key=lambda t: (-len(t), t))
            found = answers[id(books)] = answer_text(titles[:k])
        return found

    return {query_id: longest(truth.books) for query_id, truth in truths.items()}


def pattern_title(specs) -> str:
    """A made-up title fitting ``specs``' lexical criteria: its first and last letter, its word
    count (3 words when none is asked) and an entity name when one must be present."""
    first = next((s.letter for s in specs if isinstance(s, StartsWith)), None)
    last = next((s.letter for s in specs if isinstance(s, EndsWith)), None)
    count = next((s.count for s in specs if isinstance(s, WordCount)), 3)
    names = [ENTITY_WORDS.get(s.KIND, "Anna") for s in specs if isinstance(s, EntitySpec) and s.present]
    if count == 1:  # one word: the letters' word, or the name
        return FIRST_WORDS[first] if first else LAST_WORDS[last] if last else (names or ["Summer"])[0]
    head = FIRST_WORDS[first] if first else "The"
    tail = LAST_WORDS[last] if last else (names.pop() if names else "Road")
    middle = [*names, *FILLER][: max(0, count - 2)]
    return " ".join([head, *middle, tail])


def title_pattern(truths: dict) -> dict[str, str]:
    return {query_id: answer_text([pattern_title(truth.specs)]) for query_id, truth in truths.items()}
