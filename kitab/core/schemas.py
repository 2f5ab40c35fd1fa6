"""Table schemas, loaded from ``schemas/<table>.json`` (one file per warehouse table).

The JSON files are the contract (names, types, nullability, meaning); this module only
turns them into pyarrow schemas and validates rows against them.
"""
from __future__ import annotations

import json
from functools import lru_cache

import pyarrow as pa

from kitab.core.env import PROJECT_ROOT

SCHEMA_DIR = PROJECT_ROOT / "schemas"

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


@lru_cache(maxsize=None)
def table_spec(table: str) -> dict:
    path = SCHEMA_DIR / f"{table}.json"
    if not path.exists():
        raise KeyError(f"no schema for table {table!r}: expected {path}")
    return json.loads(path.read_text())


@lru_cache(maxsize=None)
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
    columns = {n: [row.get(n) for row in rows] for n in names}
    try:
        return pa.table(columns, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(f"{table}: rows do not match schemas/{table}.json: {exc}") from exc
