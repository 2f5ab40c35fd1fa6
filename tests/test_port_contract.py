"""benchmarks/port_contract.py reproduces KITAB's evaluator port (eureka-ml-insights'
KitabMetric) rule for rule: the first-substring title mapping and the empty answer compared
with the string "[]", among the rest; checked on hand-made KITAB rows whose port scores are
worked out from the port's code by hand."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("port_contract", ROOT / "benchmarks" / "port_contract.py")
port = importlib.util.module_from_spec(spec)
sys.modules["port_contract"] = port  # its dataclasses look their module up
spec.loader.exec_module(port)

NO_ENTITIES = port.Grading(human=lambda variants, existing: False, city=lambda variants, existing: False)


def row(mapped, all_books, constraints, ctype, raw=()):
    return {
        "mapped_books": repr(list(mapped)),
        "all_books": repr(list(all_books)),
        "raw_books": repr(list(raw)),
        "constraints": constraints,
        "constraint_type": ctype,
    }


def test_a_title_maps_to_the_first_all_books_title_it_is_a_substring_of():
    morrison = ["Beloved: A Novel (1987)", "Love (2003)", "Jazz (1992)"]
    assert port.port_map("love", [port.process_title(port.strip_year(b)) for b in morrison], []) == (
        "book",
        "beloved a novel",
    )
    # "Love" (2003) answers "first published between 2000-2004"; the port credits the answer to
    # Beloved and reads Beloved's year, 1987: the perfect answer is unsatisfied and incomplete
    scored = port.port_score(
        row(["Love"], morrison, "Criterion 1: Book was first published between 2000-2004.", "publishing-year"),
        ["Love"],
        NO_ENTITIES,
    )
    assert (scored["satisfied"], scored["completeness"], scored["all_correct"]) == (0.0, 0.0, 0)
    # Pynchon's "V." is "v" after processing: a substring of almost any title
    pynchon = ["Gravity's Rainbow (1973)", "V. (1963)", "Vineland (1990)"]
    keys = [port.process_title(port.strip_year(b)) for b in pynchon]
    assert port.port_map("vineland", keys, []) == ("book", "v")  # "v" is in "vineland", and comes first
    assert port.port_map("gravitys rainbow", keys, []) == ("book", "gravitys rainbow")
    assert port.port_map("v", keys, []) == ("book", "gravitys rainbow")  # the first title containing "v"


def test_the_correct_empty_answer_to_an_unsatisfiable_query_scores_zero():
    unsat = row([], ["Jazz (1992)", "Sula (1973)"], "Criterion 1: Book title starts with the letter q.", "starts-with")
    scored = port.port_score(unsat, [], NO_ENTITIES)
    assert scored["all_correct"] == 0 and math.isnan(scored["completeness"]) and math.isnan(scored["satisfied"])
    fixed = port.port_score(unsat, [], port.Grading(NO_ENTITIES.human, NO_ENTITIES.city, empty_is_right=True))
    assert fixed["all_correct"] == 1 and fixed["completeness"] == 1.0


def test_the_rest_of_the_port_letter_before_the_period_comma_split_year_after_the_first_number():
    books = ["The Bluest Eye (1970)", "Sula (1973)", "Song of Solomon (1977)"]
    two = row(
        ["Song of Solomon"],
        books,
        "Criterion 1: Book title starts with the letter s., Criterion 2: Book was first published between 1975-1979.",
        "['starts-with', 'publishing-year']",
    )
    assert port.port_score(two, ["Song of Solomon"], NO_ENTITIES)["all_correct"] == 1
    # the year criterion drops its first number ("1" of "Criterion 1"): without the prefix it misreads
    no_prefix = row(["Sula"], books, "Book was first published between 1970-1974.", "publishing-year")
    assert port.port_score(no_prefix, ["Sula"], NO_ENTITIES)["all_correct"] == 0
    # word count ±1 on the processed title (leading article dropped)
    wc = row(["The Bluest Eye"], books, "Criterion 1: Book title contains only 3 words.", "word-count")
    assert port.port_score(wc, ["The Bluest Eye"], NO_ENTITIES)["satisfied"] == 1.0
    # a title found only in raw_books is dropped from every rate; an unknown one is not from the author
    raw = row(["Sula"], books, "Criterion 1: Book title starts with the letter s.", "starts-with", raw=["Tar Baby"])
    scored = port.port_score(raw, ["Sula", "Tar Baby", "Zqxv Wjkp"], NO_ENTITIES)
    assert (scored["satisfied"], scored["not_from_author"], scored["completeness"]) == (0.5, 0.5, 1.0)


def test_entity_criteria_use_the_ports_strings_human_on_answer_and_book_city_on_answer_only():
    books = ["Kofi's Watchman (1990)", "Stone (1991)"]
    seen = []
    grading = port.Grading(
        human=lambda variants, existing: seen.append(("human", variants, existing)) or True,
        city=lambda variants, existing: seen.append(("city", variants, existing)) or False,
    )
    port.port_score(
        row(["Kofi's Watchman"], books, "Criterion 1: Book contains a human name in its title.", "human-name"),
        ["Kofi's Watchman"],
        grading,
    )
    port.port_score(
        row(["Stone"], books, "Criterion 1: Book doesn't contain a city name in its title.", "city-name"),
        ["Stone"],
        grading,
    )
    assert seen == [("human", ["kofis watchman"], "kofis watchman"), ("city", ["stone"], "stone")]
