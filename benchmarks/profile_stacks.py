"""A refresh's py-spy profile (raw, collapsed stacks of every process: the refresh, its workers,
Prefect's server), read per stage: where each stage's CPU-seconds go.

    .venv/bin/python benchmarks/profile_stacks.py bench_out/profile-10000.txt [--top 20]

A stack belongs to the stage whose step it runs in (tasks/steps.py: sample_step, collect_step,
tag_step, constrain_step, sample_queries_step, claims_step; flows/pipeline.py: distinct_titles,
tasks/tag_routing.py: route_tags, tasks/publish.py: publish, and the data tests publishing runs
on a thread beside it, kitab/core/release_commit.py: _tests_ready), to ``dump cache`` when it
builds the dump cache (in the refresh's child, kitab/sources/dump/prebuild.py, or a sample step
that builds it itself), to ``prefect server`` when its process is uvicorn, else to
``other`` (start-up, Prefect's engine, the progress threads). Per stage the top lines are the
innermost frame of the project's own code (kitab/, tasks/, flows/) with what runs below it (its
heaviest leaf, e.g. a DuckDB call or spaCy), in sampled seconds (samples ÷ rate: a thread seen
running, which on a loaded machine includes waiting for a core, so read the shares; the stage's
CPU is benchmarks/scale.py's per-stage table) and share of the stage. benchmarks/scale.py --profile writes the file and prints this.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict
from pathlib import Path

from kitab.core.progress import STAGES

DUMP_CACHE = "dump cache"
STEP_STAGES = (  # (frame function, stage); the innermost match decides
    # the dump cache's build (kitab/sources/dump/scan.py build_cache, and its second thread), in the
    # child the refresh starts as it starts (kitab/sources/dump/prebuild.py), or else in the sample step
    ("build_cache", DUMP_CACHE),
    ("_scan_wikidata", DUMP_CACHE),
    ("sample_step", "sample_authors"),
    ("collect_step", "collect"),
    ("distinct_titles", "tag_entities"),
    ("tag_step", "tag_entities"),
    ("route_tags", "tag_entities"),
    ("constrain_step", "generate_constraints"),
    ("sample_queries_step", "sample_queries"),
    ("claims_step", "publish"),
    ("publish", "publish"),
    # the data tests publishing runs beside its writes, on a pool thread of their own
    # (kitab/core/release_commit.py): without this they were "other", 47.5 sampled s at 100,000
    ("_tests_ready", "publish"),
)
# the refresh's stages in run order (kitab/core/progress.py; "start" runs no step), then the rest
STAGE_ORDER = [DUMP_CACHE, *(s for s in STAGES if s != "start"), "prefect server", "other"]
PROJECT = re.compile(r"\((?:.*/)?((?:kitab|tasks|flows)/[^:]+\.py):\d+\)")
FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*):(?P<line>\d+)\)$")


def parse(path: Path) -> list[tuple[list[str], int]]:
    """(frames outermost first, samples) per line of py-spy's raw output."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            out.append((stack.split(";"), int(count)))
    return out


def stage_of(frames: list[str]) -> str:
    processes = [f for f in frames if f.startswith("process ")]  # nested: the refresh's, then its child's
    if processes and "uvicorn" in processes[-1]:
        return "prefect server"
    names = [f.split(" (", 1)[0] for f in frames]
    for name in reversed(names):
        for func, stage in STEP_STAGES:
            if name == func:
                return stage
    return "other"


def short(frame: str) -> str:
    """``func (path/to/kitab/x.py:12)`` -> ``kitab/x.py:func``; a library frame keeps its file's name."""
    found = FRAME.match(frame)
    if not found:
        return frame[:80]
    file = found["file"]
    own = PROJECT.search(frame)
    where = own.group(1) if own else "/".join(Path(file).parts[-2:])
    return f"{where}:{found['func']}"


def per_stage(stacks: list[tuple[list[str], int]]) -> dict[str, dict]:
    """Per stage: samples, and per innermost project frame its samples and its leaves."""
    stages: dict[str, dict] = defaultdict(lambda: {"samples": 0, "own": Counter(), "leaves": defaultdict(Counter)})
    for frames, count in stacks:
        stage = stages[stage_of(frames)]
        stage["samples"] += count
        own = next((f for f in reversed(frames) if PROJECT.search(f)), None)
        key = short(own) if own else "(no project frame)"
        stage["own"][key] += count
        stage["leaves"][key][short(frames[-1])] += count
    return stages


def report(path: Path, rate: int, top: int = 20) -> str:
    stages = per_stage(parse(path))
    lines = []
    for name in [s for s in STAGE_ORDER if s in stages]:
        stage = stages[name]
        total = stage["samples"]
        lines.append(f"\n{name}: {total / rate:.1f} s sampled")
        lines.append("| sampled s | share | innermost project frame | heaviest leaf below it |")
        lines.append("|---:|---:|---|---|")
        for key, count in stage["own"].most_common(top):
            leaf, _ = stage["leaves"][key].most_common(1)[0]
            lines.append(f"| {count / rate:.1f} | {100 * count / total:.0f}% | `{key}` | `{leaf}` |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--rate", type=int, default=20, help="py-spy's samples per second (process_tree.PY_SPY_RATE)")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    print(report(args.profile, args.rate, args.top))


if __name__ == "__main__":
    main()
