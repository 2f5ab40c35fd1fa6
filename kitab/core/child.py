"""One function run in a child process of its own while the caller goes on (publishing draws the
claims there while it stages the other tables): the second core does the work, and the
memory the work needed goes back to the system when the child exits.

The child is spawned, not forked (the parent has threads: DuckDB, HTTP, Prefect). Its outcome
comes back as the function's value or the exception it raised (same type and message, the
child's traceback as its cause); a child that dies without one (killed, out of memory) is a
KitabError naming its exit code. Leaving :func:`in_child` ends a child still running (the
caller failed, or no longer needs it), and a child whose parent dies ends itself: no orphan
keeps drawing.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from kitab.core.errors import KitabError

PARENT_CHECK_SECONDS = 1.0


class ChildTraceback(Exception):
    """The child's traceback, as the cause of the exception it raised."""


class Child:
    """``fn(*args)`` running in a spawned process (``name`` in messages); :meth:`result` waits."""

    def __init__(self, fn: Callable[..., Any], *args: Any, name: str) -> None:
        self.name = name
        context = multiprocessing.get_context("spawn")
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_run, args=(send, os.getpid(), fn, args), name=f"kitab-{name}", daemon=True
        )
        self._process.start()
        send.close()  # the child holds the only sending end: its death ends the pipe
        self._outcome: tuple[bool, Any] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def result(self) -> Any:
        """The function's value, once the child has sent it (and exited); raises what it raised."""
        if self._outcome is None:
            try:
                self._outcome = self._receive.recv()
            except EOFError:
                self._process.join()
                code = self._process.exitcode
                why = " (killed: out of memory?)" if code == -9 else ""
                raise KitabError(f"{self.name}: its process died with exit code {code}{why}") from None
            self._process.join()
        ok, value = self._outcome
        if ok:
            return value
        error, remote = value
        raise error from ChildTraceback(remote)

    def close(self) -> None:
        """End the child if it still runs (its outcome is not wanted), and wait for it."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._receive.close()


class InProcess:
    """``fn(*args)`` called in this process when its result is first asked for: the reference
    :class:`Child` is compared with (the same value, without the second process)."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self._call: tuple | None = (fn, args)
        self._value: Any = None

    def result(self) -> Any:
        if self._call is not None:
            fn, args = self._call
            self._value, self._call = fn(*args), None
        return self._value


@contextlib.contextmanager
def in_child(fn: Callable[..., Any], *args: Any, name: str) -> Iterator[Child]:
    """``fn(*args)`` started in a child process; ended on leaving if still running."""
    child = Child(fn, *args, name=name)
    try:
        yield child
    finally:
        child.close()


def _run(send, parent: int, fn: Callable[..., Any], args: tuple) -> None:
    threading.Thread(target=_end_with, args=(parent,), daemon=True).start()
    try:
        outcome: tuple[bool, Any] = (True, fn(*args))
    except BaseException as exc:  # noqa: BLE001 (every failure goes back to the parent)
        outcome = (False, (exc, traceback.format_exc()))
    try:
        send.send(outcome)
    except Exception as exc:  # the value or the exception does not pickle: its text, in one line
        what = "its value" if outcome[0] else f"{type(outcome[1][0]).__name__}: {outcome[1][0]}"
        send.send((False, (KitabError(f"{what} (not sent back: {exc})"), traceback.format_exc())))
    send.close()


def _end_with(parent: int) -> None:
    """Exit as soon as the parent is gone (its pid is no longer the child's parent)."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)
