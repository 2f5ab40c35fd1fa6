"""Pairs of an author's constraints, for the two-constraint queries (tasks/sample_queries.py):
the seeded draws that keep or drop a query, and S of a pair as bit masks."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence


def uniform(seed: int, purpose: str, *ids: str) -> float:
    """A uniform draw in [0, 1) fixed by (seed, purpose, ids)."""
    key = "\x1f".join((str(seed), purpose, *ids)).encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") / 2**64


def first_draws(seed: int, purpose: str) -> Callable[[str], Callable[[bytes], float]]:
    """``uniform(seed, purpose, first, second)`` as ``first_draws(seed, purpose)(first)(second.encode())``:
    the (seed, purpose) part of the hash computed once, each first id's part once per first id
    (sampling draws once per pair of an author's constraints; a property test ties the two)."""
    start = hashlib.blake2b(f"{seed}\x1f{purpose}\x1f".encode(), digest_size=8)

    def of_first(first: str) -> Callable[[bytes], float]:
        prefix = start.copy()
        prefix.update(f"{first}\x1f".encode())
        copy, from_bytes = prefix.copy, int.from_bytes

        def draw(second: bytes) -> float:
            h = copy()
            h.update(second)
            return from_bytes(h.digest(), "big") / 2**64

        return draw

    return of_first


def title_masks(rows: Sequence[Mapping]) -> tuple[list[int], Callable[[int], int]]:
    """One author's constraint rows as bit masks over (book, satisfying title) slots, and the
    function giving the number of books in a mask. S of a pair is one AND and a count (an
    author with k satisfiable constraints has ~k²/2 pairs), and it counts a book only when
    one title satisfies both, as ``joint_answers`` does."""
    bit: dict[tuple[str, str], int] = {}
    book_bits: dict[str, int] = defaultdict(int)
    masks = []
    for row in rows:
        mask = 0
        for book_id, titles in zip(row["mapped_book_ids"], row["satisfying_titles"]):
            for title in titles:
                slot = bit.setdefault((book_id, title), len(bit))
                book_bits[book_id] |= 1 << slot
                mask |= 1 << slot
        masks.append(mask)
    several = [b for b in book_bits.values() if b.bit_count() > 1]  # most books have one title
    any_several = 0
    for b in several:
        any_several |= b

    def count_books(mask: int) -> int:
        if not mask & any_several:  # no book with several titles in it: one bit per book (most pairs)
            return mask.bit_count()
        return mask.bit_count() - sum(max(0, (mask & b).bit_count() - 1) for b in several)

    return masks, count_books
