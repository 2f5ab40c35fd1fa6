"""Faults and rate limits the mirror can be told to produce, so tests prove politeness
and resilience against the same HTTP behaviour the real services show."""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Fault:
    """Applies to the next ``times`` requests whose path starts with ``path_prefix``.

    kind: ``status`` (answer ``status``, with ``retry_after`` seconds if given),
    ``cut`` (announce the full length, send half the body, close), ``slow`` (sleep
    ``delay`` seconds, then answer normally).
    """

    kind: str
    path_prefix: str = "/"
    times: int = 1
    status: int = 503
    retry_after: int | None = None
    delay: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("status", "cut", "slow"):
            raise ValueError(f"unknown fault kind {self.kind!r}: status | cut | slow")


class FaultPlan:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def take(self, path: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if path.startswith(fault.path_prefix) and fault.times > 0:
                    fault.times -= 1
                    if fault.times == 0:
                        self._faults.remove(fault)
                    return fault
        return None


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
