"""The constrain step's compute per batch, timed on a run's kept collect and tag outputs: each
batch's ``tasks/steps.py:constrain_step`` called in this process (into a temporary work folder,
so nothing is cached; the tag chunks routed to the batches first, as a refresh does, timed
apart), the CPU seconds of all the batches for the warmer of ``--reps`` passes,
and every output's content digest (its rows and schema, whatever the file's encoding), row
count and the step's stats, saved (``--save``) or compared with a saved file (``--compare``: two
commits whose steps write the same tables print IDENTICAL; each file's sha256 is saved too, and
files whose bytes differ are listed apart: a work-dir file is read back, never released as is).

    .venv/bin/python benchmarks/constrain_batches.py --work /tmp/run-work --save before.json
    .venv/bin/python benchmarks/constrain_batches.py --work /tmp/run-work --compare before.json

``--work``: a copy of a run's work folder (``<warehouse>/.work/<release>/``, which a refresh
removes when it commits: copy its ``collect`` and ``tag_entities`` folders while it publishes);
the step results' paths are read relative to it. The seed (1) and sampling rates are a default
refresh's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
# benchmarks/ holds a requests.py: off the path, the project root on it
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

from kitab.core.refs import TableRef  # noqa: E402
from kitab.core.workdir import StepResult, WorkDir  # noqa: E402
from tasks.sample_queries import SamplingRates  # noqa: E402
from tasks.steps import Batch, RunContext, constrain_step  # noqa: E402
from tasks.tag_routing import route_tags  # noqa: E402


def kept(work: Path, step: str, path: Path) -> StepResult:
    """A kept step result, its refs pointing into ``work`` (the run wrote them elsewhere)."""
    result = StepResult.from_json(json.loads(path.read_text())["result"])
    moved = {
        name: TableRef(ref.table, str(work / step / Path(ref.path).name), ref.rows, ref.sha256)
        for name, ref in result.outputs.items()
    }
    return StepResult(moved, result.stats)


def content(path: str) -> str:
    """sha256 of a Parquet file's table (schema and rows) as Arrow IPC: equal for the same
    table written with another compression or encoding."""
    table = pq.read_table(path)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def differences(saved: dict, got: dict, what: str = "outputs") -> list[str]:
    """``part:output`` (or ``part:stats``) of every batch whose ``what`` (``outputs``: table
    contents, ``files``: file bytes) or stats differ."""
    out = []
    for part in sorted(saved.keys() | got.keys()):
        a, b = saved.get(part, {}).get(what, {}), got.get(part, {}).get(what, {})
        out += [f"{part}:{name}" for name in sorted(a.keys() | b.keys()) if a.get(name) != b.get(name)]
        if saved.get(part, {}).get("stats") != got.get(part, {}).get("stats"):
            out.append(f"{part}:stats")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    chunks = tuple(
        ref
        for path in sorted((args.work / "tag_entities").glob("*.json"))
        for ref in kept(args.work, "tag_entities", path).outputs.values()
    )
    collected = {path.stem: kept(args.work, "collect", path) for path in sorted((args.work / "collect").glob("*.json"))}
    variants = [(int(part), result.outputs["title_variants"]) for part, result in collected.items()]
    best, got = None, {}
    for rep in range(args.reps):
        spent = 0.0
        with tempfile.TemporaryDirectory() as tmp:
            started = time.process_time()
            tags = route_tags(tmp, variants, chunks, Path(tmp) / "routed.title_tags.parquet")
            print(f"tags routed to {len(variants)} batches: {time.process_time() - started:.2f} CPU-s", flush=True)
            ctx = RunContext(release="bench", seed=args.seed, today_year=2026, work=WorkDir(tmp), sources=None)
            for part, result in collected.items():
                started = time.process_time()
                out = constrain_step(ctx, Batch(int(part), 0, 0), result, tags, SamplingRates())
                spent += time.process_time() - started
                got[part] = {
                    "outputs": {name: [content(ref.path), ref.rows] for name, ref in sorted(out.outputs.items())},
                    "files": {name: ref.sha256 for name, ref in sorted(out.outputs.items())},
                    "stats": json.loads(json.dumps(out.stats)),
                }
        print(f"pass {rep + 1}: {spent:.2f} CPU-s over {len(collected)} batches", flush=True)
        best = spent if best is None else min(best, spent)
    print(f"warmest pass: {best:.2f} CPU-s")
    if args.save:
        args.save.write_text(json.dumps(got, indent=1, sort_keys=True))
    if args.compare:
        saved = json.loads(args.compare.read_text())
        differ = differences(saved, got)
        print("IDENTICAL" if not differ else f"DIFFER: {', '.join(differ)}")
        files = [d for d in differences(saved, got, "files") if not d.endswith(":stats")]
        print(f"file bytes differ (same tables): {len(files)} files" if files else "file bytes identical")
        if differ:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
