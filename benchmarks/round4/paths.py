"""Issue 39 item 1, the output-path rule (kitab/core/outputs.py), through the real ``kitab``
command: every command that writes a path, pointed at each forbidden target (the ledger's
Parquet, a committed table file, the warehouse, its tables folder, another warehouse, an input of
the run, a user's non-empty folder without a manifest), is refused in <= 2 lines with exit != 0,
the warehouse's files unchanged (every byte, and ``kitab verify`` the same) and the target
untouched; and from-dumps ``--overwrite`` of a folder whose only claim is the old marker file
keeps the user's files, and a from-dumps run leaves no lock file and no empty ``.parts/``."""

from __future__ import annotations

import shutil
from pathlib import Path

from benchmarks import faults
from tests.output_path_cases import TARGETS, case_folders, commands, target_of, tree_digest, user_folder

SURFACE = "output paths"


def one_case(clean: Path, folder: Path, name: str, label: str, chat_url: str, verified: str) -> dict | None:
    """``name`` pointed at ``label`` on private copies of the release (None: no such target)."""
    wh, other, scratch = case_folders(clean, folder)
    argv, source = commands(faults.RELEASE, wh, scratch, chat_url)[name]
    target = target_of(label, faults.RELEASE, wh, other, scratch, source)
    if target is None:
        return None
    before = {p: tree_digest(p) for p in (wh, other, scratch)}
    r = faults.kitab_cli(*[target if a == "{T}" else a for a in argv], timeout=300)
    kept = all(tree_digest(p) == digest for p, digest in before.items())
    verify = faults.kitab_cli("verify", "--warehouse", wh)
    same = verify["exit"] == 0 and verify["stdout"] == verified
    held = r["exit"] != 0 and r["lines"] <= 2 and not r["traceback"] and kept and same
    return faults.probe(
        f"{name} {label}",
        SURFACE,
        held,
        f"exit {r['exit']}; every file unchanged: {kept}; kitab verify as before: {same}",
        r,
    )


def run_matrix(clean: Path, out: Path) -> list[dict]:
    """Every command x every target, each on its own copies, four at a time."""
    from concurrent.futures import ThreadPoolExecutor

    from kitab.simulate.chat import ChatServer

    base = out / "i39-paths"
    verified = faults.kitab_cli("verify", "--warehouse", clean)["stdout"]
    with ChatServer() as server, ThreadPoolExecutor(4) as pool:
        jobs = [
            pool.submit(one_case, clean, base / f"{n}-{m}", name, label, server.url, verified)
            for n, name in enumerate(commands(faults.RELEASE, base, base, server.url))
            for m, label in enumerate(TARGETS)
        ]
        return [row for job in jobs if (row := job.result()) is not None]


def from_dumps_probes(out: Path) -> list[dict]:
    from kitab.simulate.generator.generate import generate_snapshot
    from kitab.simulate.generator.published import JSON_FILE, write_published

    base = out / "i39-paths-dumps"
    generate_snapshot(base / "world", 5, 30)
    write_published(base / "world", base / "dumps", seed=5)
    dumps = base / "dumps"
    args = ["snapshot", "from-dumps", "--wikidata", dumps / JSON_FILE, "--openlibrary", dumps / "openlibrary"]
    rows = []

    claimed = user_folder(base / "claimed")
    (claimed / ".kitab-from-dumps").write_text("kitab snapshot from-dumps 0000\n")
    before = tree_digest(claimed, skip=())
    r = faults.kitab_cli(*args, "--out", claimed, "--workers", "0", "--overwrite")
    kept = tree_digest(claimed, skip=()) == before
    rows.append(
        faults.probe(
            "from-dumps --overwrite a folder whose only claim is the marker file (+ thesis.txt, sub/)",
            SURFACE,
            r["exit"] != 0 and r["lines"] <= 2 and not r["traceback"] and kept,
            f"exit {r['exit']}; thesis.txt and sub/ kept: {(claimed / 'thesis.txt').exists()}",
            r,
        )
    )
    r = faults.kitab_cli(*args, "--out", dumps / JSON_FILE, "--workers", "0")
    rows.append(
        faults.probe(
            "from-dumps --out the --wikidata file",
            SURFACE,
            faults.spoke(r, 2) and (dumps / JSON_FILE).is_file(),
            f"exit {r['exit']}; the dump still a file: {(dumps / JSON_FILE).is_file()}",
            r,
        )
    )
    target = base / "snap"
    first = faults.kitab_cli(*args, "--out", target, "--workers", "0")
    again = faults.kitab_cli(*args, "--out", target, "--workers", "0", "--overwrite")
    left = sorted(p.name for p in base.iterdir() if p.name.startswith((".snap", "snap.")))
    rows.append(
        faults.probe(
            "from-dumps, then --overwrite its own output: no lock file, no .parts/ left",
            SURFACE,
            first["exit"] == 0 and again["exit"] == 0 and not left,
            f"exit {first['exit']}, {again['exit']}; left beside --out: {left or 'nothing'}",
        )
    )
    broken = base / "broken"
    shutil.copytree(dumps, broken)
    next((broken / "openlibrary").glob("ol_dump_works_*")).write_bytes(b"")
    failed = base / "failed"
    r = faults.kitab_cli(
        "snapshot", "from-dumps", "--wikidata", broken / JSON_FILE, "--openlibrary", broken / "openlibrary",
        "--out", failed, "--workers", "0",
    )  # fmt: skip
    left = sorted(p.name for p in base.iterdir() if p.name.startswith((".failed", "failed")))
    rows.append(
        faults.probe(
            "from-dumps refused (an empty dump file): no lock file, no empty .parts/ left",
            SURFACE,
            r["exit"] != 0 and r["lines"] <= 2 and not left,
            f"exit {r['exit']}; left beside --out: {left or 'nothing'}",
            r,
        )
    )
    return rows


def probes(clean: Path, out: Path) -> list[dict]:
    return run_matrix(clean, out) + from_dumps_probes(out)
