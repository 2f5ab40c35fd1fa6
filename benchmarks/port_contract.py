"""The KITAB contract under the rules of KITAB's evaluation port (eureka-ml-insights), not kitab's.

Gives a release's own ground truth (``mapped_books``) back as the answer to every query and
scores it with a re-implementation of the port's rules as kitab-original.md §5 describes them
(written from that description, not from its code): titles processed by ``process_title``
(lower, & -> and, ASCII punctuation stripped, a leading article dropped); each answer mapped
to the **first** ``all_books`` title with a character-substring relation either way, else the
first with ``fuzz.ratio`` >= 80, else looked up in ``raw_books`` the same way; lexical checks
on the answer strings (stopword skip for starts-with, ±1 words); the year from the mapped
``all_books`` entry; entity criteria from kitab's flags (the port's Azure NER is not
available); completeness against the normalised titles of satisfied clusters. Prints the
means per query size and lists the queries that are not all correct.

    .venv/bin/python benchmarks/port_contract.py --warehouse warehouse --release 2026.11.22-s11

kitab evaluate scores the same answers 1.0 everywhere; what this shows is what remains under
the port's first-substring rule: authors with one title nested in another ("Clock" / "The Old
Clock") cannot be scored right by it whichever way ``all_books`` is ordered (docs/evaluate.md).
"""
from __future__ import annotations

import argparse
import ast
import re
import string
from collections import defaultdict
from pathlib import Path

from rapidfuzz import fuzz

from kitab.core.warehouse import Warehouse

STOPWORDS = {"a", "an", "the", "in", "is", "of", "on", "for", "with", "to", "and"}
YEAR = re.compile(r"\s*\((\d{3,4})\)\s*$")


def process(title: str) -> str:
    words = title.lower().replace("&", "and").translate(str.maketrans("", "", string.punctuation)).split()
    if words and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


def first_match(key: str, titles: list[str]) -> int | None:
    for i, title in enumerate(titles):
        if key in title or title in key:
            return i
    for i, title in enumerate(titles):
        if fuzz.ratio(key, title) >= 80:
            return i
    return None


def satisfies(criterion: str, answer: str, year: int | None, human: bool, city: bool) -> bool:
    words = answer.split()
    if m := re.search(r"starts with the letter (\w)", criterion):
        return bool(words) and (words[0].startswith(m[1]) or (
            words[0] in STOPWORDS and len(words) > 1 and words[1].startswith(m[1])))
    if m := re.search(r"ends with the letter (\w)", criterion):
        return bool(words) and words[-1].endswith(m[1])
    if m := re.search(r"(\d+)\s+word", criterion):
        return int(m[1]) - 1 <= len(words) <= int(m[1]) + 1
    if "published between" in criterion:
        start, end = [int(y) for y in re.findall(r"\b(\d{1,4})\b", criterion)][1:3]
        return year is not None and start <= year <= end
    if "human name" in criterion:
        return human == ("doesn't" not in criterion)
    if "city name" in criterion:
        return city == ("doesn't" not in criterion)
    raise ValueError(f"unknown criterion {criterion!r}")


def score(author_flags: dict, row: dict) -> tuple[float, float, float, bool]:
    """(satisfied, completeness, not-from-author, all correct) of the ground truth as the answer."""
    mapped = ast.literal_eval(row["mapped_books"])
    if not mapped:
        return 1.0, 1.0, 0.0, True
    entries = ast.literal_eval(row["all_books"])
    titles = [YEAR.sub("", e) for e in entries]
    years = [int(m[1]) if (m := YEAR.search(e)) else None for e in entries]
    keys = [process(t) for t in titles]
    raw = [process(t) for t in ast.literal_eval(row["raw_books"])]
    clusters: dict[int, list[str]] = defaultdict(list)
    irrelevant = 0
    for title in mapped:
        key = process(title)
        index = first_match(key, keys)
        if index is not None:
            clusters[index].append(key)
        elif first_match(key, raw) is None:
            irrelevant += 1
    criteria = row["constraints"].split(", Criterion")
    satisfied = {i for i, answers in clusters.items()
                 if all(any(satisfies(c, a, years[i], *author_flags[titles[i]]) for a in answers) for c in criteria)}
    n = len(clusters) + irrelevant
    found = {keys[i] for i in satisfied} | {a for i in satisfied for a in clusters[i]}
    completeness = 1 - len({process(m) for m in mapped} - found) / len(mapped)
    rates = (len(satisfied) / n, irrelevant / n)
    return rates[0], completeness, rates[1], completeness == 1 and rates[0] == 1 and rates[1] == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"))
    parser.add_argument("--release", required=True)
    args = parser.parse_args()
    with Warehouse(args.warehouse).connect(release=args.release) as con:
        flags: dict[str, dict] = defaultdict(dict)
        for qid, title, human, city in con.execute(
                "SELECT b.author_qid, b.canonical_title, f.has_human_name, f.has_city_name "
                "FROM books b JOIN book_entity_flags f USING (book_id)").fetchall():
            flags[qid][title] = (human, city)
        cursor = con.execute("SELECT k.*, q.author_qid FROM kitab_book_constraints k JOIN queries q USING (query_id) "
                             "ORDER BY k.n_constraints, k.query_id")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, r)) for r in cursor.fetchall()]
    by_size: dict[int, list] = defaultdict(list)
    for row in rows:
        result = score(flags[row["author_qid"]], row)
        by_size[row["n_constraints"]].append(result)
        if not result[3]:
            print(f"not all correct: {row['query_id']}  mapped_books={row['mapped_books'][:100]}")
    print(f"\nrelease {args.release}: the ground truth scored by the port's rules")
    print("constraints  queries  satisfied  completeness  not-from-author  all-correct")
    for size, results in sorted(by_size.items()):
        means = [sum(r[i] for r in results) / len(results) for i in range(4)]
        print(f"{size:>11}  {len(results):>7}  {means[0]:>9.3f}  {means[1]:>12.3f}  {means[2]:>15.3f}  {means[3]:>11.3f}")


if __name__ == "__main__":
    main()
