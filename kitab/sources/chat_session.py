"""One chat endpoint as every caller asks it: ``kitab answer`` (kitab/release/answer.py) and the
model taggers and second reader (tasks/taggers/model.py) each open a :class:`ChatSession` with
:func:`open_chat_session`, from the same inputs (the endpoint: base URL, model, cache file; and
a :class:`~kitab.core.policy.ChatPolicy`), and neither composes its parts.

A session owns:

- **the client** (kitab/sources/chat.py's :class:`ChatClient`, one pooled httpx client, with the
  key read from ``OPENAI_API_KEY`` here, where the requests are sent);
- **the response cache** (:class:`ResponseCache`, keyed by :func:`cache_key`: the key does not
  depend on the session, so an existing cache still answers);
- **the flights** (:class:`Flights`): at most ``limit`` requests in flight, ``policy.concurrency``
  at first. Each request knows the session's requests that may be ahead of it in a one-at-a-time
  server's queue (llama_cpp.server, Ollama with one slot): those in flight when it was sent, and
  those sent within ``TOGETHER`` seconds of it (they may reach the server first), and its
  **service time** runs from when it was sent, or when the last of those ended, to its answer:
  the server's own time on it, not the time it waited behind kitab's other requests (against a
  server that computes side by side, the answer's share of the time the session had a request
  there: summed over a run, the time the endpoint was busy for it). The
  **timeout** counts from that same moment (kitab/sources/chat.py's deadline), so a queue kitab
  made never times its own requests out. A timeout of a request that had company (others in
  flight) halves the limit, down to 1, once per round (only a request sent after the last
  lowering lowers it again), and that retry does not use up a try: the retry waits for a slot
  instead of joining the queue that timed it out, and the server's answers nobody waits for
  stop multiplying. ``limit`` answers in a row raise it by one, up to ``policy.concurrency``.
  A timeout alone (limit 1, nothing else in flight) is the model's own slowness: a try used up.
- **the limiter** (:class:`RateLimiter`): ``policy.rate`` starts per second over all threads,
  and after a ``Retry-After`` no request of the session starts before it has passed, since the
  server throttles the client, not one request;
- **the retry policy** (``policy.retry``, the numbers the sources use too): retryable failures
  (chat.py says which) are retried with exponential backoff and full jitter, at most
  ``max_attempts`` tries; a ``Retry-After`` longer than ``max_retry_after`` fails the request
  instead of waiting for hours;
- **the stop**: :meth:`ChatSession.abort` (Ctrl-C, SIGTERM) ends every request in flight and
  every wait at once; a run that reports its outcomes (:meth:`ChatSession.outcome`) stops at
  a fatal error (401/403/404, a refused connection) or when its first ``policy.stop_after``
  questions all fail with one error (:attr:`ChatSession.stopped_by` says which). One error is
  one :func:`~kitab.sources.chat.error_signature` (status and message without its ids and
  numbers). Until that verdict is in (an answer, or ``stop_after`` outcomes), such a run starts
  at most ``stop_after + concurrency`` questions (:meth:`ChatSession.admit`): the requests
  sent before a stop are bounded by what is in flight, not by how fast errors come back.
- **a refused connection** is not retried until the endpoint has answered once (then it is
  a server restarting, retried as a dropped connection).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kitab.core.params import ModelEndpoint
from kitab.core.policy import ChatPolicy
from kitab.sources.chat import (
    Answer,
    ChatClient,
    EndpointError,
    KeyFrom,
    Params,
    ResponseCache,
    Stopped,
    cache_key,
    env_api_key,
    error_signature,
)


class RateLimiter:
    """At most ``rate`` request starts per second over all threads (evenly spaced), and none
    before a pause the server asked for (:meth:`hold`)."""

    def __init__(
        self,
        rate: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.interval = 1.0 / rate if rate else 0.0
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._next = 0.0
        self._hold_until = 0.0

    def hold(self, seconds: float) -> None:
        with self._lock:
            self._hold_until = max(self._hold_until, self._clock() + seconds)

    def acquire(self, stop: threading.Event | None = None) -> None:
        """Wait for this request's start; with ``stop``, a stop ends the wait at once (a
        Retry-After of minutes never holds a Ctrl-C)."""
        with self._lock:
            now = self._clock()
            slot = max(now, self._next, self._hold_until)
            self._next = slot + self.interval
        if slot > now:
            if stop is None:
                self._sleep(slot - now)
            else:
                stop.wait(slot - now)


# Requests sent this close together may reach the server in either order (each new connection
# has its own handshake): each counts the other as ahead of it.
TOGETHER = 0.5


class Flight:
    """One request: when it was sent and ended, and the session's requests that may be ahead of
    it in a one-at-a-time server's queue (``ahead``: those in flight when it was sent, and those
    sent within TOGETHER seconds after it)."""

    __slots__ = ("sent", "ended", "ahead")

    def __init__(self, sent: float, ahead: list[Flight]) -> None:
        self.sent, self.ahead = sent, ahead
        self.ended: float | None = None

    def started(self) -> float | None:
        """When its service (and its timeout's clock) started: sent, or the last end of those
        ahead of it; None while one of them is still in flight."""
        ends = [a.ended for a in self.ahead]
        return None if None in ends else max([self.sent, *ends])

    def service(self) -> float:
        """Its service time once ended: from sent, or the last end before its own among those
        ahead (one still in flight when it was answered was not ahead of it), to its end."""
        assert self.ended is not None
        ends = [a.ended for a in self.ahead if a.ended is not None and a.ended < self.ended]
        return self.ended - max([self.sent, *ends])


class Flights:
    """The session's requests in flight: at most ``limit`` (AIMD: halved by a timeout in
    company, raised by one after ``limit`` answers in a row, between 1 and ``cap``)."""

    def __init__(self, cap: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.cap = self.limit = cap
        self.lowest = cap  # the lowest the limit went (the run's summary says so)
        self._clock = clock
        self._open: list[Flight] = []
        self._held = 0  # slots taken, requests not yet sent
        self._lowered_at = -float("inf")
        self._streak = 0
        self._cond = threading.Condition()

    def take(self, stop: threading.Event) -> bool:
        """Wait for a free slot (False: stopped first)."""
        with self._cond:
            while len(self._open) + self._held >= self.limit:
                if stop.is_set():
                    return False
                self._cond.wait(0.2)
            if stop.is_set():
                return False
            self._held += 1
            return True

    def give_back(self) -> None:
        """A slot taken and never used (stopped before sending)."""
        with self._cond:
            self._held -= 1
            self._cond.notify_all()

    def send(self) -> Flight:
        """The taken slot's request goes out now."""
        with self._cond:
            self._held -= 1
            flight = Flight(self._clock(), list(self._open))
            for other in self._open:
                if flight.sent - other.sent <= TOGETHER:
                    other.ahead.append(flight)
            self._open.append(flight)
            return flight

    def end(self, flight: Flight, *, answered: bool = False, timed_out: bool = False) -> bool:
        """``flight`` ended; True when its timeout lowered the limit (the retry is free)."""
        with self._cond:
            flight.ended = self._clock()
            self._open.remove(flight)
            lowered = False
            company = bool(flight.ahead) or bool(self._open)  # others in flight with it, at any time
            if timed_out and company and self.limit > 1 and flight.sent > self._lowered_at:
                self.limit = max(1, self.limit // 2)
                self.lowest = min(self.lowest, self.limit)
                self._lowered_at, self._streak, lowered = flight.ended, 0, True
            elif answered and self.limit < self.cap:
                self._streak += 1
                if self._streak >= self.limit:
                    self.limit, self._streak = self.limit + 1, 0
            self._cond.notify_all()
            return lowered

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()


class ChatSession:
    """One endpoint's client, response cache, limiter and retry policy (thread-safe). Opened by
    :func:`open_chat_session` only; closes its client and cache on exit."""

    def __init__(self, client: ChatClient, cache: ResponseCache, policy: ChatPolicy) -> None:
        self.client, self.cache, self.policy = client, cache, policy
        self.model = client.model
        self.limiter = RateLimiter(policy.rate)
        self.flights = Flights(policy.concurrency)
        self.stop = threading.Event()
        self.stopped_by: EndpointError | None = None  # what stopped the run (outcome), if anything
        self._first: list[tuple | None] = []  # the first outcomes: an error's signature, None for an answer
        self._answered = threading.Event()  # the endpoint gave one answer (a refusal since is a restart)
        self._admitted = 0  # questions started before the verdict (admit)
        self._sent = 0  # requests sent (policy.budget's count)
        self._decided = threading.Condition()  # the verdict: an answer, stop_after outcomes, or a stop
        self._lock = threading.Lock()

    def __enter__(self) -> ChatSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()
        self.cache.close()

    def key(self, prompt: str, params: Params, *, system: str | None = None, sample: int = 0) -> str:
        """The cache key of this question to this session's model."""
        return cache_key(self.model, prompt, params, system=system, sample=sample)

    def abort(self) -> None:
        """Stop now: every request in flight ends (its sockets shut down), every wait too."""
        self.stop.set()
        self.client.abort()
        self.flights.wake()
        self._decide()

    @property
    def decided(self) -> bool:
        """Whether the early stop's verdict is in: an answer came, ``stop_after`` outcomes were
        reported, or the run is stopping."""
        return self._answered.is_set() or self.stop.is_set() or len(self._first) >= self.policy.stop_after

    def _decide(self) -> None:
        with self._decided:
            self._decided.notify_all()

    def admit(self) -> None:
        """Wait until one more question may start (a run that reports outcomes calls this before
        each): before the verdict, at most ``stop_after + concurrency`` start, so at least
        ``stop_after`` of them have finished when the last is admitted."""
        limit = self.policy.stop_after + self.policy.concurrency
        with self._decided:
            while not self.decided and self._admitted >= limit:
                self._decided.wait(0.5)
            self._admitted += 1

    def ask(
        self,
        prompt: str,
        params: Params,
        *,
        system: str | None = None,
        on_request: Callable[[], None] | None = None,
        on_retry: Callable[[float], None] | None = None,
    ) -> Answer:
        """One question under the retry policy: an Answer, or EndpointError when it failed for
        good (fatal, not retryable, retries used up, or a Retry-After above the policy's
        limit), or Stopped. ``on_request`` hears of every request sent, ``on_retry`` of every
        retry (with the seconds the server asked to wait, 0 if it did not say)."""
        retry = self.policy.retry
        asked = time.monotonic()
        attempt = 0
        while True:
            if self.stop.is_set() or not self.flights.take(self.stop):
                raise Stopped()
            self.limiter.acquire(self.stop)
            if self.stop.is_set():
                self.flights.give_back()
                raise Stopped()
            self._spend()
            attempt += 1
            if on_request:
                on_request()
            flight = self.flights.send()
            try:
                completion = self.client.complete(prompt, params, system=system, started=flight.started)
            except EndpointError as exc:
                if self.flights.end(flight, timed_out=exc.timed_out):
                    attempt -= 1  # a timeout in a queue kitab made: retried at the lower concurrency, free
                if exc.refused and self._answered.is_set():  # it answered before: a server restarting
                    exc.retryable = True
                if not exc.retryable or attempt >= retry.max_attempts:
                    if exc.retryable:
                        exc.args = (f"{exc.args[0]} (after {attempt} attempts)",)
                    raise
                if exc.retry_after is not None:
                    if exc.retry_after > retry.max_retry_after:
                        raise EndpointError(
                            f"{exc.args[0]} asking to retry after {exc.retry_after:.0f} s "
                            f"(more than {retry.max_retry_after:.0f} s)",
                            status=exc.status,
                        ) from None
                    self.limiter.hold(exc.retry_after)  # every request waits: the server throttles the client
                else:
                    self.stop.wait(retry.backoff(max(attempt, 1)))
                if on_retry:
                    on_retry(exc.retry_after or 0.0)
                continue
            except BaseException:
                self.flights.end(flight)
                raise
            self.flights.end(flight, answered=True)
            if not self._answered.is_set():
                self._answered.set()
                self._decide()
            service = flight.service()
            queued = max(0.0, flight.ended - asked - service)
            return Answer(completion, attempt, round(service, 3), round(queued, 3))

    def _spend(self) -> None:
        """Count one request against ``policy.budget``; the one past it is never sent."""
        budget = self.policy.budget
        if budget is None:
            return
        with self._lock:
            if self._sent >= budget:
                raise EndpointError(f"over budget ({budget} requests)", over_budget=True)
            self._sent += 1

    def outcome(self, error: EndpointError | None) -> None:
        """A run's question finished (``error`` None: answered). A fatal error stops the run at
        once; the first ``policy.stop_after`` to finish all failing with one error (one
        signature: the same status and message but for ids and numbers) stop it too."""
        with self._lock:
            if error is not None and error.fatal and self.stopped_by is None:
                self.stopped_by = error
                self.stop.set()
            if len(self._first) < self.policy.stop_after:
                self._first.append(None if error is None else error_signature(error))
                alike = len(self._first) == self.policy.stop_after and len(set(self._first)) == 1
                if error is not None and alike and self.stopped_by is None:
                    self.stopped_by = error
                    self.stop.set()
        self._decide()


def open_chat_session(
    endpoint: ModelEndpoint, policy: ChatPolicy | None = None, *, user_agent: str = "kitab", key: KeyFrom = KeyFrom()
) -> ChatSession:
    """The session on ``endpoint`` (its base URL, model and cache file: None keeps the answers in
    memory) under ``policy`` (None: the defaults); the key comes from ``key``'s variable now
    (default ``OPENAI_API_KEY``). A malformed base URL, or a required key that is not set, is a
    KitabError before anything is opened."""
    policy = policy or ChatPolicy()
    client = ChatClient(
        endpoint.base_url,
        endpoint.model,
        api_key=env_api_key(key),
        timeout=policy.timeout,
        max_connections=policy.concurrency,
        user_agent=user_agent,
    )
    try:
        cache = ResponseCache(endpoint.cache or None)
    except BaseException:
        client.close()
        raise
    return ChatSession(client, cache, policy)
