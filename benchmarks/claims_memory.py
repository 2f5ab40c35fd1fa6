"""Peak memory of the claims step's draw (tasks/steps.py claims_step) on a committed release,
replicated ``--copies`` times to stand for a larger one (issue 41 item 5).

The release's claim material (tasks/claims.py claim_material, as the constrain step writes it
per batch) is written once per copy, every id suffixed (a copy is another batch of other
authors); then, each in a fresh process, the step's read and draw: ``rows`` (every batch's
material read whole as Python dicts, as before) and ``streamed`` (kitab.core.refs.iter_rows,
row group by row group). Printed: the peak RSS (VmHWM) and seconds of each, and whether
the two drew the same claims.

    .venv/bin/python benchmarks/claims_memory.py --warehouse WAREHOUSE --release R --copies 10
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# benchmarks/ holds a requests.py: off the path, the project root on it
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

from kitab.core.refs import TableRef, iter_rows, read_rows, write_rows  # noqa: E402
from kitab.core.warehouse import Warehouse  # noqa: E402
from tasks.claims import claim_material, claims_from_material  # noqa: E402
from tasks.steps import CLAIMS_INPUTS  # noqa: E402

ID_FIELDS = ("qid", "author_qid", "book_id", "constraint_id")


def _copy(rows: list[dict], n: int) -> list[dict]:
    return [{k: (f"{v}-{n}" if k in ID_FIELDS and v else v) for k, v in r.items()} for r in rows]


def write_material(warehouse: Path, release: str, copies: int, out: Path) -> dict[str, list[str]]:
    wh = Warehouse(warehouse)
    tables = {
        name: wh.read_table(name, [release]).to_pylist()
        for name in ("authors", "books", "title_variants", "book_entities", "constraints")
    }
    material = claim_material(
        tables["authors"], tables["books"], tables["title_variants"], tables["book_entities"], tables["constraints"]
    )
    files: dict[str, list[str]] = {name: [] for name in CLAIMS_INPUTS}
    for n in range(copies):
        for name in CLAIMS_INPUTS:
            ref = write_rows(name, _copy(material[name], n), out / f"{name}-{n}.parquet")
            files[name].append(json.dumps(ref.__dict__))
    return files


def peak_rss_mib() -> int:
    """This process's peak RSS (VmHWM: ru_maxrss carries the parent's over exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def draw(mode: str, files: dict[str, list[str]]) -> dict:
    refs = {name: [TableRef(**json.loads(r)) for r in refs] for name, refs in files.items()}
    started = time.perf_counter()
    read = read_rows if mode == "rows" else iter_rows
    attributes, authors, books = (read(refs[name]) for name in CLAIMS_INPUTS)
    rows, stats = claims_from_material(attributes, authors, books, seed=1)
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return {
        "mode": mode,
        "seconds": round(time.perf_counter() - started, 1),
        "peak_rss_mib": peak_rss_mib(),
        "claims": len(rows),
        "sha256": digest,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warehouse", type=Path)
    parser.add_argument("--release")
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(draw(args.child[0], json.loads(Path(args.child[1]).read_text()))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        files = write_material(args.warehouse, args.release, args.copies, Path(tmp))
        listing = Path(tmp) / "files.json"
        listing.write_text(json.dumps(files))
        rows = sum(TableRef(**json.loads(f)).rows for f in files["claim_books"])
        print(f"{args.copies} copies of release {args.release}: {rows:,} claim_books rows")
        for mode in ("rows", "streamed"):
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode, str(listing)], capture_output=True, text=True, check=True
            )
            print(out.stdout.strip())


if __name__ == "__main__":
    main()
