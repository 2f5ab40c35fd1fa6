"""Precision and recall of the human and city taggers on the labelled titles in benchmarks/data/.

    .venv/bin/python benchmarks/entity_quality.py [--split all|dev|holdout|holdout2|dev2|dev,holdout|blind] [--errors N]
        [--min 0.9] [--min-precision P] [--min-recall R] [--tagger v7|v6|...] [--classes]

--tagger model --base-url URL --llm-model NAME [--cache FILE] scores the optional model tagger
(tasks/taggers/model.py) on an OpenAI-compatible endpoint instead (OPENAI_API_KEY from the env).

--split blind reads benchmarks/data/entity_blind.tsv (issue 20: 675 titles labelled before any
human_v4/city_v4 rule) and prints totals only: no title-level errors, so it stays blind.

Title level (does the title contain a person's / a city's name?) is what KITAB's constraints
use, and it is the gate: exit status 1 if any title-level precision is below --min-precision or
recall below --min-recall (both default to --min).
Span level (exact span text, as a multiset per title) is printed for information: it also
punishes "Florence" for "Florence Nightingale". With --split all, each split's numbers follow.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# Import the repo, not this folder's neighbours (a benchmarks/requests.py would shadow requests).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from tasks.entity_states import UNSURE, YES, decide, span_class, title_evidence  # noqa: E402
from tasks.taggers import DEFAULT_MODEL, CityTagger, HumanTagger  # noqa: E402
from tasks.taggers.lazy import CityTaggerV4, HumanTaggerV4  # noqa: E402
from tasks.taggers.registry import DEFAULT  # noqa: E402
from tasks.taggers.v5 import CityTaggerV5, HumanTaggerV5  # noqa: E402
from tasks.taggers.v6 import CityTaggerV6, HumanTaggerV6  # noqa: E402
from tasks.taggers.v7 import CityTaggerV7, HumanTaggerV7  # noqa: E402

OFFLINE = {
    "v3": (HumanTagger, CityTagger),
    "v4": (HumanTaggerV4, CityTaggerV4),
    "v5": (HumanTaggerV5, CityTaggerV5),
    "v6": (HumanTaggerV6, CityTaggerV6),
    "v7": (HumanTaggerV7, CityTaggerV7),
}

DATA = _HERE / "data" / "entity_titles.tsv"
BLIND = _HERE / "data" / "entity_blind.tsv"  # read as totals only (--split blind)
KINDS = ("human", "city")
# dev: written first, used to build the rules; holdout: written after human_v1/city_v1, then
# looked at; holdout2: labelled before human_v3 was written and kept blind; dev2: titles of
# the same kinds as holdout2 (genre, romance, non-fiction), to build human_v3 on (docs/tagging.md).
SPLITS = ("dev", "holdout", "holdout2", "dev2")


@dataclass
class Labelled:
    title: str
    author: str
    gold: dict[str, list[str]]  # kind -> span texts
    split: str


def load(path: Path = DATA) -> list[Labelled]:
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [
        Labelled(
            r["title"], r["author"], {k: [s.strip() for s in r[k].split(";") if s.strip()] for k in KINDS}, r["split"]
        )
        for r in rows
    ]


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def score(items: list[Labelled], predicted: dict[str, list[list[str]]]) -> dict[str, dict]:
    report = {}
    for kind in KINDS:
        t = Counter()
        s = Counter()
        errors = {"fp": [], "fn": []}
        for item, pred in zip(items, predicted[kind]):
            gold = item.gold[kind]
            t["tp"] += bool(gold) and bool(pred)
            t["fp"] += not gold and bool(pred)
            t["fn"] += bool(gold) and not pred
            if bool(gold) != bool(pred):
                errors["fp" if pred else "fn"].append((item.title, gold, pred))
            overlap = sum((Counter(gold) & Counter(pred)).values())
            s["tp"] += overlap
            s["fp"] += len(pred) - overlap
            s["fn"] += len(gold) - overlap
        report[kind] = {
            "title": (t, prf(t["tp"], t["fp"], t["fn"])),
            "span": (s, prf(s["tp"], s["fp"], s["fn"])),
            "errors": errors,
        }
    return report


# Books that decide a name query's key in a 60-author release (issue 28): ~28 for a
# one-constraint query, ~10 for a two-constraint one.
BOOKS_PER_QUERY = {"one": 28, "two": 10}


def title_states(kind: str, spans: list[list[str]], doubts: list[str | None]) -> list[str]:
    """Per title: the state tasks/entity_states.decide gives it from the title rules alone (no
    second reader): spans' evidence -> class, else the tagger's doubt class, else plain."""
    out = []
    for evidence, doubt in zip(spans, doubts):
        cls = (span_class(kind, evidence), True) if evidence else (doubt or "plain", False)
        out.append(decide(kind, title_evidence(kind, [cls]), [])[0])
    return out


def class_counts(
    kind: str, items: list[Labelled], spans: list[list[str]], evidence: list[list[str]], doubts: list[str | None]
) -> dict[str, tuple[int, int]]:
    """Per evidence class of ``kind``: (titles whose verdict, span or none, is wrong, titles) -
    the counts EntityKind.classes holds (tasks/entities/kinds/)."""
    out: dict[str, list[int]] = {}
    for item, found, ev, doubt in zip(items, spans, evidence, doubts):
        cls = span_class(kind, ev) if ev else (doubt or "plain")
        counts = out.setdefault(cls, [0, 0])
        counts[0] += bool(found) != bool(item.gold[kind])
        counts[1] += 1
    return {c: (w, n) for c, (w, n) in out.items()}


def state_report(items: list[Labelled], predicted: dict, states: dict[str, list[str]]) -> dict[str, dict]:
    """Per kind: unsure share, P / R among decided titles, error among all titles (a wrong
    decided flag) beside the binary tagger's, and the estimated share of one- and
    two-constraint name queries whose key holds a wrong book: 1 - (1 - e)^k, e the error per
    decided book, k the decided books per query."""
    out = {}
    n = len(items) or 1
    for kind in KINDS:
        t = Counter()
        binary_wrong = 0
        for item, pred, state in zip(items, predicted[kind], states[kind]):
            gold = bool(item.gold[kind])
            binary_wrong += gold != bool(pred)
            t["gold"] += gold
            if state == UNSURE:
                t["unsure"] += 1
                t["gold_unsure"] += gold
                continue
            yes = state == YES
            t["tp"] += gold and yes
            t["fp"] += yes and not gold
            t["fn"] += gold and not yes
            t["tn"] += not gold and not yes
        decided = n - t["unsure"]
        wrong = t["fp"] + t["fn"]
        e_dec = wrong / decided if decided else 0.0
        e_bin = binary_wrong / n
        p, r, _ = prf(t["tp"], t["fp"], t["fn"])
        out[kind] = {
            "unsure": t["unsure"] / n,
            "gold_unsure": t["gold_unsure"] / t["gold"] if t["gold"] else 0.0,  # of the titles with the kind
            "precision": p,
            "recall": r,
            "error": wrong / n,
            "binary_error": e_bin,
            **{
                f"queries_wrong_{q}": 1 - (1 - e_dec) ** (k * (1 - t["unsure"] / n)) for q, k in BOOKS_PER_QUERY.items()
            },
            **{f"binary_queries_wrong_{q}": 1 - (1 - e_bin) ** k for q, k in BOOKS_PER_QUERY.items()},
        }
    return out


def _splits(text: str) -> str:
    unknown = set(text.split(",")) - {*SPLITS, "all", "blind"}
    if unknown or ({"all", "blind"} & set(text.split(",")) and text not in ("all", "blind")):
        raise argparse.ArgumentTypeError(
            f"splits are 'all', 'blind' or some of {', '.join(SPLITS)}, joined by commas; got {text!r}"
        )
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", type=_splits, default="all", help="all, or splits joined by commas")
    parser.add_argument("--errors", type=int, default=15, help="title-level errors to list per kind and type")
    parser.add_argument("--min", type=float, default=0.9, help="title-level precision/recall gate")
    parser.add_argument("--min-precision", type=float, help="title-level precision gate (default: --min)")
    parser.add_argument("--min-recall", type=float, help="title-level recall gate (default: --min)")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="spaCy model of the offline taggers")
    parser.add_argument(
        "--tagger",
        choices=(*OFFLINE, "model"),
        default=DEFAULT[0].removeprefix("human_"),
        help="v7, v6, v5, v4, v3: human_vN/city_vN (default: the registry's default); model: the model tagger",
    )
    parser.add_argument(
        "--base-url", help="--tagger model: the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
    )
    parser.add_argument("--llm-model", help="--tagger model: the model name sent to the endpoint")
    parser.add_argument("--cache", help="--tagger model: SQLite answer cache (default: none)")
    parser.add_argument(
        "--classes", action="store_true", help="per kind, each evidence class's wrong / titles (EntityKind.classes)"
    )
    args = parser.parse_args(argv)
    min_p = args.min if args.min_precision is None else args.min_precision
    min_r = args.min if args.min_recall is None else args.min_recall

    if args.split == "blind":
        items = load(BLIND)
        args.errors = 0  # blind: totals only, never title by title
    else:
        items = [x for x in load() if args.split == "all" or x.split in args.split.split(",")]
    titles = [x.title for x in items]
    if args.tagger == "model":
        if not (args.base_url and args.llm_model):
            parser.error("--tagger model needs --base-url and --llm-model")
        from tasks.taggers.model import model_taggers

        human_m, city_m = model_taggers(args.base_url, args.llm_model, args.cache)
        predicted = {
            "human": [[s.text for s in x] for x in human_m.tag_many(titles)],
            "city": [[s.text for s in x] for x in city_m.tag_many(titles)],
        }
    else:
        human_cls, city_cls = OFFLINE[args.tagger]
        human, city = human_cls(args.model), city_cls(args.model)
        views = human.views(titles, human.parse(titles))  # one parse shared by both taggers
        predicted, evidence, doubts = {}, {}, {}
        for tagger in (human, city):
            found = [tagger.spans(v) for v in views]
            predicted[tagger.name] = [[s.text for s in spans] for spans in found]
            evidence[tagger.name] = [[s.evidence for s in spans] for spans in found]
            doubts[tagger.name] = [None if f else tagger.doubt(v) for v, f in zip(views, found)]
    report = score(items, predicted)

    print(
        f"{len(items)} labelled titles (split: {args.split}); gold: "
        + ", ".join(f"{sum(bool(x.gold[k]) for x in items)} with {k}" for k in KINDS)
    )
    print(f"{'kind':6} {'level':6} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>9} {'recall':>7} {'f1':>6}")
    failed = False
    for kind in KINDS:
        for level in ("title", "span"):
            c, (p, r, f1) = report[kind][level]
            print(f"{kind:6} {level:6} {c['tp']:4} {c['fp']:4} {c['fn']:4} {p:9.3f} {r:7.3f} {f1:6.3f}")
            failed |= level == "title" and (p < min_p or r < min_r)
    if args.split == "all":
        print(f"\n{'split':9} {'kind':6} {'level':6} {'titles':>6} {'precision':>9} {'recall':>7}")
        for split in SPLITS:
            picked = [n for n, x in enumerate(items) if x.split == split]
            part = score([items[n] for n in picked], {k: [predicted[k][n] for n in picked] for k in KINDS})
            for kind in KINDS:
                for level in ("title", "span"):
                    _, (p, r, _) = part[kind][level]
                    print(f"{split:9} {kind:6} {level:6} {len(picked):6} {p:9.3f} {r:7.3f}")
    if args.tagger != "model" and args.classes:
        print("\nevidence classes (title rules alone): wrong / titles, a wrong flag being the class's verdict")
        for kind in KINDS:
            counts = class_counts(kind, items, predicted[kind], evidence[kind], doubts[kind])
            print(f"{kind:6} " + ", ".join(f"{c} {w}/{n}" for c, (w, n) in sorted(counts.items())))
    if args.tagger != "model":
        states = {k: title_states(k, evidence[k], doubts[k]) for k in KINDS}
        groups = [(args.split, list(range(len(items))))]
        if args.split == "all":
            groups += [(sp, [n for n, x in enumerate(items) if x.split == sp]) for sp in SPLITS]
        print(
            "\nthree-valued states (tasks/entity_states.py, title rules alone); error = a wrong decided flag "
            "among all titles; queries = est. share of name queries whose key holds a wrong book (one / two "
            "constraints); u|gold = the share of the titles with the kind that are unsure"
        )
        print(
            f"{'split':9} {'kind':6} {'unsure':>6} {'u|gold':>6} {'P':>6} {'R':>6} {'error':>6} {'binary':>6} "
            f"{'q1':>6} {'q2':>6} {'q1 bin':>6} {'q2 bin':>6}"
        )
        for name, picked in groups:
            part = state_report(
                [items[n] for n in picked],
                {k: [predicted[k][n] for n in picked] for k in KINDS},
                {k: [states[k][n] for n in picked] for k in KINDS},
            )
            for kind in KINDS:
                x = part[kind]
                print(
                    f"{name:9} {kind:6} {x['unsure']:6.3f} {x['gold_unsure']:6.3f} {x['precision']:6.3f} {x['recall']:6.3f} "
                    f"{x['error']:6.3f} {x['binary_error']:6.3f} {x['queries_wrong_one']:6.3f} "
                    f"{x['queries_wrong_two']:6.3f} {x['binary_queries_wrong_one']:6.3f} "
                    f"{x['binary_queries_wrong_two']:6.3f}"
                )
    for kind in KINDS:
        for err in ("fp", "fn"):
            listed = report[kind]["errors"][err]
            if listed and args.errors:
                print(f"\n{kind} {'false positives' if err == 'fp' else 'false negatives'} ({len(listed)}):")
                for title, gold, pred in listed[: args.errors]:
                    print(f"  {title!r}  gold={gold} predicted={pred}")
    print(f"\ntitle-level gate (precision >= {min_p}, recall >= {min_r}): {'FAIL' if failed else 'pass'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
