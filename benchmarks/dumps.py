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
exactly 4x the copies of the 1x input. Each copy is its own gzip member (ISA-L, level 1).

For each size: ``zcat FILE > /dev/null`` on every input file (summed), then ``from-dumps`` in a
subprocess with the peak RSS of its process tree (sampled every 0.2 s). Printed: wall, MB/s
(compressed and decompressed input), the ratio zcat time / from-dumps time (>= 1.0: at least as
fast as decompressing alone), peak RSS, and the growth from 1x to 4x. Results: docs/dumps.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this folder holds a requests.py: keep it off the path, or it shadows the requests package
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
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


def shifted(text: bytes, k: int, restore: re.Pattern, wikidata: bool) -> bytes:
    """Copy k of a block: every id prefixed with 7kkk, the shared class ids put back."""
    if k == 0:
        return text
    prefix = b"7%03d" % k
    for key in (b"/authors/OL", b"/works/OL", b"/books/OL", b'"value":"OL'):
        text = text.replace(key, key + prefix)
    if wikidata:
        text = text.replace(b'"id":"Q', b'"id":"Q' + prefix).replace(b'"numeric-id":', b'"numeric-id":' + prefix)
        text = restore.sub(lambda m: b'"numeric-id":%s,"id":"Q%s"' % (m[2], m[2]) if m[1] == prefix else m[0], text)
    return text


_BLOCK: dict = {}


def _member(job: tuple[str, int, bool, bytes]) -> bytes:
    """One gzip member: copy k of a block file, shifted, with its tail (a worker process)."""
    from isal import igzip

    path, k, wikidata, tail = job
    if _BLOCK.get("path") != path:
        text = gzip.open(path).read()
        if wikidata:
            text = text[2:-3]  # without "[\n" and "\n]\n"
        ontology = b"|".join(b"%d" % n for n in _ontology())
        _BLOCK.update(
            path=path, text=text, restore=re.compile(rb'"numeric-id":(7\d{3})(' + ontology + rb'),"id":"Q\1\2"')
        )
    return igzip.compress(shifted(_BLOCK["text"], k, _BLOCK["restore"], wikidata) + tail, 1)


def build_inputs(published: Path, outs: dict[int, Path]) -> dict[int, dict[str, Path]]:
    """For each ``copies -> folder``: that many shifted copies of the block as the published files,
    one gzip member per copy (ISA-L level 1, made on every core). The smaller inputs are the first
    copies of the largest, so the same members are written to both."""
    import multiprocessing

    from isal import igzip

    most = max(outs)
    files: dict[int, dict[str, Path]] = {}
    for copies, out in outs.items():
        (out / "openlibrary").mkdir(parents=True, exist_ok=True)
        files[copies] = {"wikidata": out / "latest-all.json.gz"}
    sources = [("wikidata", published / "latest-all.json.gz", True)]
    sources += [(p.name, p, False) for p in sorted((published / "openlibrary").glob("ol_dump_*.txt.gz"))]
    with multiprocessing.get_context("fork").Pool(os.cpu_count() or 2) as pool:
        for name, path, wikidata in sources:
            handles = {}
            for copies, paths in files.items():
                paths.setdefault(name, outs[copies] / "openlibrary" / name)
                handles[copies] = open(paths[name], "wb")
                if wikidata:
                    handles[copies].write(igzip.compress(b"[\n", 1))
            jobs = [(str(path), k, wikidata, b",\n" if wikidata else b"") for k in range(most)]
            for k, member in enumerate(pool.imap(_member, jobs)):
                for copies, handle in handles.items():
                    if k < copies - 1 or (k == copies - 1 and not wikidata):
                        handle.write(member)
                    elif k == copies - 1:  # the last copy of this input: the array's end instead of a comma
                        handle.write(igzip.compress(gzip.decompress(member)[:-2] + b"\n]\n", 1))
            for handle in handles.values():
                handle.close()
    return files


def measured(cmd: list[str]) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS of the process tree in GiB, exit code, stdout and stderr)."""
    from benchmarks.process_tree import run_measured

    # wide lines: the progress lines are parsed, and rich wraps at 80 columns without a terminal
    result = run_measured(cmd, cwd=ROOT, env={**os.environ, "COLUMNS": "250"})
    return result.wall, result.peak_gib, result.returncode, result.out + result.err


def zcat_seconds(files: list[Path]) -> float:
    """``zcat FILE > /dev/null``, summed over the files."""
    seconds = 0.0
    for path in files:
        started = time.monotonic()
        with open(os.devnull, "wb") as null:
            subprocess.run(["zcat", str(path)], stdout=null, check=True)
        seconds += time.monotonic() - started
    return seconds


def raw_bytes(published: Path) -> dict[str, int]:
    """Decompressed bytes of one copy of the block, per file (the inputs are that times the
    copies, give or take a few)."""
    sizes = {}
    for path in [published / "latest-all.json.gz", *sorted((published / "openlibrary").glob("ol_dump_*.txt.gz"))]:
        total = 0
        with gzip.open(path) as handle:
            while block := handle.read(1 << 24):
                total += len(block)
        sizes[path.name] = total
    return sizes


DONE_LINE = re.compile(r"^\s*\S+ (\S+): [\d.]+/[\d.]+ GB, \d+ MB/s, done in ([\d.]+) s", re.MULTILINE)
# the real sizes the extrapolation uses (../shared/reference/dump-formats.md): WikiData by its
# compressed size (the generated JSON compresses like the real one, ~10x); Open Library by its
# decompressed size, since the generated OL files compress 10-17x and the real ones ~4x
REAL_WIKIDATA_GZ = 130e9
REAL_OPENLIBRARY_RAW = {"authors": 3e9, "works": 15e9, "editions": 45e9}


def per_file(stderr: str) -> dict[str, float]:
    """Seconds per input file, from from-dumps' final progress lines."""
    return {name: float(seconds) for name, seconds in DONE_LINE.findall(stderr)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--gb", type=float, default=1.0, help="size of the 1x input, compressed GB (>= 1 for the issue)"
    )
    parser.add_argument("--factor", type=int, default=4)
    parser.add_argument("--block-authors", type=int, default=500)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--keep", action="store_true", help="keep the generated inputs")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="reuse inputs kept by an earlier --keep run of the same sizes (and keep them)",
    )
    args = parser.parse_args()
    print(f"disk free at {args.work.parent}: {shutil.disk_usage(args.work.parent).free / 1e9:.0f} GB", flush=True)
    args.work.mkdir(parents=True, exist_ok=True)
    published = block(args.work, args.block_authors, args.seed)
    block_bytes = sum(p.stat().st_size for p in published.rglob("*.gz") if "nt.gz" not in p.name)
    copies = max(1, math.ceil(args.gb * 1e9 / block_bytes))
    per_copy_raw = raw_bytes(published)
    outs = {copies * factor: args.work / f"x{factor}" for factor in (1, args.factor)}
    marker = args.work / "INPUTS.json"
    wanted = {"copies": sorted(outs), "block": published.name}
    if args.reuse and marker.is_file() and json.loads(marker.read_text()) == wanted:
        args.keep = True
        all_files = {
            n: {
                "wikidata": out / "latest-all.json.gz",
                **{p.name: p for p in sorted((out / "openlibrary").glob("ol_dump_*.txt.gz"))},
            }
            for n, out in outs.items()
        }
        print("reusing the inputs of an earlier run", flush=True)
    else:
        marker.unlink(missing_ok=True)
        for out in outs.values():
            shutil.rmtree(out, ignore_errors=True)
        started = time.monotonic()
        all_files = build_inputs(published, outs)
        marker.write_text(json.dumps(wanted))
        print(f"inputs built in {time.monotonic() - started:.0f} s", flush=True)
        args.keep = args.keep or args.reuse
    rows = []
    for factor in (1, args.factor):
        n = copies * factor
        out, files = outs[n], all_files[n]
        size = sum(p.stat().st_size for p in files.values())
        files_by_name = {p.name: p for p in files.values()}
        raw = sum(per_copy_raw.values()) * n
        print(f"{factor}x: {n} copies, {size / 1e9:.2f} GB compressed, ~{raw / 1e9:.1f} GB decompressed", flush=True)
        load_before = os.getloadavg()[0]
        zcat = zcat_seconds(list(files.values()))
        print(f"  zcat FILE > /dev/null: {zcat:.0f} s", flush=True)
        snapshot = out / "snapshot"
        shutil.rmtree(snapshot, ignore_errors=True)
        shutil.rmtree(out / "snapshot.parts", ignore_errors=True)
        wall, rss, code, err = measured(
            [
                sys.executable,
                "-m",
                "kitab.app.cli",
                "snapshot",
                "from-dumps",
                "--wikidata",
                str(files["wikidata"]),
                "--openlibrary",
                str(out / "openlibrary"),
                "--out",
                str(snapshot),
                "--workers",
                str(args.workers),
                "--memory-limit",
                args.memory_limit,
            ]
        )
        if code != 0:
            print(err, file=sys.stderr)
            raise SystemExit(f"from-dumps failed on the {factor}x input")
        manifest = json.loads((snapshot / "MANIFEST.json").read_text())
        row = {
            "factor": factor,
            "copies": n,
            "compressed_gb": size / 1e9,
            "raw_gb": raw / 1e9,
            "wall_s": wall,
            "zcat_s": zcat,
            "mb_s_compressed": size / wall / 1e6,
            "mb_s_raw": raw / wall / 1e6,
            "ratio_to_zcat": zcat / wall,
            "peak_rss_gib": rss,
            "eligible_authors": manifest["kept"]["wikidata"]["eligible_authors"],
            "ol_kept": manifest["kept"]["openlibrary"],
            "output_tail": err[-1500:],
            "files": {
                name: {
                    "seconds": seconds,
                    "compressed_mb": files_by_name[name].stat().st_size / 1e6,
                    "raw_mb": per_copy_raw[name] * n / 1e6,
                }
                for name, seconds in per_file(err).items()
            },
            "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        }
        rows.append(row)
        print("  " + json.dumps(row), flush=True)
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
    small, large = rows
    print()
    print(
        "| input | compressed | decompressed | wall | MB/s (gz) | MB/s (raw) | zcat | ratio to zcat | peak RSS | eligible authors |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['factor']}x ({row['copies']} copies) | {row['compressed_gb']:.2f} GB | {row['raw_gb']:.1f} GB | "
            f"{row['wall_s']:.0f} s | {row['mb_s_compressed']:.0f} | {row['mb_s_raw']:.0f} | {row['zcat_s']:.0f} s | "
            f"{row['ratio_to_zcat']:.2f}x | {row['peak_rss_gib']:.2f} GiB | {row['eligible_authors']:,} |"
        )
    print(
        "(load average of the machine, 1 min, before/after each run: "
        + "; ".join(f"{r['factor']}x {r['load_average'][0]}/{r['load_average'][1]}" for r in rows)
        + " on "
        + f"{os.cpu_count()} cores)"
    )
    print(
        f"\ngrowth: {args.factor}x input -> {large['wall_s'] / small['wall_s']:.2f}x time "
        f"(target <= {args.factor * 1.1:.1f}x); peak RSS {small['peak_rss_gib']:.2f} -> {large['peak_rss_gib']:.2f} GiB"
    )
    print()
    print("| input | file | compressed | decompressed | seconds | MB/s (gz) | MB/s (raw) |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        for name, f in row["files"].items():
            print(
                f"| {row['factor']}x | {name} | {f['compressed_mb']:,.0f} MB | {f['raw_mb']:,.0f} MB | {f['seconds']:.1f} | "
                f"{f['compressed_mb'] / max(f['seconds'], 0.05):.0f} | {f['raw_mb'] / max(f['seconds'], 0.05):.0f} |"
            )
    wd = [f for name, f in large["files"].items() if name.startswith("latest-all")][0]
    wd_hours = REAL_WIKIDATA_GZ / 1e6 / (wd["compressed_mb"] / wd["seconds"]) / 3600
    ol_minutes = 0.0
    for kind, real_raw in REAL_OPENLIBRARY_RAW.items():
        f = [f for name, f in large["files"].items() if f"_{kind}_" in name][0]
        ol_minutes += real_raw / 1e6 / (f["raw_mb"] / max(f["seconds"], 0.05)) / 60
    print(
        f"\nextrapolated from the {args.factor}x run: WikiData latest-all.json.gz (~130 GB gz) {wd_hours:.1f} h "
        f"(target <= 4 h); Open Library authors+works+editions (~63 GB raw, ~15 GB gz) {ol_minutes:.0f} min "
        "(target <= 30 min)"
    )
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
