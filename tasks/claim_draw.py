"""The claims draw's candidate pairs (tasks/claims.py), one batch of authors at a time.

Every constrain batch writes its share of the material (tasks/claims.py ``claim_material``);
this module turns every batch's into the candidate pairs, per stratum ``(kind,
constraint_type)``, with each author's false sides drawn from that author's own seeded stream
(attribute pairs first, then authorship, then year). What crosses authors is small and read
first: each type's true values and how often (the false value's weight), which authors have
books, the latest year, and every author's name, birth year and keys (an authorship pair's
other author). A batch's books and constraints are then read, paired and let go, so the draw
holds one batch's material and the candidates, not the release's material (issue 41: 5.8 GiB
at 100,000 authors when it held all of it).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import random
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from operator import attrgetter
from pathlib import Path
from sys import intern
from typing import NamedTuple

from kitab.core.refs import duck
from tasks.claim_rows import AttributeRow, Pair, book_rows

YEAR_GAP = 5  # a false year is at least this far from every year of the book's variants
YEAR_SPAN = 14  # and at most this far: the offsets 5-14 shift the last digit by each of 0-9 once
PEERS = 8  # an authorship pair's other author: one of the this many born nearest the author
KIND_ORDER = {"attribute": 0, "authorship": 1, "year": 2}

# A batch's material by name (claim_attributes, claim_books), only ``columns`` if given: read
# twice, once for what crosses authors and once to pair.
Reader = Callable[[str, "list[str] | None"], Iterable[dict]]
Stratum = tuple[str, "str | None"]


def rows_reader(material: dict[str, Iterable[dict]]) -> Reader:
    """A :data:`Reader` over one batch's material held as rows (each kept as a list)."""
    held = {name: list(rows) for name, rows in material.items()}
    return lambda name, columns=None: held[name]


class ReleaseFacts(NamedTuple):
    """What crosses authors in the material, read from a few columns of every batch."""

    true_values: dict[str, Counter]  # per type: how often each value is true
    with_books: set[str]  # the authors with books
    latest: int  # the latest first year (a false year is never later)


def release_facts(batches: Sequence[Reader]) -> ReleaseFacts:
    true_values: dict[str, Counter] = defaultdict(Counter)
    with_books: set[str] = set()
    latest = 0
    for read in batches:
        for a in read("claim_attributes", ["constraint_type", "label", "value"]):
            if a["label"]:
                true_values[a["constraint_type"]][a["value"]] += 1
        for b in read("claim_books", ["author_qid", "first_year"]):
            with_books.add(b["author_qid"])
            if b["first_year"] is not None and b["first_year"] > latest:
                latest = b["first_year"]
    return ReleaseFacts(true_values, with_books, latest)


def pairs_from_batches(  # noqa: PLR0913
    authors: Iterable[dict],
    batches: Sequence[Reader],
    seed: int,
    spill: Path | None = None,
    shared: set[str] | None = None,
    facts: ReleaseFacts | None = None,
) -> dict[Stratum, list[Pair]]:
    """Every candidate pair per stratum, each stratum's in author (QID) order and per author
    in the order drawn: the same pairs whichever batches the authors come in, as long as each
    author's material is in one batch (else a ValueError). ``spill``: a folder where each
    batch's pairs leave their sides (the titles and claims they quote, most of a pair's
    memory), a pair keeping where they are; :func:`fetch_sides` brings back the drawn ones'.
    ``shared``: the keys of more than one author (:func:`shared_keys`), the only ones an
    authorship pair's exclusions need (None: index every key). ``facts``: the batches'
    :func:`release_facts`, if the caller has read them already."""
    true_values, with_books, latest = facts if facts is not None else release_facts(batches)
    release = Release(authors, with_books, seed, shared)
    cells: dict[str, Callable] = {}  # per type, each value pair's cell computed once

    def cell_of(ctype: str) -> Callable:
        if ctype not in cells:  # (a type may have no true value in the release)
            cells[ctype] = _cell_of(true_values[ctype])
        return cells[ctype]

    out: dict[Stratum, list[Pair]] = defaultdict(list)
    seen: set[str] = set()
    for number, read in enumerate(batches):
        per_type: dict[str, dict[str, dict[bool, list]]] = defaultdict(
            lambda: defaultdict(lambda: {True: [], False: []})
        )
        for c in sorted(map(AttributeRow, read("claim_attributes", None)), key=attrgetter("constraint_id")):
            per_type[c.author_qid][c.constraint_type][c.label].append(c)
        by_author = books_by_author(book_rows(read("claim_books", None)))
        batch = sorted(set(per_type) | {q for q in by_author if q in release.position})
        if seen.intersection(batch):
            raise ValueError(f"claim material: authors in two batches: {sorted(seen.intersection(batch))[:3]}")
        seen.update(batch)
        in_batch: list[Pair] = []
        for qid in batch:
            rng = random.Random(f"claims-candidates:{seed}:{qid}")
            drawn = [
                (
                    ("attribute", ctype),
                    _attribute_pairs(qid, ctype, sides, cell_of(ctype), true_values[ctype], rng, seed),
                )
                for ctype, sides in sorted(per_type.pop(qid, {}).items())
            ]
            if qid in release.position:
                drawn.append((("authorship", None), release.authorship_pairs(qid, by_author[qid], rng)))
                drawn.append((("year", None), _year_pairs(qid, release.names[qid], by_author[qid], latest, rng, seed)))
            for stratum, pairs in drawn:
                if pairs:
                    out[stratum] += pairs
                    in_batch += pairs
        if spill is not None:
            _spill_sides(in_batch, spill / f"{number:05d}.pickle", number)
        in_batch.clear()
    for pairs in out.values():  # batches in any order: each author's pairs stay in their order
        pairs.sort(key=attrgetter("author_qid"))
    # the strata in the order an author-by-author draw meets them: attribute types by their
    # first author (then type), then authorship, then year
    order = sorted(
        out, key=lambda s: (KIND_ORDER[s[0]], out[s][0].author_qid if s[0] == "attribute" else "", s[1] or "")
    )
    return {stratum: out[stratum] for stratum in order}


def _spill_sides(pairs: list[Pair], path: Path, batch: int) -> None:
    """Write ``pairs``' sides to ``path`` (one batch's), each pair keeping its place there as one
    int (batch and index: a tuple per pair would cost twice as much)."""
    with open(path, "wb") as f:
        pickle.dump([p.sides for p in pairs], f, protocol=pickle.HIGHEST_PROTOCOL)
    for i, p in enumerate(pairs):
        p.sides = batch << _INDEX_BITS | i


_INDEX_BITS = 32  # a batch's pairs, at most


def fetch_sides(pairs: Iterable[Pair], spill: Path) -> None:
    """Bring back the spilled sides of ``pairs`` (the drawn ones), one batch's file at a time."""
    by_batch: dict[int, list[Pair]] = defaultdict(list)
    for p in pairs:
        if isinstance(p.sides, int):
            by_batch[p.sides >> _INDEX_BITS].append(p)
    mask = (1 << _INDEX_BITS) - 1
    for batch, wanted in sorted(by_batch.items()):
        with open(spill / f"{batch:05d}.pickle", "rb") as f:
            sides = pickle.load(f)  # noqa: S301 (this draw's own file, written just before)
        for p in wanted:
            p.sides = sides[p.sides & mask]


def books_by_author(books: Iterable) -> dict[str, list]:
    """Books per author, each author's in book_id order."""
    by_author: dict[str, list] = defaultdict(list)
    for b in sorted(books, key=lambda b: b["book_id"]):
        by_author[b["author_qid"]].append(b)
    return by_author


def _attribute_pairs(
    qid: str, ctype: str, sides: dict[bool, list], cell: Callable, frequency: Counter, rng: random.Random, seed: int
) -> list[Pair]:
    """Per author and type, one pair per satisfiable constraint with an unsatisfiable one; the
    constraint's own spec said whether its claim holds (Spec.claim_holds). The false value is
    drawn with the weight of how often it is a true value in the release (per type), so false
    values look like true ones (no rare letter, no "only 1 word" give-away), and without
    replacement within an author while it can (a value in two pairs of one author would mark
    it false)."""
    if not sides[True] or not sides[False]:
        return []
    pairs, unused = [], list(sides[False])
    for true in sides[True]:
        # aim at a seeded cell (which side is commoner, which is larger) so every cell fills
        target = _target(seed, true.constraint_id, len(cell(true.value, sides[False][0].value)))
        pool = [c for c in unused if cell(true.value, c.value) == target] or unused or sides[False]
        weights = [frequency[c.value] for c in pool]
        false = rng.choices(pool, weights)[0] if any(weights) else rng.choice(pool)
        if false in unused:
            unused.remove(false)
        key = "|".join(sorted((true.constraint_id, false.constraint_id)))  # names neither side true
        values = (true.value, false.value)
        pairs.append(
            Pair(qid, "attribute", ctype, key, ("attribute", true, false), cell(true.value, false.value), values)
        )
    return pairs


def _year_pairs(
    qid: str, name: str, books: list, latest: int, rng: random.Random, seed: int
) -> list[Pair]:  # fmt: skip
    """The first year vs a year 5-14 off and far from every year of the book's variants (no
    future year; not the same decade: that ties the two last digits to opposite halves)."""
    centre = _median([b["first_year"] for b in books if b["first_year"] is not None])
    pairs = []
    for b in books:
        year = b["first_year"]
        if year is None or not _year_book(seed, b["book_id"]):
            continue
        taken = set(b["years"]) | {year}
        options = [
            y
            for d in range(YEAR_GAP, YEAR_SPAN + 1)
            for y in (year - d, year + d)
            if 0 < y <= latest and all(abs(y - t) >= YEAR_GAP for t in taken)
        ]
        if not options:
            continue
        # aim at a seeded cell (false year later or earlier, nearer the author's median or not)
        target = _target(seed, b["book_id"], 2)
        options = [y for y in options if _year_cell(year, y, centre) == target] or options
        wrong = rng.choice(sorted(options))
        sides = ("year", b["book_id"], b["title"], qid, name, year, wrong)
        pairs.append(Pair(qid, "year", None, b["book_id"], sides, _year_cell(year, wrong, centre)))
    return pairs


class Release:
    """What an authorship pair needs of the whole release: the authors with books in QID order,
    indexed by name, by key and by birth year, so a book costs its keys, not the release's
    authors (a list per book was quadratic: hours at 10,000)."""

    def __init__(
        self, authors: Iterable[dict], with_books: set[str], seed: int, shared: set[str] | None = None
    ) -> None:
        self.names: dict[str, str] = {}
        birth: dict[str, int | None] = {}
        keys: dict[str, set[str]] = {}
        for a in authors:
            qid = intern(a["qid"])
            self.names[qid] = a["name"]
            birth[qid] = a.get("birth_year")
            mine = a["keys"] if shared is None else [k for k in a["keys"] if k in shared]
            keys.setdefault(qid, set()).update(map(intern, mine))
        self.qids = sorted(q for q in with_books if q in self.names)
        self.position = {q: i for i, q in enumerate(self.qids)}
        self.by_name: dict[str, list[int]] = defaultdict(list)
        self.by_key: dict[str, list[int]] = defaultdict(list)
        for i, q in enumerate(self.qids):
            self.by_name[self.names[q]].append(i)
            for key in keys[q]:
                self.by_key[key].append(i)
        self.born = {q: birth[q] for q in self.qids if birth.get(q) is not None}
        self.by_birth = sorted(self.born, key=lambda q: (self.born[q], q))
        self.birth_rank = {q: i for i, q in enumerate(self.by_birth)}
        self.seed = seed

    def authorship_pairs(self, qid: str, books: list, rng: random.Random) -> list[Pair]:
        """A title of the author's vs the same title with an author who has no such title (nor
        the same name): one of the ``PEERS`` born nearest, else any in QID order."""
        pairs = []
        for b in books:
            if _year_book(self.seed, b["book_id"]):
                continue
            excluded = set(self.by_name[self.names[qid]])
            for key in b["keys"]:
                excluded.update(self.by_key.get(key, ()))
            peers = _peers(self.by_birth, self.born, self.birth_rank.get(qid), {self.qids[i] for i in excluded}, PEERS)
            others = peers or Remaining(self.qids, excluded)
            if not others:
                continue
            other = rng.choice(others)
            sides = ("authorship", b["book_id"], b["title"], qid, self.names[qid], other, self.names[other])
            pairs.append(Pair(qid, "authorship", None, b["book_id"], sides, ()))
        return pairs


def shared_keys(authors: Sequence[str | Path], books: Sequence[str | Path]) -> set[str]:
    """The keys (match keys, lower-cased titles) that more than one author has, in their own
    titles (``claim_authors``) or a book's (``claim_books``), from those material files: a key
    of one author only excludes that author, whom the pair's name rule excludes already. At
    100,000 authors 80,000 of 5.4 million keys (the index of all of them was 1 GB)."""
    if not authors or not books:  # no author or no book: no authorship pair to exclude from
        return set()
    with duck() as con:
        rows = con.execute(
            """SELECT key FROM (SELECT qid, unnest(keys) AS key FROM read_parquet($authors)
                                UNION ALL
                                SELECT author_qid, unnest(keys) FROM read_parquet($books))
               GROUP BY key HAVING count(DISTINCT qid) > 1""",
            {"authors": [str(p) for p in authors], "books": [str(p) for p in books]},
        ).fetchall()
    return {key for (key,) in rows}


class Remaining(Sequence):
    """``items`` without the positions ``excluded``, in order, as a sequence (len and index)
    built in the size of ``excluded``: ``rng.choice`` draws from it exactly as from the list."""

    def __init__(self, items: Sequence, excluded: Iterable[int]) -> None:
        self.items = items
        self.excluded = sorted(excluded)

    def __len__(self) -> int:
        return len(self.items) - len(self.excluded)

    def __getitem__(self, i: int):
        if not 0 <= i < len(self):
            raise IndexError(i)
        for e in self.excluded:  # ascending: each excluded position at or before i moves i on
            if e > i:
                break
            i += 1
        return self.items[i]


def _peers(by_birth: list[str], born: dict[str, int], rank: int | None, excluded: set[str], k: int) -> list[str]:
    """The ``k`` authors born nearest the one at ``rank`` of ``by_birth`` (authors sorted by
    birth year), none of ``excluded``, in QID order ([] when the author's birth year is unknown):
    an authorship pair's other author is of the same period, as plausible as the true one."""
    if rank is None:
        return []
    year = born[by_birth[rank]]
    low, high, found = rank - 1, rank + 1, []
    while len(found) < k and (low >= 0 or high < len(by_birth)):
        below = abs(year - born[by_birth[low]]) if low >= 0 else None
        above = abs(born[by_birth[high]] - year) if high < len(by_birth) else None
        if above is None or (below is not None and below <= above):
            q, low = by_birth[low], low - 1
        else:
            q, high = by_birth[high], high + 1
        if q not in excluded:
            found.append(q)
    return sorted(found)


@cache
def _order(value: str) -> tuple[tuple, bool]:
    """A value's fields (JSON, :func:`tasks.claims._value`) and whether they are all numbers:
    parsed once per value, not once per comparison (600,000 parses at 10,000 authors)."""
    fields = tuple(json.loads(value))
    return fields, all(isinstance(v, int | float) and not isinstance(v, bool) for v in fields)


def _attribute_cell(true: str, false: str, frequency: Counter) -> tuple[bool, ...]:
    """An attribute pair's orientation: for numbers (a count, a window), is the true value the
    smaller one (the false one as often above as below); else is it the commoner one in the
    release (ties: the first)."""
    (t, numeric), (f, _) = _order(true), _order(false)
    if numeric:
        return (t < f,)
    return ((frequency[true], f) > (frequency[false], t),)


def _cell_of(frequency: Counter) -> Callable[[str, str], tuple[bool, ...]]:
    """:func:`_attribute_cell` for one type's value frequencies, each value pair computed once."""
    cache: dict[tuple[str, str], tuple[bool, ...]] = {}

    def cell(true: str, false: str) -> tuple[bool, ...]:
        got = cache.get((true, false))
        if got is None:
            got = cache[true, false] = _attribute_cell(true, false, frequency)
        return got

    return cell


def _year_cell(year: int, wrong: int, centre: float | None) -> tuple[bool, bool]:
    """A year pair's orientation: is the false year the later one, and is it the nearer one to
    the author's median year."""
    cell = (wrong > year, centre is not None and abs(wrong - centre) < abs(year - centre))
    return _YEAR_CELLS[cell]  # one of four shared tuples, not one per candidate pair


_YEAR_CELLS = {(a, b): (a, b) for a in (False, True) for b in (False, True)}


def _year_book(seed: int, book_id: str) -> bool:
    """Whether ``book_id`` may make a year pair (else an authorship pair): a seeded half each, so
    no title is quoted by both kinds (a year claim names a book's author, both its sides)."""
    return _drawn(seed, "year-book", book_id)[0] % 2 == 1


def _target(seed: int, key: str, width: int) -> tuple[bool, ...]:
    bits = _drawn(seed, "target", key)[0]
    return tuple(bool(bits >> j & 1) for j in range(width))


def _median(values: list[int]) -> float | None:
    return statistics.median(values) if values else None  # (the mean of the two middle ones when even)


def _drawn(seed: int, *key: str) -> bytes:
    """A seeded hash of ``key``: its place in a seeded order (the same on every machine)."""
    return hashlib.blake2b("\x1f".join(("claims", str(seed), *key)).encode(), digest_size=8).digest()
