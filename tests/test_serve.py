"""``kitab serve`` through the real command (issue 39 item 6): every input is checked before
anything is created, each refusal one line with no warehouse folder left; and a stop signal
ends it in kitab's one line at any moment, also once its Prefect server is gone (it took a
second signal then, and SIGTERM printed three RuntimeWarnings with exit 0)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kitab.app.processes import free_port
from kitab.core.env import PROJECT_ROOT
from tests.prefect_server import start_prefect_server
from tests.test_cli_errors import assert_user_error

# no contact, no Prefect server, no debug: what a new user's shell has
BARE = ("KITAB_CONTACT", "PREFECT_API_URL", "KITAB_DEBUG")


def bare_env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in BARE}, **extra}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--cron", "61 * * * *"], "--cron '61 * * * *'"),
        (["--cron", "every monday"], "expected five fields"),
        (["--source", "live"], "KITAB_CONTACT"),
        (["--source", "dump"], "--source dump needs --snapshot"),
        (["--source", "dump", "--snapshot", "{tmp}/no-snapshot"], "no such snapshot"),
        (["--source", "mirror", "--snapshot", "{tmp}"], "no manifest"),
        ([], "needs a Prefect server"),  # valid inputs, no server: still nothing created
    ],
    ids=[
        "cron-61",
        "cron-words",
        "live-no-contact",
        "dump-no-snapshot",
        "dump-missing",
        "mirror-not-a-snapshot",
        "no-server",
    ],
)
def test_a_refused_serve_is_one_line_and_creates_nothing(tmp_path, args, needle):
    warehouse = tmp_path / "wh"
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = subprocess.run(
        [sys.executable, "-m", "kitab.app.cli", "serve", *args, "--warehouse", str(warehouse)],
        capture_output=True,
        env=bare_env(),
        cwd=PROJECT_ROOT,
        timeout=120,
    )
    err = assert_user_error(result, needle)
    assert len(err.strip().splitlines()) == 1, err
    assert not warehouse.exists()


def _serve_then_signal(tmp_path: Path, api: str, sig: signal.Signals, before=None) -> tuple[float, int, str]:
    """Start ``kitab serve`` against ``api``, wait until it serves, run ``before()``, send ``sig``:
    (seconds until it exited, exit code, what it wrote on stderr after the signal). (Before it,
    a gone server is in Prefect's own log lines, a warning, at times with a traceback.)"""
    err_path = tmp_path / f"serve-{sig.name}.err"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kitab.app.cli", "serve", "--warehouse", str(tmp_path / "wh")],
            stdout=subprocess.PIPE,
            stderr=err,
            env=bare_env(PREFECT_API_URL=api),
            cwd=PROJECT_ROOT,
            text=True,
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and "serving" not in proc.stdout.readline():
                pass
            time.sleep(2)  # the Runner's loop started (it registers the deployment, then polls)
            if before:
                before()
            err.flush()
            said = err_path.stat().st_size
            sent = time.monotonic()
            proc.send_signal(sig)
            proc.wait(timeout=60)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return took, proc.returncode, err_path.read_bytes()[said:].decode()


@pytest.mark.server
def test_serve_stops_on_a_signal_also_once_its_server_is_gone(tmp_path):
    port = free_port()
    server = start_prefect_server(port, bare_env(PREFECT_HOME=str(tmp_path / "prefect")))
    api = f"http://127.0.0.1:{port}/api"
    try:
        took, code, err = _serve_then_signal(tmp_path, api, signal.SIGTERM)
        assert code != 0 and took < 15, (took, code, err)
        assert err.strip().splitlines() == ["kitab: error: stopped by SIGTERM"], err

        def server_gone() -> None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            time.sleep(2)

        took, code, err = _serve_then_signal(tmp_path, api, signal.SIGINT, before=server_gone)
        # the Runner's shutdown cannot reach the server: bounded by serve_runner's 10 s grace
        assert code != 0 and took < 20, (took, code, err)
        assert err.strip().splitlines() == ["kitab: error: interrupted (Ctrl-C)"], err
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_a_stop_signal_during_start_up_is_one_line(tmp_path):
    """SIGTERM while serve still imports and checks (no server needed: it is refused or stopped first)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kitab.app.cli", "serve", "--warehouse", str(tmp_path / "wh")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=bare_env(),
        cwd=PROJECT_ROOT,
    )
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode != 0
    assert len(err.strip().splitlines()) == 1 and err.startswith("kitab: error: "), err
    assert not (tmp_path / "wh").exists()
