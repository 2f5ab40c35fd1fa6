"""Publishing's refresh side, step by step, on a committed release's tables (read only).

Each table's committed file is taken as one part (as the pipeline's batches would give it) and
published again into a fresh warehouse: ``--steps`` times each piece in this process (staging
per table, the battery's early and late halves, each data test), with CPU (this process, all
its threads: DuckDB's and Arrow's included) and the process's peak RSS over that piece;
``--commit`` runs the whole commit (kitab.core.release_commit.commit_release) once and checks
every table's sha256 against the committed release's ledger row.

    .venv/bin/python benchmarks/publish_steps.py --warehouse W --release R --out /tmp/x [--steps] [--commit]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import shutil
import sys
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # (benchmarks/requests.py would shadow requests)

from kitab.core.refs import TableRef  # noqa: E402
from kitab.core.warehouse import Warehouse  # noqa: E402

DERIVED = ("baselines", "releases")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _reset_peak() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


@contextlib.contextmanager
def timed(label: str, out: list):
    _reset_peak()
    wall, cpu = time.monotonic(), _cpu()
    yield
    row = {"step": label, "wall_s": round(time.monotonic() - wall, 2), "cpu_s": round(_cpu() - cpu, 2)}
    row["peak_mib"] = round(_peak_mib())
    out.append(row)
    print(json.dumps(row), flush=True)


def committed_parts(source: Warehouse, release: str) -> tuple[dict[str, list[TableRef]], dict]:
    row = source.ledger_row(release)
    sums, counts = json.loads(row["checksums"]), json.loads(row["counts"])
    parts = {
        name: [TableRef(name, str(source.committed_file(name, release, sha)), counts[name], sha)]
        for name, sha in sums.items()
        if name not in DERIVED
    }
    return parts, sums


def steps(source: Warehouse, release: str, out_root: Path, stage: bool = True) -> list[dict]:
    from kitab.core.ledger import WrittenTable
    from kitab.core.release_commit import staged_views, staging, write_staged
    from kitab.core.views import data_test_results
    from kitab.release.validity.battery import battery

    parts, _ = committed_parts(source, release)
    target = Warehouse(out_root)
    staged = staging(target, release)
    rows: list[dict] = []
    written = {}
    for name in sorted(parts, key=lambda n: -parts[n][0].rows):
        if not stage:  # the views over the committed files themselves
            ref = parts[name][0]
            written[name] = WrittenTable(name, Path(ref.path), ref.rows, ref.sha256)
            continue
        with timed(f"stage {name} ({parts[name][0].rows:,} rows)", rows):
            written.update(write_staged(staged, release, {name: parts[name]}))
    derive = battery(lambda: iter(()))
    early_written = {n: w for n, w in written.items() if n != "claims"}
    with timed("battery early (query baselines)", rows), staged_views(target, early_written) as con:
        early = derive.early(con)
    with timed("battery late (claim baselines)", rows), staged_views(target, written) as con:
        derived = derive.late(con, early)
    with timed("stage baselines", rows):
        written.update(write_staged(staged, release, derived))
    with staged_views(target, written) as con:
        import kitab.core.views as views

        for path in sorted((views.SQL_DIR / "tests").glob("*.sql")):
            original = views.SQL_DIR
            with timed(f"data test {path.stem}", rows):
                # one test at a time: data_test_results over a folder holding that test only
                tmp = out_root / "one-test"
                shutil.rmtree(tmp, ignore_errors=True)
                (tmp / "tests").mkdir(parents=True)
                shutil.copy(path, tmp / "tests" / path.name)
                shutil.copytree(original / "checks", tmp / "checks")
                views.SQL_DIR = tmp
                try:
                    data_test_results(con)
                finally:
                    views.SQL_DIR = original
    return rows


def commit(source: Warehouse, release: str, out_root: Path) -> dict:
    from kitab.core.release_commit import commit_release
    from kitab.release.validity.battery import battery

    parts, sums = committed_parts(source, release)
    claims = parts.pop("claims")
    parts["claims"] = lambda: claims
    run = {"seed": 0, "source": "bench", "snapshot_id": None, "n_authors_requested": 0, "requests_made": 0}
    rows: list[dict] = []
    with timed("commit_release", rows):
        result = commit_release(Warehouse(out_root), release, parts, run, derive=battery(lambda: iter(())))
    got = json.loads(result["checksums"])
    differ = sorted(n for n in sums if n != "releases" and got.get(n) != sums[n])
    print(json.dumps({"tables": len(got), "differ": differ}), flush=True)
    return {**rows[0], "differ": differ}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--release", required=True)
    ap.add_argument("--out", required=True, help="a fresh folder (removed first)")
    ap.add_argument("--steps", action="store_true")
    ap.add_argument("--commit", action="store_true")
    ap.add_argument("--no-stage", action="store_true", help="--steps over the committed files (no staging)")
    args = ap.parse_args()
    source, out = Warehouse(Path(args.warehouse)), Path(args.out)
    if args.steps:
        shutil.rmtree(out, ignore_errors=True)
        steps(source, args.release, out, stage=not args.no_stage)
    if args.commit:
        shutil.rmtree(out, ignore_errors=True)
        commit(source, args.release, out)
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
