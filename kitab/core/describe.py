"""``kitab describe``: what the warehouse's views are and what their columns mean, as dbt's docs
would say it. Types come from DuckDB (the views as built), meanings from schemas/ (stored
tables) and schemas/views/ (sql/staging and sql/marts)."""

from __future__ import annotations

import duckdb

from kitab.core.errors import KitabError
from kitab.core.schemas import view_docs


def _views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' ORDER BY view_name"
        ).fetchall()
    ]


def list_views(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """(name, kind, description) of every view of ``con``: table (a stored table), view (sql/
    staging, sql/marts), file (kitab sql --file) or undocumented."""
    docs = view_docs()
    return [
        (name, docs[name]["kind"] if name in docs else "undocumented", docs.get(name, {}).get("description", ""))
        for name in _views(con)
    ]


def describe_view(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str, str]]:
    """(column, DuckDB type, description) of view ``name``, in the view's column order."""
    views = _views(con)
    if name not in views:
        close = [v for v in views if name.lower() in v.lower()]
        hint = f" (did you mean {', '.join(close[:3])}?)" if close else "; `kitab describe` lists them"
        raise KitabError(f"no table or view {name!r} in the warehouse{hint}")
    described = view_docs().get(name, {}).get("columns", {})
    rows = con.execute(f'DESCRIBE "{name}"').fetchall()
    return [(column, column_type, described.get(column, "")) for column, column_type, *_ in rows]
