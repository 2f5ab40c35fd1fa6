"""Table schemas, loaded from ``schemas/<table>.json`` (one file per warehouse table), and the
descriptions of the SQL views, ``schemas/views/<view>.json`` (sql/staging and sql/marts).

The JSON files are the contract (names, types, nullability, meaning); this module only
turns them into pyarrow schemas, validates rows against them and says what a view's columns
mean (``kitab describe``). A stored table's view is named like the table unless its schema
says ``"view"`` (``authors`` is stored as sampled, and read as ``sampled_authors``).
"""

from __future__ import annotations

import json
from functools import cache

import pyarrow as pa

from kitab.core.env import PROJECT_ROOT

SCHEMA_DIR = PROJECT_ROOT / "schemas"
VIEW_SCHEMA_DIR = SCHEMA_DIR / "views"
# the column a ledger file (releases, released_authors) names its own release by; views call it release
STORED_RELEASE = "release_id"
# The hive partition column every view has (not in the stored files' schemas).
RELEASE_COLUMN = "the release the row belongs to (its partition: tables/<table>/release=<id>/)"

_SCALARS = {
    "string": pa.string(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("s", tz="UTC"),
}


def arrow_type(name: str) -> pa.DataType:
    if name.startswith("list<") and name.endswith(">"):
        return pa.list_(arrow_type(name[5:-1]))
    try:
        return _SCALARS[name]
    except KeyError:
        raise ValueError(f"unknown column type {name!r} in schemas/ (known: {sorted(_SCALARS)}, list<...>)") from None


@cache
def table_spec(table: str) -> dict:
    path = SCHEMA_DIR / f"{table}.json"
    if not path.exists():
        raise KeyError(f"no schema for table {table!r}: expected {path}")
    return json.loads(path.read_text())


@cache
def arrow_schema(table: str) -> pa.Schema:
    spec = table_spec(table)
    return pa.schema(
        [pa.field(c["name"], arrow_type(c["type"]), nullable=c.get("nullable", True)) for c in spec["columns"]],
        metadata={"kitab.table": table, "kitab.schema_version": str(spec.get("version", 1))},
    )


def known_tables() -> list[str]:
    return sorted(p.stem for p in SCHEMA_DIR.glob("*.json"))


def to_arrow(table: str, rows: list[dict]) -> pa.Table:
    """Rows (dicts) -> Arrow table in the schema's column order; a clear error on a bad row."""
    schema = arrow_schema(table)
    names = schema.names
    extra = {k for row in rows[:1000] for k in row} - set(names)
    if extra:
        raise ValueError(f"{table}: columns not in schemas/{table}.json: {sorted(extra)}")
    return columns_to_arrow(table, {n: [row.get(n) for row in rows] for n in names})


def columns_to_arrow(table: str, columns: dict[str, list]) -> pa.Table:
    """Columns (name -> values) -> Arrow table in the schema's column order (a column not given:
    nulls); a clear error on a bad value or a column the schema lacks."""
    schema = arrow_schema(table)
    extra = set(columns) - set(schema.names)
    if extra:
        raise ValueError(f"{table}: columns not in schemas/{table}.json: {sorted(extra)}")
    length = len(next(iter(columns.values()), []))
    try:
        return pa.table({n: columns.get(n, [None] * length) for n in schema.names}, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(f"{table}: rows do not match schemas/{table}.json: {exc}") from exc


def view_name(table: str) -> str:
    """The name of the view over stored ``table``: the table's unless its schema names another."""
    return table_spec(table).get("view", table)


@cache
def view_docs() -> dict[str, dict]:
    """View name -> ``{"kind", "description", "columns": {column: description}, "source"}`` for
    every view: one per stored table (kind ``table``) and one per schemas/views/ file (kind
    ``view``; ``columns_of`` borrows a stored table's column descriptions)."""
    docs = {}
    for table in known_tables():
        spec = table_spec(table)
        columns = {c["name"]: c.get("description", "") for c in spec["columns"] if c["name"] != STORED_RELEASE}
        columns.setdefault("release", RELEASE_COLUMN)
        docs[view_name(table)] = {
            "kind": "table",
            "description": spec.get("description", ""),
            "columns": columns,
            "source": f"schemas/{table}.json",
        }
    for path in sorted(VIEW_SCHEMA_DIR.glob("*.json")):
        spec = json.loads(path.read_text())
        columns = {}
        if "columns_of" in spec:
            columns.update({c["name"]: c.get("description", "") for c in table_spec(spec["columns_of"])["columns"]})
        columns.update({c["name"]: c.get("description", "") for c in spec.get("columns", [])})
        docs[spec.get("view", path.stem)] = {
            "kind": "view",
            "description": spec.get("description", ""),
            "columns": columns,
            "source": spec.get("sql", f"schemas/views/{path.name}"),
        }
    return docs
