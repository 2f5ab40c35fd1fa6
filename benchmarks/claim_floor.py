"""The no-knowledge floor of the claim pairs (issue 38, docs/claims.md): how well a model that
knows nothing about books answers a release's pairs from their wording alone. The baselines are
kitab's own (kitab/release/validity/claims.py, which every release's battery runs at publish
time); this measures them across two releases:

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
import json  # noqa: E402

from kitab.release.validity.claims import BASELINES, pair_scores, pairs_of  # noqa: E402

TARGET_OVERALL = 0.32
TARGET_KIND = 0.35
MIN_PAIRS = 30  # a kind is held to TARGET_KIND from this many pairs on
INPUTS = ("authors", "books", "title_variants", "book_entities", "constraints")


def floor(train: list[dict], test: list[dict]) -> dict:
    """Every baseline's pair scores on ``test`` (the classifier trained on ``train``'s claims
    about authors ``test`` does not name: what it learns is wording, not facts about the test
    release's authors), and whether each meets issue 38's target."""
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
