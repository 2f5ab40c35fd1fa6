"""The benchmarks' one process-tree sampler: run a command and sample it and every process it
starts (workers, Prefect's server) every 0.2 s.

Measured: wall seconds, peak RSS summed over the tree, peak RSS per kind of process, CPU seconds
per kind, and the mean 1-minute load average while it ran. RSS counts a page shared by several
processes once per process, so the summed figure is an upper bound.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil


@dataclass
class Measured:
    wall: float
    peak_gib: float
    returncode: int
    out: str
    err: str
    roles: dict[str, float] = field(default_factory=dict)  # peak RSS (GiB) per kind of process
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per kind of process
    load: float | None = None


def role(p: psutil.Process, root_pid: int, root_name: str) -> str:
    cmd = " ".join(p.cmdline())
    return (
        "prefect server"
        if "uvicorn" in cmd
        else "worker"
        if ("spawn_main" in cmd or "dask" in cmd)
        else root_name
        if p.pid == root_pid
        else "other"
    )


def run_measured(cmd: list[str], *, cwd: Path, env: dict | None = None, root_name: str = "main") -> Measured:
    started = time.monotonic()
    loads: list[float] = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    peak = 0
    roles: dict[str, int] = {}
    cpu: dict[int, tuple[str, float]] = {}  # pid -> (kind, CPU seconds so far)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        parent = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                total = 0
                for p in [parent, *parent.children(recursive=True)]:
                    try:
                        rss = p.memory_info().rss
                        total += rss
                        name = role(p, proc.pid, root_name)
                        roles[name] = max(roles.get(name, 0), rss)
                        times = p.cpu_times()
                        cpu[p.pid] = (name, times.user + times.system)
                    except psutil.Error:
                        pass
                peak = max(peak, total)
            except psutil.Error:
                pass
            loads.append(os.getloadavg()[0])
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    by_role: dict[str, float] = {}
    for name, seconds in cpu.values():
        by_role[name] = round(by_role.get(name, 0) + seconds, 1)
    return Measured(
        wall=time.monotonic() - started,
        peak_gib=peak / 2**30,
        returncode=proc.returncode,
        out=out,
        err=err,
        roles={k: round(v / 2**30, 2) for k, v in roles.items()},
        cpu=by_role,
        load=round(sum(loads) / len(loads), 2) if loads else None,
    )
