"""The review queue (issue 37, item 5): which (book, kind) rows a reviewer should label first so
that the release's estimated wrong-key share falls the most (``kitab review export --budget``;
the simulation of benchmarks/key_truth.py).

A query's key is wrong if any of its *deciding* rows (the author's books that meet the query's
other criterion, every book for a one-constraint query; tasks/entity_states.key_quality) is
decided wrongly: P(wrong) = 1 - prod(1 - e) over its decided deciding rows. A label makes a
row's error 0, so labelling row b lowers the expected number of wrong keys by the sum, over the
queries b decides, of e_b * prod(1 - e) over the query's *other* decided deciding rows. Gains
interact (labelling one row of a query raises what its other rows are worth), so the queue is
greedy with updates: take the best row, set its error to 0, recompute the rows that share a
query with it. Greedy is the best first pick, not always the best set (tests/test_review_queue.py
shows a case). Unsure rows are in no key: labelling one adds coverage, not accuracy, so they come
after every row with an error gain, by how many queries they are deciding in.

Pure functions; the per-row error is read through :func:`book_error` alone.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tasks.entity_states import UNSURE, meets_other_criteria, state_error

Row = tuple[str, str]  # (book_id, kind): one row of book_entities


def book_error(row: Mapping) -> float:
    """The estimated probability that a decided (book, kind) row's state is wrong: the one place
    the queue, the export and the key-truth harness read it: the row's stated error
    (book_entities.error, calibrated; tasks/entity_states.state_error)."""
    return state_error(row)[0]


def row_errors(states: Iterable[Mapping]) -> dict[Row, float | None]:
    """book_entities rows -> (book, kind) -> its error, None for an unsure row."""
    return {(s["book_id"], s["kind"]): None if s["state"] == UNSURE else book_error(s) for s in states}


@dataclass(frozen=True)
class EntityQuery:
    """One query with an entity criterion: per entity criterion its constraint type's label
    (human-name, no-city-name, ...) and the rows deciding it."""

    query_id: str
    n_constraints: int
    criteria: tuple[tuple[str, tuple[Row, ...]], ...]

    @property
    def rows(self) -> tuple[Row, ...]:
        return tuple(r for _, rows in self.criteria for r in rows)


def entity_queries(
    queries: Iterable[Mapping], constraints: Iterable[Mapping], states: Iterable[Mapping]
) -> list[EntityQuery]:
    """The release's entity queries with their deciding rows, by key_quality's definition.
    Rows as ``release_key_quality`` reads them: queries (query_id, author_qid, n_constraints,
    constraint_ids), constraints (constraint_id, spec, entity_kind, mapped_book_ids), states
    (book_entities: book_id, author_qid, kind)."""
    from tasks.constraints.registry import spec_from_json

    by_id = {c["constraint_id"]: c for c in constraints}
    books: dict[tuple[str, str], list[str]] = {}
    for s in states:
        books.setdefault((s["author_qid"], s["kind"]), []).append(s["book_id"])
    out = []
    for q in queries:
        members = [by_id[c] for c in q["constraint_ids"]]
        criteria = []
        for c in members:
            if not c.get("entity_kind"):
                continue
            kind, deciding = c["entity_kind"], meets_other_criteria(c, members)
            rows = tuple((b, kind) for b in books.get((q["author_qid"], kind), []) if deciding(b))
            criteria.append((spec_from_json(c["spec"]).label, rows))
        if criteria:
            out.append(EntityQuery(q["query_id"], q["n_constraints"], tuple(criteria)))
    return out


def _product(counts: Mapping[Row, int], errors: Mapping[Row, float | None]) -> tuple[int, float]:
    """A query's prod(1 - e) as (factors that are 0, product of the others): dividing one row's
    factor back out stays exact-enough and cheap."""
    zeros, prod = 0, 1.0
    for r, m in counts.items():
        f = 1.0 - (errors.get(r) or 0.0)
        if f == 0.0:
            zeros += m
        else:
            prod *= f**m
    return zeros, prod


def _ok(rows: Iterable[Row], errors: Mapping[Row, float | None], skip: Row | None = None) -> float:
    """prod(1 - e) over the decided rows (``skip``'s error taken as 0)."""
    return math.prod(1.0 - (errors.get(r) or 0.0) for r in rows if r != skip)


def estimated_wrong(queries: Sequence[EntityQuery], errors: Mapping[Row, float | None]) -> dict[str, dict]:
    """label -> ``queries`` and ``wrong_key``: the mean P(key wrong) over its queries (the same
    figure as key_quality's ``wrong_key``, unrounded)."""
    acc: dict[str, list[float]] = {}
    for q in queries:
        p = 1.0 - _ok(q.rows, errors)
        for label, _ in q.criteria:
            acc.setdefault(label, []).append(p)
    return {label: {"queries": len(ps), "wrong_key": sum(ps) / len(ps)} for label, ps in sorted(acc.items())}


def review_queue(queries: Sequence[EntityQuery], errors: Mapping[Row, float | None], budget: int) -> list[dict]:
    """Up to ``budget`` rows to label, best first: ``{"row", "gain", "queries", "why"}``.
    ``why`` "error": ``gain`` is what its label takes off the expected number of wrong keys
    (given the rows picked before it); "coverage": an unsure row, ``gain`` 0, ``queries`` the
    entity queries it is deciding in. Rows that are neither (decided, in no query's key, or of
    error 0) are not queued, so the queue can be shorter than the budget. Ties: by row."""
    if budget <= 0:
        return []
    of_row: dict[Row, list[int]] = {}
    rows = [Counter(q.rows) for q in queries]  # per query: row -> how many of its criteria it decides
    for i, counts in enumerate(rows):
        for r in counts:
            of_row.setdefault(r, []).append(i)
    errors = dict(errors)
    products = [_product(counts, errors) for counts in rows]

    def contribution(i: int, r: Row) -> float:
        """What labelling r takes off query i's P(wrong), from its cached product."""
        zeros, prod = products[i]
        m, f = rows[i][r], 1.0 - (errors.get(r) or 0.0)
        others = (zeros - m, prod) if f == 0.0 else (zeros, prod / f**m)
        return (0.0 if others[0] else others[1]) - (0.0 if zeros else prod)

    current = {
        r: sum(contribution(i, r) for i in of_row[r]) for r in of_row if errors.get(r) is not None and errors[r] > 0
    }
    heap = [(-g, r) for r, g in current.items()]
    heapq.heapify(heap)
    picks: list[dict] = []
    while heap and len(picks) < budget:
        g, r = heapq.heappop(heap)
        if r not in current or -g != current[r]:
            continue  # a stale entry: the row was picked, or its gain moved since
        del current[r]
        if -g <= 1e-15:
            break
        picks.append({"row": r, "gain": -g, "queries": len(of_row[r]), "why": "error"})
        touched = {s for i in of_row[r] for s in rows[i] if s in current}
        for i in of_row[r]:  # the queries r decides: their other rows' gains move
            for s in rows[i]:
                if s in current:
                    current[s] -= contribution(i, s)
        errors[r] = 0.0
        for i in of_row[r]:
            products[i] = _product(rows[i], errors)
            for s in rows[i]:
                if s in current:
                    current[s] += contribution(i, s)
        for s in touched:
            heapq.heappush(heap, (-current[s], s))
    unsure = sorted((r for r in of_row if errors.get(r, None) is None), key=lambda r: (-len(of_row[r]), r))
    picks += [{"row": r, "gain": 0.0, "queries": len(of_row[r]), "why": "coverage"} for r in unsure]
    return picks[:budget]


def labelled_errors(errors: Mapping[Row, float | None], rows: Iterable[Row]) -> dict[Row, float | None]:
    """``errors`` after a reviewer labelled ``rows``: their error is 0 (an unsure row labelled is
    decided by the label, error 0 too)."""
    out = dict(errors)
    for r in rows:
        out[r] = 0.0
    return out
