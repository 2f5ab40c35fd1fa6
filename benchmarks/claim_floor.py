"""The no-knowledge floor of the claim pairs (issue 38, docs/claims.md): how well a model that
knows nothing about books answers a release's pairs from their wording alone.

- **always-true**: every claim True (pair accuracy 0 by construction);
- **coin**: a seeded coin per claim (0.25 by chance);
- **wording-rule**: a fixed rule read off the wording only, the best simple one we could write
  against the pairs' old give-aways (:func:`wording_rule`);
- **naive-bayes**: a word-count multinomial naive Bayes per kind, trained on one release's
  claims (``--train``, about authors the test release does not name) and scored on another's
  (``--test``).

Every baseline judges each claim on its own, as a model is asked (one prompt per claim): a
reader that knew each pair holds one true claim could pick a side and score 0.5 by chance,
which is not the 0.25 the task's chance level means.

Pair accuracy (both claims right) overall, per kind and per constraint type, each with a 95%
Wilson interval over pairs. Issue 38's target: every baseline <= 0.32 overall and <= 0.35 on
every kind with >= 30 pairs.

    .venv/bin/python benchmarks/claim_floor.py --train WAREHOUSE:RELEASE --test WAREHOUSE:RELEASE
    .venv/bin/python benchmarks/claim_floor.py --build DIR --authors 80      # two releases first
    ... [--rederive] [--json]

``--rederive`` draws each release's claims again with the current tasks/claims.py from the
release's own tables and seed (so one pair of releases measures the code before and after a
change to the draws).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402

TARGET_OVERALL = 0.32
TARGET_KIND = 0.35
MIN_PAIRS = 30  # a kind is held to TARGET_KIND from this many pairs on
INPUTS = ("authors", "books", "title_variants", "book_entities", "constraints")
# common first and last letters of English words (a fixed prior, not read from any release)
COMMON_FIRST = "tsacmpdbfrhlw"
COMMON_LAST = "estdnryhlokag"
YEAR_CLAIM = re.compile(r"“(.*)” by (.*) was first published in (\d+)\.$")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _hash(*key: object) -> int:
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
    return {c["query_id"]: _hash("coin", seed, c["query_id"]) % 2 == 0 for c in claims}


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


def naive_bayes(claims: list[dict], train: list[dict]) -> dict[str, bool]:
    model = NaiveBayes(train)
    return {c["query_id"]: model.log_odds(c) > 0 for c in claims}


BASELINES = {"always-true": always_true, "coin": coin, "wording-rule": wording_rule, "naive-bayes": naive_bayes}


def pair_scores(claims: list[dict], verdicts: dict[str, bool]) -> dict:
    """Pair accuracy overall, per kind and per constraint type, each with its Wilson interval."""
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


def floor(train: list[dict], test: list[dict]) -> dict:
    """Every baseline's pair scores on ``test`` (the classifier trained on ``train``'s claims
    about authors ``test`` does not name: what it learns is wording, not facts about the test
    release's authors), and whether each meets issue 38's target."""
    named = {c[k] for c in test for k in ("author_qid", "claim_author_qid")}
    train = [c for c in train if c["author_qid"] not in named and c["claim_author_qid"] not in named]
    out = {}
    for name, baseline in BASELINES.items():
        scores = pair_scores(test, baseline(test, train))
        kinds = scores["kind"].values()
        scores["meets_target"] = scores["overall"]["all"]["pair_accuracy"] <= TARGET_OVERALL and all(
            s["pair_accuracy"] <= TARGET_KIND for s in kinds if s["pairs"] >= MIN_PAIRS
        )
        out[name] = scores
    return out


def true_first_share(claims: list[dict]) -> float:
    pairs = pairs_of(claims)
    return sum(1 for sides in pairs.values() if sides[0]["label"]) / len(pairs) if pairs else 0.0


def release_claims(warehouse: Path, release: str, *, rederive: bool = False) -> list[dict]:
    """``release``'s claims; with ``rederive``, drawn again by the current tasks/claims.py from
    its own tables and seed."""
    from kitab.core.warehouse import Warehouse

    with Warehouse(Path(warehouse)).connect(release=release) as con:
        if not rederive:
            cursor = con.execute("SELECT * FROM claims")
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]
        tables = {t: con.sql(f"SELECT * FROM {t}").to_arrow_table().to_pylist() for t in INPUTS}
        (seed,) = con.execute("SELECT seed FROM releases").fetchone()
    from tasks.claims import claims_from_rows

    return claims_from_rows(tables, seed=int(seed))[0]


def format_floor(result: dict) -> str:
    kinds = sorted({k for r in result.values() for k in r["kind"]})
    header = ["baseline", "overall", *kinds, "target met"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]

    def cell(s: dict) -> str:
        return f"{s['pair_accuracy']:.3f} [{s['low']:.3f}, {s['high']:.3f}] (n={s['pairs']})"

    for name, r in result.items():
        per = [cell(r["kind"][k]) if k in r["kind"] else "–" for k in kinds]
        lines.append("| " + " | ".join([name, cell(r["overall"]["all"]), *per, str(r["meets_target"])]) + " |")
    types = sorted({t for r in result.values() for t in r.get("constraint_type", {})})
    lines += ["", "| baseline | " + " | ".join(types) + " |", "|" + "---|" * (len(types) + 1)]
    for name, r in result.items():
        lines.append("| " + " | ".join([name, *(cell(r["constraint_type"][t]) for t in types)]) + " |")
    return "\n".join(lines) + "\n"


def _location(text: str) -> tuple[Path, str]:
    warehouse, _, release = text.rpartition(":")
    return Path(warehouse), release


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", help="WAREHOUSE:RELEASE whose claims train the classifier")
    parser.add_argument("--test", help="WAREHOUSE:RELEASE whose claims are scored")
    parser.add_argument("--build", type=Path, help="build two releases from the bundled snapshot here first")
    parser.add_argument("--authors", type=int, default=80)
    parser.add_argument("--rederive", action="store_true", help="draw the claims again with the current code")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.build:
        from tests.releases import dump_release

        for seed, name in ((101, "train"), (202, "test")):
            dump_release(args.build / name, authors=args.authors, seed=seed, release=f"2026.01.01-{name}")
        args.train = f"{args.build / 'train'}:2026.01.01-train"
        args.test = f"{args.build / 'test'}:2026.01.01-test"
    if not (args.train and args.test):
        parser.error("give --train and --test, or --build")
    train = release_claims(*_location(args.train), rederive=args.rederive)
    test = release_claims(*_location(args.test), rederive=args.rederive)
    result = floor(train, test)
    if args.json:
        print(json.dumps({"true_first": true_first_share(test), "baselines": result}, indent=2))
    else:
        print(f"test pairs: {len(pairs_of(test))}, true claim first in {true_first_share(test):.3f}\n")
        print(format_floor(result))


if __name__ == "__main__":
    main()
