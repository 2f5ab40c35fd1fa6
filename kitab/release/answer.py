"""``kitab answer``: send every query's prompt to an OpenAI-compatible chat endpoint and write
the answers file ``kitab evaluate`` reads.

The endpoint is anything that serves ``POST {base_url}/chat/completions`` the way OpenAI does
(OpenAI, vLLM, llama.cpp's server, Ollama's ``/v1``, gateways). The key comes from
``OPENAI_API_KEY`` and goes only into the request header: never into a log line, an error
message, the cache or the answers file. A base URL carrying an ``api-version`` query parameter
is an Azure-style gateway: the key goes in the ``api-key`` header there instead of
``Authorization: Bearer``.

How it behaves (docs/evaluate.md):

- **Bounded**: at most ``concurrency`` requests in flight, at most ``rate`` requests started per
  second (one limiter shared by every worker).
- **Retries**: HTTP 429, 5xx, timeouts and dropped connections are retried with exponential
  backoff; a ``Retry-After`` (or OpenAI's ``retry-after-ms``) is honoured and pauses *every*
  worker until then, since the server said so for the client, not for one request. A
  Retry-After longer than ``max_retry_after`` fails the query instead of waiting hours. 401,
  403 and 404 stop the whole run at once (a wrong key, URL or model fails every query alike);
  another 4xx fails that query only.
- **Cache**: every answer is committed to a SQLite file as soon as it arrives, keyed by
  sha256 of (model, prompt, parameters): a rerun, or a run resumed after a kill, sends 0
  requests for what it has. The endpoint's URL is not part of the key (the same model behind
  another gateway gives the same answer); change ``--model`` or a parameter to ask again.
- **Output**: one JSON line per query, ``{"query_id", "template", "model", "response",
  "finish_reason", "prompt_tokens", "completion_tokens", "seconds", "attempts"}``, written
  atomically at the end, in the release's query order. A rerun from the cache writes the very
  same bytes (the same answers file sha256, so the same evaluation).
- A query that got no answer (its retries used up, a 400) is listed in the error, and no
  answers file is written, unless ``allow_missing``: then the file holds the answers there
  are, and ``kitab evaluate`` scores the missing queries as unanswered (wrong).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from kitab.core.errors import KitabError
from kitab.core.files import write_via_temp

# The paper's maximum output lengths per template (App. D); temperature 0 (§4).
MAX_TOKENS = {"no-context": 400, "with-context": 1000, "self-context": 3000, "cot": 400}
FATAL_STATUS = frozenset({401, 403, 404})  # the run's configuration is wrong: every query would fail
RETRY_STATUS = frozenset({408, 409, 425, 429})  # besides every 5xx


@dataclass(frozen=True)
class Prompt:
    """One query to ask: its id, the template it was rendered from and the text."""

    query_id: str
    template: str
    text: str


@dataclass(frozen=True)
class Params:
    """The chat parameters sent with every prompt (and part of the cache key)."""

    temperature: float = 0.0
    max_tokens: int | None = 400  # None: not sent (the server's default)
    seed: int | None = None

    def payload(self) -> dict:
        out: dict = {"temperature": self.temperature}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.seed is not None:
            out["seed"] = self.seed
        return out


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None


class EndpointError(Exception):
    """One request failed: ``status`` (None: no HTTP answer), whether to retry, and how long
    the server asked us to wait (seconds, or None)."""

    def __init__(
        self, message: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None
    ):
        super().__init__(message)
        self.status, self.retryable, self.retry_after = status, retryable, retry_after

    @property
    def fatal(self) -> bool:
        return self.status in FATAL_STATUS


def cache_key(model: str, prompt: str, params: Params) -> str:
    """sha256 of the canonical JSON of (model, prompt, parameters): the one identity of a question."""
    canonical = json.dumps(
        {"model": model, "prompt": prompt, "params": params.payload()},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def parse_retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or an
    HTTP date); None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


# -- the endpoint -------------------------------------------------------------------------------
class ChatClient:
    """``POST {base_url}/chat/completions`` over one pooled httpx client (thread-safe)."""

    def __init__(
        self, base_url: str, model: str, *, api_key: str | None, timeout: float = 600.0, max_connections: int = 8
    ):
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise KitabError(f"--base-url {base_url!r}: expected an http(s) URL such as https://api.openai.com/v1")
        self.model = model
        self.url = url.copy_with(path=url.path.rstrip("/") + "/chat/completions")
        headers = {"content-type": "application/json", "user-agent": "kitab-answer"}
        if api_key:
            if "api-version" in url.params:  # Azure-style gateway
                headers["api-key"] = api_key
            else:
                headers["authorization"] = f"Bearer {api_key}"
        self._secret = api_key or None
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 15.0)),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            follow_redirects=False,
        )

    def close(self) -> None:
        self._http.close()

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def complete(self, prompt: str, params: Params) -> Completion:
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}], **params.payload()}
        try:
            response = self._http.post(self.url, json=body)
        except httpx.TimeoutException:
            raise EndpointError("the endpoint did not answer in time", retryable=True) from None
        except httpx.TransportError as exc:  # refused, reset, cut: the message names no header
            raise EndpointError(f"no answer from the endpoint ({type(exc).__name__})", retryable=True) from None
        status = response.status_code
        if status != 200:
            retryable = status in RETRY_STATUS or status >= 500
            # no server text for 401/403: OpenAI's names part of the key it refused
            detail = "" if status in (401, 403) else self._scrub(_error_detail(response))
            raise EndpointError(
                f"HTTP {status}{detail}",
                status=status,
                retryable=retryable,
                retry_after=parse_retry_after(response.headers) if retryable else None,
            )
        try:
            data = response.json()
            choice = data["choices"][0]
            text = (choice.get("message") or {}).get("content")
            usage = data.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise EndpointError(
                "HTTP 200 without an OpenAI-style chat completion in it", status=status, retryable=True
            ) from None
        return Completion(
            text if isinstance(text, str) else "",
            choice.get("finish_reason"),
            _int_or_none(usage.get("prompt_tokens")),
            _int_or_none(usage.get("completion_tokens")),
        )


def _int_or_none(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _error_detail(response: httpx.Response) -> str:
    """The server's own error message, short (an OpenAI-style error body), or nothing."""
    try:
        message = response.json()["error"]["message"]
    except Exception:
        return ""
    message = " ".join(str(message).split())
    return f": {message[:160]}" if message else ""


# -- pacing ---------------------------------------------------------------------------------------
class RateLimiter:
    """At most ``rate`` request starts per second over all threads (evenly spaced), and none
    before a pause the server asked for (:meth:`hold`)."""

    def __init__(
        self,
        rate: float | None,
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

    def acquire(self) -> None:
        with self._lock:
            now = self._clock()
            slot = max(now, self._next, self._hold_until)
            self._next = slot + self.interval
        if slot > now:
            self._sleep(slot - now)


# -- the cache --------------------------------------------------------------------------------------
class AnswerCache:
    """Answers by cache key in one SQLite file, each committed as it arrives (WAL): a killed
    run loses only the requests in flight. Only the owning thread touches it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                "response TEXT NOT NULL, finish_reason TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, "
                "seconds REAL NOT NULL, attempts INTEGER NOT NULL, answered_at TEXT NOT NULL)"
            )
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            raise KitabError(f"cannot use the answer cache {self.path}: {exc}") from None

    def close(self) -> None:
        self._db.close()

    def get_many(self, keys: Iterable[str]) -> dict[str, dict]:
        keys = list(keys)
        out: dict[str, dict] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            cursor = self._db.execute(
                f"SELECT key, response, finish_reason, prompt_tokens, completion_tokens, seconds, attempts "
                f"FROM answers WHERE key IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            for key, response, finish, p_tokens, c_tokens, seconds, attempts in cursor.fetchall():
                out[key] = {
                    "response": response,
                    "finish_reason": finish,
                    "prompt_tokens": p_tokens,
                    "completion_tokens": c_tokens,
                    "seconds": seconds,
                    "attempts": attempts,
                }
        return out

    def put(self, key: str, model: str, record: dict) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                model,
                record["response"],
                record["finish_reason"],
                record["prompt_tokens"],
                record["completion_tokens"],
                record["seconds"],
                record["attempts"],
                datetime.now(UTC).isoformat(timespec="seconds"),
            ),
        )
        self._db.commit()


# -- the run ----------------------------------------------------------------------------------------
@dataclass
class RunStats:
    """What a run did, for the progress display and the summary (thread-safe counters)."""

    total: int = 0
    from_cache: int = 0
    answered: int = 0  # new answers this run
    requests: int = 0  # HTTP requests sent, retries included
    retries: int = 0
    waited_retry_after: float = 0.0
    failed: dict[str, str] = field(default_factory=dict)  # query_id -> why
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    @property
    def done(self) -> int:
        return self.from_cache + self.answered + len(self.failed)

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        rate = self.requests / elapsed if elapsed > 0 else 0.0
        eta = ""
        new = self.answered + len(self.failed)
        if 0 < new and self.done < self.total:
            eta = f", about {_clock((self.total - self.done) * elapsed / new)} left"
        return (
            f"answered {self.from_cache + self.answered:,}/{self.total:,} ({self.from_cache:,} cached, "
            f"{self.requests:,} requests, {self.retries:,} retries, {len(self.failed):,} failed), "
            f"{self.prompt_tokens + self.completion_tokens:,} tokens, {rate:.1f} req/s, "
            f"{_clock(elapsed)}{eta}"
        )


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return (
        f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else f"{seconds // 60}:{seconds % 60:02d}"
    )


@dataclass(frozen=True)
class Retry:
    max_attempts: int = 6
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    max_retry_after: float = 300.0

    def backoff(self, attempt: int) -> float:
        """Exponential with full jitter (attempt 1 is the first retry)."""
        ceiling = min(self.backoff_max, self.backoff_initial * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


class _Stop(Exception):
    """The run was stopped (a fatal answer elsewhere, or Ctrl-C)."""


def _ask(
    client: ChatClient,
    prompt: Prompt,
    params: Params,
    limiter: RateLimiter,
    retry: Retry,
    stats: RunStats,
    stop: threading.Event,
) -> dict:
    """One query, retried until it has an answer or fails for good (raises EndpointError)."""
    started = time.monotonic()
    attempt = 0
    while True:
        if stop.is_set():
            raise _Stop()
        limiter.acquire()
        if stop.is_set():
            raise _Stop()
        attempt += 1
        stats.add(requests=1)
        try:
            completion = client.complete(prompt.text, params)
        except EndpointError as exc:
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
                limiter.hold(exc.retry_after)  # every worker waits: the server throttles the client
                stats.add(waited_retry_after=exc.retry_after)
            else:
                stop.wait(retry.backoff(attempt))
            stats.add(retries=1)
            continue
        return {
            "response": completion.text,
            "finish_reason": completion.finish_reason,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "seconds": round(time.monotonic() - started, 3),
            "attempts": attempt,
        }


def answer_prompts(
    prompts: Sequence[Prompt],
    *,
    client: ChatClient,
    cache: AnswerCache,
    params: Params,
    concurrency: int = 4,
    rate: float | None = None,
    retry: Retry = Retry(),
    on_progress: Callable[[RunStats], None] | None = None,
) -> tuple[dict[str, dict], RunStats]:
    """Ask every prompt not in the cache; returns ``{query_id: record}`` for every answered
    query (cached or new) and the run's counts. Each new answer is in the cache before this
    returns or raises; a fatal answer (401/403/404) raises KitabError after the requests in
    flight end."""
    if concurrency < 1:
        raise KitabError(f"--concurrency {concurrency}: expected 1 or more")
    if rate is not None and rate <= 0:
        raise KitabError(f"--rate {rate}: expected a positive number of requests per second")
    stats = RunStats(total=len(prompts))
    keys = {p.query_id: cache_key(client.model, p.text, params) for p in prompts}
    cached = cache.get_many(set(keys.values()))
    results = {p.query_id: cached[keys[p.query_id]] for p in prompts if keys[p.query_id] in cached}
    stats.from_cache = len(results)
    todo = [p for p in prompts if p.query_id not in results]
    limiter, stop = RateLimiter(rate), threading.Event()
    fatal: EndpointError | None = None
    if on_progress:
        on_progress(stats)
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="kitab-answer")
    pending: dict[Future, Prompt] = {}
    queue = iter(todo)
    try:

        def refill() -> None:  # keep at most 2×concurrency submitted: a stop leaves little to cancel
            while len(pending) < 2 * concurrency and not stop.is_set():
                prompt = next(queue, None)
                if prompt is None:
                    return
                pending[pool.submit(_ask, client, prompt, params, limiter, retry, stats, stop)] = prompt

        refill()
        while pending:
            finished, _ = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            for future in finished:
                prompt = pending.pop(future)
                try:
                    record = future.result()
                except _Stop:
                    continue
                except EndpointError as exc:
                    if exc.fatal and fatal is None:
                        fatal = exc
                        stop.set()
                    stats.failed[prompt.query_id] = str(exc)
                    continue
                cache.put(keys[prompt.query_id], client.model, record)
                results[prompt.query_id] = record
                stats.add(
                    answered=1,
                    prompt_tokens=record["prompt_tokens"] or 0,
                    completion_tokens=record["completion_tokens"] or 0,
                )
            refill()
            if on_progress:
                on_progress(stats)
    except BaseException:
        stop.set()  # Ctrl-C: the workers stop at their next step; what arrived is cached
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if fatal is not None:
        raise KitabError(
            f"the endpoint refused the request ({fatal}): check --base-url, --model and "
            f"OPENAI_API_KEY; {len(results)} answers are cached, a rerun asks only for the rest"
        )
    return results, stats


def answers_lines(prompts: Sequence[Prompt], results: dict[str, dict], model: str) -> list[str]:
    """The answers file's lines, in the prompts' order, for the answered queries."""
    lines = []
    for p in prompts:
        record = results.get(p.query_id)
        if record is None:
            continue
        lines.append(
            json.dumps(
                {
                    "query_id": p.query_id,
                    "template": p.template,
                    "model": model,
                    "response": record["response"],
                    "finish_reason": record["finish_reason"],
                    "prompt_tokens": record["prompt_tokens"],
                    "completion_tokens": record["completion_tokens"],
                    "seconds": record["seconds"],
                    "attempts": record["attempts"],
                },
                ensure_ascii=False,
            )
        )
    return lines


def write_answers(path: Path, lines: list[str]) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))

    write_via_temp(path, write)


def release_prompt_list(warehouse: Path, release: str, template: str) -> list[Prompt]:
    """Every query's prompt of ``release`` (``kitab prompts``' lines, in its order)."""
    from kitab.release.prompts import release_prompts

    return [
        Prompt(row["query_id"], row["template"], row["prompt"])
        for row in map(json.loads, release_prompts(warehouse, release, template))
    ]


def answer_release(
    warehouse: Path,
    release: str,
    *,
    model: str,
    base_url: str,
    out: Path,
    template: str = "no-context",
    api_key: str | None = None,
    concurrency: int = 4,
    rate: float | None = None,
    params: Params | None = None,
    retry: Retry = Retry(),
    cache_path: Path | None = None,
    timeout: float = 600.0,
    allow_missing: bool = False,
    limit: int | None = None,
    on_progress: Callable[[RunStats], None] | None = None,
) -> dict:
    """``kitab answer``: every query of ``release`` (the first ``limit``, if given) asked of
    ``model`` at ``base_url``; the answers file written to ``out``. Returns a summary."""
    warehouse = Path(warehouse)
    prompts = release_prompt_list(warehouse, release, template)
    if limit is not None:
        prompts = prompts[:limit]
    params = params or Params(max_tokens=MAX_TOKENS.get(template))
    cache = AnswerCache(cache_path or warehouse / ".cache" / "answers.sqlite")
    started = time.monotonic()
    try:
        with ChatClient(base_url, model, api_key=api_key, timeout=timeout, max_connections=concurrency) as client:
            results, stats = answer_prompts(
                prompts,
                client=client,
                cache=cache,
                params=params,
                concurrency=concurrency,
                rate=rate,
                retry=retry,
                on_progress=on_progress,
            )
    finally:
        cache.close()
    summary = {
        "release": release,
        "model": model,
        "template": template,
        "queries": len(prompts),
        "answered": len(results),
        "from_cache": stats.from_cache,
        "requests": stats.requests,
        "retries": stats.retries,
        "failed": dict(stats.failed),
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.completion_tokens,
        "seconds": round(time.monotonic() - started, 3),
        "out": str(out),
        "written": False,
        "params": params.payload(),
    }
    if stats.failed and not allow_missing:
        first = next(iter(stats.failed.items()))
        raise KitabError(
            f"{len(stats.failed)} of {len(prompts)} queries got no answer (e.g. {first[0]}: {first[1]})"
            f"; {len(results)} answers are cached: rerun to ask again, or pass --allow-missing"
        )
    write_answers(Path(out), answers_lines(prompts, results, model))
    summary["written"] = True
    return summary
