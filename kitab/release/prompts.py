"""``kitab prompts``: the paper's prompt templates (App. D) rendered for every query of a release.

One JSON line per query, ``{"query_id", "template", "prompt"}``: send ``prompt`` to a model,
add its text as ``response`` to the line, and the file is an answers file for ``kitab
evaluate`` (which reads ``query_id`` and ``response``), so prompts -> model -> evaluate is a
loop. The template texts are the paper's, word for word; the placeholders are filled from
the query's KITAB row: ``{author}``, ``{birth_year}``, ``{constraints}`` (KITAB's
``constraints`` field, "Criterion 1: …") and ``{all_books}`` (the ``all_books`` entries,
"Title (YYYY)", one per line).

Templates (kitab name: the paper's condition, §3.2):

- ``no-context``: Template 2a, NO-CONTEXT (the model's own knowledge).
- ``with-context``: Template 2b, WITH-CONTEXT (the author's books are given).
- ``self-context``: Template 3, SELF-CONTEXT (the model lists the author's books first).
  The paper used it for one-constraint queries; its text says "Constraint 1" and is kept.
- ``cot``: the same text as ``no-context``. The paper has no separate chain-of-thought
  prompt: its standard chain-of-thought (§1 iv, §3.2) is the "Think step-by-step. Give a
  1-2 sentence reason" that Templates 2a, 2b and 3 all carry.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from kitab.core import jsonl
from kitab.core.errors import KitabError

_OUTPUT_WITH_REASONS = """Output:
1. Reason: <reason>. Title: <title>
2. Reason: <reason>. Title: <title>
...
N. Reason: <reason>. Title: <title>"""

NO_CONTEXT = (
    "List of all books written by {author} (born in {birth_year}) satisfying all the following criteria. "
    "All book titles need to be in English. Think step-by-step. Give a 1-2 sentence reason for why the books "
    "satisfy the criteria. Criteria: {constraints} Remember that every book in the output list needs to satisfy "
    "all the criteria. Always finish your response with the following format. Do not add any additional text or "
    "comments after the output list.\n\n" + _OUTPUT_WITH_REASONS
)

WITH_CONTEXT = (
    "The following is a list of books by {author} (born in {birth_year}) with publication dates in parenthesis. "
    "List:\n{all_books}\n\n"
    "Find all books in this list that satisfy all the following criteria. Think step-by-step. Give a 1-2 sentence "
    "reason for why the books satisfy the criteria. Criteria: {constraints} Remember that every book in the output "
    "list needs to satisfy all the criteria. Always finish your response with the following format. Do not add any "
    "additional text or comments after the output list.\n\n" + _OUTPUT_WITH_REASONS
)

SELF_CONTEXT = (
    "List of all books written by {author} (born in {birth_year}) satisfying all the following criteria. "
    "All book titles need to be in English. Criteria: {constraints} First, retrieve all books by {author} "
    '(born in {birth_year}) and list them in the "All Books" list. Then, select the subset of books that satisfy '
    'Constraint 1 and list them under the "Final Output" list. Think step-by-step. Give a 1-2 sentence reason for '
    "why the books satisfy the criteria. Remember that every book in the final output list needs to satisfy all "
    "the criteria. Always finish your response with the following format. Do not add any additional text or "
    "comments after the output list.\n\n"
    "All Books:\n1. Title: <title>\n2. Title: <title>\n...\nN. Title: <title>\n\n"
    "Final " + _OUTPUT_WITH_REASONS
)

TEMPLATES = {"no-context": NO_CONTEXT, "with-context": WITH_CONTEXT, "self-context": SELF_CONTEXT, "cot": NO_CONTEXT}


def render_prompt(template: str, *, author: str, birth_year: int, constraints: str, all_books: list[str]) -> str:
    """The prompt of ``template`` for one query (its KITAB row's fields)."""
    try:
        text = TEMPLATES[template]
    except KeyError:
        raise KitabError(f"unknown template {template!r} (known: {', '.join(TEMPLATES)})") from None
    return text.format(author=author, birth_year=birth_year, constraints=constraints, all_books="\n".join(all_books))


def sample_across_authors(rows: list[tuple[str, str]], limit: int | None, seed: int = 0) -> set[str]:
    """``--limit N``: the query ids of a seeded sample of ``limit`` of ``rows`` ((query_id,
    author) pairs) drawn across authors: the authors in a seeded random order, then one query
    of each author per round (each author's queries in a seeded random order) until ``limit``.
    The file's first N would be the most-linked authors' queries only (a biased trial); this
    covers min(N, authors) authors, whatever their popularity. All ids when ``limit`` is None."""
    import random

    if limit is None or limit >= len(rows):
        return {q for q, _ in rows}
    rng = random.Random(seed)
    by_author: dict[str, list[str]] = {}
    for query_id, author in sorted(rows):
        by_author.setdefault(author, []).append(query_id)
    authors = sorted(by_author)
    rng.shuffle(authors)
    for author in authors:
        rng.shuffle(by_author[author])
    chosen: list[str] = []
    for depth in range(max(len(q) for q in by_author.values())):
        for author in authors:
            if depth < len(by_author[author]):
                chosen.append(by_author[author][depth])
                if len(chosen) == limit:
                    return set(chosen)
    return set(chosen)


def intact_release(warehouse: Path, release: str):
    """The warehouse of ``release``, checked: a prompts file is what models answer, never one
    of a damaged release (the cheap check; a file changed with its stat kept fails the read
    that follows, in one line). Every task's prompts start here (kitab/release/task.py)."""
    from kitab.core.warehouse import Warehouse

    wh = Warehouse(Path(warehouse))
    wh.require_release(release)
    wh.require_intact(release, nothing="no prompts written", full=False)
    return wh


def release_prompts(
    warehouse: Path, release: str, template: str, *, limit: int | None = None, seed: int = 0
) -> Iterator[str]:
    """One JSON line per query of ``release`` (KITAB's file order: one- then two-constraint
    queries, authors by sitelinks descending), with the rendered prompt; with ``limit``, only
    a seeded sample of that many queries across authors (:func:`sample_across_authors`), in
    the same order."""
    wh = intact_release(warehouse, release)
    if template not in TEMPLATES:
        raise KitabError(f"unknown template {template!r} (known: {', '.join(TEMPLATES)})")
    with wh.connect(release=release) as con:
        rows = con.execute(
            'SELECT query_id, "Author", "Birth Year", constraints, all_books FROM kitab_book_constraints '
            'ORDER BY n_constraints, "# of sitelinks" DESC, "Author", constraint_id, query_id'
        ).fetchall()
    keep = sample_across_authors(_sampled_rows(rows), limit, seed)
    for query_id, author, birth_year, constraints, all_books in rows:
        if query_id not in keep:
            continue
        prompt = render_prompt(
            template,
            author=author,
            birth_year=birth_year,
            constraints=constraints,
            all_books=ast.literal_eval(all_books),
        )
        yield jsonl.dumps({"query_id": query_id, "template": template, "prompt": prompt}, ensure_ascii=False)


def _sampled_rows(rows) -> list[tuple[str, str]]:
    """(query_id, author) of KITAB rows (query_id, Author, Birth Year, ...): what --limit draws from."""
    return [(r[0], f"{r[1]} ({r[2]})") for r in rows]


def sampled_query_ids(con, limit: int, seed: int) -> set[str]:
    """The query ids ``kitab answer --limit limit --limit-seed seed`` asks on the release ``con``
    is scoped to (the sample :func:`release_prompts` draws), for ``kitab evaluate`` to score over."""
    rows = con.execute('SELECT query_id, "Author", "Birth Year" FROM kitab_book_constraints').fetchall()
    return sample_across_authors(_sampled_rows(rows), limit, seed)
