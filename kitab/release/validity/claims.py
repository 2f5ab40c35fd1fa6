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
from collections.abc import Callable, Iterable

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


def coin_verdict(query_id: str, seed: int = 0) -> bool:
    return stable_hash("coin", seed, query_id) % 2 == 0


def coin(claims: list[dict], train: list[dict] | None = None, seed: int = 0) -> dict[str, bool]:
    return {c["query_id"]: coin_verdict(c["query_id"], seed) for c in claims}


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
    rule = WordingRule()
    for c in claims:
        rule.read(c["claim"])
    return {c["query_id"]: rule.verdict(c["claim"]) for c in claims}


class WordingRule:
    """:func:`wording_rule` one claim at a time: :meth:`read` every claim of the file first
    (what the rule learns of the file: titles, years and names its year claims give, how often
    it names each author), then :meth:`verdict` any of them."""

    def __init__(self) -> None:
        self.by_title: dict[str, set[str]] = defaultdict(set)
        self.years_of: dict[str, list[int]] = defaultdict(list)
        self.names: Counter = Counter()
        self._median: int | None = None

    def read(self, text: str) -> None:
        self._median = None
        found = YEAR_CLAIM.match(text)
        if found:
            self.by_title[found[1]].add(found[2])
            self.years_of[found[2]].append(int(found[3]))
            self.names[found[2]] += 1
        subject = re.match(r"(.*?) wrote a book", text)
        if subject:
            self.names[subject[1]] += 1

    @property
    def median(self) -> int:
        if self._median is None:
            counts = sorted(self.names.values())
            self._median = counts[len(counts) // 2] if counts else 0
        return self._median

    def within(self, author: str, start: int, end: int) -> bool:
        years = self.years_of.get(author)
        return bool(years) and start <= max(years) + 5 and end >= min(years) - 5

    def verdict(self, t: str) -> bool:
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
            return self.within(found[1], int(found[2]), int(found[3]))
        found = YEAR_CLAIM.match(t)
        if found:
            return int(found[3]) % 10 < 5
        found = re.match(r"(.*) wrote a book titled “(.*)”\.$", t)
        if found:
            named = self.by_title.get(found[2])
            return found[1] in named if named else self.names[found[1]] >= self.median
        return True


class NaiveBayes:
    """Multinomial naive Bayes over a claim's word counts, one model per kind (add-one smoothing)."""

    def __init__(self, train: Iterable[dict] = ()) -> None:
        self.counts: dict[tuple[str, bool], Counter] = defaultdict(Counter)
        self.docs: Counter = Counter()
        self.vocab: dict[str, set[str]] = defaultdict(set)
        # a trained model's log terms, per kind and per (kind, word): scoring a claim looks them up
        self._priors: dict[str, tuple[float, dict[bool, int], int]] = {}
        self._terms: dict[tuple[str, str], tuple[float, float]] = {}
        for c in train:
            self.add(c)

    def add(self, claim: dict) -> None:
        """Train on one more claim."""
        words = tokens(claim["claim"])
        kind, label = claim["kind"], claim["label"]
        self.counts[kind, label].update(words)
        self.docs[kind, label] += 1
        self.vocab[kind].update(words)
        self._priors.clear()
        self._terms.clear()

    def log_odds(self, claim: dict) -> float:
        kind = claim["kind"]
        if kind not in self._priors:
            v = len(self.vocab[kind]) + 1
            prior = math.log((self.docs[kind, True] + 1) / (self.docs[kind, False] + 1))
            totals = {label: sum(self.counts[kind, label].values()) for label in (True, False)}
            self._priors[kind] = (prior, totals, v)
        out, totals, v = self._priors[kind]
        for w in tokens(claim["claim"]):
            terms = self._terms.get((kind, w))
            if terms is None:
                terms = self._terms[kind, w] = (
                    math.log((self.counts[kind, True][w] + 1) / (totals[True] + v)),
                    math.log((self.counts[kind, False][w] + 1) / (totals[False] + v)),
                )
            out += terms[0]
            out -= terms[1]
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
    tally = PairTally()
    for sides in pairs_of(claims).values():
        tally.add(sides, len(sides) == 2 and all(verdicts.get(c["query_id"]) == c["label"] for c in sides))
    return tally.scores()


class PairTally:
    """Pairs judged right, counted per bin (overall, the pair's kind, its constraint type)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])

    def add(self, sides: list[dict], right: bool) -> None:
        """One pair (its claims in position order) and whether both were judged right."""
        bins = [("overall", "all"), ("kind", sides[0]["kind"])]
        if sides[0]["constraint_type"]:
            bins.append(("constraint_type", sides[0]["constraint_type"]))
        for key in bins:
            self.counts[key][0] += right
            self.counts[key][1] += 1

    def scores(self) -> dict:
        """:func:`pair_scores`' result."""
        out: dict[str, dict] = defaultdict(dict)
        for (dimension, label), (k, n) in sorted(self.counts.items()):
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
        out["naive-bayes"] = (naive_bayes_held_out(claims), HELD_OUT)
    return out


HELD_OUT = "held-out half of this release's authors, two folds"


def claim_scores(claims: list[dict], train: list[dict]) -> dict[str, tuple[dict, str]]:
    """Every baseline's :func:`pair_scores` and what it was trained on (:func:`claim_verdicts`):
    the reference form of :func:`streamed_claim_scores`."""
    return {
        name: (pair_scores(claims, verdicts), trained_on)
        for name, (verdicts, trained_on) in claim_verdicts(claims, train).items()
    }


def streamed_claim_scores(
    read: Callable[[], Iterable[list[dict]]], train: Iterable[list[dict]]
) -> dict[str, tuple[dict, str]]:
    """:func:`claim_scores` of the claims ``read()`` yields batch by batch (in any order), in
    memory that follows a batch, not the release (1.2 M claims at 100,000 authors): what is
    kept is what the baselines learn (word counts, the wording rule's names and years), each
    author's fold, and the pairs seen on one side only so far. Three passes of ``read()``: what
    the wording rule reads of the file and whom each fold names; the classifier's training
    (``train``: other releases' claims, batch by batch, read once; none usable: the folds);
    every baseline's verdicts, tallied as each pair completes."""
    fold_of: dict[str, int] = {}

    def fold(claim: dict) -> int:  # author_folds' fold, once per author
        author = claim["author_qid"]
        if author not in fold_of:
            fold_of[author] = stable_hash("fold", 0, author) % 2
        return fold_of[author]

    rule, named = WordingRule(), (set(), set())
    for batch in read():
        for c in batch:
            rule.read(c["claim"])
            named[fold(c)].update(_about([c]))
    everyone, other, releases = named[0] | named[1], NaiveBayes(), set()
    for batch in train:
        for c in batch:
            if not _about([c]) & everyone:
                other.add(c)
                if c.get("release"):
                    releases.add(c["release"])
    if other.docs:
        models, trained_on = (other, other), "other releases: " + ", ".join(sorted(releases))
    else:  # the model that judges a fold learns from the other fold's claims naming none of its authors
        models, trained_on = (NaiveBayes(), NaiveBayes()), HELD_OUT
        for batch in read():
            for c in batch:
                judged = 1 - fold(c)
                if not _about([c]) & named[judged]:
                    models[judged].add(c)
    judges: dict[str, Callable[[dict], bool]] = {
        "always-true": lambda c: True,
        "coin": lambda c: coin_verdict(c["query_id"]),
        "wording-rule": lambda c: rule.verdict(c["claim"]),
        "naive-bayes": lambda c: models[fold(c)].log_odds(c) > 0,
    }
    tallies = {name: PairTally() for name in judges}

    def close(sides: list[dict]) -> None:
        sides.sort(key=lambda c: c["position"])
        for name, judge in judges.items():
            tallies[name].add(sides, len(sides) == 2 and all(judge(c) == c["label"] for c in sides))

    waiting: dict[str, list[dict]] = {}  # pairs with one side seen (a pair has two: positions 1 and 2)
    for batch in read():
        for c in batch:
            sides = waiting.setdefault(c["pair_id"], [])
            sides.append(c)
            if len(sides) == 2:
                close(waiting.pop(c["pair_id"]))
    for sides in waiting.values():
        close(sides)
    return {name: (tallies[name].scores(), trained_on if name == "naive-bayes" else "none") for name in judges}
