"""HTTP plumbing shared by both services' live and mirror clients.

- retries: tenacity, on 429 / 5xx / connection errors / cut bodies, waiting exactly the
  server's Retry-After when it sends one (clients that ignore 429 get banned from WDQS); the
  numbers are Settings' (defaults: kitab/core/policy.py, the chat endpoint's too);
- rate limits: requests-ratelimiter (pyrate-limiter buckets, one per host);
- persistent cache: requests-cache (SQLite), keyed by a host-independent fingerprint so a
  rerun against a mirror on another port, or a rerun of the same live refresh, is served
  from disk with zero requests.
"""

from __future__ import annotations

import email.utils
import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests_cache import CacheMixin
from requests_ratelimiter import LimiterMixin
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from kitab.core.config import Settings
from kitab.core.errors import KitabError
from kitab.core.policy import parse_retry_after


class RetryableError(Exception):
    """A response worth retrying; ``retry_after`` is the server's wish in seconds, if any;
    ``url`` and ``status`` (None: no HTTP answer, e.g. a cut connection) say what failed."""

    def __init__(
        self, message: str, retry_after: float | None = None, *, url: str | None = None, status: int | None = None
    ):
        super().__init__(message)
        self.retry_after = retry_after
        self.url = url
        self.status = status

    def __reduce__(self):  # keyword attributes survive pickling (a step's error crosses processes)
        return (_rebuild, (type(self), self.args, self.__dict__))


class ServiceError(RuntimeError):
    """A request that failed for good (after retries, or not retryable)."""


class SourceUnavailable(ServiceError, KitabError):
    """A service did not answer one request within the retry policy: retries exhausted, or a
    Retry-After above ``max_retry_after`` (never waited for). The caller decides what it costs:
    one author rejected (``source_unavailable``), or the refresh stopped."""

    def __init__(self, url: str, status: int | None, attempts: int, why: str):
        self.url, self.status, self.attempts, self.why = url, status, attempts, why
        answered = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"source unavailable: {url} ({answered}, {attempts} attempt{'s' * (attempts != 1)}; {why})")

    def __reduce__(self):
        return (type(self), (self.url, self.status, self.attempts, self.why))

    def evidence(self) -> dict:
        """What a rejects row keeps of it."""
        return {"url": self.url, "status": self.status, "attempts": self.attempts, "why": self.why}


def _rebuild(cls: type, args: tuple, attributes: dict) -> BaseException:
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(attributes)
    return exc


@dataclass(frozen=True)
class Fetched:
    """A decoded response plus the provenance every warehouse row carries."""

    data: Any
    fingerprint: str
    fetched_at: datetime | None
    from_cache: bool


def fingerprint(method: str, url: str, params: dict | None = None, body: str | None = None) -> str:
    """sha256 of method + path + sorted query (+ body): the same for live, mirror and any port."""
    parts = urlsplit(url)
    query = sorted(parse_qsl(parts.query, keep_blank_values=True)) + sorted((params or {}).items())
    canonical = "\n".join([method.upper(), parts.path, repr(sorted((str(k), str(v)) for k, v in query)), body or ""])
    return hashlib.sha256(canonical.encode()).hexdigest()


def parse_http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).astimezone(UTC)
    except (TypeError, ValueError):
        return None


def classify_status(status: int, headers: Any, url: str) -> None:
    """Raise RetryableError for 429/5xx (with Retry-After), ServiceError for other errors."""
    if status == 429 or status >= 500:
        raise RetryableError(f"HTTP {status} from {url}", parse_retry_after(headers), url=url, status=status)
    if status >= 400:
        raise ServiceError(f"HTTP {status} from {url}")


def retrying(
    settings: Settings, url: str, gate: Gate | None = None, retry_on: tuple[type[BaseException], ...] = ()
) -> Retrying:
    """The one retry policy: exponential backoff with jitter, or exactly Retry-After, at most
    ``max_attempts`` tries. A Retry-After above ``max_retry_after`` is not waited for and does
    not close ``gate`` (other requests go on); it and exhausted retries end as
    :class:`SourceUnavailable` for this one request (``url``: what to name if the error does not)."""
    backoff = wait_exponential_jitter(
        multiplier=settings.backoff_initial, max=settings.backoff_max, jitter=settings.backoff_initial
    )

    def unavailable(state: RetryCallState, why: str) -> SourceUnavailable:
        exc = state.outcome.exception() if state.outcome else None
        return SourceUnavailable(
            getattr(exc, "url", None) or url, getattr(exc, "status", None), state.attempt_number, why
        )

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            if retry_after > settings.max_retry_after:
                raise unavailable(
                    state, f"Retry-After {retry_after:.0f}s > max_retry_after {settings.max_retry_after:.0f}s"
                ) from exc
            if gate is not None:
                gate.block(retry_after)  # every thread of this client waits, not just this one
            return retry_after
        return backoff(state)

    def exhausted(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if dns_failure(exc):
            raise unavailable(state, f"name not resolved (no network, or no DNS): {urlsplit(url).hostname}") from exc
        raise unavailable(state, f"retries exhausted: {exc}") from exc

    attempts = stop_after_attempt(settings.max_attempts)

    def stop(state: RetryCallState) -> bool:
        # a name that did not resolve will not resolve in a minute either: no network, or a wrong host
        return attempts(state) or dns_failure(state.outcome.exception() if state.outcome else None)

    def is_retryable(exc: BaseException) -> bool:
        return isinstance(
            exc,
            (
                RetryableError,
                requests.ConnectionError,
                requests.Timeout,
                requests.exceptions.ChunkedEncodingError,
                *retry_on,
            ),
        )

    return Retrying(stop=stop, wait=wait, retry=retry_if_exception(is_retryable), retry_error_callback=exhausted)


def dns_failure(exc: BaseException | None) -> bool:
    """Whether a failed request never left because its host name did not resolve (urllib3's
    NameResolutionError, or a socket.gaierror, somewhere in the exception's chain or args)."""
    import socket

    from urllib3.exceptions import NameResolutionError

    seen, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen or not isinstance(e, BaseException):
            continue
        seen.add(id(e))
        if isinstance(e, (NameResolutionError, socket.gaierror)):
            return True
        todo += [e.__cause__, e.__context__, getattr(e, "reason", None), *e.args]
    return False


class Gate:
    """Holds every request of one client, in every thread, until the server's Retry-After
    has passed (tenacity only sleeps the thread that got the 429), and spaces requests by
    ``min_interval`` seconds."""

    def __init__(self, min_interval: float = 0.0):
        self.min_interval = min_interval
        self._lock = threading.Lock()
        self._not_before = 0.0

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._not_before)
            self._not_before = start + self.min_interval
        if start > now:
            time.sleep(start - now)

    def block(self, seconds: float) -> None:
        with self._lock:
            self._not_before = max(self._not_before, time.monotonic() + seconds)


class CachedLimiterSession(CacheMixin, LimiterMixin, requests.Session):
    """requests.Session with a persistent cache in front of a per-host rate limiter:
    cache hits never wait for, nor spend, the rate budget."""


class GatedAdapter(HTTPAdapter):
    """The last step before the network (after the cache and the rate limiter, which may
    have made a thread wait): nothing leaves while the client's gate is closed."""

    def __init__(self, gate: Gate, **kwargs: Any):
        super().__init__(**kwargs)
        self.gate = gate

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        self.gate.wait()
        return super().send(request, **kwargs)


def _cache_key(request: requests.PreparedRequest, **_: Any) -> str:
    body = request.body.decode() if isinstance(request.body, bytes) else request.body
    return fingerprint(request.method or "GET", request.url or "", body=body)


def make_session(settings: Settings, *, cache_name: str, per_second: float, gate: Gate) -> CachedLimiterSession:
    settings.cache_dir.mkdir(parents=True, exist_ok=True)
    session = CachedLimiterSession(
        cache_name=str(settings.cache_dir / cache_name),
        backend="sqlite",
        expire_after=-1,  # a refresh is reproducible from its cache; clear it to refetch
        allowable_codes=(200, 404),  # a missing author/work is an answer too
        key_fn=_cache_key,
        per_second=per_second,
        burst=1,
        per_host=True,
    )
    session.headers.update({"User-Agent": settings.user_agent, "Accept": "application/json"})
    for scheme in ("http://", "https://"):
        session.mount(scheme, GatedAdapter(gate))
    return session


class RequestCounter:
    """Counts requests that really went out (cache hits excluded), thread-safe; also per
    thread, so a step can report the requests it sent while other steps share the client.
    Subscribers hear of each request sent (a refresh's progress: kitab/core/progress.py)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mine = threading.local()
        self._subscribers: list[Callable[[], None]] = []
        self.sent = 0
        self.cached = 0

    def subscribe(self, on_sent: Callable[[], None]) -> Callable[[], None]:
        """Call ``on_sent()`` for every request sent from now on; returns the unsubscribe."""
        with self._lock:
            self._subscribers.append(on_sent)

        def stop() -> None:
            with self._lock:
                if on_sent in self._subscribers:
                    self._subscribers.remove(on_sent)

        return stop

    def record(self, from_cache: bool) -> None:
        with self._lock:
            if from_cache:
                self.cached += 1
                return
            self.sent += 1
            self._mine.sent = self.sent_by_this_thread() + 1
            subscribers = list(self._subscribers)
        for on_sent in subscribers:  # outside the lock: a subscriber may take its own
            on_sent()

    def sent_by_this_thread(self) -> int:
        return getattr(self._mine, "sent", 0)


def get_json(
    session: requests.Session,
    url: str,
    params: dict,
    settings: Settings,
    counter: RequestCounter,
    gate: Gate,
    *,
    allow_404: bool = False,
    decode: Callable[[requests.Response], Any] = lambda r: r.json(),
) -> Fetched:
    """GET with the retry policy; a cut or undecodable body is retried, never cached, and a
    404 is an answer (cached) only where ``allow_404`` says so."""
    fp = fingerprint("GET", url, params)

    def attempt() -> Fetched:
        response = session.get(url, params=params, timeout=(settings.timeout_connect, settings.timeout_read))
        from_cache = bool(getattr(response, "from_cache", False))
        counter.record(from_cache)
        if response.status_code == 404 and allow_404:
            return Fetched(None, fp, parse_http_date(response.headers.get("Date")), from_cache)
        if response.status_code != 200:
            session.cache.delete(requests=[response.request])  # e.g. a 404 where none is an answer
        classify_status(response.status_code, response.headers, response.url)
        try:
            data = decode(response)
        except ValueError as exc:  # truncated JSON: drop it from the cache and try again
            session.cache.delete(requests=[response.request])
            raise RetryableError(
                f"undecodable body from {response.url}: {exc}", url=response.url, status=response.status_code
            ) from exc
        return Fetched(data, fp, parse_http_date(response.headers.get("Date")), from_cache)

    full_url = requests.Request("GET", url, params=params).prepare().url or url  # what a reject names
    return retrying(settings, full_url, gate)(attempt)
