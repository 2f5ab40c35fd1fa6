"""The table ``model_runs``: one row per (model, task) of a release as ``kitab cycle`` ran it:
scored, or failed with the reason, and what the run cost (requests, tokens in/out, service and
wall time). An annex table (schemas/model_runs.json), kept beside the release like
``evaluations``; a rerun of the same (model, task) replaces its row, so the table says what the
latest cycle did. The site and ``kitab report`` read costs from here."""

from __future__ import annotations

from pathlib import Path

from kitab.core.warehouse import Warehouse

TABLE = "model_runs"
STATUSES = ("scored", "failed")


def write_model_run(warehouse: Path, release: str, row: dict) -> None:
    """Store ``row`` (schemas/model_runs.json's columns) as the release's run of
    (row["model"], row["task"]), replacing an earlier one: atomic, under the author lock."""
    if row["status"] not in STATUSES:
        raise ValueError(f"model run status {row['status']!r}: expected one of {STATUSES}")
    if (row["status"] == "failed") != bool(row.get("reason")):
        raise ValueError("a failed model run needs its reason, a scored one has none")
    wh = Warehouse(Path(warehouse))
    wh.require_release(release)
    wh.store_annex(TABLE, release, [row], {"model": row["model"], "task": row["task"]})


def read_model_runs(con) -> list[dict]:
    """Every row of ``model_runs`` the connection sees (all releases, or the one it is scoped
    to), by release, model and task."""
    cursor = con.execute("SELECT * FROM model_runs ORDER BY release, model, task")
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]
