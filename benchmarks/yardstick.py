"""How fast this machine is right now: the CPU seconds of two fixed workloads, one in pure Python
(dicts and strings, what the pipeline's steps do) and one in DuckDB's C++ (hashing and grouping
strings on one thread, what the dump cache build does). Best of three each: the least disturbed.

The shared 2-core machine's speed moves between days and between runs of one day (the same dump
cache build took 213 to 373 CPU-s: docs/scale.md, Round 3), so a benchmark's seconds say little
without it: benchmarks/scale.py measures it before and after each run, and a run's CPU divided by
it compares runs of different days.

    .venv/bin/python benchmarks/yardstick.py
"""

from __future__ import annotations

import json
import os
import time

PYTHON_ITEMS = 400_000
DUCKDB_ROWS = 3_000_000


def _python_work() -> int:
    counts: dict[str, int] = {}
    rows = []
    for i in range(PYTHON_ITEMS):
        key = f"title {i % 50_021} of {i % 97}"
        counts[key] = counts.get(key, 0) + 1
        rows.append({"key": key.upper(), "n": i, "words": key.split()})
    rows.sort(key=lambda r: (r["key"], r["n"]))
    return len(counts) + sum(len(r["words"]) for r in rows[:1000])


def _duckdb_work() -> int:
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 1")
    (n,) = con.execute(
        f"SELECT count(*) FROM (SELECT md5((i % 1000003)::VARCHAR) AS h, count(*) FROM range({DUCKDB_ROWS}) t(i) "
        "GROUP BY h)"
    ).fetchone()
    con.close()
    return n


def _best(work, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return round(best, 3)


def machine_seconds() -> dict[str, float]:
    """The kernel's CPU counters for the whole machine (/proc/stat, every core, since boot): busy
    (user + nice + system + irq + softirq), idle (+ iowait) and steal (time the hypervisor ran
    another guest on this machine's cores; counted where the guest has a steal clock, as this
    one does, else billed to whichever process held the core), in seconds. Two readings around
    a run say what the yardstick's best of three cannot: whether anything else ran on the cores
    (busy beyond the run's own CPU) or under them (steal)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    tick = os.sysconf("SC_CLK_TCK")
    return {
        "busy_s": (user + nice + system + irq + softirq) / tick,
        "idle_s": (idle + iowait) / tick,
        "steal_s": steal / tick,
    }


def machine_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What the machine's cores did between two :func:`machine_seconds` readings."""
    return {k: round(after[k] - before[k], 1) for k in before}


def yardstick(reps: int = 3) -> dict[str, float]:
    """CPU seconds (best of ``reps``) of the fixed Python and DuckDB workloads."""
    return {"python_cpu_s": _best(_python_work, reps), "duckdb_cpu_s": _best(_duckdb_work, reps)}


if __name__ == "__main__":
    print(json.dumps(yardstick()))
