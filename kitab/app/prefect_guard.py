"""Prefect inside a kitab process: its temporary server never outlives the process, and an
error meant for a person (KitabError) is not logged by Prefect as a traceback.

**The temporary server.** Without a configured server, Prefect starts one per process
(``SubprocessASGIServer``: ``python -m uvicorn`` on 127.0.0.1, ~230 MB) and stops it at exit
(``atexit``). A ``kill -9`` skips atexit, and the server ran on forever. :func:`guard_server`
wraps the method that starts it so that each server gets a watchdog: a small process
(``python -m kitab.app.prefect_guard PARENT SERVER``) that polls every half second and, once its
parent is gone (it is re-parented), stops the server (SIGTERM, then SIGKILL after 5 s). The
watchdog exits when the server does, so a normal exit leaves nothing behind either. A watchdog
rather than ``PR_SET_PDEATHSIG``: that signal follows the *thread* that started the child, and
Prefect starts its server from whichever thread first needs the API (a log or event worker).

**User errors.** A KitabError raised inside the flow or a task is logged by Prefect's engines
("Encountered exception during execution", "Task run failed with exception", each with its
traceback, then "Finished in state Failed(...)"); the caller prints the error itself, as one
line. :func:`quiet_user_errors` keeps those records off the terminal (Prefect's console
handler) while a refresh runs; the API still gets them, and every other error is untouched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

POLL_SECONDS = 0.5
STOP_GRACE_SECONDS = 5.0
_WATCHDOGS: list[subprocess.Popen] = []  # kept: a Popen dropped while running warns at exit


def check_prefect_server(api_url: str, timeout: float = 5.0) -> None:
    """A server-only command (``kitab serve``) needs a running Prefect server at ``api_url``
    (PREFECT_API_URL): without one Prefect would start a temporary server that dies with the
    process, and the deployment would be served to nobody. KitabError, in one line, unless
    ``{api_url}/health`` answers."""
    import requests

    from kitab.core.errors import KitabError

    if not api_url.strip():
        raise KitabError(
            "kitab serve needs a Prefect server: start one (`prefect server start`) and set "
            "PREFECT_API_URL, e.g. http://127.0.0.1:4200/api"
        )
    try:
        answer = requests.get(api_url.rstrip("/") + "/health", timeout=timeout)
    except requests.RequestException as exc:
        raise KitabError(
            f"no Prefect server answers at PREFECT_API_URL={api_url} ({type(exc).__name__}); "
            "start one with `prefect server start`"
        ) from None
    if answer.status_code != 200:
        raise KitabError(
            f"PREFECT_API_URL={api_url} is not a Prefect API: GET /health answered HTTP {answer.status_code}"
        )


def guard_server() -> None:
    """Give every temporary Prefect server this process starts a watchdog (idempotent) and, in
    a fresh home, a database already migrated (kitab/app/prefect_db.py). With
    PREFECT_API_URL set no temporary server starts: nothing to guard, and the import of
    Prefect's server code (seconds) is skipped."""
    if os.environ.get("PREFECT_API_URL"):
        return
    from prefect.server.api.server import SubprocessASGIServer

    start = SubprocessASGIServer._run_uvicorn_command
    if getattr(start, "kitab_guarded", False):
        return

    def run_uvicorn_command(self):
        from kitab.app.prefect_db import seed_database

        seed_database()  # a fresh home's database from the migrated template (prefect_db.py)
        server = _with_stderr_to_log(lambda: start(self))
        _WATCHDOGS[:] = [w for w in _WATCHDOGS if w.poll() is None]
        _WATCHDOGS.append(
            subprocess.Popen(
                [sys.executable, "-m", "kitab.app.prefect_guard", str(os.getpid()), str(server.pid)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        return server

    run_uvicorn_command.kitab_guarded = True
    SubprocessASGIServer._run_uvicorn_command = run_uvicorn_command


def _with_stderr_to_log(start):
    """Run ``start()`` (which launches the server) with file descriptor 2 pointing to
    ``$PREFECT_HOME/server.log``, so the server's own stderr goes there: a server that cannot
    start (a full disk, a broken database) printed thousands of lines of uvicorn tracebacks
    on the refresh's terminal; the refresh reports its failure in one line."""
    home = os.environ.get("PREFECT_HOME")
    try:
        log = (
            os.open(os.path.join(home, "server.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
            if home
            else os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        )
    except OSError:
        log = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    saved = os.dup(2)
    sys.stderr.flush()
    try:
        os.dup2(log, 2, inheritable=True)  # the child inherits this fd 2
        return start()
    finally:
        os.dup2(saved, 2, inheritable=True)
        os.close(saved)
        os.close(log)


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not: it holds no memory, only an exit code)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


def stop(pid: int, grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM (uvicorn shuts down cleanly, SQLite closed), then SIGKILL if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if running(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def watch(parent: int, server: int, poll: float = POLL_SECONDS) -> None:
    """Until ``server`` exits: once ``parent`` (this process's parent) is gone, stop ``server``."""
    # Ctrl-C in a terminal reaches the whole process group: the parent then stops its server
    # itself, and the watchdog must stay to stop it if the parent cannot.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while running(server):
        if os.getppid() != parent:  # re-parented: the refresh is gone
            if _is_uvicorn(server):  # (not a process that took the number of a server gone meanwhile)
                stop(server)
            return
        time.sleep(poll)


def _is_uvicorn(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return b"uvicorn" in handle.read().split(b"\0")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: trust the number
        return True


class _UserErrorFilter(logging.Filter):
    """Drops the records Prefect's engines log for a KitabError: the ones carrying it, and the
    "Finished in state Failed" line of a task run that failed with it."""

    def __init__(self) -> None:
        super().__init__()
        self.failed_runs: set[object] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        from kitab.core.errors import KitabError

        run = getattr(record, "task_run_id", None) or getattr(record, "flow_run_id", None)
        from kitab.app.guard import environment_error

        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and (isinstance(exc, KitabError) or environment_error(exc)):
            self.failed_runs.add(run)
            return False
        if "No space left on device" in record.getMessage():  # the caller names the full disk, once
            return False
        from flows.runners import NOT_RETRIED

        if (run in self.failed_runs or run in NOT_RETRIED) and record.getMessage().startswith("Finished in state"):
            return False
        return True


@contextlib.contextmanager
def quiet_user_errors() -> Iterator[None]:
    """While inside: Prefect's console handlers leave out the records of a KitabError."""
    from prefect.logging.handlers import PrefectConsoleHandler

    quiet = _UserErrorFilter()
    handlers = {
        h
        for name in (None, "prefect", "prefect.flow_runs", "prefect.task_runs")
        for h in logging.getLogger(name).handlers
        if isinstance(h, PrefectConsoleHandler)
    }
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)


if __name__ == "__main__":
    watch(int(sys.argv[1]), int(sys.argv[2]))
