"""The one client for OpenAI-compatible chat endpoints: what ``kitab answer``
(kitab/release/answer.py) and the model tagger (tasks/taggers/model.py) send, one request at a
time, and where the answers are kept. Both ask through a session
(kitab/sources/chat_session.py: this client, the cache, the limiter and the retry policy).

The endpoint is anything that serves ``POST {base_url}/chat/completions`` the way OpenAI does
(OpenAI, vLLM, llama.cpp's server, Ollama's ``/v1``, gateways). This module is the only one
that sends them (kitab/simulate/chat.py is the loopback server tests and benchmarks answer with).

- **The key** (``OPENAI_API_KEY``, :func:`env_api_key`) goes only into the request header:
  never into a log line, an error message or the cache. A base URL carrying an ``api-version``
  query parameter is an Azure-style gateway: the key goes in the ``api-key`` header there
  instead of ``Authorization: Bearer``.
- **What is retried** (the session's policy, kitab/sources/chat_session.py, decides when):
  HTTP 408/409/425/429, 5xx, timeouts, dropped connections and unreadable 200s are retryable,
  with the server's ``Retry-After`` (or OpenAI's ``retry-after-ms``) when it sends one. 401,
  403 and 404 are fatal (a wrong key, URL or model fails every request alike); another 4xx
  fails that request only. A refused connection (nothing listens at the URL) is not retried:
  ``refused``, and fatal (the session retries it only once the endpoint has answered, a server
  restarting).
- **The same error**: :func:`error_signature`, the status and the message with its request
  ids, uuids, numbers and hex taken out, so that one error is recognised whatever id each
  message carries (the session's early stop groups by it).
- **The response cache** (:class:`ResponseCache`): one SQLite table of JSON records keyed by
  :func:`cache_key`, sha256 of (model, prompt, parameters). The endpoint's URL is not part of
  the key: the same model behind another gateway gives the same answer.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from kitab.core.errors import KitabError
from kitab.core.policy import DEFAULT_TEMPERATURE, parse_retry_after
from kitab.core.text import is_unicode

ENV_API_KEY = "OPENAI_API_KEY"
FATAL_STATUS = frozenset({401, 403, 404})  # the run's configuration is wrong: every request would fail
RETRY_STATUS = frozenset({408, 409, 425, 429})  # besides every 5xx
# The most a response body may be, compressed (as sent) and decompressed (as read): a chat
# completion of kitab evaluate's largest response (200,000 characters, each at most a 6-byte
# JSON escape) plus as much reasoning fits here; a 4 MB gzip body inflating to gigabytes is cut
# at this many decompressed bytes, not after.
MAX_BODY_BYTES = 8 * 2**20
MAX_TOKEN_COUNT = 2**53  # a usage count above this is not a count (JSON numbers beyond it are not exact)


@dataclass(frozen=True)
class KeyFrom:
    """Where a session's key comes from: the variable ``env`` (None: no key is sent); absent or
    empty is no auth header (as local servers expect) unless ``required``, then an error naming
    the variable (a models file's ``api_key_env``: the key it names must be there)."""

    env: str | None = ENV_API_KEY
    required: bool = False


def env_api_key(source: KeyFrom = KeyFrom()) -> str | None:
    """The key from ``source``'s variable (default ``OPENAI_API_KEY``), read now; never stored."""
    key = (os.environ.get(source.env) or None) if source.env else None
    if key is None and source.required:
        raise KitabError(f"no API key: the variable {source.env} is not set")
    return key


@dataclass(frozen=True)
class Params:
    """The chat parameters sent with every prompt (and part of the cache key)."""

    temperature: float | None = DEFAULT_TEMPERATURE  # None: not sent (reasoning models refuse one)
    max_tokens: int | None = 400  # None: not sent (the server's default)
    seed: int | None = None
    max_completion_tokens: int | None = None  # what OpenAI's reasoning models take instead of max_tokens
    top_p: float | None = None

    def payload(self) -> dict:
        """The parameters as sent: only those given (a None is left to the server's default)."""
        out: dict = {}
        for name in ("temperature", "max_tokens", "max_completion_tokens", "top_p", "seed"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def cache_key(model: str, prompt: str, params: Params, *, system: str | None = None, sample: int = 0) -> str:
    """sha256 of the canonical JSON of (model, prompt, parameters, and the system prompt and
    sample number if any): the one identity of a question (sample k > 0: its k-th asking)."""
    identity: dict = {"model": model, "prompt": prompt, "params": params.payload()}
    if system is not None:
        identity["system"] = system
    if sample:
        identity["sample"] = sample
    canonical = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning: str | None = None  # a reasoning model's reasoning_content / reasoning, kept apart


@dataclass(frozen=True)
class Answer:
    """A completion and what getting it took: tries; ``seconds``, the service time (from when the
    answering request was sent, or when the last of the session's requests still in flight then
    ended, to its answer: the server's own time on it, kitab/sources/chat_session.py); and
    ``queued_seconds``, the rest of the question's time (kitab's waits for a slot, the limiter,
    a Retry-After, backoff, the tries that failed, and the time behind its own requests)."""

    completion: Completion
    attempts: int
    seconds: float
    queued_seconds: float = 0.0


class EndpointError(Exception):
    """One request failed: ``status`` (None: no HTTP answer), whether to retry, how long the
    server asked us to wait (seconds, or None), whether the connection was refused, and whether
    it was never sent because the session's request budget was spent."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        refused: bool = False,
        over_budget: bool = False,
        timed_out: bool = False,
    ):
        super().__init__(message)
        self.status, self.retryable, self.retry_after, self.refused = status, retryable, retry_after, refused
        self.over_budget = over_budget
        self.timed_out = timed_out  # no answer within the timeout (the session lowers its concurrency)

    @property
    def fatal(self) -> bool:
        """Every request would fail alike: a wrong key, URL or model, nothing listening, or no
        budget left."""
        return self.status in FATAL_STATUS or self.refused or self.over_budget


# What varies between two messages of one error: uuids, tokens holding a digit (request ids,
# counts, times, 0x...), long hex runs and long runs mixing cases past the first letter (ids
# without a digit; not a capitalised word).
_VARYING = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|[\w.:/-]*\d[\w.:/-]*"
    r"|\b[0-9a-fA-F]{8,}\b"
    r"|\b\w(?=\w*[a-z])(?=\w*[A-Z])\w{15,}\b"
)


def error_signature(error: EndpointError) -> tuple[int | None, str]:
    """``error`` as (status, normalised message): two requests failing the same way have the
    same signature even when each message names its own request id, time or counter."""
    message = _VARYING.sub("#", str(error))
    return error.status, " ".join(message.lower().split())


def checked_base_url(base_url: str) -> httpx.URL:
    """``base_url`` as a URL, or KitabError in one line (told before a run starts, too)."""
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise KitabError(f"base URL {base_url!r}: expected an http(s) URL such as https://api.openai.com/v1")
    return url


class Stopped(Exception):
    """The caller's stop event was set (a fatal answer elsewhere, or Ctrl-C) before an answer."""


# -- the endpoint -------------------------------------------------------------------------------
class _Watch:
    """One request's sockets (from httpcore's trace, and the response's stream), so that its
    deadline, or a stop, can shut them down: a read blocked on a silent server returns at once."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []
        self.expired = False
        self._lock = threading.Lock()

    def trace(self, event: str, info: dict) -> None:
        if event.endswith((".connect_tcp.complete", ".start_tls.complete")):
            self.add(info.get("return_value"))

    def add(self, stream) -> None:
        try:
            sock = stream.get_extra_info("socket") if stream is not None else None
        except Exception:  # a transport without sockets: only the read timeout bounds it
            sock = None
        if isinstance(sock, socket.socket):
            with self._lock:
                self.sockets.append(sock)

    def cut(self, *, expired: bool = False) -> None:
        with self._lock:
            self.expired = self.expired or expired
            sockets = list(self.sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Deadline:
    """One request's deadline: ``timeout`` seconds from when its clock starts (``started()``: a
    time, or None while it is still behind the session's earlier requests), and never later than
    ``latest``; when it passes, ``expire()`` (the request's sockets are shut down)."""

    POLL = 0.05  # seconds between looks while the clock has not started

    def __init__(self, timeout: float, started: Callable[[], float | None], latest: float, expire) -> None:
        self.timeout, self.started, self.latest, self.expire = timeout, started, latest, expire
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="kitab-chat-deadline")

    def due(self) -> float:
        begin = self.started()
        return self.latest if begin is None else min(self.latest, begin + self.timeout)

    def passed(self) -> bool:
        return time.monotonic() >= self.due()

    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        self._done.set()

    def _watch(self) -> None:
        while not self._done.is_set():
            begin = self.started()
            left = self.due() - time.monotonic()
            if left <= 0:
                self.expire()
                return
            self._done.wait(left if begin is not None else min(left, self.POLL))


class ChatClient:
    """``POST {base_url}/chat/completions`` over one pooled httpx client (thread-safe).

    Every request is bounded: ``timeout`` seconds for all of it (connect, headers and body
    together: a body that trickles forever is cut there), counted from when its clock starts
    (``complete``'s ``started``: the session starts it once its own earlier requests have ended,
    so time in a one-at-a-time server's queue behind them is not counted; at most
    ``max_connections`` timeouts after the request was sent), at most ``max_body_bytes`` as sent
    and as decompressed, and :meth:`abort` (a stop, Ctrl-C) shuts down every request in flight."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None,
        timeout: float = 600.0,
        max_connections: int = 8,
        user_agent: str = "kitab",
        max_body_bytes: int = MAX_BODY_BYTES,
    ):
        url = checked_base_url(base_url)
        self.model = model
        self.shown_url = str(url.copy_with(userinfo=b"", query=None))  # the base URL without credentials
        self.url = url.copy_with(path=url.path.rstrip("/") + "/chat/completions")
        self.timeout, self.max_body_bytes = timeout, max_body_bytes
        # the longest a request may take: behind every other of the pool's requests, each bounded
        self.longest = timeout * max_connections
        headers = {"Content-Type": "application/json", "User-Agent": user_agent}
        if api_key:
            if "api-version" in url.params:  # Azure-style gateway
                headers["api-key"] = api_key
            else:
                headers["Authorization"] = f"Bearer {api_key}"
        self._secret = api_key or None
        self._watches: set[_Watch] = set()
        self._watches_lock = threading.Lock()
        self._aborted = False
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.longest, connect=min(timeout, 15.0)),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            follow_redirects=False,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def abort(self) -> None:
        """Stop every request in flight now (their sockets shut down) and refuse new ones: each
        raises :class:`Stopped`."""
        self._aborted = True
        with self._watches_lock:
            watches = list(self._watches)
        for watch in watches:
            watch.cut()

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def complete(
        self,
        prompt: str,
        params: Params,
        *,
        system: str | None = None,
        started: Callable[[], float | None] | None = None,
    ) -> Completion:
        """One request, no retry: the completion, or EndpointError saying whether to retry
        (Stopped after :meth:`abort`). ``started``: when the timeout's clock started (None while
        it has not; by default, when the request was sent)."""
        messages = ([{"role": "system", "content": system}] if system is not None else []) + [
            {"role": "user", "content": prompt}
        ]
        body = {"model": self.model, "messages": messages, **params.payload()}
        if self._aborted:
            raise Stopped()
        watch = _Watch()
        sent = time.monotonic()
        deadline = _Deadline(
            self.timeout, started or (lambda: sent), sent + self.longest, lambda: watch.cut(expired=True)
        )
        with self._watches_lock:
            self._watches.add(watch)
        deadline.start()
        try:
            status, headers, raw = self._exchange(body, watch, deadline)
        finally:
            deadline.cancel()
            with self._watches_lock:
                self._watches.discard(watch)
        if status != 200:
            retryable = status in RETRY_STATUS or status >= 500
            # no server text for 401/403: OpenAI's names part of the key it refused
            detail = "" if status in (401, 403) else _error_detail(raw, self._scrub)
            raise EndpointError(
                f"HTTP {status}{detail}",
                status=status,
                retryable=retryable,
                retry_after=parse_retry_after(headers) if retryable else None,
            )
        return _completion(raw)

    def _exchange(self, body: dict, watch: _Watch, deadline: _Deadline) -> tuple[int, httpx.Headers, bytes]:
        """Send one request and read its answer under the deadline and the size caps."""
        try:
            request = self._http.build_request("POST", self.url, json=body, extensions={"trace": watch.trace})
            response = self._http.send(request, stream=True)
            try:
                watch.add(response.extensions.get("network_stream"))
                if self._aborted:
                    raise Stopped()
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.max_body_bytes:
                    raise _too_big(self.max_body_bytes)
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > self.max_body_bytes or response.num_bytes_downloaded > self.max_body_bytes:
                        raise _too_big(self.max_body_bytes)
                    if deadline.passed():
                        watch.expired = True
                        break
                    chunks.append(chunk)
                if watch.expired:
                    raise httpx.ReadTimeout("the deadline passed")
                return response.status_code, response.headers, b"".join(chunks)
            finally:
                response.close()
        except (httpx.TimeoutException, httpx.TransportError, httpx.DecodingError, OSError) as exc:
            if self._aborted:
                raise Stopped() from None
            if watch.expired or isinstance(exc, httpx.TimeoutException):
                raise EndpointError(
                    f"the endpoint did not answer in full within {self.timeout:g} s", retryable=True, timed_out=True
                ) from None
            if isinstance(exc, httpx.DecodingError):
                raise EndpointError("a response body that does not decompress", retryable=True) from None
            if _refused(exc):  # nothing listens there: a retry in 30 s finds nothing either
                raise EndpointError(f"cannot connect to {self.shown_url} (connection refused)", refused=True) from None
            # refused, reset, cut: the message names no header
            raise EndpointError(f"no answer from the endpoint ({type(exc).__name__})", retryable=True) from None


def _refused(exc: BaseException) -> bool:
    """Whether ``exc`` (httpx's, wrapping httpcore's, wrapping the socket's) is a refused connection."""
    seen: BaseException | None = exc
    for _ in range(8):  # the chain is short; a cycle would not be
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or getattr(seen, "errno", None) == errno.ECONNREFUSED:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _too_big(limit: int) -> EndpointError:
    return EndpointError(f"a response body over {limit:,} bytes (compressed or not): not a chat completion")


def _completion(raw: bytes) -> Completion:
    """The completion in a 200's body, or EndpointError (retryable) for any body that is not
    one: not JSON, nested past the parser, a token count out of range, text that is not Unicode."""
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        message = choice.get("message") or {}
        text = message.get("content")
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        usage = data.get("usage") or {}
        finish_reason = choice.get("finish_reason")
        counts = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
        raise EndpointError("HTTP 200 without an OpenAI-style chat completion in it", retryable=True) from None
    text = text if isinstance(text, str) else ""
    reasoning = reasoning if isinstance(reasoning, str) else None
    finish_reason = finish_reason if isinstance(finish_reason, str) else None
    for value in (text, reasoning, finish_reason):
        if value is not None and not is_unicode(value):
            raise EndpointError("HTTP 200 whose text is not valid Unicode (a lone surrogate)", retryable=True)
    tokens = [_int_or_none(value) for value in counts]
    if any(value is not None and not 0 <= value <= MAX_TOKEN_COUNT for value in tokens):
        raise EndpointError("HTTP 200 with a token count out of range", retryable=True)
    return Completion(text, finish_reason, tokens[0], tokens[1], reasoning)


def _int_or_none(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _error_detail(raw: bytes, scrub: Callable[[str], str]) -> str:
    """The server's own error message (an OpenAI-style error body), the key scrubbed out
    before it is cut short (a key across the cut never shows its first characters), or nothing."""
    try:
        message = json.loads(raw)["error"]["message"]
    except Exception:
        return ""
    message = scrub(" ".join(str(message).split()))
    if not is_unicode(message):
        message = message.encode("utf-8", "replace").decode("utf-8")
    return f": {message[:160]}" if message else ""


# -- the cache ------------------------------------------------------------------------------------
class ResponseCache:
    """JSON records by :func:`cache_key` in one SQLite table (``path`` None: in memory), each
    committed as it is put (WAL): a killed run loses only the requests in flight. Thread-safe."""

    def __init__(self, path: Path | str | None):
        self.path = None if path is None else Path(path)
        try:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                ":memory:" if self.path is None else self.path, timeout=30.0, check_same_thread=False
            )
            if self.path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "record TEXT NOT NULL, stored_at TEXT NOT NULL)"
            )
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            raise KitabError(f"cannot use the response cache {self.path}: {exc}") from None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get_many(self, keys: Iterable[str]) -> dict[str, dict]:
        keys = list(keys)
        out: dict[str, dict] = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                chunk = keys[start : start + 500]
                cursor = self._db.execute(
                    f"SELECT key, record FROM responses WHERE key IN ({','.join('?' * len(chunk))})", chunk
                )
                out.update((key, json.loads(record)) for key, record in cursor.fetchall())
        return out

    def put_many(self, model: str, records: dict[str, dict]) -> None:
        stored_at = datetime.now(UTC).isoformat(timespec="seconds")
        rows = [
            (key, model, json.dumps(record, ensure_ascii=False, sort_keys=True), stored_at)
            for key, record in records.items()
        ]
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", rows)

    def put(self, model: str, key: str, record: dict) -> None:
        self.put_many(model, {key: record})
