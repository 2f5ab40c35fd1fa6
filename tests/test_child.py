"""kitab/core/child.py: a function run in a spawned child process comes back as its value or
its exception; a child that dies is a clear error; leaving ends a child still running."""

from __future__ import annotations

import os
import signal
import time

import pytest

from kitab.core.child import ChildTraceback, in_child
from kitab.core.errors import BadValue, KitabError


def _square(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


def _refuse(why: str) -> None:
    raise BadValue(why)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def test_the_value_comes_back_from_another_process():
    with in_child(_square, 7, name="square") as child:
        value, pid = child.result()
        assert child.result() == (value, pid)  # asked twice, sent once
    assert value == 49 and pid == child.pid != os.getpid()


def test_the_exception_comes_back_with_its_type_message_and_the_childs_traceback():
    with in_child(_refuse, "no claims today", name="refusal") as child, pytest.raises(BadValue) as raised:
        child.result()
    assert str(raised.value) == "no claims today"
    assert isinstance(raised.value.__cause__, ChildTraceback) and "_refuse" in str(raised.value.__cause__)


def test_a_child_that_dies_is_a_clear_error():
    with in_child(_die, name="the claims draw") as child, pytest.raises(KitabError) as raised:
        child.result()
    assert str(raised.value) == "the claims draw: its process died with exit code -9 (killed: out of memory?)"


def test_leaving_ends_a_child_still_running():
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="the caller failed"), in_child(_sleep, 60, name="sleeper") as child:
        pid = child.pid
        raise RuntimeError("the caller failed")
    assert time.monotonic() - started < 10  # ended, not waited for
    with pytest.raises(ProcessLookupError):  # gone (and reaped), not left drawing
        os.kill(pid, 0)


def test_a_child_whose_parent_is_killed_ends_itself(tmp_path):
    """The refresh killed mid-publish (SIGKILL: no cleanup runs): its child does not go on drawing."""
    import subprocess
    import sys

    script = (
        "import sys, time\n"
        "from kitab.core.child import in_child\n"
        "from tests.test_child import _sleep\n"
        "with in_child(_sleep, 60, name='sleeper') as child:\n"
        "    print(child.pid, flush=True)\n"
        "    time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    pid = int(parent.stdout.readline())
    os.kill(pid, 0)  # running
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.2)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:  # an exited child not yet reaped (by init) is a zombie
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False
