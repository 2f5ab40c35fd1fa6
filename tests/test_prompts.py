"""``kitab prompts``: the paper's templates (App. D), filled for the paper's own examples,
read word for word like the paper prints them (whitespace aside: the paper is typeset)."""

from __future__ import annotations

import re

import pytest

from kitab.core.errors import KitabError
from kitab.release.evaluation.parse import parse_answer
from kitab.release.prompts import TEMPLATES, render_prompt

# Appendix D of the paper (arXiv 2310.15511), as printed, with its placeholders.
PAPER_2A = """List of all books written by {$author} (born in {$birth_year}) satisfying all the following
criteria. All book titles need to be in English. Think step-by-step. Give a 1-2 sentence reason for why
the books satisfy the criteria. Criteria: {$constraints} Remember that every book in the output list needs
to satisfy all the criteria. Always finish your response with the following format. Do not add any
additional text or comments after the output list.
Output:
1. Reason: <reason>. Title: <title>
2. Reason: <reason>. Title: <title>
...
N. Reason: <reason>. Title: <title>"""

PAPER_2B = """The following is a list of books by {$author} (born in {$birth_year}) with publication dates
in parenthesis. List: {$all_books}
Find all books in this list that satisfy all the following criteria. Think step-by-step. Give a 1-2
sentence reason for why the books satisfy the criteria. Criteria: {$constraints} Remember that every book
in the output list needs to satisfy all the criteria. Always finish your response with the following
format. Do not add any additional text or comments after the output list.
Output:
1. Reason: <reason>. Title: <title>
2. Reason: <reason>. Title: <title>
...
N. Reason: <reason>. Title: <title>"""

PAPER_3 = """List of all books written by {$author} (born in {$birth_year}) satisfying all the following
criteria. All book titles need to be in English. Criteria: {$constraints} First, retrieve all books by
{$author} (born in {$birth_year}) and list them in the "All Books" list. Then, select the subset of books
that satisfy Constraint 1 and list them under the "Final Output" list. Think step-by-step. Give a 1-2
sentence reason for why the books satisfy the criteria. Remember that every book in the final output list
needs to satisfy all the criteria. Always finish your response with the following format. Do not add any
additional text or comments after the output list.
All Books:
1. Title: <title>
2. Title: <title>
...
N. Title: <title>
Final Output:
1. Reason: <reason>. Title: <title>
2. Reason: <reason>. Title: <title>
...
N. Reason: <reason>. Title: <title>"""

PAPER = {"no-context": PAPER_2A, "with-context": PAPER_2B, "self-context": PAPER_3, "cot": PAPER_2A}

# The paper's examples: its running query (§3.1, Toni Morrison) and the criteria of its
# Appendix examples, in KITAB's data format ("Criterion N: ...").
EXAMPLES = [
    dict(
        author="Toni Morrison",
        birth_year=1931,
        constraints="Criterion 1: Book was first published between 1970-1980.",
        all_books=["Beloved (1987)", "Song of Solomon (1977)", "Sula (1973)", "The Bluest Eye (1970)"],
    ),
    dict(
        author="Toni Morrison",
        birth_year=1931,
        constraints="Criterion 1: Book title contains only 4 words.",
        all_books=["Beloved (1987)", "The Bluest Eye (1970)"],
    ),
    dict(
        author="Gabriel García Márquez",
        birth_year=1927,
        constraints="Criterion 1: Book title ends with the letter a.",
        all_books=["Leaf Storm (1955)", "One Hundred Years of Solitude (1967)"],
    ),
    dict(
        author="Erich Maria Remarque",
        birth_year=1898,
        constraints="Criterion 1: Book title starts with the letter v., "
        "Criterion 2: Book contains a human name in its title.",
        all_books=["All Quiet on the Western Front (1929)"],
    ),
]


def words(text: str) -> list[str]:
    return text.split()


def fill(paper: str, example: dict) -> str:
    return (
        paper.replace("{$author}", example["author"])
        .replace("{$birth_year}", str(example["birth_year"]))
        .replace("{$constraints}", example["constraints"])
        .replace("{$all_books}", "\n".join(example["all_books"]))
    )


@pytest.mark.parametrize("template", sorted(TEMPLATES))
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e["constraints"][13:40])
def test_prompts_are_the_papers_templates_word_for_word(template, example):
    assert words(render_prompt(template, **example)) == words(fill(PAPER[template], example))


def test_the_lines_a_model_copies_are_lines_and_the_templates_own_example_parses_to_nothing():
    for template in TEMPLATES:
        prompt = render_prompt(template, **EXAMPLES[0])
        assert "Output:\n1. Reason: <reason>. Title: <title>\n" in prompt
        assert parse_answer(prompt) == []  # the template's "<title>" lines are not an answer
    with_context = render_prompt("with-context", **EXAMPLES[0])
    assert "List:\nBeloved (1987)\nSong of Solomon (1977)\nSula (1973)\nThe Bluest Eye (1970)\n" in with_context
    assert re.search(r"\nAll Books:\n1\. Title: <title>\n", render_prompt("self-context", **EXAMPLES[0]))


def test_unknown_templates_are_refused():
    with pytest.raises(KitabError, match="unknown template 'zero-shot'"):
        render_prompt("zero-shot", **EXAMPLES[0])
