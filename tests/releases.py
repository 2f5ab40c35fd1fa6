"""Test releases: one built from the bundled dump the way most test modules start (the pipeline
the flow runs, called directly: dump source, the snapshot's files, no HTTP, no Prefect), and an
independent check of sql/checks run over a release's tables."""

from __future__ import annotations

from pathlib import Path

from kitab.core.env import BUNDLED_SNAPSHOT


def dump_release(
    root: Path, *, authors: int, seed: int, release: str, snapshot: Path = BUNDLED_SNAPSHOT, **options
) -> Path:
    """Publish ``release`` of ``authors`` authors drawn with ``seed`` from ``snapshot`` (default:
    the bundled one) into the warehouse ``root`` (``options``: more of run_refresh's parameters,
    e.g. ``taggers``, ``batch_size``)."""
    from kitab.app.runs import run_refresh

    run_refresh(
        source="dump",
        snapshot=snapshot,
        authors=authors,
        seed=seed,
        release=release,
        warehouse=root,
        direct=True,
        **options,
    )
    return root


def run_sql_check(check: Path | str, tables: dict, mutate: str | None = None) -> list[tuple]:
    """The rows (problems) the SQL file ``check`` (or SQL text) returns over ``tables`` (name ->
    Arrow table), copied into a fresh DuckDB, after the statement ``mutate`` (a deliberate damage)
    if given."""
    import duckdb

    db = duckdb.connect()
    for name, table in tables.items():
        db.register(f"source_{name}", table)
        db.execute(f"CREATE TABLE {name} AS SELECT * FROM source_{name}")
    if mutate:
        db.execute(mutate)
    return db.execute(check.read_text(encoding="utf-8") if isinstance(check, Path) else check).fetchall()
