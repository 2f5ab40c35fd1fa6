"""How kitab asks a remote service, written once: the retry numbers (the sources' HTTP clients,
kitab/sources/http.py, and the chat endpoint's session, kitab/sources/chat_session.py, both take
them from here), the chat endpoint's pacing and limits (``kitab answer``'s options default to
them; the model taggers use them as they are), and the one ``Retry-After`` parser.

Plain values and a pure function: no HTTP library is imported here, so the command line can
show these defaults without loading one.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC

from kitab.core.errors import KitabError


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``max_attempts`` tries; between them exponential backoff from ``backoff_initial``
    seconds, doubling, capped at ``backoff_max``, or exactly the server's Retry-After; one
    longer than ``max_retry_after`` is never waited for (the request fails instead)."""

    max_attempts: int = 6
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    max_retry_after: float = 300.0

    def backoff(self, attempt: int) -> float:
        """Exponential with full jitter (attempt 1 is the first retry): between half the
        ceiling and the ceiling, so threads that failed together do not retry together."""
        ceiling = min(self.backoff_max, self.backoff_initial * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


# The temperature every chat request carries unless told otherwise: kitab answer, the library
# (kitab/sources/chat.py's Params, answer_release), the cycle (a models file's ``temperature``
# overrides it) and the model taggers. The paper's is 0: the most likely answer, the same on a
# rerun where the server is deterministic. ``none`` (temperature_value) sends none, for the
# reasoning models that refuse one.
DEFAULT_TEMPERATURE = 0.0
NO_TEMPERATURE = "none"


def temperature_value(value: str | float) -> float | None:
    """A temperature as given (``--temperature``, a models file): a number from 0 to 2, or
    ``none`` (any case) for None, not sent; KitabError otherwise."""
    if isinstance(value, str) and value.strip().lower() == NO_TEMPERATURE:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not 0.0 <= number <= 2.0:
        raise KitabError(f"temperature {value!r}: expected a number from 0 to 2, or {NO_TEMPERATURE!r} to send none")
    return number


@dataclass(frozen=True)
class ChatPolicy:
    """How an OpenAI-compatible chat endpoint is asked, by ``kitab answer`` and the model taggers
    alike (kitab/sources/chat_session.py)."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float = 600.0  # seconds for one request whole (connect, headers and body)
    concurrency: int = 4  # requests in flight at most (the client's connection pool too); lowered after a timeout
    rate: float | None = None  # request starts per second at most, over all threads (None: no cap)
    # The first requests to finish: all failing with one error stops the run (a gateway that
    # answers 400 to everything is told in seconds, not after every query).
    stop_after: int = 10
    # Requests the session sends at most, retries included (None: no cap); the one past it is
    # not sent: an "over budget" failure that stops the run (kitab cycle's per-model budget).
    budget: int | None = None

    def __post_init__(self) -> None:
        if self.budget is not None and self.budget < 0:
            raise KitabError(f"budget {self.budget}: expected 0 or more requests")
        if self.concurrency < 1:
            raise KitabError(f"--concurrency {self.concurrency}: expected 1 or more")
        if self.rate is not None and not self.rate > 0:
            raise KitabError(f"--rate {self.rate}: expected a positive number of requests per second")
        if not self.timeout > 0:
            raise KitabError(f"--timeout {self.timeout}: expected a positive number of seconds")


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from a response's headers (any mapping: requests', httpx's, urllib's):
    OpenAI's ``retry-after-ms`` first, else ``Retry-After`` as delta-seconds or an HTTP date
    (RFC 9110 §10.2.3); None when absent or unreadable (the caller backs off instead)."""
    named = {str(k).lower(): v for k, v in headers.items()}  # header names are case-insensitive
    ms = _seconds(named.get("retry-after-ms"))
    if ms is not None:
        return ms / 1000.0
    value = named.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def _seconds(value: str | None) -> float | None:
    """A number of seconds (0 or more; a negative one is 0), or None (absent, or not a finite number)."""
    if value is None:
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return max(0.0, number) if math.isfinite(number) else None
