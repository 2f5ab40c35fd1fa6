"""A Prefect server of its own for a serve test or probe (tests/test_serve.py,
benchmarks/round4/serve.py): started in a new session, returned once its health check answers."""

from __future__ import annotations

import subprocess
import sys
import time

import requests


def start_prefect_server(port: int, env: dict[str, str], wait: float = 120) -> subprocess.Popen:
    """``env`` must set PREFECT_HOME (each server its own database)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false", **env},
        start_new_session=True,
    )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                return server
        except requests.RequestException:
            pass
        time.sleep(0.5)
    server.kill()
    raise RuntimeError(f"prefect server did not start in {wait:.0f} s")
