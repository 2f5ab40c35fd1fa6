"""Issue 39 item 5's probes (surface "answer"): ``kitab answer``'s early stop, through the real
command against the loopback chat endpoint (kitab/simulate/chat.py), counting what the server
received. The release is only read (``kitab answer`` writes its answers and cache in ``out``).

- a 400 whose message carries its own request id each time (queries, then claim pairs): the run
  stops after the first 10 queries, at most 10 + 4 requests (the default concurrency);
- a 400 (one text) at ``--concurrency 64``: at most 20 + 64 requests before the stop;
- ``--base-url`` where nothing listens (connection refused on loopback): one line naming the
  URL, rc != 0, no time-left estimate, in seconds (the progress display on, as a person runs it);
- an endpoint replying with reasoning only: rc 0, one warning with the count, every answers line
  flagged ``reasoning_only``.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from benchmarks import faults

SURFACE = "answer"


def _answer(url: str, clean: Path, folder: Path, *extra, quiet: bool = True) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    args = faults.answer_args(url, clean, folder, *extra)
    if not quiet:
        args.remove("--quiet")
    return faults.kitab_cli(*args, timeout=900)


def _count(clean: Path, table: str) -> int:
    from kitab.core.warehouse import Warehouse

    with Warehouse(clean).connect(warn=False) as con:
        return con.execute(f"select count(*) from {table}").fetchone()[0]


def probes(clean: Path, out: Path) -> list[dict]:
    from kitab.simulate.chat import ChatServer, thinker

    rows = []
    for task, table in (("queries", "queries"), ("claims", "claims")):
        with ChatServer() as server:
            server.fail(1_000_000, 400, unique=True)
            r = _answer(server.url, clean, out / f"stop-unique-{task}", "--task", task)
            sent = len(server.chat_requests)
        asked = _count(clean, table)
        rows.append(
            faults.probe(
                f"answer --task {task}: every 400 carries its own request id",
                SURFACE,
                faults.spoke(r, 2) and "stopped: the first 10" in r["first"] and sent <= 10 + 4,
                f"{sent} requests for {asked:,} {task} (limit 14), stopped early: {'stopped: the first 10' in r['first']}",
                r,
            )
        )
    with ChatServer() as server:
        server.fail(1_000_000, 400)  # one text: the bound alone, as the probe
        r = _answer(server.url, clean, out / "stop-c64", "--concurrency", "64")
        sent = len(server.chat_requests)
    rows.append(
        faults.probe(
            "answer --concurrency 64 against a 400 to every request",
            SURFACE,
            faults.spoke(r, 2) and sent <= 20 + 64,
            f"{sent} requests before the stop (limit 20 + 64 = 84)",
            r,
        )
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    r = _answer(url, clean, out / "stop-refused", quiet=False)
    says = f"cannot connect to {url}" in r["first"]
    rows.append(
        faults.probe(
            "answer --base-url where nothing listens (connection refused), progress on",
            SURFACE,
            faults.spoke(r, 1) and says and " left" not in r["stderr"] and r["seconds"] <= 30,
            f"{r['seconds']} s, {r['lines']} line(s), names the URL: {says}, "
            f"a time-left estimate: {' left' in r['stderr']}",
            r,
        )
    )
    folder = out / "stop-reasoning-only"
    with ChatServer(thinker()) as server:
        r = _answer(server.url, clean, folder, "--limit", "20")
    lines = (folder / "answers.jsonl").read_text(encoding="utf-8").split("\n") if r["exit"] == 0 else []
    flagged = sum(json.loads(line).get("reasoning_only") is True for line in lines if line)
    warned = "20 answers are reasoning only" in r["stderr"]
    rows.append(
        faults.probe(
            "answer against an endpoint replying with reasoning only",
            SURFACE,
            r["exit"] == 0 and warned and r["lines"] == 1 and flagged == 20,
            f"exit {r['exit']}, warned with the count: {warned}, {flagged} of 20 lines flagged reasoning_only",
            r,
        )
    )
    return rows
