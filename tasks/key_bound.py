"""The key-error bound (issue 37, item 7): an entity query whose key's estimated chance of holding
a wrong decided book is above ``SamplingRates.max_key_error`` is not asked. Sampling
(tasks/sample_queries.py) asks :func:`key_error_over` after each draw and writes a rejects row
(:func:`over_bound_reject`) for what it drops, so what the bound cost is in the release."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from kitab.core.stages import SAMPLE_QUERIES
from tasks.base import reject
from tasks.constraints import spec_from_json


def key_error_over(members: Sequence[Mapping], books, bound: float | None) -> float | None:
    """The estimated chance that the key of the query ``members`` holds a wrong book when it is
    above ``bound`` (None: within it, not an entity query, or no bound / no states)."""
    if bound is None or books is None:
        return None
    for m in members:  # a loop, not any(genexpr): sampling asks for every pair it draws
        if m.get("entity_kind"):
            break
    else:
        return None
    from tasks.entity_states import query_key_error

    (p, _, _), _ = query_key_error(members[0]["author_qid"], members, books)
    return p if p > bound + 1e-9 else None


def over_bound_reject(members: Sequence[Mapping], stratum: str, p: float, bound: float) -> dict:
    return reject(
        SAMPLE_QUERIES,
        "key_error_over_bound",
        "query",
        "+".join(m["constraint_id"] for m in members),
        author_qid=members[0]["author_qid"],
        evidence={
            "key_error": round(p, 4),
            "max_key_error": bound,
            "stratum": stratum,
            "constraint_types": [m["constraint_type"] for m in members],
            # the entity slices (constraint type labels: human-name, no-city-name, ...) it cost
            "slices": [spec_from_json(m["spec"]).label for m in members if m.get("entity_kind")],
        },
    )


def over_bound_counts(rejects: Sequence[Mapping]) -> dict:
    """What the bound cost, per entity slice: ``{slice: {"one": n, "two": n, "authors_lost": n}}``
    (authors_lost: authors whose one-constraint query of the slice was dropped). Summed over
    batches by the step's stats (an author is in one batch)."""
    out: dict[str, dict[str, int]] = {}
    for r in rejects:
        evidence = json.loads(r["evidence"])
        size = "one" if len(evidence["constraint_types"]) == 1 else "two"
        for label in evidence["slices"]:
            counts = out.setdefault(label, {"one": 0, "two": 0, "authors_lost": 0})
            counts[size] += 1
            counts["authors_lost"] += size == "one"
    return dict(sorted(out.items()))
