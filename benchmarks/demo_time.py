"""Wall time of `kitab demo` after the bootstrap (the venv exists): a fresh warehouse per run,
the whole command timed from outside (Python start, imports, the refresh, the summary).

    .venv/bin/python benchmarks/demo_time.py [--runs 3] [--checkout DIR ...]

Each --checkout is a kitab source tree run with this venv (PYTHONPATH=DIR), e.g. a worktree of
an older commit to compare with (`git worktree add /tmp/before <commit>`); runs of several
checkouts are interleaved, so a busy machine slows them alike. Default: this checkout.
Target (issue 22): <= 30 s on the project's 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def one_run(checkout: Path) -> tuple[float, str]:
    """(wall seconds, the summary's own "wall time" line) of one `kitab demo` in ``checkout``."""
    work = Path(tempfile.mkdtemp(prefix="kitab-demo-time-"))
    env = {**os.environ, "PYTHONPATH": str(checkout), "PREFECT_HOME": str(work / "prefect")}
    env.pop("KITAB_WAREHOUSE", None)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kitab.app.cli", "demo", "--warehouse", str(work / "wh")],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        wall = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(f"kitab demo failed in {checkout}:\n{done.stderr[-2000:]}")
        own = next((m.group(0) for m in re.finditer(r"wall time: .*", done.stdout)), "")
        return wall, own
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--checkout", type=Path, action="append", help="a kitab source tree (repeatable)")
    args = parser.parse_args()
    checkouts = [p.resolve() for p in args.checkout or [HERE]]
    walls: dict[Path, list[float]] = {c: [] for c in checkouts}
    for i in range(args.runs):
        for checkout in checkouts:
            wall, own = one_run(checkout)
            walls[checkout].append(wall)
            print(f"run {i + 1} {checkout}: {wall:.1f} s ({own})", flush=True)
    print("\n| checkout | runs | wall s (each) | median s |\n|---|---|---|---|")
    for checkout, values in walls.items():
        print(
            f"| {checkout} | {len(values)} | {', '.join(f'{v:.1f}' for v in values)} | "
            f"{statistics.median(values):.1f} |"
        )


if __name__ == "__main__":
    main()
