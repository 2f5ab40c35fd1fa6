"""``kitab refresh`` on a terminal: how a refresh's :class:`~kitab.core.progress.Progress` is shown.

- ``live``: a rich display on stderr, redrawn four times a second (stdout and stderr are
  terminals): every stage with its time and rows, the running one with a bar, authors (or
  titles) done / total, its task runs and ETA, requests sent and each service's rate against
  its client's cap.
- ``lines``: plain lines on stderr (stdout is not a terminal: a log, a pipe, cron): one when a
  stage starts, then one every few seconds while it makes progress (a heartbeat when it does
  not), and one at the end.
- ``none`` (``--quiet``): nothing while it runs; only the summary (or ``--json``) and errors.

stdout carries only the summary or the JSON document, whatever the mode.

``kitab answer`` has its own one-line display (:class:`AnswerProgress`).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

from rich.console import Console, Group
from rich.progress_bar import ProgressBar
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from flows.progress_text import DOING, requests_text, stage_text, status_line
from kitab.core.progress import (
    ROWS,
    STAGES,
    Progress,
    Status,
    format_clock,
    format_count,
    format_seconds,
)

MODES = ("live", "lines", "none")
LINE_EVERY = 5.0  # seconds between progress lines while a stage advances
HEARTBEAT_EVERY = 30.0  # ... and while it does not


def progress_mode(quiet: bool, stdout_tty: bool, stderr_tty: bool) -> str:
    """``none`` with --quiet; ``live`` when a person watches both streams; else ``lines``."""
    if quiet:
        return "none"
    return "live" if stdout_tty and stderr_tty else "lines"


# -- plain lines --------------------------------------------------------------------------------
class PlainLines:
    """The plain-line view: a listener (stage starts, the end) plus :meth:`tick`, called every
    second or so, for the lines in between."""

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        every: float = LINE_EVERY,
        heartbeat: float = HEARTBEAT_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.write, self.every, self.heartbeat, self.clock = write, every, heartbeat, clock
        self._last_line = clock()
        self._last_seen: tuple | None = None
        self._last_phase: str | None = None

    def _emit(self, status: Status, text: str) -> None:
        self.write(f"kitab: {format_clock(status.elapsed)} {text}")
        self._last_line = self.clock()
        self._last_seen = (status.stage, status.done, status.requests)

    def __call__(self, progress: Progress, event: str) -> None:
        status = progress.status()
        if event == "begin" and self._last_seen is None:  # once: the caller's begin, then the pipeline's
            info = status.info
            self._emit(
                status,
                f"refreshing release {info.get('release')}: {info.get('authors', 0):,} authors from "
                f"source {info.get('source')}, batches of {info.get('batch_size', 0):,}",
            )
        elif event == "stage" and status.stage is not None:
            before = f" ({stage_text(status.finished[-1])})" if status.finished else ""
            self._emit(
                status, f"{status.stage} ({status.position}/{len(STAGES)}) started: {DOING[status.stage]}{before}"
            )
        elif event == "end":
            last = f"; {stage_text(status.finished[-1])}" if status.finished else ""
            self._emit(status, status_line(status) + last)

    def tick(self, progress: Progress) -> None:
        status = progress.status()
        if status.ended or not status.info:  # nothing before the refresh begins (inputs checked, lock taken)
            return
        since = self.clock() - self._last_line
        if status.stage is None:  # before the pipeline starts (Prefect's server), or after its last stage
            # a new phase once, then the same one only as a heartbeat: not a line every 5 s saying "starting"
            if (status.phase != self._last_phase and since >= self.every) or since >= self.heartbeat:
                self._emit(status, status.phase)
                self._last_phase = status.phase
            return
        moved = (status.stage, status.done, status.requests) != self._last_seen
        if (moved and since >= self.every) or since >= self.heartbeat:
            self._emit(status, status_line(status) + f" · {format_seconds(status.stage_seconds)} in stage")


@contextlib.contextmanager
def _lines(progress: Progress, stream) -> Iterator[None]:
    def write(text: str) -> None:  # not print(): a Prefect flow with log_prints turns print() into log records
        stream.write(text + "\n")
        stream.flush()

    view = PlainLines(write)
    stop_listening = progress.subscribe(view)
    stopped = threading.Event()

    def ticker() -> None:
        while not stopped.wait(1.0):
            view.tick(progress)

    thread = threading.Thread(target=ticker, name="kitab-progress-lines", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stopped.set()
        thread.join()
        stop_listening()


# -- the live display ---------------------------------------------------------------------------
class LiveView:
    """The rich renderable of the live display, rebuilt from :meth:`Progress.status` at each
    redraw (the spinner is kept, so it turns)."""

    BAR_WIDTH = 20

    def __init__(self, progress: Progress):
        self.progress = progress
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> Group:
        return render_status(self.progress.status(), self.spinner, self.BAR_WIDTH)


def render_status(status: Status, spinner: Spinner | None = None, bar_width: int = LiveView.BAR_WIDTH) -> Group:
    """One frame of the live display (fits 100 columns for up to a million authors)."""
    info = status.info
    head = Text("kitab refresh", style="bold")
    if info:
        head.append(
            f" · release {info.get('release')} · source {info.get('source')} · "
            f"{info.get('authors', 0):,} authors · batches of {info.get('batch_size', 0):,}"
        )
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=1)
    grid.add_column(min_width=14, no_wrap=True)
    grid.add_column(min_width=bar_width, no_wrap=True)  # the bar, or a stage's time
    grid.add_column(no_wrap=True, overflow="ellipsis")  # items done, rows, or what the stage does
    finished = {r["stage"]: r for r in status.finished}
    for name in STAGES:
        if name in finished and name != status.stage:
            record = finished[name]
            rows = record.get("rows")
            rows_text = f"{format_count(rows)} {ROWS[name]}" if rows is not None else ""
            grid.add_row(
                Text("✓", style="green"), name, Text(format_seconds(record["seconds"]), style="green"), rows_text
            )
        elif name == status.stage:
            if status.total is not None:
                pct = f"{100 * status.done / status.total:3.0f}%" if status.total else ""
                tasks = f" · {status.tasks_done}/{status.tasks} tasks" if status.tasks > 1 else ""
                eta = f" · ETA {format_seconds(status.eta)}" if status.eta is not None else ""
                middle = ProgressBar(total=max(1, status.total), completed=status.done, width=bar_width)
                detail = f"{status.done:,} / {status.total:,} {status.unit} {pct}{tasks}{eta}"
            else:
                middle = Text(format_seconds(status.stage_seconds), style="cyan")
                detail = Text(DOING[name], style="cyan")
            grid.add_row(spinner or Text("›"), Text(name, style="bold cyan"), middle, detail)
        else:
            grid.add_row("", Text(name, style="dim"), "", "")
    if status.ended:
        foot = status_line(status)
    elif status.stage is None:
        foot = f"{status.phase} … {format_clock(status.elapsed)}"
    else:
        foot = f"{requests_text(status)} · elapsed {format_clock(status.elapsed)}"
    return Group(head, grid, Text(foot, style="dim" if not status.ended else "bold"))


@contextlib.contextmanager
def _live(progress: Progress, console: Console) -> Iterator[None]:
    from rich.live import Live

    view = LiveView(progress)
    with Live(view, console=console, refresh_per_second=4, transient=False) as live:
        try:
            yield
        finally:
            live.refresh()  # the last state (all stages done, or where it stopped)


def showing_refresh(progress: Progress, quiet: bool):
    """The refresh's progress on stderr while it runs: live on a terminal, plain lines when
    stdout is not one, nothing with --quiet."""
    return showing(progress, progress_mode(quiet, sys.stdout.isatty(), sys.stderr.isatty()))


@contextlib.contextmanager
def showing(progress: Progress, mode: str) -> Iterator[None]:
    """Show ``progress`` on stderr in ``mode`` (see :func:`progress_mode`) while the block runs."""
    if mode == "none":
        yield
    elif mode == "live":
        with _live(progress, Console(stderr=True)):
            yield
    elif mode == "lines":
        with _lines(progress, sys.stderr):
            yield
    else:
        raise ValueError(f"progress mode {mode!r}: expected one of {MODES}")


# -- kitab answer -------------------------------------------------------------------------------
class AnswerProgress:
    """``kitab answer``'s one progress display on stderr: a line rewritten in place on a
    terminal, else a line every few seconds; the last state always ends with a newline."""

    def __init__(self, quiet: bool, every: float = 5.0):
        self.quiet, self.tty, self.every = quiet, sys.stderr.isatty(), every if not sys.stderr.isatty() else 0.25
        self._last = time.monotonic()  # the first line after ``every``: a run that ends at once is its own line
        self._text = ""

    def __call__(self, stats) -> None:
        now = time.monotonic()
        if self.quiet or now - self._last < self.every:
            return
        self._last = now
        self._show(stats.line())

    def _show(self, text: str) -> None:
        self._text = text
        if self.tty:
            print(f"\r\x1b[2Kkitab answer: {text}", end="", file=sys.stderr, flush=True)
        else:
            print(f"kitab answer: {text}", file=sys.stderr, flush=True)

    def end(self, stats, ended: bool = True) -> None:
        """The last state, without a time left. A run that failed (``ended`` False) adds no line
        of its own (its error is the line): on a terminal the line shown is kept (without the
        estimate) if answers came this run, else erased."""
        if self.quiet or stats is None:
            return
        if not ended and self.tty and self._text and not stats.answered:
            print("\r\x1b[2K", end="", file=sys.stderr, flush=True)
            return
        if ended or (self.tty and self._text):
            self._show(stats.line(final=True))
        if self.tty and self._text:
            print(file=sys.stderr)
