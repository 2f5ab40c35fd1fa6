"""Faults and rate limits the mirror can be told to produce, so tests prove politeness
and resilience against the same HTTP behaviour the real services show."""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass, field

FAULT_KINDS = ("status", "cut", "slow", "timeout")


@dataclass
class Fault:
    """Applies to the next ``times`` requests (None: every one) whose path starts with
    ``path_prefix`` and, if ``query`` is given, whose query string contains it
    (e.g. ``author_key=OL1A``: one author's works).

    kind: ``status`` (answer ``status``, with ``retry_after`` seconds if given),
    ``cut`` (announce the full length, send half the body, close), ``slow`` (sleep
    ``delay`` seconds, then answer normally), ``timeout`` (hold the request ``delay``
    seconds, then close the connection without an answer).
    """

    kind: str
    path_prefix: str = "/"
    times: int | None = 1
    status: int = 503
    retry_after: int | None = None
    delay: float = 0.0
    query: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}: {' | '.join(FAULT_KINDS)}")

    @property
    def label(self) -> str:
        """How the request log names it: the status code, or the kind."""
        return str(self.status) if self.kind == "status" else self.kind

    def matches(self, path: str, query: str) -> bool:
        return path.startswith(self.path_prefix) and (self.query is None or self.query in query)


# --faults SPEC kinds -> the fault each one injects (status codes as the services send them)
RANDOM_KINDS = ("429", "500", "502", "503", "504", "cut", "slow", "timeout")
_SPEC_KEYS = ("rate", "seed", "kinds", "retry_after", "delay", "hang", "paths")


@dataclass(frozen=True)
class RandomFaults:
    """A seeded random mix of faults at ``rate``: ``kitab mirror serve --faults SPEC`` and
    ``Mirror(faults=...)`` take the same plan, so a fault run is reproducible from the
    command line. SPEC is ``key=value`` pairs separated by commas (lists joined by ``+``)::

        rate=0.2,seed=7,kinds=429+503+cut+slow,retry_after=1,delay=0.5,hang=2,paths=/search.json+/sparql

    Whether a request is faulted, and how, is a hash of (seed, the request, how many times
    that same request was seen before), not of arrival order: the same refresh meets the
    same faults on every run, whatever its threads do, and a retry draws again.
    """

    rate: float
    seed: int = 0
    kinds: tuple[str, ...] = ("429", "503", "cut", "slow")
    retry_after: int = 1  # 429: Retry-After seconds
    delay: float = 0.5  # slow: seconds before answering
    hang: float = 2.0  # timeout: seconds before the connection is dropped unanswered
    paths: tuple[str, ...] = ("/",)  # path prefixes faults apply to

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate must be between 0 and 1, got {self.rate}")
        if not self.kinds:
            raise ValueError("kinds must name at least one fault")
        unknown = [k for k in self.kinds if k not in RANDOM_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kind {unknown[0]!r}; expected some of {'+'.join(RANDOM_KINDS)}")
        if self.retry_after < 0 or self.delay < 0 or self.hang < 0:
            raise ValueError("retry_after, delay and hang must be >= 0")
        if not self.paths or not all(p.startswith("/") for p in self.paths):
            raise ValueError(f"paths must start with '/', got {'+'.join(self.paths)}")

    @classmethod
    def parse(cls, spec: str) -> RandomFaults:
        """``rate=0.2,seed=7,kinds=429+503`` -> RandomFaults; ValueError saying what is wrong."""
        values: dict[str, str] = {}
        for item in (part.strip() for part in spec.split(",")):
            if not item:
                continue
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not value.strip():
                raise ValueError(f"fault spec {spec!r}: expected key=value, got {item!r}")
            if key not in _SPEC_KEYS:
                raise ValueError(f"fault spec {spec!r}: unknown key {key!r}; keys: {', '.join(_SPEC_KEYS)}")
            if key in values:
                raise ValueError(f"fault spec {spec!r}: {key} given twice")
            values[key] = value.strip()
        if "rate" not in values:
            raise ValueError(f"fault spec {spec!r}: rate=R (0..1) is required, e.g. rate=0.2,seed=7")
        kwargs: dict[str, object] = {}
        for key, value in values.items():
            try:
                if key in ("kinds", "paths"):
                    kwargs[key] = tuple(v.strip() for v in value.split("+") if v.strip())
                elif key in ("seed", "retry_after"):
                    kwargs[key] = int(value)
                else:
                    kwargs[key] = float(value)
            except ValueError:
                raise ValueError(f"fault spec {spec!r}: {key}={value!r} is not a number") from None
        try:
            return cls(**kwargs)  # type: ignore[arg-type]
        except ValueError as exc:
            raise ValueError(f"fault spec {spec!r}: {exc}") from None

    @property
    def spec(self) -> str:
        """The canonical SPEC: ``RandomFaults.parse(plan.spec) == plan``."""
        return (
            f"rate={self.rate:g},seed={self.seed},kinds={'+'.join(self.kinds)},retry_after={self.retry_after},"
            f"delay={self.delay:g},hang={self.hang:g},paths={'+'.join(self.paths)}"
        )

    def draw(self, path: str, request: str, seen: int) -> Fault | None:
        """The fault for the ``seen``-th repeat (0: first) of ``request`` on ``path``, or None."""
        if not any(path.startswith(p) for p in self.paths):
            return None
        digest = hashlib.sha256(f"{self.seed}\0{request}\0{seen}".encode()).digest()
        if int.from_bytes(digest[:8], "big") / 2**64 >= self.rate:
            return None
        kind = self.kinds[int.from_bytes(digest[8:16], "big") % len(self.kinds)]
        if kind.isdigit():
            return Fault("status", status=int(kind), retry_after=self.retry_after if kind == "429" else None)
        return Fault(kind, delay={"slow": self.delay, "timeout": self.hang}.get(kind, 0.0))


class FaultPlan:
    """The mirror's faults: explicit ones (``add``: tests, ``POST /_mirror/faults``) first,
    then the random mix (``random``), then, for SPARQL, the WDQS time limit
    (``wdqs_timeout_rows``: a query whose result has more rows than this "runs over 60 s"
    and is answered as WDQS answers a timeout)."""

    def __init__(self, random: RandomFaults | None = None, wdqs_timeout_rows: int | None = None) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._seen: dict[str, int] = {}
        self._random = random
        self.wdqs_timeout_rows = wdqs_timeout_rows

    @property
    def random(self) -> RandomFaults | None:
        return self._random

    @random.setter
    def random(self, plan: RandomFaults | None) -> None:
        """A new random mix starts from scratch: the same plan gives the same faults again."""
        with self._lock:
            self._random = plan
            self._seen.clear()

    def add(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        """Drop the explicit faults (the random mix and the WDQS limit stay)."""
        with self._lock:
            self._faults.clear()

    def take(self, path: str, query: str = "", body: bytes = b"", method: str = "GET") -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(path, query) and (fault.times is None or fault.times > 0):
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times == 0:
                            self._faults.remove(fault)
                    return fault
            plan = self._random
            if plan is None:
                return None
            request = hashlib.sha256(b"\0".join([method.encode(), path.encode(), query.encode(), body])).hexdigest()
            seen = self._seen.get(request, 0)
            self._seen[request] = seen + 1
        return plan.draw(path, request, seen)


@dataclass
class TokenBucket:
    """Per-client limit like the real services': over it, 429 with Retry-After."""

    rate: float  # tokens per second
    burst: float = 1.0
    _state: dict[str, tuple[float, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def acquire(self, client: str) -> int | None:
        """None if allowed; else whole seconds to wait (Retry-After is delta-seconds)."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._state.get(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._state[client] = (tokens - 1.0, now)
                return None
            self._state[client] = (tokens, now)
            return max(1, math.ceil((1.0 - tokens) / self.rate))
