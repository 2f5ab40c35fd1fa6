"""`kitab snapshot from-dumps` on published-format dumps of >= 1 GB compressed and 4x that.

    .venv/bin/python benchmarks/dumps.py                     # 1 GB and 4 GB, then deletes them
    .venv/bin/python benchmarks/dumps.py --gb 0.2 --keep     # a quick look

The input: one generated world (``--block-authors`` candidate authors, kitab snapshot generate)
written in the published formats with their noise (kitab.simulate.generator.published), then replicated
with shifted ids until the files reach the size: every WikiData item number and Open Library key
of copy k gets the fixed-width prefix ``7kkk`` (``Q990000045`` -> ``Q7003990000045``,
``/works/OL990000012W`` -> ``/works/OL7003990000012W``), except the classes and occupations
(Q5, Q36180, ...), which every copy shares, as in the real dump. So each copy is a valid,
disjoint world, the files stay one JSON array and valid dump lines, and the 4x input holds
exactly 4x the copies of the 1x input. Each copy is its own gzip member (ISA-L, level 3).

For each size: ``zcat FILE > /dev/null`` on every input file (summed), then ``from-dumps`` in a
subprocess with the peak RSS of its process tree (sampled every 0.2 s). Printed: wall, MB/s
(compressed and decompressed input), the ratio zcat time / from-dumps time (>= 1.0: at least as
fast as decompressing alone), peak RSS, and the growth from 1x to 4x. Results: docs/dumps.md.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_WORK = Path("/tmp/kitab-dumps-bench")


def block(work: Path, authors: int, seed: int) -> Path:
    """The generated world in published formats (cached)."""
    from kitab.simulate.generator.generate import generate_snapshot
    from kitab.simulate.generator.published import write_published

    world, published = work / f"world-{seed}-{authors}", work / f"published-{seed}-{authors}"
    if not (world / "MANIFEST.json").exists():
        print(f"generating a world of {authors} candidate authors ...", flush=True)
        generate_snapshot(world, seed, authors)
    if not (published / "latest-all.json.gz").exists():
        print("writing it in the published formats ...", flush=True)
        write_published(world, published, seed=seed)
    return published


def _ontology() -> list[int]:
    from kitab.simulate.generator import curated
    from kitab.simulate.generator.published import RESEARCHER, SCHOLARLY_ARTICLE

    ids = set(curated.LABELS) | set(curated.SUBCLASS_OF) | set(curated.SUBCLASS_OF.values())
    return sorted({int(q[1:]) for q in ids} | {5, RESEARCHER, SCHOLARLY_ARTICLE})


def shifted(text: bytes, k: int, ontology: list[int], wikidata: bool) -> bytes:
    """Copy k of a block: every id prefixed with 7kkk, the shared class ids put back."""
    if k == 0:
        return text
    prefix = b"7%03d" % k
    for key in (b"/authors/OL", b"/works/OL", b"/books/OL", b'"value":"OL'):
        text = text.replace(key, key + prefix)
    if wikidata:
        text = text.replace(b'"id":"Q', b'"id":"Q' + prefix).replace(b'"numeric-id":', b'"numeric-id":' + prefix)
        for number in ontology:
            text = text.replace(b'"numeric-id":%s%d,"id":"Q%s%d"' % (prefix, number, prefix, number),
                                b'"numeric-id":%d,"id":"Q%d"' % (number, number))
    return text


def build_inputs(published: Path, out: Path, copies: int) -> dict[str, Path]:
    """Write ``copies`` shifted copies of the block as the published files (one gzip member per copy)."""
    from isal import igzip

    ontology = _ontology()
    (out / "openlibrary").mkdir(parents=True, exist_ok=True)
    files = {"wikidata": out / "latest-all.json.gz"}
    body = gzip.open(published / "latest-all.json.gz").read()
    assert body.startswith(b"[\n") and body.endswith(b"\n]\n")
    body = body[2:-3]
    with open(files["wikidata"], "wb") as handle:
        handle.write(igzip.compress(b"[\n", 3))
        for k in range(copies):
            part = shifted(body, k, ontology, wikidata=True)
            handle.write(igzip.compress(part + (b",\n" if k < copies - 1 else b"\n]\n"), 3))
    for path in sorted((published / "openlibrary").glob("ol_dump_*.txt.gz")):
        text = gzip.open(path).read()
        files[path.name] = out / "openlibrary" / path.name
        with open(files[path.name], "wb") as handle:
            for k in range(copies):
                handle.write(igzip.compress(shifted(text, k, ontology, wikidata=False), 3))
    return files


def measured(cmd: list[str]) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS of the process tree in GiB, exit code, stderr tail)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        root = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                total = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
                peak = max(peak, total)
            except psutil.Error:
                pass
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    done.set()
    sampler.join()
    return time.monotonic() - started, peak / 2**30, proc.returncode, err[-2000:]


def zcat_seconds(files: list[Path]) -> tuple[float, int]:
    seconds, raw = 0.0, 0
    for path in files:
        started = time.monotonic()
        result = subprocess.run(f"zcat '{path}' | wc -c", shell=True, capture_output=True, text=True, check=True)
        seconds += time.monotonic() - started
        raw += int(result.stdout.strip())
    return seconds, raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0, help="size of the 1x input, compressed GB (>= 1 for the issue)")
    parser.add_argument("--factor", type=int, default=4)
    parser.add_argument("--block-authors", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--keep", action="store_true", help="keep the generated inputs")
    args = parser.parse_args()
    print(f"disk free at {args.work.parent}: {shutil.disk_usage(args.work.parent).free / 1e9:.0f} GB", flush=True)
    args.work.mkdir(parents=True, exist_ok=True)
    published = block(args.work, args.block_authors, args.seed)
    block_bytes = sum(p.stat().st_size for p in published.rglob("*.gz") if "nt.gz" not in p.name)
    copies = max(1, round(args.gb * 1e9 / block_bytes))
    rows = []
    for factor in (1, args.factor):
        out = args.work / f"x{factor}"
        shutil.rmtree(out, ignore_errors=True)
        started = time.monotonic()
        files = build_inputs(published, out, copies * factor)
        size = sum(p.stat().st_size for p in files.values())
        print(f"{factor}x: {copies * factor} copies, {size / 1e9:.2f} GB compressed "
              f"(built in {time.monotonic() - started:.0f} s)", flush=True)
        zcat, raw = zcat_seconds(list(files.values()))
        print(f"  zcat: {zcat:.0f} s for {raw / 1e9:.1f} GB", flush=True)
        snapshot = out / "snapshot"
        wall, rss, code, err = measured([sys.executable, "-m", "kitab.app.cli", "snapshot", "from-dumps",
                                         "--wikidata", str(files["wikidata"]), "--openlibrary",
                                         str(out / "openlibrary"), "--out", str(snapshot),
                                         "--workers", str(args.workers), "--memory-limit", args.memory_limit])
        if code != 0:
            print(err, file=sys.stderr)
            raise SystemExit(f"from-dumps failed on the {factor}x input")
        manifest = json.loads((snapshot / "MANIFEST.json").read_text())
        row = {"factor": factor, "copies": copies * factor, "compressed_gb": size / 1e9, "raw_gb": raw / 1e9,
               "wall_s": wall, "zcat_s": zcat, "mb_s_compressed": size / wall / 1e6, "mb_s_raw": raw / wall / 1e6,
               "ratio_to_zcat": zcat / wall, "peak_rss_gib": rss,
               "eligible_authors": manifest["kept"]["wikidata"]["eligible_authors"],
               "ol_kept": manifest["kept"]["openlibrary"]}
        rows.append(row)
        print("  " + json.dumps(row), flush=True)
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
    small, large = rows
    print()
    print("| input | compressed | decompressed | wall | MB/s (gz) | MB/s (raw) | zcat | ratio to zcat | peak RSS | eligible authors |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['factor']}x ({row['copies']} copies) | {row['compressed_gb']:.2f} GB | {row['raw_gb']:.1f} GB | "
              f"{row['wall_s']:.0f} s | {row['mb_s_compressed']:.0f} | {row['mb_s_raw']:.0f} | {row['zcat_s']:.0f} s | "
              f"{row['ratio_to_zcat']:.2f}x | {row['peak_rss_gib']:.2f} GiB | {row['eligible_authors']:,} |")
    print(f"\ngrowth: {args.factor}x input -> {large['wall_s'] / small['wall_s']:.2f}x time "
          f"(target <= {args.factor * 1.1:.1f}x); peak RSS {small['peak_rss_gib']:.2f} -> {large['peak_rss_gib']:.2f} GiB")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
