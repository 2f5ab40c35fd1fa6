"""What each model cost on a release, for ``kitab report`` (markdown and ``--output json``): one
entry per (model, task) of the table ``model_runs`` (kitab/release/model_runs.py, written by
``kitab cycle``): requests, tokens in/out, service and wall time, status and the failure reason.
A release no cycle ran has no rows; the section says so."""

from __future__ import annotations

from kitab.release.markup import markdown_cell
from kitab.release.model_runs import read_model_runs

COLUMNS = (
    "model",
    "task",
    "status",
    "reason",
    "prompts",
    "answered",
    "requests",
    "from_cache",
    "prompt_tokens",
    "completion_tokens",
    "service_seconds",
    "wall_seconds",
    "started_at",
)
NO_CYCLE = "No cycle ran on this release (`kitab cycle`): the table model_runs has no row for it."


def model_costs(con) -> list[dict]:
    """The release's ``model_runs`` rows (the connection is scoped to one release), by model and
    task, with the columns a reader of costs needs (the failed query ids: their count)."""
    out = []
    for row in read_model_runs(con):
        entry = {name: row.get(name) for name in COLUMNS}
        entry["started_at"] = None if row.get("started_at") is None else str(row["started_at"])
        entry["failed"] = len(row.get("failed_ids") or [])
        out.append(entry)
    return out


def _number(value) -> str:
    return "–" if value is None else f"{value:,}"


def _seconds(value) -> str:
    return "–" if value is None else f"{value:,.1f}"


def costs_section(con) -> str:
    """``kitab report``'s "Model costs" section: a row per (model, task), or that no cycle ran."""
    runs = model_costs(con)
    lines = ["## Model costs", ""]
    if not runs:
        return "\n".join([*lines, NO_CYCLE, ""])
    header = (
        "model",
        "task",
        "status",
        "prompts answered",
        "requests (cached)",
        "tokens in",
        "tokens out",
        "service s",
        "wall s",
        "failure reason",
    )
    lines += [
        "What each model's run cost as `kitab cycle` last ran it (table model_runs): requests sent (answers "
        "from the cache in brackets, which cost no request), tokens in and out summed over the answers, "
        "service time (each request from sent to answered, summed) and the run's wall time.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i < 3 or i == len(header) - 1 else "---:" for i in range(len(header))) + "|",
    ]
    for r in runs:
        cells = (
            r["model"],
            r["task"],
            r["status"],
            f"{_number(r['answered'])} / {_number(r['prompts'])}",
            f"{_number(r['requests'])} ({_number(r['from_cache'])})",
            _number(r["prompt_tokens"]),
            _number(r["completion_tokens"]),
            _seconds(r["service_seconds"]),
            _seconds(r["wall_seconds"]),
            r["reason"] or "",
        )
        lines.append("| " + " | ".join(markdown_cell(str(c)) for c in cells) + " |")
    return "\n".join([*lines, ""])
