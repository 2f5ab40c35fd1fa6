"""Do Dask workers pay? collect + tag + constrain on a Dask LocalCluster of 1, then 2 workers.

    .venv/bin/python benchmarks/dask_workers.py                 # 2,000 authors
    .venv/bin/python benchmarks/dask_workers.py --sizes 10000   # the issue's check, on an idle machine

For every size and worker count, a child process runs the refresh flow's first stages as
flows/pipeline.py composes them (sample, then ``collect``, ``tag`` and ``constrain`` on a
``PrefectRunner`` inside a Prefect flow whose task runner is flows.runners.task_runner("dask"):
what ``kitab refresh --task-runner dask`` runs), with ``KITAB_WORKERS`` = the worker count (one
thread per worker process). Every run has a fresh warehouse on the same snapshot; the dump cache
is built once beforehand and copied in, and sampling is not timed. Timed: collect, tag and
constrain (tag is the step between them that constrain needs). Reported: their wall seconds,
throughput (authors passed / s), the 2-worker / 1-worker ratio, CPU seconds of each worker
process, the load average before and after, and a digest of the constrain outputs, which must
be equal for every worker count (same bytes whatever the runner).

The machine should be idle: on a busy 2-core machine a second worker has no core to gain.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_OUT = ROOT / "bench_out"  # gitignored
KITAB = [sys.executable, "-m", "kitab.app.cli"]
SEED = 5  # the snapshot's; the sample's seed is 1, as in benchmarks/scale.py


def snapshot(authors: int) -> Path:
    """A snapshot with enough candidates (about 84% pass every stage: benchmarks/scale.py)."""
    from scale import generated  # benchmarks/ is sys.path[0] in this (the parent) process

    return generated(SEED, math.ceil(authors * 1.3))


def _args(snap: Path, authors: int, warehouse: Path, batch_size: int | None) -> dict:
    from scale import refresh_args  # benchmarks/ is sys.path[0] in this (the parent) process

    return refresh_args(snap, authors, warehouse, batch_size, release=f"dask-{authors}")


def _child(args: dict, workers: int, cache_only: bool) -> dict:
    """In the child: the flow's sample step (not timed), then collect, tag, constrain (timed)."""
    sys.path[0] = str(ROOT)  # the checkout (flows, tasks), not benchmarks/, for this process and its workers
    from kitab.core.env import quiet_prefect_env

    quiet_prefect_env()
    from datetime import UTC, datetime

    import psutil
    from prefect import flow

    from flows.pipeline import collect, constrain, open_source, run_context, sample, tag
    from flows.runners import LocalRunner, PrefectRunner, task_runner
    from kitab.app.runs import run_config
    from kitab.core.progress import Progress
    from kitab.core.warehouse import Warehouse
    from tasks.publish import excluded_releases, other_releases, released_since

    config = run_config(args, direct=cache_only, task_runner="dask", dask_address=None)
    today = datetime.now(UTC).date()

    def worker_cpu() -> dict[int, float]:
        """CPU seconds of each Dask worker process (spawned children of this one)."""
        out = {}
        # (a new Process each time: the flow's closure travels with every task, and a Process holds a lock)
        for p in psutil.Process().children(recursive=True):
            try:
                if any("spawn_main" in part for part in p.cmdline()):
                    t = p.cpu_times()
                    out[p.pid] = t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return out

    def stages(runner) -> dict:
        progress = Progress()
        wh = Warehouse(config.settings.warehouse)
        params = config.params
        with open_source(config, progress) as (spec, _origin):
            excluded = excluded_releases(wh, params.release)
            ledger, since = other_releases(wh, params.release, excluded), released_since(wh, params.release, excluded)
            ctx = run_context(config, wh, spec, today, ledger, since)
            sampled = sample(runner, ctx, config, today, ledger, since, (), progress)
            if cache_only:
                return {}
            cpu0, load0, times = worker_cpu(), os.getloadavg()[0], {}
            started = time.monotonic()
            collected = collect(runner, ctx, config, sampled, progress)
            times["collect_s"] = time.monotonic() - started
            _titles, chunks, tags = tag(runner, ctx, config, collected, progress)
            times["tag_s"] = time.monotonic() - started - times["collect_s"]
            constrained = constrain(runner, ctx, config, collected, tags, progress)
            wall = time.monotonic() - started
            times["constrain_s"] = wall - times["collect_s"] - times["tag_s"]
            cpu1, load1 = worker_cpu(), os.getloadavg()[0]
        return {
            "workers": workers,
            **{k: round(v, 1) for k, v in times.items()},
            "wall_s": round(wall, 1),
            "authors": collected.passed,
            "authors_per_s": round(collected.passed / wall, 2),
            "batches": len(collected.batches),
            "tag_chunks": len(chunks),
            "worker_cpu_s": [round(cpu1[p] - cpu0.get(p, 0.0), 1) for p in sorted(cpu1)],
            "load_avg_1min": [round(load0, 2), round(load1, 2)],
            # equal for every worker count: the constrain outputs' bytes
            "constrain_sha256": hashlib.sha256(
                " ".join(ref.sha256 for c in constrained for _, ref in sorted(c.outputs.items())).encode()
            ).hexdigest()[:16],
        }

    if cache_only:  # the dump cache, built by the sample step, outside any timing
        runner = LocalRunner(workers=1)
        try:
            return stages(runner)
        finally:
            runner.close()

    @flow(name="dask-workers", task_runner=task_runner("dask", workers=workers))
    def on_dask() -> dict:
        runner = PrefectRunner(workers=config.workers)

        try:
            return stages(runner)
        finally:
            runner.close()

    return on_dask()


def run(authors: int, workers: list[int], batch_size: int | None) -> list[dict]:
    snap = snapshot(authors)
    template = Path(tempfile.mkdtemp(prefix=f"kitab-dask-{authors}-cache-", dir=BENCH_OUT))
    env = {**os.environ, "KITAB_WAREHOUSE": str(template)}
    subprocess.run(
        [sys.executable, __file__, "--child", json.dumps([_args(snap, authors, template, batch_size), 1, True])],
        check=True,
        cwd=ROOT,
        env=env,
    )
    results = []
    for n in workers:
        warehouse = Path(tempfile.mkdtemp(prefix=f"kitab-dask-{authors}-w{n}-", dir=BENCH_OUT))
        shutil.copytree(template / ".cache", warehouse / ".cache")
        env = {**os.environ, "KITAB_WAREHOUSE": str(warehouse), "KITAB_WORKERS": str(n)}
        done = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps([_args(snap, authors, warehouse, batch_size), n, False])],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"{n} worker(s) failed ({done.returncode}):\n{done.stderr[-3000:]}")
        out = done.stdout
        results.append({"size": authors, **json.loads(out.strip().splitlines()[-1])})
        print(json.dumps(results[-1]), flush=True)
        shutil.rmtree(warehouse, ignore_errors=True)
    shutil.rmtree(template, ignore_errors=True)
    return results


def table(results: list[dict]) -> None:
    print(
        "\n| authors | workers | collect | tag | constrain | wall | authors/s | ratio | worker CPU s | load 1 min |"
        "\n|---|---|---|---|---|---|---|---|---|---|"
    )
    for r in results:
        base = next(b for b in results if b["size"] == r["size"] and b["workers"] == min(x["workers"] for x in results))
        print(
            f"| {r['authors']:,} | {r['workers']} | {r['collect_s']} s | {r['tag_s']} s | {r['constrain_s']} s "
            f"| {r['wall_s']} s | {r['authors_per_s']} | {r['authors_per_s'] / base['authors_per_s']:.2f}x "
            f"| {' + '.join(map(str, r['worker_cpu_s']))} | {r['load_avg_1min'][0]} → {r['load_avg_1min'][1]} |"
        )
    digests = {(r["size"], r["constrain_sha256"]) for r in results}
    if len(digests) != len({r["size"] for r in results}):
        raise SystemExit("the constrain outputs differ between worker counts")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2000", help="authors per run, comma-separated (default 2000)")
    parser.add_argument("--workers", default="1,2", help="Dask worker processes, comma-separated (default 1,2)")
    parser.add_argument("--batch-size", type=int, default=None, help="authors per collect/constrain step")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_args, workers, cache_only = json.loads(args.child)
        print(json.dumps(_child(child_args, workers, cache_only)), flush=True)
        return
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        results += run(size, [int(w) for w in args.workers.split(",")], args.batch_size)
    table(results)


if __name__ == "__main__":
    main()
