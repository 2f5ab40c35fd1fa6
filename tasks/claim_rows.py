"""The claims draw's material rows held compact (issue 41 item 5): a ``claim_books`` or
``claim_attributes`` row (tasks/claims.py claim_material) as a ``__slots__`` object with the
fields the draw reads, its repeated strings interned (an author's QID, a constraint type, a
value, a match key), so the release's material costs a fraction of its rows as dicts. A row is
read as before (``row["title"]``): the draw's code is the same for either. A candidate pair
keeps its two sides as a tuple of what they quote; :func:`sides` makes them the claims table's
rows for the drawn pairs only.
"""

from __future__ import annotations

from sys import intern


class _Row:
    __slots__ = ()

    def __getitem__(self, field: str):
        return getattr(self, field)


class BookRow(_Row):
    """A ``claim_books`` row: keys and years as tuples, the keys interned (an author's keys are
    the same strings)."""

    __slots__ = ("author_qid", "book_id", "title", "first_year", "keys", "years")

    def __init__(self, row: dict) -> None:
        self.author_qid = intern(row["author_qid"])
        self.book_id = row["book_id"]
        self.title = row["title"]
        self.first_year = row["first_year"]
        self.keys = tuple(map(intern, row["keys"]))
        self.years = tuple(row["years"])


class AttributeRow(_Row):
    """A ``claim_attributes`` row."""

    __slots__ = ("author_qid", "constraint_type", "constraint_id", "label", "value", "claim")

    def __init__(self, row: dict) -> None:
        self.author_qid = intern(row["author_qid"])
        self.constraint_type = intern(row["constraint_type"])
        self.constraint_id = row["constraint_id"]
        self.label = row["label"]
        self.value = intern(row["value"])
        self.claim = row["claim"]


def book_rows(books) -> list[BookRow]:
    return [b if isinstance(b, BookRow) else BookRow(b) for b in books]


def claim_text(kind: str, *, author: str, title: str | None = None, year: int | None = None, clause: str = "") -> str:
    if kind == "attribute":
        return f"{author} wrote a book {clause}."
    if kind == "authorship":
        return f"{author} wrote a book titled “{title}”."
    return f"“{title}” by {author} was first published in {year}."


def sides(sides: tuple | list) -> list[dict]:
    """A pair's two sides as the claims table's columns, from what the draw (tasks/claims.py pairs_from_material)
    kept of them (the kind, then the material rows or the book, authors and years they quote)."""
    if isinstance(sides, list):  # built already (candidate_pairs)
        return sides
    kind, *rest = sides
    if kind == "attribute":
        return [
            {"book_id": None, "title": None, "year": None, "claim_author_qid": m["author_qid"],
             "constraint_id": m["constraint_id"], "label": m["label"], "claim": m["claim"]}
            for m in rest
        ]  # fmt: skip
    book_id, title, qid, name, *slot = rest
    if kind == "authorship":
        common = {"book_id": book_id, "title": title, "year": None, "constraint_id": None}
        return [
            {**common, "claim_author_qid": q, "label": label, "claim": claim_text(kind, author=n, title=title)}
            for q, n, label in ((qid, name, True), (slot[0], slot[1], False))
        ]
    common = {"book_id": book_id, "title": title, "claim_author_qid": qid, "constraint_id": None}
    return [
        {**common, "year": y, "label": label, "claim": claim_text(kind, author=name, title=title, year=y)}
        for y, label in zip(slot, (True, False))
    ]


class Pair(_Row):
    """A candidate pair, read as :func:`tasks.claims.candidate_pairs`' dicts are (``values``
    only in an attribute pair): a dict per book was most of the draw's memory."""

    __slots__ = ("author_qid", "kind", "constraint_type", "pair_key", "sides", "cell", "values")

    def __init__(self, author_qid, kind, constraint_type, pair_key, sides, cell, values=None) -> None:  # noqa: PLR0913
        self.author_qid, self.kind, self.constraint_type, self.pair_key = author_qid, kind, constraint_type, pair_key
        self.sides, self.cell, self.values = sides, cell, values

    def __contains__(self, field: str) -> bool:
        return field in self.__slots__ and (field != "values" or self.values is not None)

    def as_dict(self) -> dict:
        """The pair as a dict, its sides built."""
        out = {field: self[field] for field in self.__slots__ if field in self}
        return out | {"sides": sides(self.sides)}
