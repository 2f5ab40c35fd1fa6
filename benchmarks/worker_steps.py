"""A worker's steps replayed in one process: the calls benchmarks/worker_memory.py --keep saved
(``<warehouse>.calls/<step>-<part>.pickle``: the step and its arguments), run again here in
order, each into a fresh work folder (so each computes), with this process's RSS after each
step, its peak during it (VmHWM, reset per step) and its CPU seconds. What a worker keeps
between batches is the growth of "RSS after"; what a change costs, the CPU column.

    .venv/bin/python benchmarks/worker_steps.py bench_out/worker-memory-3000-XXXX.calls --steps constrain
    .venv/bin/python benchmarks/worker_steps.py bench_out/worker-memory-3000-XXXX.calls --steps tag,constrain --repeat 2
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the checkout first; benchmarks/ last (its requests.py must not shadow the package)
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE), str(HERE)]

from worker_memory import LIBRARIES, cpu_seconds, reset_peak, status  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("calls", type=Path)
    parser.add_argument("--steps", default="constrain", help="comma-separated: collect, tag, constrain")
    parser.add_argument("--repeat", type=int, default=1, help="replay the calls this many times")
    parser.add_argument("--duck-threads", type=int, default=1, help="a worker's DuckDB threads (1: two on two cores)")
    args = parser.parse_args()

    from kitab.core.refs import set_duck_threads
    from kitab.core.workdir import WorkDir

    # set up as a worker of the pool is (flows/runners.py: its DuckDB threads; Arrow's pool
    # comes from the environment kitab sets, kitab/core/env.py)
    set_duck_threads(args.duck_threads)
    import tasks.steps  # noqa: F401  (what a worker imports to unpickle a step)

    print(f"imports: RSS {status()['VmRSS'] / 1024:.0f} MiB")
    wanted = args.steps.split(",")
    calls = [p for p in args.calls.glob("*.pickle") if p.stem.split("-")[0] in wanted]
    calls.sort(key=lambda p: (wanted.index(p.stem.split("-")[0]), p.stem))
    out = Path(tempfile.mkdtemp(prefix="worker-steps-", dir=args.calls.parent))
    total: dict[str, float] = {}
    peak = 0
    print("| step | RSS before | RSS after | anon | file | peak | CPU s | loaded |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    try:
        for _ in range(args.repeat):
            for path in calls:
                step, call = pickle.loads(path.read_bytes())
                ctx = dataclasses.replace(call[0], work=WorkDir(str(out / path.stem)))
                before = status()
                reset_peak()
                cpu = cpu_seconds()
                step(ctx, *call[1:])
                cpu = cpu_seconds() - cpu
                after = status()
                peak = max(peak, after["VmHWM"])
                kind = path.stem.split("-")[0]
                total[kind] = total.get(kind, 0) + cpu
                print(
                    f"| {path.stem} | {before['VmRSS'] / 1024:.0f} | {after['VmRSS'] / 1024:.0f} | "
                    f"{after['RssAnon'] / 1024:.0f} | {after['RssFile'] / 1024:.0f} | {after['VmHWM'] / 1024:.0f} | "
                    f"{cpu:.2f} | {','.join(m for m in LIBRARIES if m in sys.modules)} |",
                    flush=True,
                )
                shutil.rmtree(out / path.stem, ignore_errors=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(f"\npeak {peak / 1024:.0f} MiB; CPU s " + ", ".join(f"{k} {v:.2f}" for k, v in total.items()))


if __name__ == "__main__":
    main()
