"""Does an unknown capitalised token look like a personal name or like an English word?

A naive Bayes over letter 2-4-grams, fitted on the frozen name lists against the common-word
list (~0.5-1 s) when a process first asks for a score: cleaning loads the lexicon but never scores. It only arbitrates tokens no list knows ("Pnin", "Suttree" vs
"Neuromancer", "Outliers"), so a rough model is enough; scores > 0 lean towards names.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from functools import cached_property


def _grams(word: str) -> list[str]:
    w = f"^{word.lower()}$"
    return [w[i : i + n] for n in (2, 3, 4) for i in range(len(w) - n + 1)]


class NameShape:
    def __init__(self, names: Iterable[str], words: Iterable[str]) -> None:
        self._sources = (names, words)

    @cached_property
    def _model(self) -> tuple[Counter, Counter, int, int]:
        names, words = self._sources
        name_grams = Counter(g for w in names for g in _grams(w))
        word_grams = Counter(g for w in words for g in _grams(w))
        vocabulary = len(name_grams.keys() | word_grams.keys())
        return name_grams, word_grams, sum(name_grams.values()) + vocabulary, sum(word_grams.values()) + vocabulary

    def score(self, token: str) -> float:
        """Mean log-likelihood ratio per n-gram (Laplace smoothing): > 0 name-like."""
        names, words, names_total, words_total = self._model
        grams = _grams(token)
        return sum(
            math.log((names[g] + 1) / names_total) - math.log((words[g] + 1) / words_total) for g in grams
        ) / len(grams)
