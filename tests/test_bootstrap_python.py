"""The interpreter `make` builds .venv on (the Makefile's PYTHON_CANDIDATES): the first candidate
that exists, is 3.11 and can make a venv, else python3; PYTHON= overrides it; the stamp names it,
so a venv built on another interpreter is rebuilt, not reused."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REAL = os.path.realpath(sys.executable)  # this suite's interpreter: 3.11 with venv and ensurepip

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def make(*args: str) -> str:
    done = subprocess.run(
        ["make", "-s", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def fake(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def chosen(*args: str) -> str:
    """The interpreter `make venv` would build .venv on (its plan's `-m venv` command)."""
    plan = make("-B", "-n", "venv", *args).splitlines()
    return next(line for line in plan if line.startswith("test -x")).split(" || ")[1].split(" -m venv")[0]


def test_the_first_usable_candidate_is_chosen(tmp_path):
    unusable = fake(tmp_path, "python3.11", "exit 1")  # runs, but is not a 3.11 that can make a venv
    first = fake(tmp_path, "first-python", f'exec "{sys.executable}" "$@"')
    second = fake(tmp_path, "second-python", f'exec "{sys.executable}" "$@"')
    candidates = f"{tmp_path / 'missing-python'} {unusable} {first} {second}"
    assert chosen(f"PYTHON_CANDIDATES={candidates}") == str(first)
    assert make("python", f"PYTHON_CANDIDATES={candidates}") == REAL  # the real interpreter behind it


def test_python_overrides_the_candidates(tmp_path):
    mine = fake(tmp_path, "my-python", f'exec "{sys.executable}" "$@"')
    assert chosen(f"PYTHON={mine}", f"PYTHON_CANDIDATES={sys.executable}") == str(mine)


def test_no_usable_candidate_falls_back_to_python3(tmp_path):
    unusable = fake(tmp_path, "python3.11", "exit 1")
    assert chosen(f"PYTHON_CANDIDATES={tmp_path / 'missing'} {unusable}") == "python3"


def test_the_stamp_names_the_interpreter(tmp_path):
    """The stamp is named by the real interpreter behind PYTHON (a wrapper or shim resolves to
    it), and a .venv without that stamp is cleared before it is rebuilt on PYTHON."""
    wrapper = fake(tmp_path, "python3", 'exec "' + sys.executable + '" "$@"')
    plan = make("-B", "-n", "venv", f"PYTHON={wrapper}")
    stamp = ".venv/.installed" + REAL.replace("/", "-")
    assert f"test -f {stamp} -o ! -d .venv || {wrapper} -m venv --clear .venv" in plan
    assert plan.splitlines()[-1] == f"touch {stamp}"
