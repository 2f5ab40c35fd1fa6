"""How far a refresh is: one :class:`Progress` object that the pipeline itself updates
(flows/pipeline.py::run_pipeline, per stage and per finished batch), that the HTTP clients'
request counters feed, and that every view reads: the terminal display and the plain lines of
``kitab refresh`` (kitab/app/progress_display.py), Prefect's progress artifact (flows/refresh.py),
and the ``stages`` column of the release's ledger row (:meth:`Progress.records`).

Where the steps run decides how fine the progress is:

- in this process (``direct``, or the Prefect flow on threads), a collect step reports every
  author it finishes (:func:`step_progress`, through the registry of :func:`tracking`), and the
  clients' counters report every request as it goes out;
- elsewhere (a process pool, Dask workers) there is no registered progress, so a step reports
  nothing while it runs; the pipeline counts its authors and requests when it finishes.

A stage's requests are the larger of the two counts (in-process counters, finished steps'
own counts): never both, since in-process steps count the same requests twice.

This module holds the numbers (stages, counts, rates, the ledger's records) and how a number
is written (seconds, counts); the sentences a person reads about them are the views' own
(flows/progress_text.py, kitab/app/progress_display.py), so rewording one changes no code
that shapes a release (kitab/core/version.py).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kitab.core.stages import STEPS

# The refresh's steps, in run order (kitab/core/stages.py): what the pipeline times, the
# display lists and the ledger records. ``start`` opens the sources and reads the ledger
# (what each does, in words: flows/progress_text.py).
STAGES = tuple(STEPS)
# What a stage's ``rows`` count (its output).
ROWS = {
    "start": "",
    "sample_authors": "authors",
    "collect": "works",
    "tag_entities": "titles",
    "generate_constraints": "constraints",
    "sample_queries": "queries",
    "publish": "rows",
}
# Step names in ledgers written before the one stage vocabulary (kitab/core/stages.py).
LEDGER_STEP_NAMES = {"sample": "sample_authors", "tag": "tag_entities", "constrain": "generate_constraints"}
RATE_WINDOW = 10.0  # seconds of requests the displayed rate is measured over

Listener = Callable[["Progress", str], None]  # (progress, event): "begin" | "stage" | "advance" | "end"


@dataclass
class Stage:
    """One stage of one refresh, as far as it got."""

    name: str
    started: float
    finished: float | None = None
    total: int | None = None  # items the stage goes through (authors, titles), when it has a count
    unit: str = ""
    tasks: int = 0  # task runs (batches, chunks)
    parts: dict[int, int] = field(default_factory=dict)  # items done, per batch or chunk
    parts_finished: set[int] = field(default_factory=set)
    rows: int | None = None  # its output rows (ROWS says what they are)
    requests_counted: int = 0  # by this process's clients while the stage ran
    requests_reported: int = 0  # by the stage's finished steps, wherever they ran

    @property
    def done(self) -> int:
        return sum(self.parts.values())

    @property
    def requests(self) -> int:
        return max(self.requests_counted, self.requests_reported)

    def seconds(self, now: float) -> float:
        return (self.finished if self.finished is not None else now) - self.started

    def record(self, now: float) -> dict:
        """What the ledger keeps of it (``stages`` column): only the numbers that apply."""
        out: dict[str, Any] = {"stage": self.name, "seconds": round(self.seconds(now), 2)}
        if self.rows is not None:
            out["rows"] = self.rows
        if self.tasks:
            out["tasks"] = self.tasks
        if self.requests:
            out["requests"] = self.requests
        return out


@dataclass(frozen=True)
class ServiceRate:
    """Requests one service got from this process: sent, the recent rate and the client's cap."""

    name: str
    sent: int
    rate: float | None  # requests/s over the last RATE_WINDOW seconds (None: not measured yet)
    cap: float | None  # the client's own limit, requests/s (None: no fixed rate)


@dataclass(frozen=True)
class Status:
    """A consistent picture of a refresh at one moment: what the views render."""

    elapsed: float
    info: dict
    stage: str | None  # the running stage; None before the first and after the last
    stage_seconds: float
    done: int
    total: int | None
    unit: str
    tasks: int
    tasks_done: int
    eta: float | None  # seconds left in the running stage, from its pace so far
    requests: int
    services: tuple[ServiceRate, ...]
    finished: tuple[dict, ...]  # records of the stages that ended, in order
    ended: bool

    @property
    def phase(self) -> str:
        """starting (no stage yet) | running | between stages | finishing (the last one ended) | done."""
        if self.ended:
            return "done"
        if self.stage is not None:
            return "running"
        if not self.finished:  # what it waits for, when the caller said (e.g. Prefect's server)
            return self.info.get("starting") or "starting"
        return "finishing" if self.finished[-1]["stage"] == STAGES[-1] else "between stages"

    @property
    def position(self) -> int:
        """1-based index of the running stage in STAGES (0 before the first)."""
        return STAGES.index(self.stage) + 1 if self.stage in STAGES else len(self.finished)

    @property
    def fraction(self) -> float:
        """Stages done, the running one by its share of items: 0.0 to 1.0 (Prefect's artifact)."""
        if self.ended:
            return 1.0
        current = self.done / self.total if self.total else 0.0
        return min(1.0, (len(self.finished) + current) / len(STAGES))


class Progress:
    """The progress of one refresh. Thread-safe: steps on threads, the clients' counters and
    the views call it concurrently. Listeners hear of stage changes and advances; the views
    that refresh on their own clock (the terminal display) read :meth:`status` instead."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.RLock()
        self.started = clock()
        self.info: dict = {}
        self.stages: list[Stage] = []
        self.ended: float | None = None
        self._listeners: list[Listener] = []
        self._sent: dict[str, int] = {}
        self._recent: dict[str, deque] = {}
        self._caps: dict[str, float | None] = {}
        self._watched_since: dict[str, float] = {}

    # -- listeners ---------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(progress, event)`` on every event; returns the unsubscribe."""
        with self._lock:
            self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _notify(self, event: str) -> None:
        for listener in list(self._listeners):
            try:
                listener(self, event)
            except Exception as exc:  # a view that fails (a server gone) must not fail the refresh
                import logging

                logging.getLogger("kitab.core.progress").warning("progress view %r failed: %s", listener, exc)
                self._listeners.remove(listener)

    # -- what the pipeline reports -----------------------------------------------------------
    def begin(self, **info: Any) -> None:
        """What is being refreshed (release, source, authors requested): for the views."""
        with self._lock:
            self.info.update(info)
        self._notify("begin")

    @property
    def current(self) -> Stage | None:
        with self._lock:
            last = self.stages[-1] if self.stages else None
            return last if last is not None and last.finished is None else None

    def stage(self, name: str, *, total: int | None = None, unit: str = "", tasks: int = 0) -> None:
        """Stage ``name`` starts (the running one, if any, ends): ``total`` items of ``unit``
        in ``tasks`` task runs."""
        if name not in STAGES:
            raise ValueError(f"unknown stage {name!r}; expected one of {STAGES}")
        with self._lock:
            now = self._clock()
            if self.current is not None:
                self.current.finished = now
            self.stages.append(Stage(name, now, total=total, unit=unit, tasks=tasks))
        self._notify("stage")

    def plan(self, *, total: int, unit: str, tasks: int = 0) -> None:
        """The running stage's count of items, once it is known (tagging counts its titles first)."""
        with self._lock:
            if self.current is not None:
                self.current.total, self.current.unit, self.current.tasks = total, unit, tasks
        self._notify("advance")

    def end_stage(self, *, rows: int | None = None, requests: int | None = None) -> None:
        """The running stage ends with ``rows`` output rows (and ``requests`` sent, as its
        steps counted them)."""
        with self._lock:
            stage = self.current
            if stage is None:
                return
            stage.finished = self._clock()
            if rows is not None:
                stage.rows = rows
            if requests is not None:
                stage.requests_reported = max(stage.requests_reported, requests)
        self._notify("advance")

    def advance(self, stage: str, part: int, done: int) -> None:
        """``done`` items of batch/chunk ``part`` of ``stage`` are finished so far (a step
        running in this process reports as it goes). Stale reports are ignored."""
        with self._lock:
            current = self.current
            if current is None or current.name != stage or part in current.parts_finished:
                return
            current.parts[part] = max(current.parts.get(part, 0), done)
        self._notify("advance")

    def part_done(self, part: int, items: int = 0, *, requests: int = 0) -> None:
        """Batch/chunk ``part`` of the running stage finished: its ``items`` and the
        ``requests`` it sent (from its own count, wherever it ran)."""
        with self._lock:
            current = self.current
            if current is None:
                return
            current.parts[part] = items
            current.parts_finished.add(part)
            current.requests_reported += requests
        self._notify("advance")

    def finish(self) -> None:
        with self._lock:
            if self.current is not None:
                self.current.finished = self._clock()
            self.ended = self._clock()
        self._notify("end")

    # -- requests: the clients' counters feed these ------------------------------------------
    def request_sent(self, service: str) -> None:
        """One request to ``service`` went out from this process (kitab.sources.http.RequestCounter)."""
        with self._lock:
            now = self._clock()
            self._sent[service] = self._sent.get(service, 0) + 1
            recent = self._recent.setdefault(service, deque())
            recent.append(now)
            while recent and recent[0] < now - RATE_WINDOW:
                recent.popleft()
            if self.current is not None:
                self.current.requests_counted += 1

    @contextlib.contextmanager
    def watching(self, clients: dict[str, Any]) -> Iterator[None]:
        """Count the requests of ``clients`` ({service name: client with a ``counter`` and a
        ``rate_cap``}) while the block runs."""
        stops = []
        with self._lock:
            for name, client in clients.items():
                self._caps[name] = getattr(client, "rate_cap", None)
                self._watched_since.setdefault(name, self._clock())
                self._sent.setdefault(name, 0)
                stops.append(client.counter.subscribe(lambda name=name: self.request_sent(name)))
        try:
            yield
        finally:
            for stop in stops:
                stop()

    # -- views -------------------------------------------------------------------------------
    def status(self) -> Status:
        with self._lock:
            now = self._clock() if self.ended is None else self.ended
            current = self.current
            services = []
            for name, sent in self._sent.items():
                recent = [t for t in self._recent.get(name, ()) if t >= now - RATE_WINDOW]
                span = min(RATE_WINDOW, now - self._watched_since.get(name, now))
                rate = len(recent) / span if span >= 1.0 else None
                services.append(ServiceRate(name, sent, rate, self._caps.get(name)))
            eta = None
            if current is not None and current.total and current.done:
                eta = current.seconds(now) / current.done * (current.total - current.done)
            finished = tuple(s.record(now) for s in self.stages if s.finished is not None)
            return Status(
                elapsed=now - self.started,
                info=dict(self.info),
                stage=current.name if current else None,
                stage_seconds=current.seconds(now) if current else 0.0,
                done=current.done if current else 0,
                total=current.total if current else None,
                unit=current.unit if current else "",
                tasks=current.tasks if current else 0,
                tasks_done=len(current.parts_finished) if current else 0,
                eta=eta,
                requests=sum(s.requests for s in self.stages),
                services=tuple(services),
                finished=finished,
                ended=self.ended is not None,
            )

    def records(self) -> list[dict]:
        """Every stage so far, in order, as the ledger keeps it (a running one: up to now)."""
        with self._lock:
            now = self._clock()
            return [s.record(now) for s in self.stages]


# -- the progress of a refresh in this process, by release ------------------------------------
_ACTIVE: dict[str, Progress] = {}
_ACTIVE_LOCK = threading.Lock()


@contextlib.contextmanager
def tracking(release: str, progress: Progress | None = None) -> Iterator[Progress]:
    """The progress of refresh ``release`` in this process while the block runs: the one
    already registered (by an outer caller: the CLI around the Prefect flow), else
    ``progress``, else a new one. Steps running in this process find it by release."""
    with _ACTIVE_LOCK:
        registered = _ACTIVE.get(release)
        mine = registered is None
        chosen = registered or progress or Progress()
        if mine:
            _ACTIVE[release] = chosen
    try:
        yield chosen
    finally:
        if mine:
            with _ACTIVE_LOCK:
                _ACTIVE.pop(release, None)


def active(release: str) -> Progress | None:
    """The progress registered for refresh ``release`` in this process (by :func:`tracking`), if any."""
    with _ACTIVE_LOCK:
        return _ACTIVE.get(release)


def step_progress(release: str, stage: str, part: int) -> Callable[[int], None]:
    """For a step: ``report(done)`` tells the refresh's progress how many items of its part
    are done. A no-op where the refresh's progress is not in this process (a worker process,
    Dask): the pipeline then counts the part when it finishes."""

    def report(done: int) -> None:
        progress = _ACTIVE.get(release)
        if progress is not None:
            progress.advance(stage, part, done)

    return report


# -- the ledger's ``stages`` column -----------------------------------------------------------
def stages_json(records: list[dict]) -> str:
    return json.dumps(records, separators=(",", ":"))


def parse_stages(value: str | None) -> list[dict] | None:
    """The ``stages`` column of a ledger row (None: a release from before it was recorded)."""
    if not value:
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    if not isinstance(parsed, list):
        return None
    return [
        {**r, "stage": LEDGER_STEP_NAMES.get(r.get("stage"), r.get("stage"))} if isinstance(r, dict) else r
        for r in parsed
    ]


# -- numbers for people -----------------------------------------------------------------------
def format_seconds(seconds: float | None) -> str:
    """At most 7 characters: 0.4 s, 41.2 s, 12m 05s, 2h 03m."""
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def format_count(n: int | None) -> str:
    """At most 6 characters: 9,876, 52.3k, 1.23M."""
    if n is None:
        return "–"
    if n < 10_000:
        return f"{n:,}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k" if n < 100_000 else f"{n // 1000}k"
    return f"{n / 1_000_000:.2f}M"


def format_rate(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.1f}/s" if rate < 100 else f"{rate:.0f}/s"


def format_clock(seconds: float) -> str:
    """Elapsed time as a clock: 0:07, 12:34, 1:02:03."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Throttled:
    """A listener that passes stage changes and the end at once, and advances at most every
    ``every`` seconds (a view that costs something per update: Prefect's API)."""

    def __init__(self, listener: Listener, every: float, clock: Callable[[], float] = time.monotonic):
        self.listener, self.every, self.clock = listener, every, clock
        self._last = float("-inf")

    def __call__(self, progress: Progress, event: str) -> None:
        now = self.clock()
        if event == "advance" and now - self._last < self.every:
            return
        self._last = now
        self.listener(progress, event)


def stage_rows(stages: list[dict]) -> list[tuple]:
    """(stage, seconds, share of the total, rows with their unit, tasks, requests) per stage."""
    total = sum(r["seconds"] for r in stages) or 1.0
    return [
        (
            r["stage"],
            format_seconds(r["seconds"]),
            f"{100 * r['seconds'] / total:.0f}%",
            f"{r['rows']:,} {ROWS.get(r['stage'], 'rows')}" if r.get("rows") is not None else "",
            r.get("tasks", ""),
            f"{r['requests']:,}" if r.get("requests") else "",
        )
        for r in stages
    ]
