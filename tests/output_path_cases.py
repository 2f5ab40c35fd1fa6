"""The output-path matrix of issue 39 (kitab/core/outputs.py), shared by tests/test_output_paths.py
and benchmarks/round4/paths.py: every command that writes a path, every forbidden target, and the
digest that tells whether anything changed."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

TARGETS = [
    "the ledger's Parquet",
    "a committed table file",
    "the warehouse folder",
    "its tables folder",
    "another warehouse's folder",
    "another warehouse's table file",
    "an input of the run",
    "a user's non-empty folder",
]


def tree_digest(folder: Path, skip: tuple[str, ...] = (".readers", ".readers.turnstile")) -> str:
    """Every path under ``folder`` with its bytes (the readers' lock files aside: reads open them)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.name in skip:
            continue
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        if path.is_file() and not path.is_symlink():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def user_folder(path: Path) -> Path:
    (path / "sub").mkdir(parents=True, exist_ok=True)
    (path / "thesis.txt").write_text("years of work\n")
    (path / "sub" / "notes.txt").write_text("more\n")
    return path


def commands(release: str, wh: Path, scratch: Path, chat_url: str) -> dict[str, tuple[list, Path | None]]:
    """command -> (its arguments, ``{T}`` the target; the input of its run besides the warehouse, or None)."""
    of = ["--release", release, "--warehouse", wh]
    snapshot, cache = scratch / "snapshot", scratch / "cache.sqlite"
    return {
        "export": (["export", *of, "--out", "{T}"], None),
        "export --overwrite": (["export", *of, "--out", "{T}", "--overwrite"], None),
        "report --out": (["report", *of, "--out", "{T}"], None),
        "report --html": (["report", *of, "--html", "{T}", "--snapshot", snapshot], snapshot / "MANIFEST.json"),
        "answer": (
            [
                "answer",
                *of,
                "--model",
                "m",
                "--base-url",
                chat_url,
                "--out",
                "{T}",
                "--limit",
                "2",
                "--quiet",
                "--cache",
                cache,
            ],
            cache,
        ),  # fmt: skip
        "review export": (["review", "export", *of, "--out", "{T}"], None),
        "snapshot generate": (["snapshot", "generate", "--authors", "30", "--seed", "1", "--out", "{T}"], None),
        "site build": (["site", "build", "--warehouse", wh, "--out", "{T}"], None),
    }


def case_folders(released: Path, folder: Path) -> tuple[Path, Path, Path]:
    """Private copies for one case: the warehouse, another warehouse, and a scratch folder with a
    user's folder, a snapshot (report --html's input) and an empty answer cache (a new one)."""
    from kitab.core.env import BUNDLED_SNAPSHOT

    ignore = shutil.ignore_patterns(".prefect", ".work", ".cache")
    wh = shutil.copytree(released, folder / "wh", ignore=ignore)
    other = shutil.copytree(released, folder / "other", ignore=ignore)
    scratch = folder / "scratch"
    user_folder(scratch / "thesis")
    shutil.copytree(BUNDLED_SNAPSHOT, scratch / "snapshot")
    (scratch / "cache.sqlite").write_bytes(b"")
    return wh, other, scratch


def target_of(label: str, release: str, wh: Path, other: Path, scratch: Path, source: Path | None) -> Path | None:
    """The path ``label`` names for one case (None: the command has no such target)."""
    from kitab.core.ledger import LEDGER_FILE
    from kitab.core.warehouse import Warehouse

    return {
        "the ledger's Parquet": Warehouse(wh).partition("releases", release) / LEDGER_FILE,
        "a committed table file": Warehouse(wh).committed_files(release)["books"],
        "the warehouse folder": wh,
        "its tables folder": Warehouse(wh).tables_dir,
        "another warehouse's folder": other,
        "another warehouse's table file": Warehouse(other).committed_files(release)["authors"],
        "an input of the run": source,
        "a user's non-empty folder": scratch / "thesis",
    }[label]
