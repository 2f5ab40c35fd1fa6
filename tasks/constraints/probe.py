"""``kitab constraints``: every candidate constraint for one author's books read from stdin."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from kitab.core import jsonl
from tasks.constraints.book import Book
from tasks.constraints.candidates import author_candidates
from tasks.constraints.matching import author_books
from tasks.text import split_title_year

Tagger = Callable[[str], bool]


def constraints_probe(lines: Iterable[str], *, taggers: Mapping[str, Tagger] | None = None) -> Iterator[str]:
    """One JSON line per candidate constraint: type, spec, text, mapped titles, S, N, κ.

    Each non-blank line is one book (no clustering, so no variants); ``taggers`` maps an
    entity kind ("human", "city") to whether a title names one; a kind without a tagger gets
    no entity constraints. κ is rounded to 4 places for reading.
    """
    taggers = taggers or {}
    books = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        title, year = split_title_year(line)
        books.append(
            Book(
                book_id=f"line:{number}",
                titles=(title,),
                first_year=year,
                entities=tuple((kind, tagger(title)) for kind, tagger in sorted(taggers.items())),
            )
        )
    for candidate in author_candidates(author_books(books)):
        spec = candidate.spec
        yield jsonl.dumps(
            {
                "type": spec.TYPE,
                "spec": spec.to_dict(),
                "text": spec.render(),
                "mapped_titles": candidate.answers,
                "S": candidate.n_mapped,
                "N": candidate.n_books,
                "kappa": round(candidate.constrainedness, 4),
            },
            ensure_ascii=False,
        )
