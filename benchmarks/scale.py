"""Scale: `kitab refresh --source dump` at 1,000, 10,000 and 100,000 authors, as a user runs it.

    .venv/bin/python benchmarks/scale.py                       # 1,000 and 10,000 (flow and direct)
    .venv/bin/python benchmarks/scale.py --sizes 1000,10000,100000

For each size: a generated snapshot (kitab snapshot generate; cached in bench_out/), a fresh
warehouse, then

- **flow**: `kitab refresh --source dump` in a subprocess (the Prefect flow with its temporary
  server, default task runner), and
- **direct**: the same pipeline without Prefect (kitab.app.runs.run_refresh(direct=True)), up to
  --direct-max authors,

each timed (wall) with the peak RSS of its whole process tree (the refresh, its process pool,
Prefect's server), sampled every 0.2 s. Printed per run: wall, peak RSS, rows per table, the
flow ÷ direct ratio, and Prefect's "queue is full" / dropped-event warnings (should be 0).
The table is in docs/scale.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
BENCH_OUT = ROOT / "bench_out"  # gitignored
KITAB = [sys.executable, "-m", "kitab.app.cli"]
# (authors, snapshot seed, snapshot candidates): the snapshots, and one for 100,000
SNAPSHOTS = {1_000: (5, 2_000), 10_000: (9, 11_000), 100_000: (13, 110_000)}
DROPPED = re.compile(r"queue is full|dropping message", re.IGNORECASE)


def snapshot(authors: int) -> Path:
    seed, candidates = SNAPSHOTS[authors]
    out = BENCH_OUT / f"snapshot-s{seed}-n{candidates}"
    if not (out / "MANIFEST.json").exists():
        print(f"generating {out.name} ...", flush=True)
        subprocess.run([*KITAB, "snapshot", "generate", "--seed", str(seed), "--authors", str(candidates),
                        "--out", str(out)], check=True, cwd=ROOT)
    return out


def measured(cmd: list[str], env: dict) -> tuple[float, float, str, str]:
    """Run ``cmd``; (wall seconds, peak RSS of its process tree in GiB, stdout, stderr)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    peak = 0
    roles: dict[str, int] = {}  # peak RSS per kind of process: refresh, worker, prefect server
    cpu: dict[int, tuple[str, float]] = {}  # pid -> (kind, CPU seconds so far)
    done = threading.Event()

    def role(p: psutil.Process) -> str:
        cmd = " ".join(p.cmdline())
        return "prefect server" if "uvicorn" in cmd else "worker" if ("spawn_main" in cmd or "dask" in cmd) \
            else "refresh" if p.pid == proc.pid else "other"

    def sample() -> None:
        nonlocal peak
        parent = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                tree = [parent, *parent.children(recursive=True)]
                total = 0
                for p in tree:
                    try:
                        rss = p.memory_info().rss
                        total += rss
                        name = role(p)
                        roles[name] = max(roles.get(name, 0), rss)
                        times = p.cpu_times()
                        cpu[p.pid] = (name, times.user + times.system)
                    except psutil.Error:
                        pass
                peak = max(peak, total)
            except psutil.Error:
                pass
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    measured.roles = {k: round(v / 2**30, 2) for k, v in roles.items()}  # type: ignore[attr-defined]
    by_role: dict[str, float] = {}
    for name, seconds in cpu.values():
        by_role[name] = round(by_role.get(name, 0) + seconds, 1)
    measured.cpu = by_role  # type: ignore[attr-defined]
    return wall, peak / 2**30, out, err


def run(authors: int, mode: str, batch_size: int | None) -> dict:
    snap = snapshot(authors)
    warehouse = Path(tempfile.mkdtemp(prefix=f"kitab-scale-{authors}-{mode}-", dir=BENCH_OUT))
    env = {**os.environ, "KITAB_WAREHOUSE": str(warehouse)}
    args = dict(source="dump", snapshot=str(snap), authors=authors, seed=1, release=f"scale-{authors}",
                warehouse=str(warehouse), batch_size=batch_size)
    if mode == "flow":
        cmd = [*KITAB, "refresh", "--source", "dump", "--snapshot", str(snap), "--authors", str(authors),
               "--seed", "1", "--release", args["release"], "--warehouse", str(warehouse), "--json"]
        if batch_size:
            cmd += ["--batch-size", str(batch_size)]
    else:
        code = ("import json, sys; from kitab.core.env import quiet_prefect_env; quiet_prefect_env(); "
                "from kitab.app.runs import run_refresh; "
                "s = run_refresh(**json.loads(sys.argv[1]), direct=True); print(json.dumps(s, default=str))")
        cmd = [sys.executable, "-c", code, json.dumps(args)]
    wall, rss, out, err = measured(cmd, env)
    summary = json.loads(out[out.index("{"):])
    return {"authors": authors, "mode": mode, "wall_s": round(wall, 1), "peak_rss_gib": round(rss, 2),
            "rows": json.loads(summary["counts"]) if "counts" in summary else _rows(summary),
            "stage_seconds": summary.get("stage_seconds"), "dropped_event_warnings": len(DROPPED.findall(err)),
            "peak_rss_gib_by_process": measured.roles,  # type: ignore[attr-defined]
            "cpu_seconds_by_process": measured.cpu,  # type: ignore[attr-defined]
            "warehouse": str(warehouse)}


def _rows(summary: dict) -> dict:
    from kitab.core.warehouse import Warehouse

    wh = Warehouse(Path(summary["warehouse"]))
    row = [r for r in wh.read_table("releases").to_pylist() if r["release_id"] == summary["release"]][0]
    return json.loads(row["counts"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="authors per run, comma-separated")
    parser.add_argument("--direct-max", type=int, default=10_000, help="also run direct up to this many authors")
    parser.add_argument("--batch-size", type=int, default=None)
    args = parser.parse_args()
    BENCH_OUT.mkdir(exist_ok=True)
    results = []
    for authors in [int(s) for s in args.sizes.split(",")]:
        modes = ["flow", "direct"] if authors <= args.direct_max else ["flow"]
        for mode in modes:
            result = run(authors, mode, args.batch_size)
            results.append(result)
            print(json.dumps(result), flush=True)
    print()
    print("| authors | run | wall | peak RSS (tree) | flow ÷ direct | authors | works_raw | books | title_entities "
          "| constraints | queries | rejects | dropped-event warnings |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    by = {(r["authors"], r["mode"]): r for r in results}
    for r in results:
        direct = by.get((r["authors"], "direct"))
        ratio = f"{r['wall_s'] / direct['wall_s']:.2f}" if r["mode"] == "flow" and direct else "–"
        rows = r["rows"]
        print(f"| {r['authors']:,} | {r['mode']} | {r['wall_s']:.0f} s | {r['peak_rss_gib']:.2f} GiB | {ratio} | "
              + " | ".join(f"{rows.get(t, 0):,}" for t in ("authors", "works_raw", "books", "title_entities",
                                                              "constraints", "queries", "rejects"))
              + f" | {r['dropped_event_warnings']} |")
    flows = {r["authors"]: r for r in results if r["mode"] == "flow"}
    if 1_000 in flows and 10_000 in flows:
        print(f"\n10k ÷ 1k wall (flow): {flows[10_000]['wall_s'] / flows[1_000]['wall_s']:.2f}")


if __name__ == "__main__":
    main()
