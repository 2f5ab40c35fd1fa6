"""Peak memory of ``kitab evaluate`` on a ~229 MB answers file (issue 39, item 8).

It builds an answers file for every query of the release (two samples each, so ~124,000
characters per answer: long synthetic answers in evaluate_parse.py's shapes, naming the
author's titles and made-up ones), then runs the real command on a copy of the warehouse
(``python -m kitab.app.cli evaluate``, sampled with benchmarks/process_tree.py: peak RSS
summed over the process tree) and reports wall seconds, peak RSS and a checksum of the
evaluation rows it stored (every column but ``evaluated_at``, in key order), so two versions
of the code can be compared row for row.

    .venv/bin/kitab demo --warehouse /tmp/wh
    .venv/bin/python benchmarks/evaluate_memory.py --warehouse /tmp/wh --release demo [--mb 229] [--json]
    # another checkout of the code (e.g. before a change), same answers file:
    .venv/bin/python benchmarks/evaluate_memory.py --warehouse /tmp/wh --answers /tmp/a.jsonl --code /tmp/old
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

import argparse  # noqa: E402
import ast  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

from benchmarks.evaluate_parse import SHAPES, response  # noqa: E402
from benchmarks.process_tree import run_measured  # noqa: E402
from kitab.core import jsonl  # noqa: E402
from kitab.core.warehouse import Warehouse  # noqa: E402
from kitab.release.evaluation.answers import MAX_FILE_BYTES, MAX_RESPONSE_CHARS  # noqa: E402

MODEL = "bench-memory"


def write_answers(warehouse: Path, release: str, path: Path, megabytes: float) -> dict:
    """About ``megabytes`` MB of answers: every query, as many samples as it takes with answers
    under MAX_RESPONSE_CHARS, shapes in turn."""
    with Warehouse(warehouse).connect(release=release, warn=False) as con:
        rows = con.execute("SELECT query_id, all_books FROM kitab_book_constraints ORDER BY query_id").fetchall()
    target = min(megabytes * 1e6, MAX_FILE_BYTES - 2**20)
    samples = 1
    while target / (samples * len(rows)) > MAX_RESPONSE_CHARS - 1_000:
        samples += 1
    rng = random.Random(39)
    # UTF-8 bytes per character of the shapes (quotes, dashes), so the file has ~megabytes
    probe = "".join(response(shape, ["A Title"], 20_000, random.Random(0)) for shape in SHAPES)
    ratio = len(jsonl.dumps(probe).encode("utf-8")) / len(probe)
    per = int(target / (samples * len(rows)) / ratio) - 80  # the line's other keys
    written = lines = 0
    with open(path, "w", encoding="utf-8") as out:
        for sample in range(samples):
            for n, (query_id, all_books) in enumerate(rows):
                titles = [t.rsplit(" (", 1)[0] for t in ast.literal_eval(all_books)]
                text = response(SHAPES[(n + sample) % len(SHAPES)], titles, per, rng)
                line = jsonl.dumps({"query_id": query_id, "sample": sample, "response": text}) + "\n"
                out.write(line)
                written += len(line.encode("utf-8"))
                lines += 1
    return {"bytes": written, "answers": lines, "samples": samples, "response_chars": per}


def rows_checksum(warehouse: Path, release: str) -> tuple[str, int]:
    """sha256 over the stored evaluation rows of MODEL (every column but evaluated_at, in key
    order) and how many."""
    digest, n = hashlib.sha256(), 0
    with Warehouse(warehouse).connect(release=release, warn=False) as con:
        cursor = con.execute(
            "SELECT * EXCLUDE (evaluated_at) FROM evaluations WHERE model = ? ORDER BY query_id, sample", [MODEL]
        )
        names = [d[0] for d in cursor.description]
        while batch := cursor.fetchmany(1000):
            for row in batch:
                digest.update(json.dumps(dict(zip(names, row)), default=str, sort_keys=True).encode())
                n += 1
    return digest.hexdigest(), n


def measure(warehouse: Path, release: str, answers: Path, code: Path, scratch: Path) -> dict:
    copy = scratch / "warehouse"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(warehouse, copy, ignore=shutil.ignore_patterns(".prefect", ".work", ".cache"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KITAB_DEBUG")}
    env["PYTHONPATH"] = str(code)  # that checkout's kitab, before the installed one
    cmd = [sys.executable, "-m", "kitab.app.cli", "evaluate", "--release", release, "--answers", str(answers),
           "--model", MODEL, "--output", "json", "--warehouse", str(copy)]  # fmt: skip
    run = run_measured(cmd, cwd=code, env=env, root_name="kitab evaluate")
    if run.returncode != 0:
        raise SystemExit(f"kitab evaluate failed (rc {run.returncode}): {run.err.strip()[-2000:]}")
    checksum, n = rows_checksum(copy, release)
    shutil.rmtree(copy, ignore_errors=True)
    return {"wall_seconds": round(run.wall, 1), "peak_rss_mib": round(run.peak_gib * 1024), "rows": n,
            "rows_sha256": checksum, "load": run.load}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", type=Path, required=True)
    p.add_argument("--release", default="demo")
    p.add_argument("--mb", type=float, default=229.0, help="size of the answers file (default 229 MB)")
    p.add_argument("--answers", type=Path, help="use this answers file (written here first if missing)")
    p.add_argument("--code", type=Path, default=HERE.parent, help="the checkout whose kitab runs (default: this one)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kitab-evaluate-memory-") as tmp:
        answers = args.answers or Path(tmp) / "long.jsonl"
        made = {}
        if not answers.exists():
            made = write_answers(args.warehouse, args.release, answers, args.mb)
        result = {"mb": round(answers.stat().st_size / 1e6, 1), **made}
        result.update(measure(args.warehouse, args.release, answers, args.code.resolve(), Path(tmp)))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"answers file: {result['mb']} MB")
    print(
        f"kitab evaluate: {result['wall_seconds']} s, peak RSS {result['peak_rss_mib']:,} MiB "
        f"(load {result['load']}); {result['rows']:,} rows, sha256 {result['rows_sha256'][:16]}"
    )


if __name__ == "__main__":
    main()
