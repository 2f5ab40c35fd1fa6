"""Claim pairs (issue 32): NoCha's minimal pairs from a release's own tables.

A pair is one true and one false claim about one author that differ in exactly one slot, so a
model scores a pair only when it judges both right (docs/claims.md). Three kinds:

- ``attribute``: "<author> wrote a book whose title starts with the letter b." from a
  satisfiable constraint vs the same sentence from an unsatisfiable constraint of the same type
  (slot: ``constraint_id``);
- ``authorship``: "<author> wrote a book titled <title>." vs the same title with another author
  of the release, born near the author, who has no book with that title or any title of the
  same match key (slot: ``claim_author_qid``);
- ``year``: "<title> by <author> was first published in <year>." with the book's first year vs
  a year ``YEAR_GAP`` to ``YEAR_SPAN`` off, at least ``YEAR_GAP`` off every year of the book's
  variants (slot: ``year``). A book makes a year pair or an authorship pair, never both.

Truth is the release's: "wrote a book" means a book of the author in this release, and every
title of a book counts (the canonical title and every variant), not only those the list
evaluator maps back. An attribute claim's truth and wording are its constraint type's
(``Spec.claim_holds`` and ``Spec.claim_clause``, tasks/constraints/kinds/): a claim is kept
only when the spec says it holds or fails beyond dispute (a letter or word-count claim under
both readings of the leading-article rule; a year range with every book's year known; an
entity claim with no unsure book when false), so a new constraint type makes claims by
being registered.

Sampling is seeded and balanced: the same number of pairs per kind (``per_author`` × authors,
at most what the scarcest kind offers), an attribute quota split evenly across constraint types
(a type short of candidates passes its remainder on), each stratum drawn round-robin across
authors in a seeded order. Which claim comes first is a seeded coin, recorded in ``position``.
Balanced against the wording too (issue 38), so that no rule on the text beats a coin
(benchmarks/claim_floor.py): within a constraint type every value (a letter, a count, a
window, present / absent) is true as often as false (within ``VALUE_SLACK``), false values are
drawn with the weight of how often they are true in the release, and year pairs put the false
year later / earlier and nearer / farther from the author's median year alike.

Pure: rows in, rows out; ``sql/checks/claims.sql`` re-derives every label without this code.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from tasks.claim_draw import Reader, _drawn, fetch_sides, pairs_from_batches, release_facts, rows_reader
from tasks.claim_rows import Pair, claim_text
from tasks.claim_rows import sides as claim_sides
from tasks.constraints import Book, Spec, spec_from_dict, spec_from_json

KINDS = ("attribute", "authorship", "year")
VALUE_SLACK = 1  # how much more often a value may be true than false in a stratum (or less)


def claim_books(books: list[dict], states: dict[str, tuple[tuple[str, bool | None], ...]]) -> list[Book]:
    """An author's release books as the constraint specs read them for a claim: every title
    (the canonical one and every variant, not only those the list evaluator maps back), the
    first year and each tagged kind's state (``states``: :func:`entity_states_by_book`)."""
    return [Book(b["book_id"], tuple(_titles(b)), b["first_year"], states.get(b["book_id"], ())) for b in books]


def entity_states_by_book(entities: Iterable[dict]) -> dict[str, tuple[tuple[str, bool | None], ...]]:
    """``book_entities`` rows -> per book, (kind, yes: True / no: False / unsure: None)."""
    decided = {"yes": True, "no": False}
    out: dict[str, list[tuple[str, bool | None]]] = defaultdict(list)
    for e in entities:
        out[e["book_id"]].append((e["kind"], decided.get(e["state"])))
    return {book_id: tuple(kinds) for book_id, kinds in out.items()}


def _titles(book: dict) -> list[str]:
    return list(dict.fromkeys([book["canonical_title"], *(book.get("variant_titles") or [])]))


def clause_of(spec: dict) -> str:
    """The claim's wording of a constraint spec: the constraint type's own (``claim_clause``)."""
    return spec_from_dict(spec).claim_clause()


def _pair(qid: str, kind: str, pair_key: str, sides: tuple, constraint_type: str | None = None, **more) -> Pair:
    """A minimal pair of claims about author ``qid``: ``sides`` what claim_rows.sides makes [the
    true claim, the false one] of (built for the drawn pairs only); ``cell``, attribute ``values``."""
    return Pair(qid, kind, constraint_type, pair_key, sides, **more)


def claim_material(
    authors: list[dict], books: list[dict], variants: list[dict], entities: list[dict], constraints: list[dict]
) -> dict[str, list[dict]]:
    """One batch's share of the claim pairs, before any random choice (the constrain step writes
    it per batch; :func:`pairs_from_material` draws the pairs over every batch's):

    - ``claim_attributes``: each constraint whose claim holds or fails beyond dispute, as the
      claim it makes (``label``: whether it holds);
    - ``claim_authors``: each author's name and every match key and lower-cased title of theirs
      (an authorship pair's other author must have none of the book's);
    - ``claim_books``: each book's canonical title, first year, keys and its variants' years.
    """
    names = {a["qid"]: a["name"] for a in authors}
    by_author = _books_by_author(books)
    states = entity_states_by_book(entities)
    attributes: list[dict] = []
    readable: dict[str, list[Book]] = {}
    specs: dict[str, Spec] = {}  # spec JSON -> its spec: every author has the same few hundred
    # (author, constraint type) -> claim_holds over the author's books, the books read once per type
    holds_of: dict[tuple[str, type], Callable[[Spec], bool | None]] = {}
    for c in sorted(constraints, key=lambda c: c["constraint_id"]):
        qid = c["author_qid"]
        if qid not in names:
            continue
        if qid not in readable:
            readable[qid] = claim_books(by_author[qid], states)
        spec = specs.get(c["spec"])
        if spec is None:
            spec = specs[c["spec"]] = spec_from_json(c["spec"])
        reader = holds_of.get((qid, type(spec)))
        if reader is None:
            reader = holds_of[(qid, type(spec))] = type(spec).claims_over(readable[qid])
        holds = reader(spec)
        if holds is not None and holds == bool(c["satisfiable"]):
            attributes.append(
                {
                    "author_qid": qid,
                    "constraint_type": c["constraint_type"],
                    "constraint_id": c["constraint_id"],
                    "label": holds,
                    "value": _value(c["spec"]),
                    "claim": claim_text("attribute", author=names[qid], clause=spec.claim_clause()),
                }
            )
    keys: dict[str, set[str]] = defaultdict(set)  # author -> every match key and lower-cased title
    book_keys: dict[str, set[str]] = defaultdict(set)
    years: dict[str, set[int]] = defaultdict(set)  # book -> every year of its variants
    for v in variants:
        for key in (v["match_key"], v["title"].lower()):
            keys[v["author_qid"]].add(key)
            book_keys[v["book_id"]].add(key)
        for y in (v.get("year"), v.get("year_raw")):
            if y is not None:
                years[v["book_id"]].add(int(y))
    return {
        "claim_attributes": attributes,
        "claim_authors": [
            {"qid": a["qid"], "name": a["name"], "birth_year": a.get("birth_year"), "keys": sorted(keys[a["qid"]])}
            for a in authors
        ],
        "claim_books": [
            {
                "author_qid": b["author_qid"],
                "book_id": b["book_id"],
                "title": b["canonical_title"],
                "first_year": b["first_year"],
                "keys": sorted(book_keys[b["book_id"]] | {b["canonical_title"].lower()}),
                "years": sorted(years[b["book_id"]]),
            }
            for qid in sorted(by_author)
            for b in by_author[qid]
        ],
    }


def _books_by_author(books: Iterable[dict]) -> dict[str, list[dict]]:
    by_author: dict[str, list[dict]] = defaultdict(list)
    for b in sorted(books, key=lambda b: b["book_id"]):
        by_author[b["author_qid"]].append(b)
    return by_author


def candidate_pairs(
    authors: list[dict],
    books: list[dict],
    variants: list[dict],
    entities: list[dict],
    constraints: list[dict],
    seed: int,
) -> dict[tuple[str, str | None], list[dict]]:
    """Every possible pair per stratum ``(kind, constraint_type)`` (None for authorship and
    year), in a deterministic order; the false side's random choices drawn from ``seed``."""
    material = claim_material(authors, books, variants, entities, constraints)
    out = pairs_from_material(material["claim_attributes"], material["claim_authors"], material["claim_books"], seed)
    return {stratum: [pair.as_dict() for pair in pairs] for stratum, pairs in out.items()}


def pairs_from_material(
    attributes: Iterable[dict], authors: Iterable[dict], books: Iterable[dict], seed: int
) -> dict[tuple[str, str | None], list[Pair]]:
    """:func:`candidate_pairs` from :func:`claim_material` held as rows (one batch, or every
    batch's together): tasks/claim_draw.py, one seeded stream per author, attribute pairs first,
    so an author's draws depend on its own material only (a rebuild whose review labels changed
    one author's states redraws that author's pairs, not every later author's)."""
    reader = rows_reader({"claim_attributes": attributes, "claim_books": books})
    return pairs_from_batches(authors, [reader], seed)


@lru_cache(maxsize=1 << 12)  # every author has the same few hundred specs
def _value(spec: str) -> str:
    """A constraint spec's fields but its type, as JSON in field order (the slot an attribute
    pair's two claims differ in: a letter, a count, a window, present or absent)."""
    fields = json.loads(spec)
    return json.dumps([fields[k] for k in sorted(fields) if k != "type"])


def _round_robin(pairs: list[dict], n: int, seed: int, stratum: str) -> list[dict]:
    """``n`` of ``pairs``, spread across authors: the authors in a seeded order, each author's
    pairs in a seeded order, then one pair per author per round. Both orders sort by a seeded
    hash of the author or pair (:func:`_drawn`), not a shuffle: an author or pair that comes
    or goes moves no other."""
    by_author: dict[str, list[dict]] = defaultdict(list)
    for p in pairs:
        by_author[p["author_qid"]].append(p)
    order = sorted(by_author, key=lambda qid: _drawn(seed, stratum, qid))
    for qid in order:
        by_author[qid].sort(key=lambda p: _drawn(seed, p["kind"], p["pair_key"]))
    chosen: list[dict] = []
    depth = 0
    active = order  # the authors with a pair at this depth: a round visits only them (at 100,000
    # authors a scan of every author per round was ~17 s of the claims draw)
    while len(chosen) < n and active:
        active = [qid for qid in active if depth < len(by_author[qid])]
        chosen += [by_author[qid][depth] for qid in active[: n - len(chosen)]]
        depth += 1
    return chosen


def _cells(pairs: list[dict]) -> list[tuple[bool, ...]]:
    """Every cell a stratum's pairs can fall in: each orientation true or false."""
    width = len(pairs[0]["cell"]) if pairs else 0
    return [tuple(bool(i >> j & 1) for j in range(width)) for i in range(2**width)]


def _stratum(key: tuple[str, str | None]) -> str:
    """A stratum's name in its seeded draws: ``kind:constraint_type`` (empty for none)."""
    kind, constraint_type = key
    return f"{kind}:{constraint_type or ''}"


def _cell_capacity(pairs: list[dict]) -> int:
    """How many of a cell stratum's ``pairs`` :func:`_cell_balanced` can draw."""
    cells = _cells(pairs)
    return len(cells) * min(sum(1 for p in pairs if p["cell"] == c) for c in cells)


def _value_balanced(pairs: list[dict], seed: int, stratum: str) -> list[dict]:
    """An attribute stratum's ``pairs`` in :func:`_round_robin` order, each taken only while
    every value (a letter, a count, a window, present / absent) stays true at most once more or
    less often than it is false: so a value says nothing about a claim's truth (no "only 1 word
    is false", no rare false letters, "contains" true in half the entity pairs). Every prefix
    keeps that balance: its length is the stratum's capacity, its first n the n it draws."""
    balance: Counter = Counter()  # value -> times true - times false
    chosen = []
    for p in _round_robin(pairs, len(pairs), seed, stratum):
        t, f = p["values"]
        if balance[t] < VALUE_SLACK and balance[f] > -VALUE_SLACK:
            balance[t] += 1
            balance[f] -= 1
            chosen.append(p)
    return chosen


def _value_orders(candidates: dict[tuple[str, str | None], list], seed: int) -> dict:
    """Each attribute stratum's :func:`_value_balanced` order, drawn once for its capacity and
    its draw."""
    return {
        key: _value_balanced(pairs, seed, _stratum(key))
        for key, pairs in candidates.items()
        if pairs and "values" in pairs[0]
    }


def _cell_balanced(pairs: list[dict], n: int, seed: int, stratum: str) -> list[dict]:
    """``n`` of a cell stratum's ``pairs`` (at most :func:`_cell_capacity`): the same number
    from every cell (the odd ones in a seeded order of cells), each cell's
    :func:`_round_robin`, so no one-sided rule ("the later year / the year nearer the author's
    others is true") beats a coin."""
    cells = sorted(_cells(pairs), key=lambda c: _drawn(seed, "cells", stratum, str(c)))
    share, extra = divmod(n, len(cells))
    return [
        p
        for i, c in enumerate(cells)
        for p in _round_robin(
            [p for p in pairs if p["cell"] == c],
            share + (i < extra),
            seed,
            f"{stratum}:{''.join(map(str, map(int, c)))}",
        )
    ]


def split_quota(
    total: int,
    available: dict,
) -> dict:
    """``total`` split as evenly as possible over the keys of ``available`` (how many each
    offers); a key short of its share passes the remainder to the others (water filling)."""
    quota = {k: 0 for k in available}
    left = total
    open_keys = sorted(k for k, n in available.items() if n > 0)
    while left > 0 and open_keys:
        share, extra = divmod(left, len(open_keys))
        for i, k in enumerate(open_keys):
            quota[k] += min(share + (1 if i < extra else 0), available[k] - quota[k])
        left = total - sum(quota.values())
        open_keys = [k for k in open_keys if quota[k] < available[k]]
    return quota


def build_claims(
    authors: list[dict],
    books: list[dict],
    variants: list[dict],
    entities: list[dict],
    constraints: list[dict],
    *,
    seed: int,
    per_author: int = 2,
) -> tuple[list[dict], dict]:
    """The release's claims table (two rows per pair) and the stage's stats."""
    candidates = candidate_pairs(authors, books, variants, entities, constraints, seed)
    return select_claims(candidates, len({b["author_qid"] for b in books}), seed=seed, per_author=per_author)


def claims_from_material(
    attributes: Iterable[dict], authors: Iterable[dict], books: Iterable[dict], *, seed: int, per_author: int = 2
) -> tuple[list[dict], dict]:
    """:func:`build_claims` from :func:`claim_material` held as rows."""
    reader = rows_reader({"claim_attributes": attributes, "claim_books": books})
    columns, stats = claims_from_batches(authors, [reader], seed=seed, per_author=per_author)
    return as_rows(columns), stats


def claims_from_batches(  # noqa: PLR0913
    authors: Iterable[dict],
    batches: Sequence[Reader],
    *,
    seed: int,
    per_author: int = 2,
    spill: Path | None = None,
    shared: set[str] | None = None,
) -> tuple[dict[str, list], dict]:
    """The claims table as columns (:func:`claim_columns`) and the stage's stats, from every
    batch's :func:`claim_material`, read one batch at a time (tasks/claim_draw.py); with
    ``spill`` (a folder) the candidates leave what they quote there and only the drawn pairs
    bring it back (4 million candidate pairs at 100,000 authors, 0.6 million drawn);
    ``shared``: tasks/claim_draw.py shared_keys."""
    facts = release_facts(batches)
    candidates = pairs_from_batches(authors, batches, seed, spill, shared, facts)
    chosen, available = choose_pairs(candidates, len(facts.with_books), seed=seed, per_author=per_author)
    del candidates  # the pairs not drawn: most of the draw's memory, before the claims are built
    if spill is not None:
        fetch_sides(chosen, spill)
    columns = claim_columns(chosen, seed)
    return columns, claim_stats(chosen, columns, available)


def stratum_capacity(candidates: dict[tuple[str, str | None], list], seed: int, orders: dict | None = None) -> dict:
    """How many pairs each stratum of ``candidates`` can give while staying balanced;
    ``orders``: the attribute strata's :func:`_value_orders`, where already drawn."""
    orders = _value_orders(candidates, seed) if orders is None else orders
    return {key: len(orders[key]) if key in orders else _cell_capacity(pairs) for key, pairs in candidates.items()}


CLAIM_COLUMNS = (
    "query_id", "pair_id", "position", "author_qid", "kind", "constraint_type",
    "book_id", "title", "year", "constraint_id", "claim_author_qid", "label", "claim",
)  # fmt: skip


def choose_pairs(
    candidates: dict[tuple[str, str | None], list], n_authors: int, *, seed: int, per_author: int = 2
) -> tuple[list, dict[str, int]]:
    """The pairs drawn from ``candidates`` (:func:`candidate_pairs`) for ``n_authors`` authors
    with books, and how many each kind offered."""
    orders = _value_orders(candidates, seed)
    capacity = stratum_capacity(candidates, seed, orders)
    available = {kind: sum(n for (k, _), n in capacity.items() if k == kind) for kind in KINDS}
    per_kind = min(per_author * n_authors, *available.values())
    chosen: list = []
    for kind in KINDS:
        strata = {t: n for (k, t), n in capacity.items() if k == kind}
        quota = split_quota(per_kind, {t or "": n for t, n in strata.items()})
        for t in sorted(strata, key=lambda t: t or ""):
            n, key = quota[t or ""], (kind, t)
            chosen += orders[key][:n] if key in orders else _cell_balanced(candidates[key], n, seed, _stratum(key))
    return chosen, available


def claim_columns(chosen: list, seed: int) -> dict[str, list]:
    """The drawn pairs as the claims table's columns (two rows per pair, in author, kind, pair
    order; which claim comes first a seeded coin): columns, not a dict per claim, which at
    1.2 million claims (100,000 authors) was 1 GB."""
    columns: dict[str, list] = {name: [] for name in CLAIM_COLUMNS}
    for pair in sorted(chosen, key=lambda p: (p["author_qid"], p["kind"], p["pair_key"])):
        pair_id = f"{pair['kind']}:{pair['pair_key']}"
        sides = claim_sides(pair["sides"])
        sides = sides if _drawn(seed, "flip", pair_id)[0] < 128 else sides[::-1]
        for position, side in enumerate(sides, 1):
            row = {
                "query_id": f"{pair_id}#{position}",
                "pair_id": pair_id,
                "position": position,
                "author_qid": pair["author_qid"],
                "kind": pair["kind"],
                "constraint_type": pair["constraint_type"],
                **side,
            }
            for name in CLAIM_COLUMNS:
                columns[name].append(row[name])
    return columns


def claim_stats(chosen: list, columns: dict[str, list], available: dict[str, int]) -> dict:
    """The claims stage's stats."""
    types = {p["constraint_type"] for p in chosen if p["constraint_type"]}
    return {
        "pairs": len(chosen),
        "claims": len(columns["query_id"]),
        "per_kind": {k: sum(1 for p in chosen if p["kind"] == k) for k in KINDS},
        "per_constraint_type": {t: sum(1 for p in chosen if p["constraint_type"] == t) for t in sorted(types)},
        "available": available,
        "true_first": sum(1 for pos, label in zip(columns["position"], columns["label"]) if pos == 1 and label),
    }


def as_rows(columns: dict[str, list]) -> list[dict]:
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


def select_claims(
    candidates: dict[tuple[str, str | None], list[dict]], n_authors: int, *, seed: int, per_author: int = 2
) -> tuple[list[dict], dict]:
    """The pairs drawn from ``candidates`` (:func:`candidate_pairs`) for ``n_authors`` authors
    with books, as the claims table's rows (two per pair), and the stage's stats."""
    chosen, available = choose_pairs(candidates, n_authors, seed=seed, per_author=per_author)
    columns = claim_columns(chosen, seed)
    return as_rows(columns), claim_stats(chosen, columns, available)


def claims_from_rows(tables: dict[str, Iterable[dict]], seed: int, per_author: int = 2) -> tuple[list[dict], dict]:
    """:func:`build_claims` over a release's tables by name (authors, books, title_variants,
    book_entities, constraints)."""
    return build_claims(
        list(tables["authors"]),
        list(tables["books"]),
        list(tables["title_variants"]),
        list(tables["book_entities"]),
        list(tables["constraints"]),
        seed=seed,
        per_author=per_author,
    )
