"""The claim pairs' no-knowledge baselines (issue 38, docs/claims.md): how well a reader that
knows nothing about books answers a release's pairs from their wording alone.

- **always-true**: every claim True (pair accuracy 0 by construction);
- **coin**: a seeded coin per claim (0.25 by chance);
- **wording-rule**: a fixed rule read off the wording only, the best simple one we could write
  against the pairs' old give-aways (:func:`wording_rule`);
- **naive-bayes**: a word-count multinomial naive Bayes per kind, trained on claims about
  other authors (another release's, or the other half of this release's authors).

Every baseline judges each claim on its own, as a model is asked (one prompt per claim): a
reader that knew each pair holds one true claim could pick a side and score 0.5 by chance,
which is not the 0.25 the task's chance level means. Pure functions: claims rows in, verdicts
(query_id -> bool) and pair scores out.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict

CHANCE = 0.25  # pair accuracy of a coin: both claims right
# common first and last letters of English words (a fixed prior, not read from any release)
COMMON_FIRST = "tsacmpdbfrhlw"
COMMON_LAST = "estdnryhlokag"
YEAR_CLAIM = re.compile(r"“(.*)” by (.*) was first published in (\d+)\.$")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of k successes in n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def stable_hash(*key: object) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(map(str, key)).encode(), digest_size=8).digest(), "big")


def pairs_of(claims: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for c in sorted(claims, key=lambda c: (c["pair_id"], c["position"])):
        out[c["pair_id"]].append(c)
    return dict(out)


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9’']+", text.lower())


def always_true(claims: list[dict], train: list[dict] | None = None) -> dict[str, bool]:
    return {c["query_id"]: True for c in claims}


def coin(claims: list[dict], train: list[dict] | None = None, seed: int = 0) -> dict[str, bool]:
    return {c["query_id"]: stable_hash("coin", seed, c["query_id"]) % 2 == 0 for c in claims}


def wording_rule(claims: list[dict], train: list[dict] | None = None) -> dict[str, bool]:
    """The old pairs' give-aways as one fixed rule, claim by claim, over the wording (and the
    release's other claims' wording, which a reader of the file also sees):

    - entity: the negated claim ("doesn't contain") is true, the other false;
    - word count: "only 1 word" is false, 2-4 words true, more false;
    - letters: a common letter is true, a rare one false (English first / last letters);
    - publishing year (range): true when it lies within the years the file's year claims give
      for the same author (+-5), else false;
    - year: true when its last digit is 0-4 (a false year in the true one's decade, 5 or more
      years off, has its last digit in the other half);
    - authorship: true when a year claim of the file names that author for that title, false
      when it names another; else true when the file names the author at least as often as
      it names the median author.
    """
    text = [c["claim"] for c in claims]
    by_title: dict[str, set[str]] = defaultdict(set)
    years_of: dict[str, list[int]] = defaultdict(list)
    names: Counter = Counter()
    for t in text:
        found = YEAR_CLAIM.match(t)
        if found:
            by_title[found[1]].add(found[2])
            years_of[found[2]].append(int(found[3]))
            names[found[2]] += 1
        subject = re.match(r"(.*?) wrote a book", t)
        if subject:
            names[subject[1]] += 1
    counts = sorted(names.values())
    median = counts[len(counts) // 2] if counts else 0

    def within(author: str, start: int, end: int) -> bool:
        years = years_of.get(author)
        return bool(years) and start <= max(years) + 5 and end >= min(years) - 5

    def verdict(t: str) -> bool:
        if "doesn't contain" in t:
            return True
        if "contains a" in t:
            return False
        found = re.search(r"contains only (\d+) word", t)
        if found:
            return 2 <= int(found[1]) <= 4
        found = re.search(r"(starts|ends) with the letter ([a-z])", t)
        if found:
            return found[2] in (COMMON_FIRST if found[1] == "starts" else COMMON_LAST)
        found = re.match(r"(.*?) wrote a book that was first published between (\d+)-(\d+)", t)
        if found:
            return within(found[1], int(found[2]), int(found[3]))
        found = YEAR_CLAIM.match(t)
        if found:
            return int(found[3]) % 10 < 5
        found = re.match(r"(.*) wrote a book titled “(.*)”\.$", t)
        if found:
            named = by_title.get(found[2])
            return found[1] in named if named else names[found[1]] >= median
        return True

    return {c["query_id"]: verdict(c["claim"]) for c in claims}


class NaiveBayes:
    """Multinomial naive Bayes over a claim's word counts, one model per kind (add-one smoothing)."""

    def __init__(self, train: list[dict]) -> None:
        self.counts: dict[tuple[str, bool], Counter] = defaultdict(Counter)
        self.docs: Counter = Counter()
        self.vocab: dict[str, set[str]] = defaultdict(set)
        for c in train:
            words = tokens(c["claim"])
            self.counts[c["kind"], c["label"]].update(words)
            self.docs[c["kind"], c["label"]] += 1
            self.vocab[c["kind"]].update(words)

    def log_odds(self, claim: dict) -> float:
        kind = claim["kind"]
        v = len(self.vocab[kind]) + 1
        out = math.log((self.docs[kind, True] + 1) / (self.docs[kind, False] + 1))
        totals = {label: sum(self.counts[kind, label].values()) for label in (True, False)}
        for w in tokens(claim["claim"]):
            out += math.log((self.counts[kind, True][w] + 1) / (totals[True] + v))
            out -= math.log((self.counts[kind, False][w] + 1) / (totals[False] + v))
        return out


def _about(claims: list[dict]) -> set[str]:
    """Every author the claims name (their subject and, for authorship claims, the one named)."""
    return {c[k] for c in claims for k in ("author_qid", "claim_author_qid") if c.get(k)}


def naive_bayes(claims: list[dict], train: list[dict]) -> dict[str, bool]:
    """The classifier trained on ``train``'s claims about authors ``claims`` does not name: what
    it learns is wording, not facts about these authors."""
    named = _about(claims)
    model = NaiveBayes([c for c in train if not _about([c]) & named])
    return {c["query_id"]: model.log_odds(c) > 0 for c in claims}


def author_folds(claims: list[dict], seed: int = 0) -> list[list[dict]]:
    """``claims`` in two halves by author (a seeded hash of the subject's QID): the held-out
    folds a classifier is trained and scored on when the warehouse has no other release."""
    folds: list[list[dict]] = [[], []]
    for c in claims:
        folds[stable_hash("fold", seed, c["author_qid"]) % 2].append(c)
    return folds


def naive_bayes_held_out(claims: list[dict], seed: int = 0) -> dict[str, bool]:
    """Each half of the release's authors judged by a classifier trained on the other half."""
    first, second = author_folds(claims, seed)
    return {**naive_bayes(first, second), **naive_bayes(second, first)}


BASELINES = {"always-true": always_true, "coin": coin, "wording-rule": wording_rule, "naive-bayes": naive_bayes}


def pair_scores(claims: list[dict], verdicts: dict[str, bool]) -> dict:
    """Pair accuracy overall, per kind and per constraint type, each with its Wilson interval:
    ``{dimension: {bin: {pairs, pair_accuracy, low, high}}}``."""
    groups: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for sides in pairs_of(claims).values():
        right = len(sides) == 2 and all(verdicts.get(c["query_id"]) == c["label"] for c in sides)
        groups["overall", "all"].append(right)
        groups["kind", sides[0]["kind"]].append(right)
        if sides[0]["constraint_type"]:
            groups["constraint_type", sides[0]["constraint_type"]].append(right)
    out: dict[str, dict] = defaultdict(dict)
    for (dimension, label), hits in sorted(groups.items()):
        k, n = sum(hits), len(hits)
        low, high = wilson(k, n)
        out[dimension][label] = {"pairs": n, "pair_accuracy": k / n, "low": low, "high": high}
    return dict(out)


def claim_verdicts(claims: list[dict], train: list[dict]) -> dict[str, tuple[dict[str, bool], str]]:
    """Every baseline's verdicts on ``claims`` and what it was trained on: the classifier on
    ``train`` (other releases' claims) when there are any about other authors, else on the
    held-out half of this release's authors (two folds, each scored by a model trained on the other)."""
    out = {name: (fn(claims), "none") for name, fn in BASELINES.items() if name != "naive-bayes"}
    named = _about(claims)
    usable = [c for c in train if not _about([c]) & named]
    if usable:
        releases = sorted({c["release"] for c in usable if c.get("release")})
        out["naive-bayes"] = (naive_bayes(claims, usable), "other releases: " + ", ".join(releases))
    else:
        out["naive-bayes"] = (naive_bayes_held_out(claims), "held-out half of this release's authors, two folds")
    return out
