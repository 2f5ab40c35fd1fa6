"""Key quality of a release (issue 28, item 7): per entity constraint type, the share of its
queries' deciding books left out as unsure and the estimated share of queries whose key holds a
wrong decided book. Computed once, here, from the release's own tables by the pure
``tasks.entity_states.key_quality``; the card and ``kitab report`` (the quality section), and the
leaderboard (beside each entity type's scores, and in ``--output json``) all read this."""

from __future__ import annotations

import duckdb

from tasks.entity_states import key_quality

NOTE = (
    "An estimate, not a measurement: each decided book's chance of a wrong state is the error "
    "of the evidence that decided it (the title rules' class, or a second reader), measured on "
    "the labelled title sets the classes were chosen on (docs/tagging.md; on held-out titles the "
    "error was about twice as high); a query's key is wrong if any of its deciding books is."
)


def _dicts(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    return con.sql(sql).to_arrow_table().to_pylist()


def release_key_quality(con: duckdb.DuckDBPyConnection) -> dict:
    """``{label: {...}}`` of the release ``con`` is scoped to (``Warehouse.connect(release=...)``);
    {} for a release without entity queries or states."""
    return key_quality(
        _dicts(con, "SELECT query_id, author_qid, n_constraints, constraint_ids FROM queries ORDER BY query_id"),
        _dicts(
            con,
            "SELECT constraint_id, spec, entity_kind, mapped_book_ids FROM constraints "
            "WHERE constraint_id IN (SELECT unnest(constraint_ids) FROM queries) ORDER BY constraint_id",
        ),
        _dicts(con, "SELECT book_id, author_qid, kind, state, evidence FROM book_entities ORDER BY book_id, kind"),
    )


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


def format_key_quality(quality: dict) -> str:
    """The markdown section of the card and ``kitab report``."""
    if not quality:
        return "### Answer-key quality (entity constraints)\n\nThis release has no entity query.\n"
    rows = [
        f"| {label} | {q['queries']} | {_pct(q['unsure_share'])} | {_pct(q['wrong_key_one'])} "
        f"| {_pct(q['wrong_key_two'])} | {_pct(q['wrong_key'])} |"
        for label, q in quality.items()
    ]
    return "\n".join(
        [
            "### Answer-key quality (entity constraints)",
            "",
            f"{_kinds_text(quality)}-name keys come from taggers. Per entity constraint type: its queries, the share "
            "of their deciding books (the author's books that meet the query's other criterion) left out as "
            "unsure (listed in `unsure_books`, don't care in scoring), and the estimated share of queries whose "
            "key holds a wrong decided book.",
            "",
            "| constraint type | queries | deciding books unsure | key wrong, one-constraint (est.) "
            "| two-constraint (est.) | all (est.) |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            NOTE,
            "",
        ]
    )
