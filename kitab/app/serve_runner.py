"""``kitab serve``'s loop: Prefect's Runner (what ``prefect.serve`` runs) on a thread of its own,
so that the main thread keeps kitab's stop signals (kitab.app.guard) at every moment.

``prefect.serve`` runs the Runner in the main thread, and the Runner replaces SIGTERM's handler
with its own, which calls ``stop()`` from inside the event loop: the coroutine it gets back is
never awaited (three RuntimeWarnings), and its ``sys.exit`` then waits on the shutdown's API
calls (pausing the schedule), which never finish once the Prefect server is gone; from then on
neither SIGTERM nor Ctrl-C stopped it. Here the Runner's loop runs on a daemon thread (a Runner
off the main thread installs no handler), and a stop signal in the main thread cancels it and
waits at most :data:`STOP_GRACE_SECONDS` for its shutdown (a second signal: not at all); the
command then ends with kitab's one line for that signal."""

from __future__ import annotations

import asyncio
import threading

STOP_GRACE_SECONDS = 10.0  # the Runner's shutdown: pausing the schedule, cancelling its runs


def serve_until_stopped(deployment, grace: float = STOP_GRACE_SECONDS) -> None:
    """Serve ``deployment`` (a RunnerDeployment) until a stop signal (KeyboardInterrupt or
    kitab.app.guard.Terminated, raised here and re-raised once the Runner stopped or ``grace``
    seconds passed) or until the Runner ends by itself (its error, if any, raised here)."""
    from prefect.runner import Runner

    runner = Runner(pause_on_shutdown=True)  # prefect.serve's default: the schedule pauses while nobody serves it
    runner.add_deployment(deployment)
    state: dict = {}

    async def serving() -> None:
        state["loop"], state["task"] = asyncio.get_running_loop(), asyncio.current_task()
        await runner.start()

    def run() -> None:
        try:
            asyncio.run(serving())
        except asyncio.CancelledError:
            pass  # stopped by the main thread
        except BaseException as exc:  # handed to the main thread
            state["error"] = exc

    thread = threading.Thread(target=run, name="kitab-serve", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.2)  # short waits: the main thread takes a stop signal within 0.2 s
    finally:
        if thread.is_alive():  # a stop signal: cancel the Runner, give its shutdown a bounded time
            loop, task = state.get("loop"), state.get("task")
            if loop is not None and task is not None:
                loop.call_soon_threadsafe(task.cancel)
            thread.join(grace)
    if "error" in state:
        raise state["error"]
