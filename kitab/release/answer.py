"""``kitab answer``: send every query's prompt to an OpenAI-compatible chat endpoint and write
the answers file ``kitab evaluate`` reads.

The client, its retry policy, its response cache, its limiter and the key's handling are one
chat session's (kitab/sources/chat_session.py, opened as the model tagger opens its own; the
numbers are kitab/core/policy.py's ChatPolicy); the key comes from ``OPENAI_API_KEY`` and goes
only into the request header: never into a log line, an error message, the cache or the
answers file.

How it behaves (docs/evaluate.md):

- **Bounded**: at most ``concurrency`` requests in flight, at most ``rate`` requests started per
  second (one limiter shared by every worker).
- **Retries**: the session's policy (429, 5xx, timeouts, dropped connections; a ``Retry-After``
  pauses *every* worker until then; one longer than ``max_retry_after`` fails the query). 401,
  403 and 404 stop the whole run at once (a wrong key, URL or model fails every query alike),
  and so does a refused connection (nothing listens at the base URL: one try, one line);
  another 4xx fails that query only.
- **Cache**: every answer is committed to the response cache as soon as it arrives, keyed by
  sha256 of (model, prompt, parameters): a rerun, or a run resumed after a kill, sends 0
  requests for what it has. The endpoint's URL is not part of the key (the same model behind
  another gateway gives the same answer); change ``--model`` or a parameter to ask again.
- **Output**: one JSON line per query, ``{"query_id", "template", "model", "response",
  "sample", "finish_reason", "reasoning", "reasoning_only", "prompt_tokens", "completion_tokens",
  "seconds", "queued_seconds", "attempts"}`` (``reasoning``: a reasoning model's
  reasoning_content, never read for titles; ``reasoning_only``: the reply was all reasoning, no
  answer: an abstention, counted in the summary's warning; ``seconds``: the answer's service
  time, ``queued_seconds``: the rest of its query's time, kitab/sources/chat_session.py),
  written atomically at the end, in the release's query order. A rerun from the cache writes the
  very same bytes (the same answers file sha256, so the same evaluation).
- **Stops early**: when the first ``stop_after`` (10, the session's policy) queries to finish
  all failed with the same error (one status and message, ids and numbers aside: a gateway
  answering 400 to every request, a 500 that outlasts every retry), the run stops there with
  that error in one line instead of asking every query; until then at most ``stop_after +
  concurrency`` queries start (the session's admit). A refused connection stops it at once.
- **Samples**: with ``samples`` N > 1 each query is asked N times (sample k's cache key holds
  k), and every line carries its ``sample`` (0 .. N-1); ``kitab evaluate`` scores each.
- A query that got no answer (its retries used up, a 400) is named with its reason: in the
  summary's ``failed`` ({query_id: reason}, in prompt order), in ``<out>.failed.jsonl``
  (:func:`failed_path`, one line per query, written atomically) and, the first few, in the
  error; no answers file is written, unless ``allow_missing``: then the file holds the answers
  there are, and ``kitab evaluate`` scores the missing queries as unanswered (wrong).
- **Costs** in the summary: ``requests``, ``retries`` and ``seconds`` (wall) of this run;
  ``prompt_tokens``, ``completion_tokens``, ``service_seconds`` and ``queued_seconds`` summed
  over the answers (cached ones included: what the answers cost when asked; the table
  model_runs holds the same numbers).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from kitab.core import jsonl
from kitab.core.errors import KitabError
from kitab.core.files import write_via_temp
from kitab.core.params import ModelEndpoint
from kitab.core.policy import ChatPolicy
from kitab.release.evaluation.answers import MAX_FILE_BYTES, MAX_RESPONSE_CHARS
from kitab.release.evaluation.parse import is_reasoning_only
from kitab.sources.chat import EndpointError, KeyFrom, Params, Stopped
from kitab.sources.chat_session import ChatSession, open_chat_session

FAILED_IN_ERROR = 3  # failed queries named in the error line (all of them are in the failed file)


@dataclass(frozen=True)
class Prompt:
    """One query to ask: its id, the template it was rendered from and the text."""

    query_id: str
    template: str
    text: str


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

    @property
    def done_new(self) -> int:
        return self.answered + len(self.failed)

    def line(self, final: bool = False) -> str:
        """The progress line; the time left only while running, and from answers alone (failures
        that come back at once, or after every retry, say nothing of how long answers take)."""
        elapsed = time.monotonic() - self.started
        rate = self.requests / elapsed if elapsed > 0 else 0.0
        eta = ""
        if not final and self.answered and self.done < self.total:
            eta = f", about {_clock((self.total - self.done) * elapsed / self.done_new)} left"
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


def _ask(session: ChatSession, prompt: Prompt, params: Params, stats: RunStats, system: str | None = None) -> dict:
    """One query under the session's retry policy: its cache record (raises EndpointError, Stopped)."""

    def on_retry(waited: float) -> None:
        stats.add(retries=1, waited_retry_after=waited)

    session.admit()  # before the early stop's verdict, a bounded number of queries start
    answer = session.ask(
        prompt.text, params, system=system, on_request=lambda: stats.add(requests=1), on_retry=on_retry
    )
    completion = answer.completion
    if len(completion.text) > MAX_RESPONSE_CHARS:  # kitab evaluate's cap: it would refuse the file
        raise EndpointError(
            f"a response of {len(completion.text):,} characters (at most {MAX_RESPONSE_CHARS:,}, "
            f"what kitab evaluate reads): not a model's book list"
        )
    return {
        "response": completion.text,
        "finish_reason": completion.finish_reason,
        "reasoning": completion.reasoning,
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "seconds": answer.seconds,
        "queued_seconds": answer.queued_seconds,
        "attempts": answer.attempts,
    }


def answer_prompts(
    prompts: Sequence[Prompt],
    *,
    session: ChatSession,
    params: Params,
    on_progress: Callable[[RunStats], None] | None = None,
    system: str | None = None,
    samples: int = 1,
) -> tuple[dict[tuple[str, int], dict], RunStats]:
    """Ask every (prompt, sample) not in the session's cache, ``policy.concurrency`` at a time;
    returns ``{(query_id, sample): record}`` for every answer (cached or new) and the run's
    counts. Each new answer is in the cache before this returns or raises; a fatal answer
    (401/403/404), or the first ``policy.stop_after`` queries all failing with one error, raises
    KitabError after the requests in flight end."""
    concurrency, stop_after = session.policy.concurrency, session.policy.stop_after
    if samples < 1:
        raise KitabError(f"--samples {samples}: expected 1 or more")
    stats = RunStats(total=len(prompts) * samples)
    keys = {
        (p.query_id, k): session.key(p.text, params, system=system, sample=k) for p in prompts for k in range(samples)
    }
    cached = session.cache.get_many(set(keys.values()))
    results = {unit: cached[key] for unit, key in keys.items() if key in cached}
    stats.from_cache = len(results)
    by_id = {p.query_id: p for p in prompts}
    # one question per cache key: two prompts of one text (the claims can repeat a claim) share
    # its answer, as the cache keeps one, so a rerun from the cache writes the very same file
    first_of: dict[str, tuple[str, int]] = {}
    for unit in keys:
        if unit not in results:
            first_of.setdefault(keys[unit], unit)
    todo = list(first_of.values())
    twins = [unit for unit in keys if unit not in results and first_of[keys[unit]] != unit]
    if on_progress:
        on_progress(stats)
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="kitab-answer")
    pending: dict[Future, Prompt] = {}
    queue = iter(todo)
    try:

        def refill() -> None:  # keep at most 2×concurrency submitted: a stop leaves little to cancel
            while len(pending) < 2 * concurrency and not session.stop.is_set():
                unit = next(queue, None)
                if unit is None:
                    return
                prompt = by_id[unit[0]]
                pending[pool.submit(_ask, session, prompt, params, stats, system)] = unit

        refill()
        while pending:
            finished, _ = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            for future in finished:
                unit = pending.pop(future)
                label = _label(unit, samples)
                try:
                    record = future.result()
                except Stopped:
                    continue
                except EndpointError as exc:
                    stats.failed[label] = str(exc)
                    session.outcome(exc)  # a fatal status, or the first queries failing alike, stop the run
                    continue
                session.outcome(None)  # one answer: the endpoint can answer
                session.cache.put(session.model, keys[unit], record)
                results[unit] = record
                stats.add(
                    answered=1,
                    prompt_tokens=record["prompt_tokens"] or 0,
                    completion_tokens=record["completion_tokens"] or 0,
                )
            refill()
            if on_progress:
                on_progress(stats)
        order = {unit: n for n, unit in enumerate(keys)}  # the failed in prompt order, not as they came
        labels = {unit[0] if samples == 1 else f"{unit[0]}#{unit[1]}": order[unit] for unit in keys}
        stats.failed = dict(sorted(stats.failed.items(), key=lambda item: labels[item[0]]))
    except BaseException:
        session.abort()  # Ctrl-C, SIGTERM: the requests in flight end now, not at their timeout; what arrived is cached
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    for unit in twins:  # the answer its first prompt got (counted as from the cache: it was not asked)
        first = first_of[keys[unit]]
        if first in results:
            results[unit] = results[first]
            stats.add(from_cache=1)
        elif _label(first, samples) in stats.failed:
            stats.failed[_label(unit, samples)] = stats.failed[_label(first, samples)]
    fatal = session.stopped_by
    if fatal is not None and not fatal.fatal:
        raise KitabError(
            f"stopped: the first {stop_after} queries all failed with {fatal} ({stats.requests} requests); "
            f"check --base-url, --model, the parameters (a reasoning model refuses a temperature: "
            f"--temperature none) and OPENAI_API_KEY"
        )
    if fatal is not None and fatal.over_budget:
        raise KitabError(f"{fatal}: {len(results)} answers are cached, a rerun asks only for the rest")
    if fatal is not None and fatal.refused:
        cached = f"; {len(results)} answers are cached, a rerun asks only for the rest" if results else ""
        raise KitabError(f"{fatal}: is the server running? check --base-url{cached}")
    if fatal is not None:
        raise KitabError(
            f"the endpoint refused the request ({fatal}): check --base-url, --model and "
            f"OPENAI_API_KEY; {len(results)} answers are cached, a rerun asks only for the rest"
        )
    return results, stats


def _label(unit: tuple[str, int], samples: int) -> str:
    """A (query, sample) as the failures name it."""
    return unit[0] if samples == 1 else f"{unit[0]}#{unit[1]}"


def answers_lines(
    prompts: Sequence[Prompt],
    results: dict[tuple[str, int], dict],
    model: str,
    samples: int = 1,
    population: dict | None = None,
) -> list[str]:
    """The answers file's lines, in the prompts' order (then samples'), for the answers there are;
    ``population``: ``{"limit", "limit_seed"}`` of a --limit run, on every line (kitab evaluate
    scores over that sample, kitab/release/evaluation/population.py)."""
    lines = []
    for p in prompts:
        for sample in range(samples):
            record = results.get((p.query_id, sample))
            if record is None:
                continue
            lines.append(_answer_line(p, sample, record, model, population))
    return lines


def _answer_line(p: Prompt, sample: int, record: dict, model: str, population: dict | None = None) -> str:
    return jsonl.dumps(
        {
            "query_id": p.query_id,
            "template": p.template,
            "model": model,
            "sample": sample,
            "response": record["response"],
            "finish_reason": record["finish_reason"],
            "reasoning": record.get("reasoning"),
            "reasoning_only": is_reasoning_only(record["response"], record.get("reasoning")),
            "prompt_tokens": record["prompt_tokens"],
            "completion_tokens": record["completion_tokens"],
            "seconds": record["seconds"],
            "queued_seconds": record.get("queued_seconds"),
            "attempts": record["attempts"],
            **(population or {}),
        },
        ensure_ascii=False,
    )


def write_answers(path: Path, lines: list[str]) -> None:
    size = sum(len(line.encode("utf-8")) + 1 for line in lines)
    if size > MAX_FILE_BYTES:  # kitab evaluate's cap: it would refuse the file
        raise KitabError(
            f"the answers would take {size:,} bytes, more than kitab evaluate reads ({MAX_FILE_BYTES:,}); "
            f"they are cached: answer the release in parts with --limit"
        )

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))

    write_via_temp(path, write)


def failed_path(out: Path) -> Path:
    """Where the run's failed queries are listed, beside the answers: ``answers.jsonl`` ->
    ``answers.failed.jsonl`` (a name without a suffix gets ``.failed.jsonl`` added)."""
    out = Path(out)
    return out.with_name(f"{out.stem if out.suffix else out.name}.failed.jsonl")


def write_failed(path: Path, failed: dict[str, str], samples: int = 1) -> None:
    """One JSON line per failed query, ``{"query_id", "sample", "reason"}`` in ``failed``'s order
    (labels ``id#k`` when ``samples`` > 1), written atomically; no failures: no file (an earlier
    run's list is removed, since the answers now hold those queries)."""
    path = Path(path)
    if not failed:
        path.unlink(missing_ok=True)
        return
    rows = []
    for label, reason in failed.items():
        query_id, sample = label.rsplit("#", 1) if samples > 1 else (label, "0")
        rows.append({"query_id": query_id, "sample": int(sample), "reason": " ".join(reason.split())})

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write("".join(jsonl.dumps(row, ensure_ascii=False) + "\n" for row in rows))

    write_via_temp(path, write)


def failed_lines(failed: dict[str, str], shown: int) -> list[str]:
    """The failed queries as a person reads them: one line each, at most ``shown``, then how many more."""
    lines = [f"{label}: {' '.join(reason.split())}" for label, reason in list(failed.items())[:shown]]
    if len(failed) > shown:
        lines.append(f"and {len(failed) - shown} more")
    return lines


def answer_costs(results: dict[tuple[str, int], dict]) -> dict:
    """Tokens in and out, service and queued seconds, summed over the answers (an answer cached
    before queued_seconds was recorded counts its whole time as service)."""
    total = {"prompt_tokens": 0, "completion_tokens": 0, "service_seconds": 0.0, "queued_seconds": 0.0}
    for record in results.values():
        total["prompt_tokens"] += record.get("prompt_tokens") or 0
        total["completion_tokens"] += record.get("completion_tokens") or 0
        total["service_seconds"] += record.get("seconds") or 0.0
        total["queued_seconds"] += record.get("queued_seconds") or 0.0
    total["service_seconds"] = round(total["service_seconds"], 3)
    total["queued_seconds"] = round(total["queued_seconds"], 3)
    return total


def release_prompt_list(
    warehouse: Path, release: str, template: str, *, limit: int | None = None, seed: int = 0, task: str = "queries"
) -> list[Prompt]:
    """Every prompt of ``task`` on ``release`` (``kitab prompts``' lines, in its order); with
    ``limit``, a seeded sample across authors (kitab/release/prompts.py)."""
    from kitab.release.task import task as task_named

    lines = task_named(task).prompts(warehouse, release, template, limit=limit, seed=seed)
    return [Prompt(row["query_id"], row["template"], row["prompt"]) for row in map(json.loads, lines)]


def answer_release(
    warehouse: Path,
    release: str,
    *,
    model: str,
    base_url: str,
    out: Path,
    template: str | None = None,
    task: str = "queries",
    policy: ChatPolicy | None = None,
    params: Params | None = None,
    cache_path: Path | None = None,
    allow_missing: bool = False,
    limit: int | None = None,
    limit_seed: int = 0,
    on_progress: Callable[[RunStats], None] | None = None,
    system: str | None = None,
    samples: int = 1,
    key: KeyFrom = KeyFrom(),
) -> dict:
    """``kitab answer``: every query of ``task`` on ``release`` (a seeded sample of ``limit`` across authors, if
    given) asked of ``model`` at ``base_url`` under ``policy`` (None: the defaults) through one chat session (the
    key from ``key``'s variable, default ``OPENAI_API_KEY``); the answers file written to ``out``. Returns a summary.
    ``template``: one of the task's (default: its first); the answer length: the template's (the task's)."""
    from kitab.release.task import task as task_named

    warehouse = Path(warehouse)
    chosen = task_named(task)
    template = chosen.template(template)
    prompts = release_prompt_list(warehouse, release, template, limit=limit, seed=limit_seed, task=task)
    params = params or Params(max_tokens=chosen.max_tokens.get(template))
    endpoint = ModelEndpoint(base_url, model, str(cache_path or warehouse / ".cache" / "answers.sqlite"))
    started = time.monotonic()
    with open_chat_session(endpoint, policy, key=key) as session:
        results, stats = answer_prompts(
            prompts, session=session, params=params, on_progress=on_progress, system=system, samples=samples
        )
        concurrency = {"concurrency": session.policy.concurrency, "concurrency_lowest": session.flights.lowest}
    summary = {
        "release": release,
        "model": model,
        "template": template,
        "queries": len(prompts),
        "answered": len({query_id for query_id, _ in results}),
        "from_cache": stats.from_cache,
        "requests": stats.requests,
        "retries": stats.retries,
        "failed": dict(stats.failed),
        "failed_file": str(failed_path(out)) if stats.failed else None,
        **answer_costs(results),
        "seconds": round(time.monotonic() - started, 3),
        **concurrency,
        "out": str(out),
        "written": False,
        "params": params.payload(),
        "samples": samples,
        "cut": sum(1 for r in results.values() if r.get("finish_reason") == "length"),
        "reasoning_only": sum(1 for r in results.values() if is_reasoning_only(r["response"], r.get("reasoning"))),
    }
    write_failed(failed_path(out), stats.failed, samples)
    if stats.failed and not allow_missing:
        named = "; ".join(failed_lines(stats.failed, FAILED_IN_ERROR))
        raise KitabError(
            f"{len(stats.failed)} of {len(prompts) * samples} queries got no answer ({named}; all in "
            f"{failed_path(out)}); {len(results)} answers are cached: rerun to ask again, or pass --allow-missing"
        )
    population = {"limit": limit, "limit_seed": limit_seed} if limit is not None else None
    write_answers(Path(out), answers_lines(prompts, results, model, samples, population))
    summary["written"] = True
    return summary
