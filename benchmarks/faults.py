"""Reliability: a refresh through a faulty mirror, and a refresh killed with SIGKILL then rerun.

    .venv/bin/python benchmarks/faults.py                  # 40 authors, seed 7, 10 kill points
    .venv/bin/python benchmarks/faults.py --kills 3 --rates 0.1

One in-process mirror of the bundled snapshot (the real clients talk to it over HTTP), a fresh
warehouse per case (so a fresh HTTP cache: every request meets the mirror), production retry
settings. Cases:

- **faults R**: ``run_refresh(direct=True)`` with the mirror's seeded random faults at rate R
  (``rate=R,seed=S,kinds=429+500+502+503+504+cut+slow+timeout``; the same plan as
  ``kitab mirror serve --faults``); R = 0 is the clean reference every case is compared to;
- **kill -9 at Ts**: ``python -m kitab.app.cli refresh`` (the Prefect flow, a real subprocess,
  clean mirror) killed with SIGKILL T seconds in, T drawn with ``random.Random(--kill-seed)``
  from [1, 0.9 × an uninterrupted CLI run]; then the same refresh again (``--rerun direct``,
  the default: the pipeline without Prefect, in this process; ``--rerun cli``: the command
  again), which resumes from the work folder and the HTTP cache.

Per case: authors lost (clean run's authors missing), tables identical to the clean run (every
table of the release; ``authors`` and ``works_raw`` compared without ``fetched_at``, the
services' Date header, the one column a rerun changes; every other table byte for byte by the
``checksums`` of the ``releases`` row), faults injected, wall time. Kill cases also list the
steps checkpointed when the kill landed and the processes of the killed refresh still alive
a second later (its Prefect server, its workers), which the benchmark then kills. The table is
in docs/reliability.md.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
if sys.path and Path(sys.path[0]).resolve() == ROOT / "benchmarks":
    sys.path[0] = str(ROOT)  # run as a script: benchmarks/requests.py would shadow the requests library
BENCH_OUT = ROOT / "bench_out" / "faults"  # gitignored
KINDS = "429+500+502+503+504+cut+slow+timeout"
RELEASE = "bench"
PROVENANCE = {"authors": ("fetched_at",), "works_raw": ("fetched_at",)}


def refresh_direct(mirror, warehouse: Path, authors: int, seed: int) -> dict:
    from kitab.core.env import BUNDLED_SNAPSHOT
    from kitab.app.runs import run_refresh

    return run_refresh(source="mirror", snapshot=BUNDLED_SNAPSHOT, authors=authors, seed=seed, release=RELEASE,
                       warehouse=warehouse, mirror_url=mirror.url, direct=True)


def cli_command(mirror, warehouse: Path, authors: int, seed: int) -> list[str]:
    return [sys.executable, "-m", "kitab.app.cli", "refresh", "--source", "mirror", "--mirror-url", mirror.url,
            "--authors", str(authors), "--seed", str(seed), "--release", RELEASE, "--warehouse", str(warehouse)]


def committed(warehouse: Path) -> dict | None:
    """The releases row of RELEASE, or None."""
    from kitab.core.warehouse import Warehouse

    wh = Warehouse(warehouse)
    if RELEASE not in wh.committed_releases():
        return None
    return [r for r in wh.read_table("releases").to_pylist() if r["release_id"] == RELEASE][0]


def table_rows(warehouse: Path, table: str) -> list[tuple]:
    from kitab.core.schemas import view_name
    from kitab.core.warehouse import Warehouse

    drop = PROVENANCE.get(table, ())
    exclude = f" exclude ({', '.join(drop)})" if drop else ""
    with Warehouse(warehouse).connect() as con:  # the stored table's own view (authors: sampled_authors)
        return con.execute(f"select *{exclude} from {view_name(table)} order by all").fetchall()


def qids(warehouse: Path) -> set[str]:
    from kitab.core.warehouse import Warehouse

    with Warehouse(warehouse).connect() as con:
        return {q for (q,) in con.execute("select qid from authors").fetchall()}


def compare(clean: Path, warehouse: Path) -> dict:
    """Authors lost and table equality against the clean run's release."""
    row, reference = committed(warehouse), committed(clean)
    clean_qids = qids(clean)
    if row is None:
        return {"published": False, "authors_lost": len(clean_qids), "identical": False, "differing": ["(none)"]}
    sums, clean_sums = json.loads(row["checksums"]), json.loads(reference["checksums"])
    differing = sorted(t for t in clean_sums if sums.get(t) != clean_sums[t]
                       and table_rows(warehouse, t) != table_rows(clean, t))
    return {"published": True, "authors_lost": len(clean_qids - qids(warehouse)), "identical": not differing,
            "differing": differing, "byte_identical": sorted(t for t in clean_sums if sums.get(t) == clean_sums[t])}


def faults_injected(mirror, since: int) -> dict:
    return dict(Counter(e.fault for e in mirror.log()[since:] if e.fault))


def checkpoints(warehouse: Path) -> str:
    """Steps with at least one checkpoint in the release's work folder (what a rerun resumes)."""
    work = warehouse / ".work" / RELEASE
    steps = [s for s in ("sample_authors", "collect", "tag_entities", "generate_constraints") if any((work / s).glob("*.json"))]
    if committed(warehouse) is not None:
        return "published"
    return "+".join(steps) or "none"


def kill_tree(proc: subprocess.Popen, grace: float = 10.0) -> list[str]:
    """SIGKILL the refresh (only its own pid, as a crash would); then name what its session
    still runs after ``grace`` seconds (its Prefect server's watchdog stops the server within
    a few seconds; a pool worker exits when its parent's pipe closes) and kill those too."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    def session() -> list:
        found = []
        for p in psutil.process_iter(["pid"]):
            try:
                if p.pid != os.getpid() and os.getsid(p.pid) == proc.pid:
                    found.append(p)
            except (psutil.Error, ProcessLookupError, PermissionError):
                pass
        return found

    deadline = time.monotonic() + grace
    left = session()
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = session()
    names = []
    for p in left:
        try:
            cmd = " ".join(p.cmdline())
            names.append("Prefect server" if "uvicorn" in cmd or "prefect" in cmd and "server" in cmd
                         else "pool worker" if "spawn_main" in cmd or "multiprocessing" in cmd else p.name())
            p.kill()
        except psutil.Error:
            pass
    return names


def run_cli(cmd: list[str], timeout: float | None = None) -> tuple[float, int]:
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
    return time.monotonic() - started, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7, help="sampling seed of every refresh")
    parser.add_argument("--fault-seed", type=int, default=7, help="seed of the mirror's random faults")
    parser.add_argument("--rates", default="0.1,0.3", help="fault rates besides the clean run (0)")
    parser.add_argument("--kills", type=int, default=10, help="kill -9 points")
    parser.add_argument("--kill-seed", type=int, default=10)
    parser.add_argument("--rerun", choices=("direct", "cli"), default="direct")
    args = parser.parse_args()

    from kitab.core.env import BUNDLED_SNAPSHOT
    from kitab.simulate.mirror.faults import RandomFaults
    from kitab.simulate.mirror.server import Mirror

    BENCH_OUT.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="run-", dir=BENCH_OUT))  # each CLI refresh: Prefect home in its warehouse
    cases: list[dict] = []

    def report(case: dict) -> None:
        cases.append(case)
        print(json.dumps(case), flush=True)

    with Mirror(BUNDLED_SNAPSHOT) as mirror:
        clean = out / "clean"
        for rate in [0.0, *(float(r) for r in args.rates.split(",") if r)]:
            warehouse = clean if rate == 0 else out / f"faults-{rate:g}"
            mirror.faults.random = RandomFaults.parse(f"rate={rate},seed={args.fault_seed},kinds={KINDS}") \
                if rate else None
            mark, started = len(mirror.log()), time.monotonic()
            try:
                summary = refresh_direct(mirror, warehouse, args.authors, args.seed)
                error = None
            except Exception as exc:  # noqa: BLE001 - a failed refresh is a result here
                summary, error = None, f"{type(exc).__name__}: {exc}"
            wall = time.monotonic() - started
            if rate == 0 and error:
                raise SystemExit(f"the clean refresh failed: {error}")
            report({"case": f"faults {rate:.0%}" if rate else "clean (0% faults)", "wall_s": round(wall, 1),
                    "requests": len(mirror.log()) - mark, "faults": faults_injected(mirror, mark),
                    "source_unavailable": summary["stage_counts"]["source unavailable"] if summary else None,
                    "error": error, **compare(clean, warehouse)})
        mirror.faults.random = None

        mark = len(mirror.log())
        full, code = run_cli(cli_command(mirror, out / "cli", args.authors, args.seed))
        report({"case": "CLI refresh, not killed", "wall_s": round(full, 1), "requests": len(mirror.log()) - mark,
                "exit": code, **compare(clean, out / "cli")})

        rng = random.Random(args.kill_seed)
        delays = [round(rng.uniform(1.0, 0.9 * full), 1) for _ in range(args.kills)]
        for n, delay in enumerate(delays, 1):
            warehouse = out / f"kill-{n:02d}"
            proc = subprocess.Popen(cli_command(mirror, warehouse, args.authors, args.seed), cwd=ROOT,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                proc.wait(timeout=delay)
                left, at_kill = [], "finished before the kill"
            except subprocess.TimeoutExpired:
                left = kill_tree(proc)
                at_kill = checkpoints(warehouse)
            started = time.monotonic()
            if args.rerun == "cli":
                _, code = run_cli(cli_command(mirror, warehouse, args.authors, args.seed))
                error = None if code == 0 else f"exit {code}"
            else:
                try:
                    refresh_direct(mirror, warehouse, args.authors, args.seed)
                    error = None
                except Exception as exc:  # noqa: BLE001
                    error = f"{type(exc).__name__}: {exc}"
            rerun = time.monotonic() - started
            report({"case": f"kill -9 at {delay:.1f}s, rerun", "wall_s": round(delay + rerun, 1),
                    "rerun_s": round(rerun, 1), "checkpoints_at_kill": at_kill, "processes_left": left,
                    "error": error, **compare(clean, warehouse)})

    (out / "results.json").write_text(json.dumps(cases, indent=2))
    print()
    print(f"{args.authors} authors, seed {args.seed}; faults seed {args.fault_seed} ({KINDS}); "
          f"kill seed {args.kill_seed}; rerun {args.rerun}; results in {out / 'results.json'}")
    print()
    print("| case | authors lost | tables identical to the clean run | faults injected | wall (s) | notes |")
    print("|---|---|---|---|---|---|")
    for c in cases:
        notes = []
        if c.get("error"):
            notes.append(c["error"][:120])
        if c.get("checkpoints_at_kill"):
            notes.append(f"checkpointed at kill: {c['checkpoints_at_kill']}; rerun {c['rerun_s']} s")
        if c.get("processes_left"):
            notes.append(f"left running: {', '.join(c['processes_left'])}")
        if c.get("source_unavailable"):
            notes.append(f"{c['source_unavailable']} source_unavailable rejects")
        if c.get("differing"):
            notes.append("differ: " + ", ".join(c["differing"]))
        faults = sum(c.get("faults", {}).values())
        injected = f"{faults} of {c['requests']} requests" if "faults" in c else "-"
        print(f"| {c['case']} | {c['authors_lost']} | {'yes' if c['identical'] else 'no'} | {injected} | "
              f"{c['wall_s']} | {'; '.join(notes)} |")


if __name__ == "__main__":
    main()
