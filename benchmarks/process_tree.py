"""The benchmarks' one process-tree sampler: run a command and sample it and every process it
starts (workers, Prefect's server) every 0.2 s.

Measured: wall seconds, peak RSS summed over the tree, peak RSS per kind of process, CPU seconds
per kind, and the mean 1-minute load average while it ran. RSS counts a page shared by several
processes once per process, so the summed figure is an upper bound.

``phases``: a regex over the command's stderr lines; each matching line starts a phase named by
its first group, timed as it arrives (a refresh's "kitab: 0:12 collect (3/8) started" lines).
Per phase: wall, CPU seconds per kind of process (user + sys, every process of the tree, a
process that ended inside the phase counted up to its last sample) and peak tree RSS.
``profile``: run the command under ``py-spy record --subprocesses`` into that file (raw,
collapsed stacks), which benchmarks/profile_stacks.py reads per stage.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
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
    phases: list[dict] = field(default_factory=list)  # per phase: name, wall, cpu by kind, peak RSS


def role(p: psutil.Process, root_pid: int, root_name: str) -> str:
    cmd = " ".join(p.cmdline())
    if "py-spy" in cmd:
        return "profiler"
    if "uvicorn" in cmd:
        return "prefect server"
    if "spawn_main" in cmd or "dask" in cmd:
        return "worker"
    if "kitab.sources.dump.prebuild" in cmd:
        return "dump cache"  # the refresh's child building the dump cache as it starts
    if p.pid == root_pid or (p.ppid() == root_pid and "py-spy" in " ".join(psutil.Process(root_pid).cmdline())):
        return root_name  # the command itself (or, profiled, the command py-spy started)
    return "other"


PY_SPY_RATE = 20  # samples/s per process: enough for a top-20 over minutes, little overhead


def run_measured(
    cmd: list[str],
    *,
    cwd: Path,
    env: dict | None = None,
    root_name: str = "main",
    phases: str | None = None,
    profile: Path | None = None,
) -> Measured:
    if profile is not None:
        spy = Path(sys.executable).parent / "py-spy"  # the venv's (requirements.lock's dev group)
        spy_args = ["record", "--subprocesses", "--nonblocking", "--rate", str(PY_SPY_RATE), "--format", "raw"]
        cmd = [str(spy), *spy_args, "--output", str(profile), "--", *cmd]
    started = time.monotonic()
    loads: list[float] = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    peak = 0
    roles: dict[str, int] = {}
    cpu: dict[int, tuple[str, float]] = {}  # pid -> (kind, CPU seconds so far)
    done = threading.Event()
    marks: list[tuple[float, str]] = [(0.0, "startup")]  # (seconds since start, phase begun)
    # (t, tree RSS, cpu by pid, RSS by kind)
    timeline: list[tuple[float, int, dict[int, tuple[str, float]], dict[str, int]]] = []
    err_lines: list[str] = []
    pattern = re.compile(phases) if phases else None

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err_lines.append(line)
            found = pattern.search(line) if pattern else None
            if found:
                marks.append((time.monotonic() - started, found.group(1)))

    def sample() -> None:
        nonlocal peak
        parent = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                total, by_kind = 0, {}
                for p in [parent, *parent.children(recursive=True)]:
                    try:
                        rss = p.memory_info().rss
                        name = role(p, proc.pid, root_name)
                        if name == "profiler":  # py-spy: not the measured command's memory or CPU
                            continue
                        total += rss
                        by_kind[name] = by_kind.get(name, 0) + rss
                        roles[name] = max(roles.get(name, 0), rss)
                        times = p.cpu_times()
                        cpu[p.pid] = (name, times.user + times.system)
                    except psutil.Error:
                        pass
                peak = max(peak, total)
                timeline.append((time.monotonic() - started, total, dict(cpu), by_kind))
            except psutil.Error:
                pass
            loads.append(os.getloadavg()[0])
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.wait()
    reader.join()
    err = "".join(err_lines)
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
        phases=phase_table(marks, timeline, time.monotonic() - started) if pattern else [],
    )


def phase_table(marks: list[tuple[float, str]], timeline: list, wall: float) -> list[dict]:
    """Per phase (from one mark to the next): wall, CPU seconds per kind of process and peak
    tree RSS (and per kind of process). A process's CPU in a phase is its last sample in the phase minus its last sample
    before it (0 if it had none: it started in the phase)."""
    bounds = [(name, start, marks[n + 1][0] if n + 1 < len(marks) else wall) for n, (start, name) in enumerate(marks)]
    out = []
    for name, start, end in bounds:
        before = [s for s in timeline if s[0] < start]
        inside = [s for s in timeline if start <= s[0] < end]
        last_before = before[-1][2] if before else {}
        last_inside: dict[int, tuple[str, float]] = dict(last_before)
        for _, _, cpus, _ in inside:
            last_inside.update(cpus)
        by_kind: dict[str, float] = {}
        for pid, (kind, seconds) in last_inside.items():
            by_kind[kind] = by_kind.get(kind, 0.0) + seconds - last_before.get(pid, (kind, 0.0))[1]
        out.append(
            {
                "phase": name,
                "wall_s": round(end - start, 1),
                "cpu_s": {k: round(v, 1) for k, v in sorted(by_kind.items()) if round(v, 1)},
                "cpu_total_s": round(sum(by_kind.values()), 1),
                "peak_rss_gib": round(max((s[1] for s in inside), default=0) / 2**30, 2),
                # per kind of process (all its processes together), e.g. the refresh's own during collect
                "peak_rss_gib_by_process": {
                    k: round(max(s[3].get(k, 0) for s in inside) / 2**30, 2) for k in {k for s in inside for k in s[3]}
                },
            }
        )
    return out
