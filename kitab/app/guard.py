"""The process around a kitab command: what the machine or the person does to it (a full disk,
Ctrl-C, SIGTERM) ends as one line and a non-zero exit, never a traceback; and ``kitab sql``'s
memory bound.

- :func:`environment_error`: an exception the environment caused (no space left, SIGTERM,
  Ctrl-C), as the one line to print, or None for anything else (a bug keeps its traceback).
- :func:`terminate_as_interrupt`: SIGTERM raises :class:`Terminated` in the main thread, which
  unwinds like Ctrl-C (temp files removed, locks released) instead of dying mid-write; both
  signals are recorded too (:func:`stop_signal`), for code that must not miss one swallowed.
- :func:`check_free_space`: refuse a refresh before Prefect starts when the warehouse's disk
  has less than ``KITAB_MIN_FREE_MB`` (default 200) free.
- kitab.app.memory_bound.limit_memory: RLIMIT_DATA for the whole process. DuckDB's ``memory_limit``
  bounds its buffer pool, not every allocation (``repeat('x', 2e9)`` builds a 2 GB string past a
  100 MB limit); with the process limit such an allocation fails inside DuckDB, which reports
  it as an "Out of Memory Error" (a KitabError like any other failed query). Its line is here
  (:func:`environment_error`, with the limit in ``_LIMITED``).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import threading
from pathlib import Path

from kitab.core.errors import BadValue, KitabError

FULL = (errno.ENOSPC, errno.EDQUOT)
MIN_FREE_MB = 200
# what Python, Arrow and the printed result may take on top of DuckDB's own limit
HEADROOM = 1 << 30
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread (a KeyboardInterrupt: everything that cleans up
    after Ctrl-C cleans up after it too)."""


# the stop signals this process received (names, in order): an exception raised by a handler can
# be swallowed (a library's broad except, DuckDB turning it into its own error); this list cannot
_RECEIVED: list[str] = []


def terminate_as_interrupt() -> None:
    """SIGINT raises KeyboardInterrupt and SIGTERM :class:`Terminated`, and both are recorded
    (:func:`stop_signal`). ``main`` installs this first, before the command's imports, so that a
    signal at any moment from the process's start ends it in one line."""

    def handler(signum, frame):
        name = signal.Signals(signum).name
        if not _RECEIVED or _RECEIVED[-1] != name:
            _RECEIVED.append(name)
        if _importing(frame):
            # an exception raised inside an import can land in a C extension's initialisation
            # (DuckDB's nanobind enums), which aborts the process (SIGABRT, a "Critical nanobind
            # error"): deliver the signal again once the import is done
            again = threading.Timer(REDELIVER_SECONDS, os.kill, (os.getpid(), signum))
            again.daemon = True
            again.start()
            return
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)


STOPPED_BY = {"SIGTERM": "stopped by SIGTERM", "SIGINT": "interrupted (Ctrl-C)"}  # each stop signal's one line
REDELIVER_SECONDS = 0.05  # a stop signal that arrived during an import is sent again this much later


def _importing(frame) -> bool:
    """Whether ``frame`` (where a signal interrupted the main thread) is inside an import."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def ignore_stop_signals() -> None:
    """From here on the process is ending with its one line: a stop signal still on its way (a
    second Ctrl-C, one delivered again after an import) must not add a second."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def stop_signal() -> str | None:
    """The first stop signal (``"SIGINT"``, ``"SIGTERM"``) this process received, else None."""
    return _RECEIVED[0] if _RECEIVED else None


def _causes(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        # ``raise ... from None`` says the context is not the cause: a KitabError already printed
        # (typer.Exit from user_errors) must not be printed again as its DuckDB cause's line
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)


def environment_error(exc: BaseException) -> str | None:
    """The one line for an exception the environment caused, else None."""
    for cause in _causes(exc):
        # a stop signal that landed while DuckDB ran a query (building the views, reading the
        # catalog) comes back as DuckDB's own "interrupted" error, or, landing inside the Python
        # callback that streams a registered Arrow table to it, as DuckDB's error naming our
        # Terminated / KeyboardInterrupt ("exporting a stream ... failed: Terminated"): the signal's line
        said = str(cause).lower()
        if (
            stop_signal()
            and any(word in said for word in ("interrupted", "terminated", "keyboardinterrupt"))
            and not isinstance(cause, KeyboardInterrupt)
        ):
            return STOPPED_BY[stop_signal()]
        if isinstance(cause, Terminated) or type(cause).__name__ == "TerminationSignal":
            return STOPPED_BY["SIGTERM"]
        if isinstance(cause, KeyboardInterrupt):
            return STOPPED_BY["SIGINT"]
        if isinstance(cause, OSError) and cause.errno in FULL:
            where = f" writing {cause.filename}" if cause.filename else ""
            return f"no space left on the device{where}; free some space and run the command again"
        if "database or disk is full" in str(cause) or "No space left on device" in str(cause):
            return "no space left on the device; free some space and run the command again"
        # the process's memory bound (limit_memory) reached outside DuckDB: Python could not
        # allocate, or start the thread a bounded query runs in
        # (or inside DuckDB outside a bounded query, e.g. while the views are built: its
        # OutOfMemoryException, matched by name so that this module does not import duckdb)
        if (
            isinstance(cause, MemoryError)
            or (isinstance(cause, RuntimeError) and "can't start new thread" in str(cause))
            or type(cause).__name__ == "OutOfMemoryException"
        ):
            if _LIMITED:
                return (
                    f"out of memory under --memory-limit {_LIMITED[0]} (kitab itself needs about "
                    f"{HEADROOM >> 20} MB on top of it); give it a larger limit, e.g. 1GB"
                )
            return "out of memory; free some memory or narrow the work, and run the command again"
    return None


def check_free_space(root: Path, minimum_mb: int | None = None) -> None:
    """Refuse (a KitabError) when the file system that holds ``root`` (or its nearest existing
    parent) has less than ``minimum_mb`` MB free: a refresh would fail on it later."""
    minimum_mb = int(os.environ.get("KITAB_MIN_FREE_MB", MIN_FREE_MB)) if minimum_mb is None else minimum_mb
    where = Path(root)
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    if free < minimum_mb * 10**6:
        raise KitabError(
            f"only {free / 10**6:.0f} MB free on the disk of {root} (a refresh needs at least "
            f"{minimum_mb} MB, KITAB_MIN_FREE_MB); free some space first"
        )


def parse_size(text: str) -> int:
    """'2GB', '512MiB', '1.5 gb' -> bytes (DuckDB's units)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text or "")
    if not match or match.group(2).lower() not in _UNITS:
        raise BadValue(f"memory limit {text!r}: expected a size such as 512MB or 2GB")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


_LIMITED: list[str] = []  # the --memory-limit this process runs under (memory_bound.limit_memory), for the line
