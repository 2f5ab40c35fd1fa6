"""A release's ground truth scored by KITAB's own evaluator rules (eureka-ml-insights'
``KitabMetric``, the port of KITAB's evaluation) next to ``kitab evaluate``, with the reason for
every query the port does not score all-correct.

    .venv/bin/python benchmarks/port_contract.py --warehouse warehouse --release demo [--json]

The answer to each query is its exported ``mapped_books`` (what a perfect model says). The
port's rules are re-implemented here from its source, step for step (not copied):

- titles: lower-case, ``&`` -> ``and``, ASCII punctuation deleted, a leading the/a/an dropped;
  ``all_books`` entries lose a trailing ``(YYYY)`` first;
- mapping: a model title with a **substring relation either way** to any ``all_books`` title
  maps to the **first** such title in ``all_books`` order; else to the first with
  ``fuzz.ratio`` >= 80; else, found the same way in ``raw_books``, it is dropped
  (``raw_unmapped``); else it is not from the author;
- criteria: ``constraints.split(",")``; the letter of starts/ends-with is the character before
  the final period; word count ``(\\d+)\\s+word`` with ±1; the year range is the numbers of the
  criterion after the first; the year is the ``(YYYY)`` of ``all_books[all_books.index(book)]``;
  human-name is checked on the model's (processed) titles plus the mapped book's processed
  title, city-name on the model's titles only, each negated by ``doesn't``;
- satisfied = intersection over criteria, unsatisfied = union; rates over clusters (NaN
  without clusters), completeness over the processed ``mapped_books``, NaN when empty;
  all-correct = completeness 1 and satisfied 1 and not-from-author 0;
- the **empty-answer rule**: the port compares the parsed answer (a dict) with the string
  ``"[]"``, which is never equal, so the correct empty answer to an unsatisfiable query keeps
  completeness NaN and all-correct 0;
- means skip NaN (pandas).

Entity criteria are graded with the port's rule (which strings are checked), with kitab's own
human and city taggers standing in for Azure NER and Geonames (not reachable here; the port's
GPT-4 name list is not available offline either). They run on the strings the port passes:
processed, so lower-case.

Every imperfect query is explained by re-scoring it with one or more of the port's rules
replaced by kitab's: ``empty`` (the correct empty answer is right), ``mapping`` (kitab's
``match_title``: exact, then the most similar whole-word subset, then fuzzy), ``entity`` (the
release's book flags instead of a tagger on the lower-cased answer). The smallest set of
replacements that makes it all-correct is its reason; a query no set fixes is
``unexplained`` and makes the script exit 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

import argparse  # noqa: E402
import ast  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import string  # noqa: E402
from collections import defaultdict  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from rapidfuzz import fuzz  # noqa: E402

STOPWORDS = {"a", "an", "the", "in", "is", "of", "on", "for", "with", "to", "and"}
NAN = float("nan")
FIXES = ("empty", "mapping", "entity")


# -- the port's rules ---------------------------------------------------------------------------
def process_title(title: str) -> str:
    title = title.lower().replace("&", "and").translate(str.maketrans("", "", string.punctuation))
    words = title.split()
    if words and words[0] in ("the", "a", "an"):
        title = " ".join(words[1:])
    return title


def strip_year(entry: str) -> str:
    return re.sub(r"\(\d{3,4}\)$", "", entry).strip()


def fuzzy_first(title: str, titles: list[str]) -> str | None:
    """The port's fuzzy_compare: the first title with ratio >= 80 (fuzzywuzzy rounds; so do we)."""
    for other in titles:
        if other and title and round(fuzz.ratio(other, title)) >= 80:  # fuzzywuzzy: 0 for an empty string
            return other
    return None


def port_map(book: str, all_books: list[str], raw_books: list[str]) -> tuple[str, str | None]:
    """(kind, the all_books title) of one processed model title: kind is "book", "raw" or "none"."""
    if any(book in item for item in all_books) or any(item in book for item in all_books):
        return "book", next(item for item in all_books if book in item or item in book)
    close = fuzzy_first(book, all_books)
    if close is not None:
        return "book", close
    if (
        any(book in item for item in raw_books)
        or any(item in book for item in raw_books)
        or fuzzy_first(book, raw_books) is not None
    ):
        return "raw", None
    return "none", None


@dataclass
class Grading:
    """How entity criteria and title mapping are decided (the port's rules, or kitab's)."""

    human: Callable[[list[str], str], bool]  # (model titles, mapped all_books title) -> has a human name
    city: Callable[[list[str], str], bool]
    mapping: Callable[[str, list[str], list[str]], tuple[str, str | None]] = port_map
    empty_is_right: bool = False  # the empty-answer rule fixed


def port_score(row: dict, model_titles: list[str], grading: Grading) -> dict:
    """The port's process_row for one query row and the model's parsed titles."""
    mapped_raw = ast.literal_eval(row["mapped_books"])
    entries = ast.literal_eval(row["all_books"])
    all_books = [process_title(strip_year(e)) for e in entries]
    raw_books = [process_title(t) for t in ast.literal_eval(row["raw_books"])]
    model_books = [process_title(t) for t in model_titles]
    clusters: dict[str, list[str]] = {}
    not_from_author = []
    for book in model_books.copy():
        if book == "":
            continue
        kind, existing = grading.mapping(book, all_books, raw_books)
        if kind == "none":
            not_from_author.append(book)
            continue
        if kind == "raw":
            model_books.remove(book)
            continue
        clusters.setdefault(existing, []).append(book)
    criteria = row["constraints"].split(",")
    types = [row["constraint_type"]] if len(criteria) == 1 else ast.literal_eval(row["constraint_type"])
    satisfied: list[str] = []
    unsatisfied: list[str] = []
    for c, (criterion, ctype) in enumerate(zip(criteria, types)):
        sat_c, unsat_c = [], []
        if criterion[-1] != ".":
            criterion += "."
        for existing, variants in clusters.items():
            ok = _criterion(criterion, ctype, existing, variants, all_books, entries, grading)
            (sat_c if ok else unsat_c).append(existing)
        if c == 0:
            satisfied, unsatisfied = sat_c, unsat_c
        else:
            satisfied = list(set(sat_c) & set(satisfied))
            unsatisfied = list(set(unsat_c) | set(unsatisfied))
    n_clusters = len(set(not_from_author)) + len(clusters)
    rates = (
        (len(set(satisfied)) / n_clusters, len(set(unsatisfied)) / n_clusters, len(set(not_from_author)) / n_clusters)
        if n_clusters
        else (NAN, NAN, NAN)
    )
    if mapped_raw:
        wanted = {process_title(b) for b in mapped_raw}
        found = {process_title(b) for b in satisfied} | {v for b in set(satisfied) for v in clusters[b]}
        completeness = 1 - len(wanted - found) / len(wanted)
    else:
        completeness = NAN
    all_correct = int(completeness == 1 and rates[0] == 1 and rates[2] == 0)
    if not mapped_raw and grading.empty_is_right and not model_titles:  # what the port meant to do
        completeness, rates, all_correct = 1.0, (1.0, 0.0, 0.0), 1
    return {
        "satisfied": rates[0],
        "unsatisfied": rates[1],
        "not_from_author": rates[2],
        "completeness": completeness,
        "all_correct": all_correct,
    }


def _criterion(
    criterion: str,
    ctype: str,
    existing: str,
    variants: list[str],
    all_books: list[str],
    entries: list[str],
    grading: Grading,
) -> bool:
    negated = "doesn't" in criterion
    if ctype == "starts-with":
        letter = criterion[-2].lower()
        for s in variants:
            words = s.split()
            if words and words[0].startswith(letter):
                return True
            if words and words[0] in STOPWORDS:
                words.pop(0)
            if words and words[0].startswith(letter):
                return True
        return False
    if ctype == "ends-with":
        letter = criterion[-2].lower()
        return any((words := s.split()) and words[-1].endswith(letter) for s in variants)
    if ctype == "word-count":
        n = int(re.search(r"(\d+)\s+word", criterion).group(1))
        return any(n - 1 <= len(s.split()) <= n + 1 for s in variants)
    if ctype == "publishing-year":
        found = re.search(r"\((\d{3,4})\)", entries[all_books.index(existing)])
        if found is None:
            return False
        year_range = [int(y) for y in re.findall(r"\b(\d{1,4})\b", criterion)][1:]
        year = int(found.group(1))
        return year >= year_range[0] and year <= year_range[1]  # without "Criterion N:" the range starts at its end
    if ctype == "human-name":
        return grading.human(variants, existing) != negated
    if ctype == "city-name":
        return grading.city(variants, existing) != negated
    raise ValueError(f"unknown constraint_type {ctype!r}")


def nanmean(values: list[float]) -> float:
    kept = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    return sum(kept) / len(kept) if kept else NAN


# -- the release ---------------------------------------------------------------------------------
def load(warehouse: Path, release: str):
    from kitab.core.warehouse import Warehouse
    from kitab.release.evaluation.run import load_truths

    with Warehouse(warehouse).connect(release=release) as con:
        truths = load_truths(con)
        cursor = con.execute(
            "SELECT k.*, q.author_qid FROM kitab_book_constraints k JOIN queries q USING (query_id) "
            "ORDER BY k.n_constraints, k.query_id"
        )
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, r)) for r in cursor.fetchall()]
    return rows, truths


def tagger_checks(rows: list[dict]) -> tuple[Callable, Callable]:
    """The port's entity checks with kitab's taggers as the NER: on the processed strings."""
    from tasks.tag_entities import default_taggers, tag_titles

    strings = set()
    for row in rows:
        strings.update(process_title(t) for t in ast.literal_eval(row["mapped_books"]))
        strings.update(process_title(strip_year(e)) for e in ast.literal_eval(row["all_books"]))
    strings.discard("")
    ordered = sorted(strings)
    spans = tag_titles(ordered, default_taggers())
    human = {s for s, found in zip(ordered, spans["human"]) if found}
    city = {s for s, found in zip(ordered, spans["city"]) if found}
    return (
        lambda variants, existing: any(s in human for s in [*variants, existing]),
        lambda variants, existing: any(s in city for s in variants),
    )


def flag_checks(rows: list[dict], truths: dict) -> tuple[Callable, Callable]:
    """kitab's rule: the mapped book's flags in the release (keyed by the processed title)."""
    flags: dict[tuple[str, str], tuple[bool, bool]] = {}
    for row in rows:
        for book in truths[row["query_id"]].truth.books:
            flags[(row["query_id"], process_title(book.title))] = (bool(book.has("human")), bool(book.has("city")))
    current: list[str] = [""]

    def human(variants, existing):
        return flags.get((current[0], existing), (False, False))[0]

    def city(variants, existing):
        return flags.get((current[0], existing), (False, False))[1]

    return human, city, current


def kitab_mapping(book: str, all_books: list[str], raw_books: list[str]) -> tuple[str, str | None]:
    from tasks.constraints.matching import match_title

    found = match_title(book, all_books)
    if found is not None:
        return "book", all_books[found[0]]
    return ("raw", None) if match_title(book, raw_books) is not None else ("none", None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"))
    parser.add_argument("--release", required=True)
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document")
    parser.add_argument("--examples", type=int, default=3, help="example queries shown per reason")
    args = parser.parse_args(argv)

    from kitab.release.evaluation.metrics import score_answer

    rows, truths = load(args.warehouse, args.release)
    t_human, t_city = tagger_checks(rows)
    f_human, f_city, current = flag_checks(rows, truths)

    def grading(fixes: tuple[str, ...]) -> Grading:
        entity = "entity" in fixes
        return Grading(
            human=f_human if entity else t_human,
            city=f_city if entity else t_city,
            mapping=kitab_mapping if "mapping" in fixes else port_map,
            empty_is_right="empty" in fixes,
        )

    gradings = {fixes: grading(fixes) for r in range(len(FIXES) + 1) for fixes in itertools.combinations(FIXES, r)}
    port: dict[int, list[dict]] = defaultdict(list)
    port_flags: dict[int, list[dict]] = defaultdict(list)  # the port's rules, entities from the release's flags
    kitab: dict[int, list[dict]] = defaultdict(list)
    reasons: dict[str, list[str]] = defaultdict(list)
    examples: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        current[0] = row["query_id"]
        answer = ast.literal_eval(row["mapped_books"])
        scored = port_score(row, answer, gradings[()])
        port[row["n_constraints"]].append(scored)
        port_flags[row["n_constraints"]].append(port_score(row, answer, gradings[("entity",)]))
        k = score_answer(truths[row["query_id"]].truth, answer, no_books=not answer)  # the key says "none"
        kitab[row["n_constraints"]].append(
            {
                "satisfied": k.satisfied_rate,
                "unsatisfied": k.unsatisfied_rate,
                "not_from_author": k.not_from_author_rate,
                "completeness": k.completeness,
                "all_correct": int(k.all_correct),
            }
        )
        if scored["all_correct"]:
            continue
        reason = next(
            (
                "+".join(fixes)
                for fixes in gradings
                if fixes and port_score(row, answer, gradings[fixes])["all_correct"]
            ),
            "unexplained",
        )
        reasons[reason].append(row["query_id"])
        if len(examples[reason]) < args.examples:
            examples[reason].append(_example(row, answer, reason))

    metrics = ("satisfied", "unsatisfied", "not_from_author", "completeness", "all_correct")
    table = []
    for label, results in (
        ("the port's rules (eureka-ml-insights KitabMetric)", port),
        ("the port's rules, entity criteria from the release's flags", port_flags),
        ("kitab evaluate", kitab),
    ):
        for size in sorted(results):
            means = {m: nanmean([r[m] if r[m] is not None else NAN for r in results[size]]) for m in metrics}
            table.append({"scored_by": label, "n_constraints": size, "queries": len(results[size]), **means})
    imperfect = sum(len(v) for v in reasons.values())
    if args.json:
        print(
            json.dumps(
                {
                    "release": args.release,
                    "table": table,
                    "imperfect": imperfect,
                    "reasons": {k: len(v) for k, v in reasons.items()},
                    "examples": dict(examples),
                },
                indent=2,
                default=str,
            )
        )
    else:
        print(f"release {args.release}: each query's mapped_books given back as the answer\n")
        print(
            "| scored by | constraints | queries | satisfied | unsatisfied | not from author | completeness "
            "| all correct |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for t in table:
            print(
                f"| {t['scored_by']} | {t['n_constraints']} | {t['queries']} | "
                + " | ".join(f"{t[m]:.3f}" for m in metrics)
                + " |"
            )
        print(
            f"\n{imperfect} queries are not all-correct under the port's rules; the smallest set of its rules "
            "that, replaced by kitab's, makes each all-correct:\n"
        )
        print("| reason | queries | examples |")
        print("|---|---:|---|")
        for reason, ids in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            print(f"| {reason} | {len(ids)} | {'; '.join(examples[reason])} |")
    return 1 if reasons.get("unexplained") else 0


def _example(row: dict, answer: list[str], reason: str) -> str:
    if reason.startswith("empty"):
        return f'{row["query_id"]} (unsatisfiable; answer [] is not the string "[]")'
    if "mapping" in reason:
        all_books = [process_title(strip_year(e)) for e in ast.literal_eval(row["all_books"])]
        raw = [process_title(t) for t in ast.literal_eval(row["raw_books"])]
        for title in answer:
            key = process_title(title)
            ported, kitab = port_map(key, all_books, raw), kitab_mapping(key, all_books, raw)
            if ported != kitab:
                return f"{row['query_id']}: {title!r} -> {ported[1]!r} (kitab: {kitab[1]!r})"
    if "entity" in reason:
        return f"{row['query_id']}: {row['constraints'][:60]!r} on {answer[:2]!r}"
    return f"{row['query_id']}: {row['constraints'][:60]!r}"


if __name__ == "__main__":
    sys.exit(main())
