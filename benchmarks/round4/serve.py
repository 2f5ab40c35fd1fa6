"""Issue 39 items 6, 7 and 9 through the real ``kitab`` command: ``kitab serve`` refuses bad
inputs in one line and creates nothing, and stops on SIGTERM / SIGINT (also once its Prefect
server is gone); a refresh reaches the mostly-unsure reject; ``kitab sql --memory-limit`` is
the answer or one line at every value, never a C-library abort or a hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import faults
from tests.prefect_server import start_prefect_server

SERVE = "serve"
SQL = "sql"
REFRESH = "refresh"
BARE = ("KITAB_CONTACT", "PREFECT_API_URL")  # a new user's shell: no contact, no Prefect server
LIMITS = ("1MB", "10MB", "50MB", "230MB", "300MB", "370MB", "2GB")


def serve_refusals(out: Path) -> list[dict]:
    rows = []
    cases = [
        ("serve --cron '61 * * * *'", ["--cron", "61 * * * *"]),
        ("serve --cron 'every monday'", ["--cron", "every monday"]),
        ("serve --source live without KITAB_CONTACT", ["--source", "live"]),
        ("serve --source dump without --snapshot", ["--source", "dump"]),
        ("serve --source dump --snapshot <missing>", ["--source", "dump", "--snapshot", str(out / "no-snapshot")]),
    ]
    for name, args in cases:
        warehouse = out / "serve-refused"
        result = faults.kitab_cli(SERVE, *args, "--warehouse", warehouse, unset=BARE, timeout=120)
        created = warehouse.exists()
        rows.append(
            faults.probe(
                name,
                SERVE,
                faults.spoke(result) and not created,
                f"{result['seconds']} s; warehouse folder {'created' if created else 'not created'}",
                result,
            )
        )
    return rows


def _signal_serve(out: Path, api: str, sig: signal.Signals, before=None) -> dict:
    """Serve until it says so, ``before()``, then ``sig``: what it said after the signal."""
    err_path = out / f"serve-{sig.name}.err"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kitab.app.cli", SERVE, "--warehouse", str(out / "serve-wh")],
            cwd=faults.ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            env=faults.cli_env({"PREFECT_API_URL": api}, BARE),
            text=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "being served" not in (line := proc.stdout.readline()):
            if "serving" in line or not line:
                break
        time.sleep(2)
        if before:
            before()
        err.flush()
        said = err_path.stat().st_size
        sent = time.monotonic()
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
            stopped = True
        except subprocess.TimeoutExpired:  # 71b4b8e with its server gone: a second signal, then SIGKILL
            proc.send_signal(sig)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            stopped = False
        took = time.monotonic() - sent
    after = err_path.read_bytes()[said:].decode(errors="replace")
    lines = after.strip().splitlines()
    result = {
        "exit": proc.returncode,
        "lines": len(lines),
        "first": lines[0][:160] if lines else "",
        "traceback": "Traceback" in after,
        "stdout": "",
    }
    held = stopped and proc.returncode != 0 and len(lines) == 1 and "RuntimeWarning" not in after
    return faults.probe(
        f"serve, {sig.name}" + (" once its Prefect server is gone" if before else " while it serves"),
        SERVE,
        held,
        f"{'stopped' if stopped else 'still running'} {took:.1f} s after the signal"
        + ("" if stopped else " (stopped by a second signal or SIGKILL)"),
        result,
    )


def serve_signals(out: Path) -> list[dict]:
    from kitab.app.processes import free_port

    port = free_port()
    server = start_prefect_server(port, faults.cli_env({"PREFECT_HOME": str(out / "prefect-home")}, BARE))
    api = f"http://127.0.0.1:{port}/api"
    try:
        rows = [_signal_serve(out, api, signal.SIGTERM)]

        def server_gone() -> None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            time.sleep(3)

        rows.append(_signal_serve(out, api, signal.SIGTERM, before=server_gone))
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    return rows


def memory_limits(clean: Path) -> list[dict]:
    rows = []
    for limit in LIMITS:
        result = faults.kitab_cli(
            SQL, "select count(*) as n from books", "--memory-limit", limit, "--output", "jsonl", "--warehouse", clean
        )
        answered = result["exit"] == 0 and '"n"' in result["stdout"]
        held = answered or (faults.spoke(result) and "memory" in result["first"].lower())
        rows.append(
            faults.probe(
                f"sql --memory-limit {limit}",
                SQL,
                held,
                "answered" if answered else f"exit {result['exit']} in {result['seconds']} s",
                result,
            )
        )
    # 256 MiB thread stacks (ulimit -s): 71b4b8e hung there, deaf to SIGTERM
    started = time.monotonic()
    cmd = [sys.executable, "-m", "kitab.app.cli", SQL, "select count(*) as n from books", "--memory-limit", "300MB"]
    try:
        proc = subprocess.run(
            ["sh", "-c", 'ulimit -s 262144 && exec "$@"', "sh", *cmd, "--warehouse", str(clean)],
            cwd=faults.ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env=faults.cli_env(),
        )
        lines = proc.stderr.strip().splitlines()
        result = {
            "exit": proc.returncode,
            "lines": len(lines),
            "first": lines[0][:160] if lines else "",
            "traceback": "Traceback" in proc.stderr,
            "stdout": proc.stdout,
        }
        answered = proc.returncode == 0
        held = answered or (proc.returncode > 0 and len(lines) == 1 and "memory" in lines[0].lower())
        measured = f"{'answered' if answered else 'exit ' + str(proc.returncode)} in {time.monotonic() - started:.1f} s"
    except subprocess.TimeoutExpired:
        result = {"exit": "-", "lines": 0, "first": "", "traceback": False, "stdout": ""}
        held, measured = False, "no answer in 120 s (hung)"
    rows.append(faults.probe("sql --memory-limit 300MB with 256 MiB thread stacks", SQL, held, measured, result))
    return rows


def mostly_unsure_refresh(out: Path) -> list[dict]:
    """A refresh through the real command on a snapshot where some authors' titles are all
    undecidable for the human tagger (tests/test_reject_reasons.py's crafted snapshot)."""
    import shutil

    from tests.test_reject_reasons import crafted_snapshot

    snapshot = out / "crafted-snapshot"
    shutil.rmtree(snapshot, ignore_errors=True)
    snapshot.mkdir(parents=True)
    crafted_snapshot(snapshot)
    warehouse = out / "crafted-wh"
    shutil.rmtree(warehouse, ignore_errors=True)
    result = faults.kitab_cli(
        REFRESH, "--source", "dump", "--snapshot", snapshot, "--runner", "local", "--authors", 40, "--seed", 42,
        "--release", "crafted", "--quiet", "--warehouse", warehouse, timeout=900,
    )  # fmt: skip
    n = 0
    if result["exit"] == 0:
        count = faults.kitab_cli(
            SQL,
            "select count(*) as n from rejects where reason = 'entity_books_mostly_unsure'",
            "--output",
            "jsonl",
            "--warehouse",
            warehouse,
        )
        n = int(count["stdout"].split(":")[1].strip(" }\n")) if count["exit"] == 0 else 0
    return [
        faults.probe(
            "refresh reaching the mostly-unsure constraint reject",
            REFRESH,
            result["exit"] == 0 and n > 0,
            f"exit {result['exit']} in {result['seconds']} s; {n} entity_books_mostly_unsure rejects",
            result,
        )
    ]


def probes(clean: Path, out: Path) -> list[dict]:
    out = out / "round4-serve"
    out.mkdir(parents=True, exist_ok=True)
    return [*serve_refusals(out), *serve_signals(out), *memory_limits(clean), *mostly_unsure_refresh(out)]
