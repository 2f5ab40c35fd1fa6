"""The stack's processes: free ports, one JSON call to Prefect's REST API, and a service
tracked by a pid file whose whole process tree can be stopped (kitab/app/stack.py runs them)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psutil

from kitab.core.env import PROJECT_ROOT
from kitab.core.policy import parse_retry_after


class StackError(RuntimeError):
    """A process of the stack did not start, stopped early, or a run did not finish."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def api(
    url: str,
    path: str,
    body: dict | list | None = None,
    *,
    method: str | None = None,
    timeout: float = 30,
    retries: int = 5,
) -> dict | list | None:
    """One JSON request to the Prefect REST API (POST when there is a body). 429, 502 and 503
    are retried as Prefect's own client does (the server answers 503 for errors a client may
    retry, e.g. a busy SQLite database): after Retry-After, else 1, 2, 4, … s."""
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(retries + 1):
        request = urllib.request.Request(
            url + path, data=data, method=method, headers={"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:2000]
            if exc.code not in (429, 502, 503) or attempt == retries:
                raise StackError(
                    f"{method or ('POST' if body is not None else 'GET')} {path}: HTTP {exc.code}: {detail}"
                ) from None
            retry_after = parse_retry_after(exc.headers)
            time.sleep(2**attempt if retry_after is None else retry_after)
    raise AssertionError("unreachable")


@dataclass
class Service:
    """One long-running process, tracked by a pid file so another invocation can stop it."""

    name: str
    argv: list[str]
    env: dict[str, str]
    state: Path

    @property
    def log(self) -> Path:
        return self.state / f"{self.name}.log"

    @property
    def pidfile(self) -> Path:
        return self.state / f"{self.name}.pid"

    def start(self) -> None:
        if self.process() is not None:
            raise StackError(f"{self.name} is already running (pid file {self.pidfile}); stop it first")
        self.state.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            proc = subprocess.Popen(
                self.argv,
                env=self.env,
                cwd=PROJECT_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        record = {"pid": proc.pid, "started": psutil.Process(proc.pid).create_time(), "argv": self.argv}
        tmp = self.pidfile.with_suffix(".pid.tmp")
        tmp.write_text(json.dumps(record))
        tmp.replace(self.pidfile)

    def process(self) -> psutil.Process | None:
        """The running process of the pid file; None if it is gone or the pid was reused."""
        try:
            record = json.loads(self.pidfile.read_text())
            proc = psutil.Process(record["pid"])
            if abs(proc.create_time() - record["started"]) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE:
                return proc
        except (FileNotFoundError, json.JSONDecodeError, psutil.NoSuchProcess):
            pass
        return None

    def stop(self, grace: float = 15.0) -> list[int]:
        """SIGTERM to the process, its session and its descendants; SIGKILL after ``grace``
        seconds. Returns the pids still alive after that (empty: all gone)."""
        proc = self.process()
        alive = [] if proc is None else stop_tree(proc, grace)
        self.pidfile.unlink(missing_ok=True)
        return alive

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""


def stop_tree(proc: psutil.Process, grace: float = 15.0) -> list[int]:
    """SIGTERM to ``proc``, its session and its descendants; SIGKILL after ``grace`` seconds to
    what is left and to what they started meanwhile. Returns the pids still alive after that."""
    procs = _tree(proc)
    for p in procs:
        _signal(p, signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=grace)
    # descendants started during shutdown, and whatever ignored SIGTERM
    alive = _tree_of(alive + [p for p in _tree(proc) if p not in procs])
    for p in alive:
        _signal(p, signal.SIGKILL)
    _, alive = psutil.wait_procs(alive, timeout=5)
    return [p.pid for p in alive]


def _tree(proc: psutil.Process) -> list[psutil.Process]:
    """The process, its descendants, and the rest of its session (started with start_new_session)."""
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    try:
        session = os.getsid(proc.pid)
        procs += [p for p in psutil.process_iter() if p not in procs and _sid(p) == session]
    except ProcessLookupError:
        pass
    return procs


def _tree_of(procs: list[psutil.Process]) -> list[psutil.Process]:
    out: list[psutil.Process] = []
    for p in procs:
        for q in _tree(p):
            if q not in out:
                out.append(q)
    return out


def _sid(p: psutil.Process) -> int | None:
    try:
        return os.getsid(p.pid)
    except (ProcessLookupError, PermissionError):
        return None


def _signal(p: psutil.Process, sig: int) -> None:
    try:
        p.send_signal(sig)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        pass
