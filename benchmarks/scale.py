"""Scale: `kitab refresh --source dump` at 1,000, 10,000 and 100,000 authors, as a user runs it.

    .venv/bin/python benchmarks/scale.py                       # 1,000 and 10,000 (flow and direct)
    .venv/bin/python benchmarks/scale.py --sizes 1000,10000,100000
    .venv/bin/python benchmarks/scale.py --sizes 10000,100000 --through collect
    .venv/bin/python benchmarks/scale.py --sizes 10000 --world 100000 --through collect
    .venv/bin/python benchmarks/scale.py --sizes 100000 --direct-max 0 --warm-cache

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

``--warm-cache``: the refresh finds its snapshot's dump cache ready, as every scheduled refresh
after the first from one monthly dump does: the cache is built once (bench_out/dump-cache/, its
build timed and printed) and hard-linked into each run's fresh warehouse. Without it, every run
builds the cache first, as the first refresh from a new dump does.

Each run also records the machine's speed before and after it (benchmarks/yardstick.py: the CPU
seconds of a fixed Python and a fixed DuckDB workload), since this machine's speed moves between
runs: a run's CPU divided by the yardstick compares runs of different days.

``--through collect`` stops after the collect step: the pipeline's own steps (sample_step, then
collect_step per batch on flows.runners.LocalRunner, worker processes as in a refresh) on the same
snapshot and a fresh warehouse, so the dump cache is built first. Reported per size: seconds of
the dump cache build, of sampling (the build included) and of collecting, CPU seconds of each
(the worker processes' included), peak RSS of the process tree and the load average while it
ran (the cores may be shared), and the growth from the smallest size to the others.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_OUT = ROOT / "bench_out"  # gitignored
KITAB = [sys.executable, "-m", "kitab.app.cli"]
# (authors, snapshot seed, snapshot candidates): the snapshots, and one for 100,000
SNAPSHOTS = {1_000: (5, 2_000), 10_000: (9, 13_000), 100_000: (13, 130_000)}
DROPPED = re.compile(r"queue is full|dropping message", re.IGNORECASE)
# the refresh's plain progress lines (kitab/app/progress_display.py): "kitab: 0:12 collect (3/8) started: ..."
PHASES = r"^kitab: \S+ (\w+) \(\d+/\d+\) started"


def snapshot(authors: int) -> Path:
    return generated(*SNAPSHOTS[authors])


def generated(seed: int, candidates: int) -> Path:
    """bench_out/snapshot-s<seed>-n<candidates>: generated once (kitab snapshot generate), then reused."""
    out = BENCH_OUT / f"snapshot-s{seed}-n{candidates}"
    if not (out / "MANIFEST.json").exists():
        print(f"generating {out.name} ...", flush=True)
        subprocess.run(
            [*KITAB, "snapshot", "generate", "--seed", str(seed), "--authors", str(candidates), "--out", str(out)],
            check=True,
            cwd=ROOT,
        )
    return out


def measured(cmd: list[str], env: dict, profile: Path | None = None) -> tuple[float, float, str, str]:
    """Run ``cmd``; (wall seconds, peak RSS of its process tree in GiB, stdout, stderr). The peak
    per kind of process, CPU per kind and mean load are left on the function (``.roles``,
    ``.cpu``, ``.load``)."""
    # imported here, not at the top: the collect child's spawned workers import this module with
    # the checkout, not benchmarks/, on their path
    from process_tree import run_measured  # benchmarks/ is sys.path[0] in this process

    result = run_measured(cmd, cwd=ROOT, env=env, root_name="refresh", phases=PHASES, profile=profile)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.err[-3000:]}")
    measured.roles = result.roles  # type: ignore[attr-defined]
    measured.cpu = result.cpu  # type: ignore[attr-defined]
    measured.load = result.load  # type: ignore[attr-defined]
    measured.phases = result.phases  # type: ignore[attr-defined]
    return result.wall, result.peak_gib, result.out, result.err


def refresh_args(snap: Path, authors: int, warehouse: Path, batch_size: int | None, release: str) -> dict:
    """kitab.app.runs.run_refresh's arguments for a benchmark's refresh from ``snap`` (seed 1)."""
    return dict(
        source="dump",
        snapshot=str(snap),
        authors=authors,
        seed=1,
        release=release,
        warehouse=str(warehouse),
        batch_size=batch_size,
    )


def prepared_cache(snap: Path) -> tuple[Path, dict | None]:
    """The snapshot's dump cache, built once under bench_out/dump-cache/ (DumpStore.open, in a
    child process, as a refresh's sample step opens it); (its folder, the build's wall / CPU
    seconds and steps, or None if it was built before)."""
    root = BENCH_OUT / "dump-cache"
    code = (
        "import json, sys; from kitab.sources.dump.store import DumpStore; "
        "s = DumpStore.open(sys.argv[1], sys.argv[2]); s.close(); "
        "print(json.dumps({'folder': str(s.folder), 'steps': s.scan_seconds}))"
    )
    before, started = os.times(), time.perf_counter()
    # (cwd: the checkout, not benchmarks/, whose requests.py would shadow the package)
    done = subprocess.run([sys.executable, "-c", code, str(snap), str(root)], cwd=ROOT, check=True, capture_output=True)
    after = os.times()
    opened = json.loads(done.stdout.decode().strip().splitlines()[-1])
    build = None
    if opened["steps"] is not None:
        cpu = after.children_user + after.children_system - before.children_user - before.children_system
        build = {"wall_s": round(time.perf_counter() - started, 1), "cpu_s": round(cpu, 1), "steps_s": opened["steps"]}
    return Path(opened["folder"]), build


def _link_cache(cache: Path, warehouse: Path) -> None:
    """The prepared cache in ``warehouse``'s cache folder (Settings.cache_dir / "dumps"), hard-linked:
    the refresh reads it, never writes it."""
    shutil.copytree(cache, warehouse / ".cache" / "dumps" / cache.name, copy_function=os.link)


def run(
    authors: int,
    mode: str,
    batch_size: int | None,
    profile: bool = False,
    extra: tuple = (),
    world: int | None = None,
    warm_cache: bool = False,
) -> dict:
    """One refresh of ``authors``; ``world``: draw them from the snapshot made for that many
    authors; ``warm_cache``: with the snapshot's dump cache ready in the fresh warehouse."""
    snap = snapshot(world or authors)
    warehouse = Path(tempfile.mkdtemp(prefix=f"kitab-scale-{authors}-{mode}-", dir=BENCH_OUT))
    cache_build = None
    if warm_cache:
        cache, cache_build = prepared_cache(snap)
        _link_cache(cache, warehouse)
    env = {**os.environ, "KITAB_WAREHOUSE": str(warehouse)}
    args = refresh_args(snap, authors, warehouse, batch_size, release=f"scale-{authors}")
    if mode == "flow":
        cmd = [
            *KITAB,
            "refresh",
            "--source",
            "dump",
            "--snapshot",
            str(snap),
            "--authors",
            str(authors),
            "--seed",
            "1",
            "--release",
            args["release"],
            "--warehouse",
            str(warehouse),
            "--json",
        ]
        if batch_size:
            cmd += ["--batch-size", str(batch_size)]
        cmd += list(extra)
    else:
        code = (
            "import json, sys; from kitab.core.env import quiet_prefect_env; quiet_prefect_env(); "
            "from kitab.app.runs import run_refresh; "
            "s = run_refresh(**json.loads(sys.argv[1]), direct=True); print(json.dumps(s, default=str))"
        )
        cmd = [sys.executable, "-c", code, json.dumps(args)]
    spy = BENCH_OUT / f"profile-{authors}.txt" if profile and mode == "flow" else None
    from yardstick import machine_delta, machine_seconds, yardstick  # benchmarks/ is sys.path[0]

    speed_before = yardstick()
    cores_before = machine_seconds()
    wall, rss, out, err = measured(cmd, env, spy)
    cores = machine_delta(cores_before, machine_seconds())
    speed_after = yardstick()
    if "{" not in out:  # under py-spy the exit status is py-spy's: the refresh's error is in its stderr
        raise SystemExit(f"{' '.join(cmd)} printed no summary:\n{err[-3000:]}")
    summary, _ = json.JSONDecoder().raw_decode(out[out.index("{") :])  # (py-spy adds a line after it)
    return {
        "authors": authors,
        "mode": mode,
        "snapshot": snap.name,
        "wall_s": round(wall, 1),
        "peak_rss_gib": round(rss, 2),
        "rows": json.loads(summary["counts"]) if "counts" in summary else _rows(summary),
        "stage_seconds": summary.get("stage_seconds"),
        "dropped_event_warnings": len(DROPPED.findall(err)),
        "peak_rss_gib_by_process": measured.roles,  # type: ignore[attr-defined]
        "cpu_seconds_by_process": measured.cpu,  # type: ignore[attr-defined]
        "load_avg_1min": measured.load,  # type: ignore[attr-defined]
        "phases": measured.phases,  # type: ignore[attr-defined]
        "profile": str(spy) if spy else None,
        "warehouse": str(warehouse),
        "dump_cache": "ready" if warm_cache else "built by the run",
        "dump_cache_build": cache_build,  # with --warm-cache, if this run's snapshot needed it built
        "yardstick": {"before": speed_before, "after": speed_after},
        # the whole machine's cores over the run (the kernel's counters): busy beyond the run's
        # own CPU is another process; steal is another guest
        "machine": cores,
    }


def phase_table(result: dict) -> None:
    """Per stage of one run: wall, CPU (user + sys) of every kind of process, peak RSS of the tree
    and of the refresh process itself."""
    kinds = sorted({k for p in result["phases"] for k in p["cpu_s"]})
    print(f"\n{result['authors']:,} authors, {result['mode']}: load {result['load_avg_1min']}")
    print("| stage | wall | CPU all | " + " | ".join(f"CPU {k}" for k in kinds) + " | peak RSS (tree) | refresh |")
    print("|---|---:|---:|" + "---:|" * len(kinds) + "---:|---:|")
    for p in result["phases"]:
        cells = " | ".join(f"{p['cpu_s'].get(k, 0):.1f} s" for k in kinds)
        own = p.get("peak_rss_gib_by_process", {}).get("refresh", 0)
        print(
            f"| {p['phase']} | {p['wall_s']:.1f} s | {p['cpu_total_s']:.1f} s | {cells} | {p['peak_rss_gib']:.2f} GiB "
            f"| {own:.2f} GiB |"
        )


def through_collect(authors: int, batch_size: int | None, world: int | None = None) -> dict:
    """Sample and collect only (see the module doc), in a child process measured like a refresh.
    ``world``: sample from the snapshot made for that many authors instead (the same world)."""
    snap = snapshot(world or authors)
    warehouse = Path(tempfile.mkdtemp(prefix=f"kitab-scale-{authors}-collect-", dir=BENCH_OUT))
    env = {**os.environ, "KITAB_WAREHOUSE": str(warehouse)}
    args = refresh_args(snap, authors, warehouse, batch_size, release=f"scale-{authors}")
    wall, rss, out, _ = measured([sys.executable, __file__, "--child-collect", json.dumps(args)], env)
    child = json.loads(out.strip().splitlines()[-1])
    return {
        "authors": authors,
        "snapshot": snap.name,
        "mode": "through collect",
        "wall_s": round(wall, 1),
        "peak_rss_gib": round(rss, 2),
        **child,
        "load_avg_1min": measured.load,  # type: ignore[attr-defined]
        "peak_rss_gib_by_process": measured.roles,  # type: ignore[attr-defined]
        "warehouse": str(warehouse),
    }


def _child_collect(args: dict) -> None:
    """In the child: flows/pipeline.py's first two stages, with the same steps, context and runner."""
    import hashlib
    import resource
    from datetime import datetime

    # run as a script, sys.path[0] is benchmarks/, whose requests.py would shadow the package:
    # the checkout instead (its flows and tasks), for this process and the workers it spawns
    sys.path[0] = str(ROOT)

    from kitab.core.env import quiet_prefect_env

    quiet_prefect_env()
    from flows.pipeline import open_origin
    from flows.runners import LocalRunner
    from kitab.core.config import Settings
    from kitab.core.params import RefreshParams
    from kitab.core.warehouse import Warehouse
    from kitab.core.workdir import WorkDir
    from kitab.sources import source_kind
    from tasks.publish import other_releases
    from tasks.steps import Batch, RunContext, collect_step, sample_step

    def cpu() -> float:  # this process and its finished (reaped) children: the worker processes
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    today = datetime.now(UTC).date()
    params = RefreshParams(**{k: v for k, v in args.items() if v is not None}).resolved(today)
    settings = Settings(warehouse=params.warehouse)
    wh = Warehouse(settings.warehouse)
    runner = LocalRunner()
    times: dict[str, float] = {}
    kind = source_kind(params.source)
    with open_origin(kind.name, settings, snapshot=kind.snapshot(params), mirror_url=None, release=params.release) as (
        spec,
        origin,
    ):
        ledger = other_releases(wh, params.release)
        ctx = RunContext(
            release=params.release,
            seed=params.seed,
            today_year=today.year,
            work=WorkDir(str(wh.root / ".work" / params.release)),
            sources=spec,
            released_ol_keys=tuple(sorted(ledger.ol_keys)),
        )
        started, cpu_started = time.monotonic(), cpu()
        sampled = runner.run(
            sample_step,
            ctx,
            params.authors,
            tuple(sorted(ledger.qids)),
            tuple(sorted(ledger.names)),
            settings.birth_year_min,
            today.year + 1,
            settings.birth_year_window,
            settings.min_works,
            settings.max_works,
            name="sample",
        )
        times["sample_s"], times["sample_cpu_s"] = time.monotonic() - started, cpu() - cpu_started
        # the fresh warehouse's dump cache, built by the sample step: its READY.json has the build's steps
        ready = settings.cache_dir / "dumps" / origin.snapshot_id / "READY.json"
        scan = json.loads(ready.read_text())["scan_seconds"]
        # the pipeline's first draw: the first --authors authors of the seeded draw order
        order = sampled.outputs["order"]
        rows = min(params.authors, order.rows)
        batches = [
            Batch(n, start, min(start + params.batch_size, rows))
            for n, start in enumerate(range(0, rows, params.batch_size))
        ]
        started, cpu_started = time.monotonic(), cpu()
        collected = runner.map(
            collect_step,
            [(ctx, b, order) for b in batches],
            cpu=kind.collect_is_cpu_work,
            names=[f"collect-{b.part}" for b in batches],
        )
        runner.close()  # the worker processes end here: their CPU time is then counted
        times["collect_s"], times["collect_cpu_s"] = time.monotonic() - started, cpu() - cpu_started
    print(
        json.dumps(
            {
                **{k: round(v, 1) for k, v in times.items()},
                "cache_build_s": round(sum(scan.values()), 1),
                "cache_build_steps_s": scan,
                "batches": len(batches),
                "sampled": rows,
                "works_raw": sum(c.stats["collect_authors"]["works_raw"] for c in collected),
                # one digest of every collect output file: equal across code versions = same bytes
                "outputs_sha256": hashlib.sha256(
                    " ".join(ref.sha256 for c in collected for _, ref in sorted(c.outputs.items())).encode()
                ).hexdigest(),
            }
        )
    )


def _collect_table(results: list[dict]) -> None:
    print(
        "| authors | snapshot | cache build | sample (build incl.) | collect wall | collect CPU | peak RSS (tree) "
        "| load avg | works_raw |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['authors']:,} | {r['snapshot']} | {r['cache_build_s']:.0f} s | {r['sample_s']:.0f} s | {r['collect_s']:.1f} s "
            f"| {r['collect_cpu_s']:.1f} s | {r['peak_rss_gib']:.2f} GiB | {r['load_avg_1min']} "
            f"| {r['works_raw']:,} |"
        )
    base = results[0]
    for r in results[1:]:
        print(
            f"\n{r['authors']:,} ÷ {base['authors']:,} authors: collect wall {r['collect_s'] / base['collect_s']:.1f}x, "
            f"collect CPU {r['collect_cpu_s'] / base['collect_cpu_s']:.1f}x, "
            f"works_raw {r['works_raw'] / base['works_raw']:.1f}x"
        )


def _rows(summary: dict) -> dict:
    from kitab.core.warehouse import Warehouse

    wh = Warehouse(Path(summary["warehouse"]))
    row = [r for r in wh.read_table("releases").to_pylist() if r["release"] == summary["release"]][0]
    return json.loads(row["counts"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="authors per run, comma-separated")
    parser.add_argument("--direct-max", type=int, default=10_000, help="also run direct up to this many authors")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument(
        "--through",
        choices=["collect"],
        default=None,
        help="stop after this step (sample and collect only, LocalRunner)",
    )
    parser.add_argument(
        "--world",
        type=int,
        default=None,
        help="every size samples the snapshot of this size (the same generated world), so the "
        "answers per batch do not change with the size: tells cost per author from cost per world",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run the flow under py-spy (every process) and print each stage's top frames "
        "(benchmarks/profile_stacks.py); bench_out/profile-<authors>.txt",
    )
    parser.add_argument("--top", type=int, default=20, help="with --profile: lines per stage")
    parser.add_argument(
        "--refresh-args", default="", help="more `kitab refresh` arguments for the flow runs, e.g. '--allow-fewer'"
    )
    parser.add_argument(
        "--warm-cache",
        action="store_true",
        help="the runs find the snapshot's dump cache ready (built once in bench_out/dump-cache/), "
        "as every refresh after the first from one dump does",
    )
    parser.add_argument("--child-collect", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_collect:
        _child_collect(json.loads(args.child_collect))
        return
    BENCH_OUT.mkdir(exist_ok=True)
    if args.through == "collect":
        collected = []
        for authors in [int(s) for s in args.sizes.split(",")]:
            collected.append(through_collect(authors, args.batch_size, args.world))
            print(json.dumps(collected[-1]), flush=True)
        print()
        _collect_table(collected)
        return
    results = []
    for authors in [int(s) for s in args.sizes.split(",")]:
        modes = ["flow", "direct"] if authors <= args.direct_max else ["flow"]
        for mode in modes:
            result = run(
                authors,
                mode,
                args.batch_size,
                args.profile,
                tuple(args.refresh_args.split()),
                args.world,
                args.warm_cache,
            )
            results.append(result)
            print(json.dumps(result), flush=True)
            phase_table(result)
            speed = result["yardstick"]
            print(
                f"dump cache: {result['dump_cache']}; yardstick (CPU s, best of 3) before / after: "
                f"Python {speed['before']['python_cpu_s']} / {speed['after']['python_cpu_s']}, "
                f"DuckDB {speed['before']['duckdb_cpu_s']} / {speed['after']['duckdb_cpu_s']}",
                flush=True,
            )
            cores, own = result["machine"], sum(result["cpu_seconds_by_process"].values())
            print(
                f"the machine's cores over the run: busy {cores['busy_s']:,.1f} CPU-s (the run's own tree "
                f"{own:,.1f}), idle {cores['idle_s']:,.1f} s, steal {cores['steal_s']:,.1f} s",
                flush=True,
            )
            if result["profile"]:
                from process_tree import PY_SPY_RATE
                from profile_stacks import report  # benchmarks/ is sys.path[0]

                print(report(Path(result["profile"]), PY_SPY_RATE, args.top), flush=True)
    print()
    print(
        "| authors | run | wall | peak RSS (tree) | flow ÷ direct | authors | works_raw | books | title_entities "
        "| constraints | queries | rejects | dropped-event warnings |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    by = {(r["authors"], r["mode"]): r for r in results}
    for r in results:
        direct = by.get((r["authors"], "direct"))
        ratio = f"{r['wall_s'] / direct['wall_s']:.2f}" if r["mode"] == "flow" and direct else "–"
        rows = r["rows"]
        print(
            f"| {r['authors']:,} | {r['mode']} | {r['wall_s']:.0f} s | {r['peak_rss_gib']:.2f} GiB | {ratio} | "
            + " | ".join(
                f"{rows.get(t, 0):,}"
                for t in ("authors", "works_raw", "books", "title_entities", "constraints", "queries", "rejects")
            )
            + f" | {r['dropped_event_warnings']} |"
        )
    flows = {r["authors"]: r for r in results if r["mode"] == "flow"}
    if 1_000 in flows and 10_000 in flows:
        print(f"\n10k ÷ 1k wall (flow): {flows[10_000]['wall_s'] / flows[1_000]['wall_s']:.2f}")


if __name__ == "__main__":
    main()
