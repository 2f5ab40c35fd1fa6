"""Issue 39, item 2: a line separator inside a model's answer (every character str.splitlines()
splits on) through the real ``kitab answer`` (kitab/simulate/chat.py's ChatServer replying with
them) and ``kitab evaluate``, in both tasks; a rerun from the cache; an answers file written
before (the separators raw). Surface: answer/evaluate JSON Lines. Written without kitab's own
JSON Lines helper, so the same module probes the code before the change."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import faults

SURFACE = "answers JSON Lines"
# every character str.splitlines() ends a line at
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
RAW = "\x85\u2028\u2029"  # the ones json.dumps leaves raw


def _replies(clean: Path, task: str):
    """A model whose every reply holds every separator where the score does not read it."""
    from kitab.core.warehouse import Warehouse
    from kitab.release.claims import render_claim_prompt

    if task == "claims":
        with Warehouse(clean).connect(warn=False) as con:
            labels = dict(con.execute("select claim, label from claims").fetchall())
        truth = {render_claim_prompt(c): label for c, label in labels.items()}
        return lambda prompt: f"{truth.get(prompt, True)}\nThe release's{BREAKS} tables say so."
    return lambda prompt: f"Let me think{BREAKS} step by step.\n\nOutput:\n1. Reason: r. Title: Some Book\n"


def _answer(url: str, clean: Path, folder: Path, task: str) -> dict:
    return faults.kitab_cli(
        "answer", "--release", faults.RELEASE, "--task", task, "--model", f"breaks-{task}", "--base-url", url,
        "--out", folder / "answers.jsonl", "--cache", folder / "cache.sqlite", "--limit", 10,
        "--warehouse", clean, "--quiet", timeout=600,
    )  # fmt: skip


def _evaluate(wh: Path, answers: Path, task: str, model: str) -> dict:
    return faults.kitab_cli(
        "evaluate", "--release", faults.RELEASE, "--task", task, "--answers", answers, "--model", model,
        "--warehouse", wh, timeout=900,
    )  # fmt: skip


def _answered(wh: Path, task: str, model: str) -> int:
    from kitab.core.warehouse import Warehouse

    table = "evaluations" if task == "queries" else "claim_evaluations"
    with Warehouse(wh).connect(warn=False) as con:
        return con.execute(f"select count(*) from {table} where model = ? and answered", [model]).fetchone()[0]


def probes(clean: Path, out: Path) -> list[dict]:
    from kitab.simulate.chat import ChatServer

    rows = []
    for task in ("queries", "claims"):
        folder = out / f"i39-jsonl-{task}"
        folder.mkdir(parents=True, exist_ok=True)
        wh = faults.copy_release(clean, out / f"i39-jsonl-{task}-wh")
        with ChatServer(_replies(clean, task)) as server:
            a = _answer(server.url, wh, folder, task)
            asked = len(server.chat_requests)
            first = (folder / "answers.jsonl").read_bytes() if a["exit"] == 0 else b""
            again = _answer(server.url, wh, folder, task)  # from the cache
            rerun = len(server.chat_requests) - asked
        path = folder / "answers.jsonl"
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        one_line = len(text.splitlines()) == len([line for line in text.split("\n") if line])
        e = _evaluate(wh, path, task, f"breaks-{task}")
        answered = _answered(wh, task, f"breaks-{task}") if e["exit"] == 0 else 0
        rows.append(
            faults.probe(
                f"{task}: every line separator in each reply, kitab answer then kitab evaluate",
                SURFACE,
                a["exit"] == 0 and e["exit"] == 0 and answered == asked > 0 and one_line,
                f"{asked} answers; one record a line by str.splitlines(): {one_line}; "
                f"evaluate exit {e['exit']}, {answered} answered rows",
                a,
                e,
            )
        )
        e2 = _evaluate(wh, path, task, f"rerun-{task}")
        same = again["exit"] == 0 and path.read_bytes() == first
        rows.append(
            faults.probe(
                f"{task}: the rerun from the cache writes a file that evaluates",
                SURFACE,
                same and rerun == 0 and e2["exit"] == 0,
                f"rerun requests {rerun}, same bytes {same}, evaluate exit {e2['exit']}",
                again,
                e2,
            )
        )
        # written before: the same records, the separators raw inside the strings
        if text:
            old = folder / "old.jsonl"
            records = [json.loads(line) for line in text.split("\n") if line]
            old.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
            e3 = _evaluate(wh, old, task, f"old-{task}")
            answered = _answered(wh, task, f"old-{task}") if e3["exit"] == 0 else 0
            rows.append(
                faults.probe(
                    f"{task}: an answers file written before ({', '.join(f'U+{ord(c):04X}' for c in RAW)} raw)",
                    SURFACE,
                    e3["exit"] == 0 and answered == len(records),
                    f"evaluate exit {e3['exit']}, {answered} of {len(records)} answered rows",
                    e3,
                )
            )
    return rows
