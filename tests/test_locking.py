"""kitab.core.locking: one refresh per warehouse, a busy warehouse refused at once, a dead holder's
lock taken over; and (one Prefect flow) the same through the real CLI, with Prefect's
temporary server gone once the refresh holding the lock is killed."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kitab.core.locking import LockHolder, WarehouseBusy, lock_path, refresh_lock, refuse_if_busy
from tests.test_cli_errors import assert_user_error, kitab_cmd

HOLD = """
import sys, time
from pathlib import Path
from kitab.core.locking import refresh_lock
with refresh_lock(Path(sys.argv[1]), "theirs"):
    print("locked", flush=True)
    time.sleep(600)
"""


def hold_in_child(root: Path) -> subprocess.Popen:
    """Another process holding the refresh lock of ``root`` (until killed)."""
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(root)], stdout=subprocess.PIPE)
    assert child.stdout.readline() == b"locked\n"
    return child


def test_a_held_lock_is_refused_naming_the_holder_and_a_killed_holders_lock_is_taken_over(tmp_path, caplog):
    root = tmp_path / "wh"
    child = hold_in_child(root)
    try:
        for attempt in (lambda: refuse_if_busy(root), lambda: refresh_lock(root, "mine").__enter__()):
            with pytest.raises(WarehouseBusy) as refused:
                attempt()
            message = str(refused.value)
            assert f"pid {child.pid} on {socket.gethostname()}" in message and "'theirs'" in message
            assert "\n" not in message
    finally:
        child.kill()  # SIGKILL: no cleanup of its own; the kernel drops its flock
        child.wait()
    assert LockHolder.parse(lock_path(root).read_text()).pid == child.pid  # the dead holder's description stays
    refuse_if_busy(root)  # free now
    with caplog.at_level(logging.WARNING, logger="kitab.core.locking"):
        with refresh_lock(root, "mine") as holder:
            assert holder.pid == os.getpid() and holder.release == "mine"
            assert LockHolder.parse(lock_path(root).read_text()) == holder
    assert f"pid {child.pid}" in caplog.text and "no longer running" in caplog.text
    assert lock_path(root).read_text() == ""  # released: nobody described


def test_reentrant_in_one_process(tmp_path):
    """run_refresh takes the lock, run_pipeline takes it again: the inner exit keeps it."""
    root = tmp_path / "wh"
    probe = [
        sys.executable,
        "-c",
        "import sys; from kitab.core.locking import refuse_if_busy; refuse_if_busy(sys.argv[1])",
        str(root),
    ]
    with refresh_lock(root, "mine") as outer:
        with refresh_lock(root, "mine") as inner:
            assert inner == outer
        busy = subprocess.run(probe, capture_output=True, text=True)
        assert busy.returncode != 0 and "WarehouseBusy" in busy.stderr
    assert subprocess.run(probe).returncode == 0
    child = hold_in_child(root)  # and another process takes it at once
    child.kill()
    child.wait()


def _prefect_server(pid: int):
    import psutil

    for proc in psutil.Process(pid).children(recursive=True):
        try:
            if "uvicorn" in proc.cmdline():
                return proc
        except psutil.NoSuchProcess:
            pass
    return None


@pytest.mark.flow
def test_second_refresh_refused_at_once_and_a_killed_refresh_leaves_no_server(tmp_path, caplog):
    """The real CLI: a refresh on the bundled snapshot holds the lock; a second refresh on the
    same warehouse is refused in under 5 s with one line naming it; kill -9 of the first takes
    its temporary Prefect server (uvicorn) with it, and its lock is taken over."""
    from kitab.app.prefect_guard import running
    from kitab.core.warehouse import Warehouse

    root = tmp_path / "wh"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-child")}
    env.pop("PREFECT_API_URL", None)  # the child starts its own temporary server, as a user's would
    first = subprocess.Popen(
        [*kitab_cmd(), "refresh", "--authors", "40", "--seed", "3", "--release", "first", "--warehouse", str(root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = None
    try:
        deadline = time.monotonic() + 240
        while server is None or not lock_path(root).exists() or not lock_path(root).read_text():
            assert first.poll() is None, "the first refresh ended before the test could use it"
            assert time.monotonic() < deadline, "no Prefect server after 240 s"
            server = server or _prefect_server(first.pid)
            time.sleep(0.2)

        started = time.monotonic()
        second = subprocess.run(
            [*kitab_cmd(), "refresh", "--release", "second", "--warehouse", str(root)],
            env=env,
            capture_output=True,
            timeout=120,
        )
        took = time.monotonic() - started
        assert_user_error(second, "is busy", f"pid {first.pid}", "'first'")
        # refused before doing anything (event order, not a clock a busy machine can miss): no
        # work folder of its release, the first still running; the bound only guards a hang
        assert not (root / ".work" / "second").exists() and first.poll() is None
        assert took < 60, f"refused after {took:.1f} s"

        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        deadline = time.monotonic() + 15
        while running(server.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not running(server.pid), "Prefect's temporary server outlived the killed refresh"

        with caplog.at_level(logging.WARNING, logger="kitab.core.locking"):
            with refresh_lock(root, "third") as holder:
                assert holder.pid == os.getpid()
        assert f"pid {first.pid}" in caplog.text  # the killed refresh's lock, taken over
        assert Warehouse(root).committed_releases() == []
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
        if server is not None and running(server.pid):
            server.kill()
