"""A stop signal that lands while a module is being imported is delivered again once the import is
done (kitab/app/guard.py): raised inside an import, it can land in a C extension's initialisation
(DuckDB's nanobind enums), which aborted `kitab sql` with SIGABRT and a "Critical nanobind error"
instead of its one line (seen at 0.3 s after start on a loaded machine)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from kitab.core.env import PROJECT_ROOT

SLOW_MODULE = """
import os, signal, time
os.kill(os.getpid(), signal.SIGTERM)  # the signal arrives in the middle of this import
time.sleep(0.3)
DONE = True
"""

PROGRAM = """
import sys, time
sys.path.insert(0, {folder!r})
from kitab.app.guard import stop_signal, terminate_as_interrupt
terminate_as_interrupt()
try:
    import slow_module
    print("imported", slow_module.DONE, flush=True)
    time.sleep(5)
    print("not stopped", flush=True)
except KeyboardInterrupt as exc:
    print("stopped", type(exc).__name__, stop_signal(), flush=True)
"""


def test_a_stop_signal_during_an_import_waits_for_the_import_then_stops(tmp_path):
    (tmp_path / "slow_module.py").write_text(SLOW_MODULE, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROGRAM.format(folder=str(tmp_path)))],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=PROJECT_ROOT,
    )
    assert run.stdout.splitlines() == ["imported True", "stopped Terminated SIGTERM"], (run.stdout, run.stderr)


def test_after_the_one_line_a_late_stop_signal_is_ignored(tmp_path):
    program = textwrap.dedent(
        """
        import os, signal, time
        from kitab.app.guard import ignore_stop_signals, terminate_as_interrupt
        terminate_as_interrupt()
        ignore_stop_signals()
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        print("still here", flush=True)
        """
    )
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, cwd=PROJECT_ROOT)
    assert run.returncode == 0 and run.stdout == "still here\n", (run.returncode, run.stdout, run.stderr)
