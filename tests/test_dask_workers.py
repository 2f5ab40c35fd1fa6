"""The run's configuration travels with the run (issue 30): a refresh on a Dask scheduler and
two workers started as separate processes (``dask scheduler``, ``dask worker``, on 127.0.0.1),
whose environment selects other taggers (KITAB_TAGGERS=human_v3,city_v3), publishes the same
tables as a local run: every step tags with the run's taggers, not the worker's environment."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from kitab.app.processes import free_port, stop_tree
from kitab.app.runs import run_refresh
from kitab.core.env import BUNDLED_SNAPSHOT, PROJECT_ROOT
from kitab.core.release_commit import PROVENANCE_TABLES
from kitab.core.warehouse import Warehouse

pytestmark = pytest.mark.flow  # runs the Prefect flow (its temporary server): slow, kept in CI


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (a zombie waiting for its reaper does not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            state, _ppid, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
            if int(group) == pgid and state != "Z":
                return True
    return False


def _stop_group(p: subprocess.Popen, grace: float = 10) -> None:
    """Stop a process started in its own session and everything it started: a Dask worker that
    runs a Prefect task without PREFECT_API_URL starts its own temporary Prefect server (uvicorn),
    which stopping the worker alone once left running after the suite (a worker killed outright
    never runs the atexit that stops it). The stack's own tree stop, then the child reaped."""
    with contextlib.suppress(psutil.NoSuchProcess):
        stop_tree(psutil.Process(p.pid), grace)
    p.wait()


def _wait_for_workers(address: str, n: int, timeout: float = 60) -> None:
    from distributed import Client

    with Client(address, timeout=timeout) as client:
        client.wait_for_workers(n, timeout=timeout)


def test_a_refresh_on_separate_dask_workers_uses_the_runs_taggers(tmp_path):
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).with_name("dask"))
    env = {
        **os.environ,
        "KITAB_TAGGERS": "human_v3,city_v3",  # the workers' environment says other taggers
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    procs = [
        subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=PROJECT_ROOT,
            start_new_session=True,  # its own process group: stopped with whatever it starts
        )
    ]
    try:
        time.sleep(1.0)
        for _ in range(2):
            procs.append(
                subprocess.Popen(
                    [dask, "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard"],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    cwd=PROJECT_ROOT,
                    start_new_session=True,
                )
            )
        _wait_for_workers(address, 2)
        kwargs = dict(source="mirror", snapshot=BUNDLED_SNAPSHOT, authors=6, seed=11, release="r")
        run_refresh(warehouse=tmp_path / "local", direct=True, **kwargs)
        remote = run_refresh(warehouse=tmp_path / "dask", task_runner="dask", dask_address=address, **kwargs)
    finally:
        for p in reversed(procs):
            _stop_group(p)
    assert not [p.pid for p in procs if _group_alive(p.pid)]  # nothing they started outlives them

    local = json.loads(Warehouse(tmp_path / "local").ledger_row("r")["checksums"])
    on_dask = json.loads(Warehouse(tmp_path / "dask").ledger_row("r")["checksums"])
    assert {t: s for t, s in on_dask.items() if t not in PROVENANCE_TABLES} == {
        t: s for t, s in local.items() if t not in PROVENANCE_TABLES
    }
    versions = {r["version"] for r in Warehouse(tmp_path / "dask").read_table("title_entities").to_pylist()}
    assert versions <= {"human_v7", "city_v7"} and versions
    config = json.loads(Warehouse(tmp_path / "dask").ledger_row("r")["config"])
    assert config["taggers"] == ["human_v7", "city_v7"] and config["runner"] == f"prefect-dask@{address}"
    assert remote["authors"]["released"] == 6
