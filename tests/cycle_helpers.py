"""What the kitab cycle tests share: the two loopback models' answers, a models file, one cycle
on the bundled snapshot's dump (kitab/app/commands/cycle.py's cycle_once), and reading rows back."""

from __future__ import annotations

import json
from pathlib import Path

from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.warehouse import Warehouse
from kitab.release.models_file import read_models

AUTHORS = 10


def alpha_answer(prompt: str) -> str:
    return (
        "True\nIt is." if prompt.startswith("Is the following claim") else "Output:\n1. Reason: fits. Title: Beloved\n"
    )


def beta_answer(prompt: str) -> str:
    return "False" if prompt.startswith("Is the following claim") else "Output:\n1. Reason: none. Title: Nothing\n"


def write_models(path: Path, entries: list[dict]) -> Path:
    """A models file with one [[model]] table per entry."""
    lines = []
    for entry in entries:
        lines.append("[[model]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def cycle(root: Path, models: Path, release: str, seed: int, **options) -> dict:
    from kitab.app.commands.cycle import cycle_once

    inputs = dict(source="dump", authors=AUTHORS, seed=seed, release=release)
    return cycle_once(read_models(models), inputs, snapshot=BUNDLED_SNAPSHOT, warehouse=root, direct=True, **options)


def rows(root: Path, sql: str) -> list[tuple]:
    with Warehouse(root).connect() as con:
        return con.execute(sql).fetchall()


def runs_of(root: Path, release: str) -> dict[tuple[str, str], dict]:
    from kitab.release.model_runs import read_model_runs

    with Warehouse(root).connect(release=release) as con:
        return {(r["model"], r["task"]): r for r in read_model_runs(con)}
