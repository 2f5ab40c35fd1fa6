"""Does an unknown capitalised token look like a personal name or like an English word?

A naive Bayes over letter 2-4-grams, fitted once per process on the frozen name lists against
the common-word list (~1 s). It only arbitrates tokens no list knows ("Pnin", "Suttree" vs
"Neuromancer", "Outliers"), so a rough model is enough; scores > 0 lean towards names.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable


def _grams(word: str) -> list[str]:
    w = f"^{word.lower()}$"
    return [w[i : i + n] for n in (2, 3, 4) for i in range(len(w) - n + 1)]


class NameShape:
    def __init__(self, names: Iterable[str], words: Iterable[str]) -> None:
        self._names = Counter(g for w in names for g in _grams(w))
        self._words = Counter(g for w in words for g in _grams(w))
        vocabulary = len(self._names.keys() | self._words.keys())
        self._names_total = sum(self._names.values()) + vocabulary
        self._words_total = sum(self._words.values()) + vocabulary

    def score(self, token: str) -> float:
        """Mean log-likelihood ratio per n-gram (Laplace smoothing): > 0 name-like."""
        grams = _grams(token)
        return sum(
            math.log((self._names[g] + 1) / self._names_total) - math.log((self._words[g] + 1) / self._words_total)
            for g in grams
        ) / len(grams)
