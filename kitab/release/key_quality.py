"""Key quality of a release (issue 28, item 7): per entity constraint type, the share of its
queries' deciding books left out as unsure and the estimated share of queries whose key holds a
wrong decided book. Computed once, here, from the release's own tables by the pure
``tasks.entity_states.key_quality``; the card and ``kitab report`` (the quality section), and the
leaderboard (beside each entity type's scores, and in ``--output json``) all read this."""

from __future__ import annotations

import json

import duckdb

from tasks.entity_states import ERROR_COLUMNS, key_quality_of_parts

NOTE = (
    "An estimate from labelled titles: each decided book's chance of a wrong state is the error of "
    "the evidence that decided it (the title rules' class, calibrated on labelled titles held out from "
    "the rules, or a measured second reader that agrees), with the 95% interval of those rates; a "
    "query's key is wrong if any of its deciding books is. The ceiling is the all-correct a perfect "
    "model can expect: it loses exactly the queries whose key is wrong."
)


def _dicts(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    return con.sql(sql).to_arrow_table().to_pylist()


QUERIES_PER_PART = 50_000  # queries read (with their constraints and authors' states) at a time


def release_key_quality(con: duckdb.DuckDBPyConnection, per_part: int = QUERIES_PER_PART) -> dict:
    """``{label: {...}}`` of the release ``con`` is scoped to (``Warehouse.connect(release=...)``):
    tasks.entity_states.key_quality of its queries, and what the key-error bound cost each slice
    (:func:`bound_cost`); {} for a release without entity queries, states or drops. The queries
    with an entity criterion are read ``per_part`` at a time in query order, each part with its
    constraints and its authors' states: memory follows the part, not the release (2.2 million
    queries at 100,000 authors)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE key_quality_queries AS "
        "SELECT row_number() OVER (ORDER BY query_id) - 1 AS n, query_id, author_qid, n_constraints, constraint_ids "
        "FROM queries WHERE query_id IN (SELECT q.query_id FROM (SELECT query_id, unnest(constraint_ids) AS id "
        "FROM queries) q JOIN constraints c ON c.constraint_id = q.id WHERE c.entity_kind IS NOT NULL)"
    ).fetchall()
    total = con.execute("SELECT count(*) FROM key_quality_queries").fetchall()[0][0]
    columns = _state_columns(con)

    def part(start: int) -> tuple[list[dict], list[dict], list[dict]]:
        scope = f"FROM key_quality_queries WHERE n >= {start} AND n < {start + per_part}"
        return (
            _dicts(con, f"SELECT query_id, author_qid, n_constraints, constraint_ids {scope} ORDER BY n"),
            _dicts(
                con,
                "SELECT constraint_id, spec, entity_kind, mapped_book_ids FROM constraints "
                f"WHERE constraint_id IN (SELECT unnest(constraint_ids) {scope}) ORDER BY constraint_id",
            ),
            # only the states a criterion can read: its author's books of its entity kind
            _dicts(
                con,
                f"SELECT {columns} FROM book_entities WHERE (author_qid, kind) IN (SELECT DISTINCT q.author_qid, "
                f"c.entity_kind FROM (SELECT author_qid, unnest(constraint_ids) AS id {scope}) q "
                "JOIN constraints c ON c.constraint_id = q.id WHERE c.entity_kind IS NOT NULL) ORDER BY book_id, kind",
            ),
        )

    quality = key_quality_of_parts(part(start) for start in range(0, total, per_part))
    con.execute("DROP TABLE key_quality_queries").fetchall()
    cost = bound_cost(con)
    for label, dropped in cost.items():
        quality.setdefault(label, {"kind": dropped["kind"], "queries": 0}).update(dropped)
    return dict(sorted(quality.items()))


def _state_columns(con: duckdb.DuckDBPyConnection) -> str:
    """book_entities' columns key quality reads: the stated errors where the release has them, and
    the evidence only of a row without one (tasks.entity_states.state_error works it out from it)."""
    have = {r[0] for r in con.sql("SELECT column_name FROM (DESCRIBE book_entities)").fetchall()}
    evidence = "CASE WHEN error IS NULL THEN evidence END AS evidence" if "error" in have else "evidence"
    return ", ".join(["book_id", "author_qid", "kind", "state", evidence, *(c for c in ERROR_COLUMNS if c in have)])


def bound_cost(con: duckdb.DuckDBPyConnection) -> dict:
    """Per entity slice, what the key-error bound left out of the release: its queries dropped
    (``dropped_one``, ``dropped_two``), the authors who lost the slice's one-constraint query
    (``authors_lost``: names) and the bound (``max_key_error``), from the release's
    ``key_error_over_bound`` rejects."""
    rows = _dicts(
        con,
        "SELECT r.author_qid, coalesce(a.name, r.author_qid) AS name, r.evidence FROM rejects r "
        "LEFT JOIN authors a ON a.qid = r.author_qid "
        "WHERE r.reason = 'key_error_over_bound' ORDER BY name, r.record_id",
    )
    out: dict[str, dict] = {}
    for r in rows:
        evidence = json.loads(r["evidence"])
        one = len(evidence["constraint_types"]) == 1
        for label, kind in zip(evidence["slices"], _slice_kinds(evidence), strict=True):
            d = out.setdefault(
                label,
                {"kind": kind, "dropped_one": 0, "dropped_two": 0, "authors_lost": [], "max_key_error": None},
            )
            d["dropped_one" if one else "dropped_two"] += 1
            d["max_key_error"] = evidence["max_key_error"]
            if one:
                d["authors_lost"].append(r["name"])
    return out


def _slice_kinds(evidence: dict) -> list[str]:
    """The entity kinds of a drop's slices, in order (an entity type is ``<kind>_name``)."""
    from tasks.entities.registry import entity_kinds

    by_type = {k.constraint_type: k.name for k in entity_kinds()}
    return [by_type[t] for t in evidence["constraint_types"] if t in by_type]


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _kinds_text(quality: dict) -> str:
    """The kinds of the quality rows, in the kinds' order: "Human- and city", "Human-, city- and country"."""
    from tasks.entities.registry import and_list, release_kinds

    kinds = [
        k for k in release_kinds(q["kind"] for q in quality.values()) if any(q["kind"] == k for q in quality.values())
    ]
    text = and_list([f"{k}-" for k in kinds[:-1]] + kinds[-1:])
    return text[:1].upper() + text[1:]


def pct_range(q: dict, key: str) -> str:
    """A figure of ``q`` with its range (``<key>_low``, ``<key>_high``): "12.3% (8.1%–17.0%)"."""
    if q.get(key) is None:
        return "–"
    return f"{_pct(q[key])} ({_pct(q.get(key + '_low'))}–{_pct(q.get(key + '_high'))})"


def bound_of(quality: dict) -> float | None:
    """The key-error bound the release's drops record (None: nothing was dropped)."""
    return next((q["max_key_error"] for q in quality.values() if q.get("max_key_error") is not None), None)


def _names(names: list[str], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def format_key_quality(quality: dict) -> str:
    """The markdown section of the card and ``kitab report``."""
    if not quality:
        return "### Answer-key quality (entity constraints)\n\nThis release has no entity query.\n"
    bound = bound_of(quality)
    rows = [
        f"| {label} | {q['queries']} | {q.get('dropped_one', 0)} / {q.get('dropped_two', 0)} "
        f"| {_pct(q.get('unsure_share'))} | {_pct(q.get('wrong_key_one'))} | {_pct(q.get('wrong_key_two'))} "
        f"| {pct_range(q, 'wrong_key')} | {pct_range(q, 'ceiling')} |"
        for label, q in quality.items()
    ]
    lost = [
        f"- {label}: {len(q['authors_lost'])} author(s) lost it: {_names(q['authors_lost'])}"
        for label, q in quality.items()
        if q.get("authors_lost")
    ]
    bound_text = (
        f"Entity queries whose key's estimated chance of holding a wrong book is above {_pct(bound)} were left "
        "out (`--max-key-error`; each is a `key_error_over_bound` row in `rejects`)."
        if bound is not None
        else "No entity query was left out for its key's estimated error."
    )
    return "\n".join(
        [
            "### Answer-key quality (entity constraints)",
            "",
            f"{_kinds_text(quality)}-name keys come from taggers. Per entity constraint type: its queries, those "
            "the key-error bound left out (one- / two-constraint), the share of their deciding books (the "
            "author's books that meet the query's other criterion) left out as unsure (listed in `unsure_books`, "
            "don't care in scoring), the estimated share of queries whose key holds a wrong decided book, and the "
            "ceiling: the all-correct a perfect model can expect on them.",
            "",
            "| constraint type | queries | left out by the bound | deciding books unsure "
            "| key wrong, one-constraint (est.) | two-constraint (est.) | all (est., 95%) | ceiling (95%) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            bound_text,
            *([""] + lost if lost else []),
            "",
            NOTE,
            "",
        ]
    )
