"""``kitab constraints``: every candidate constraint for one author's books read from stdin."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator

from tasks.constraints.book import Book
from tasks.constraints.candidates import author_candidates
from tasks.constraints.matching import author_books
from tasks.text import split_title_year

Tagger = Callable[[str], bool]


def constraints_probe(lines: Iterable[str], *, human: Tagger | None, city: Tagger | None) -> Iterator[str]:
    """One JSON line per candidate constraint: type, spec, text, mapped titles, S, N, κ.

    Each non-blank line is one book (no clustering, so no variants); a tagger left None
    means its entity constraints are not generated. κ is rounded to 4 places for reading.
    """
    books = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        title, year = split_title_year(line)
        books.append(Book(
            book_id=f"line:{number}",
            titles=(title,),
            first_year=year,
            has_human_name=human(title) if human else None,
            has_city_name=city(title) if city else None,
        ))
    for candidate in author_candidates(author_books(books)):
        spec = candidate.spec
        yield json.dumps({
            "type": spec.TYPE,
            "spec": spec.to_dict(),
            "text": spec.render(),
            "mapped_titles": candidate.answers,
            "S": candidate.n_mapped,
            "N": candidate.n_books,
            "kappa": round(candidate.constrainedness, 4),
        }, ensure_ascii=False)
