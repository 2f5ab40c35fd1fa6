"""``kitab refresh --runner local`` (issue 30): the same release without Prefect, and no
Prefect server started; a local runner with a Dask option is refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

KITAB = str(Path(sys.executable).with_name("kitab"))


def kitab(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    run_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    run_env.pop("KITAB_DEBUG", None)
    return subprocess.run([KITAB, *args], capture_output=True, text=True, env=run_env, timeout=600)


def test_runner_local_publishes_without_starting_prefect(tmp_path):
    wh = tmp_path / "wh"
    # no PREFECT_HOME or PREFECT_API_URL of the tests': the CLI points Prefect's home at the
    # warehouse's .prefect, where a temporary server would create its database
    done = kitab(
        "refresh",
        "--runner",
        "local",
        "--authors",
        "4",
        "--seed",
        "3",
        "--release",
        "r",
        "--json",
        "--warehouse",
        str(wh),
        env={"PREFECT_HOME": None, "PREFECT_API_URL": None},
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["release"] == "r" and summary["authors"]["requested"] == 4
    assert not any((wh / ".prefect").rglob("*.db")), sorted((wh / ".prefect").rglob("*"))


def test_runner_local_with_dask_is_refused_in_one_line(tmp_path):
    done = kitab("refresh", "--runner", "local", "--task-runner", "dask", "--warehouse", str(tmp_path / "wh"))
    assert done.returncode == 2 and "--runner local runs on this machine" in done.stderr
    bad = kitab("refresh", "--runner", "remote", "--warehouse", str(tmp_path / "wh"))
    assert bad.returncode == 2 and "expected prefect or local" in bad.stderr
