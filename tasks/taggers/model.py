"""An optional tagger that asks a language model, as the original KITAB asked GPT-4.

Where a user has an OpenAI-compatible chat endpoint (``POST {base_url}/chat/completions``: OpenAI,
vLLM, llama.cpp's server, Ollama's ``/v1``), titles go in numbered batches with one fixed
prompt (``PROMPT``, versioned by ``PROMPT_VERSION``); the answer, one JSON object, is parsed
into spans that quote the title. Every title's answer is cached in SQLite under sha256 of
(model, prompt, title), so a rerun sends nothing for the titles it has, whatever batch they
came in. The spans are stored as their own tagger versions (``human_model_v1``,
``city_model_v1``; the evidence names the model), beside the offline taggers' rows; the offline
taggers stay the default. Their quality is the user's to measure:
``benchmarks/entity_quality.py --tagger model --base-url ... --llm-model ...``.

The key comes from ``OPENAI_API_KEY`` and goes only into the request header, never into the
cache, an error or a span. 429, 5xx and dropped connections are retried with backoff; 401, 403
and 404 stop at once (a wrong key, URL or model fails every title alike). A title the model
never answered for (after one retry on its own) is an error naming how many, not a silent
empty answer: an empty answer means "no names", which would be a wrong key for a constraint.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from kitab.core.errors import KitabError
from tasks.taggers.registry import register_tagger
from tasks.taggers.spans import Span

PROMPT_VERSION = "v1"
PROMPT = (
    "You tag book titles. For each numbered title, list every human name in it (a person's given "
    "name, surname or full name, real or fictional, including a character's single name such as "
    "'Emma' or 'Gatsby'; not the honorific, so 'Mrs Dalloway' gives 'Dalloway'; not words that "
    "only happen to be names, roles, or places named after people such as 'Peyton Place') and "
    "every city name in it (a city or town used as a place, such as 'Venice' in 'Death in "
    "Venice'; not countries, states or regions, not demonyms, not a city inside a person's name "
    "such as 'Jack London'). Copy each name exactly as it is written in the title. Answer with "
    'one JSON object and nothing else: {"titles": [{"n": 1, "human": [...], "city": [...]}, ...]} '
    "with one entry per title, in order."
)
BATCH = 20  # titles per request: long enough to amortise the prompt, short enough to answer reliably
RETRY_STATUS = frozenset({408, 409, 425, 429})  # besides every 5xx
FATAL_STATUS = frozenset({401, 403, 404})
KINDS = ("human", "city")


class ModelTaggerError(KitabError):
    """The endpoint could not tag the titles (a wrong URL/key/model, or answers we cannot read)."""


def cache_key(model: str, prompt: str, title: str) -> str:
    """sha256 of (model, prompt, title): the identity of one title's answer."""
    canonical = json.dumps([model, prompt, title], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def batch_message(titles: Sequence[str]) -> str:
    """The user message for one batch: the titles, numbered from 1, one per line (a title's own
    line breaks become spaces, so numbering cannot be faked by a title)."""
    return "\n".join(f"{n}. {' '.join(t.split())}" for n, t in enumerate(titles, 1))


_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_answer(text: str, count: int) -> dict[int, dict[str, list[str]]]:
    """Title number (1-based) -> {"human": [...], "city": [...]} from the model's answer.
    Tolerates a code fence or prose around the object; entries with a bad number or shape are
    left out (the caller asks again for titles without an entry)."""
    match = _JSON_OBJECT.search(text)
    if not match:
        return {}
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return {}
    entries = data.get("titles") if isinstance(data, dict) else None
    out: dict[int, dict[str, list[str]]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("n"), int) or not 1 <= entry["n"] <= count:
            continue
        names = {}
        for kind in KINDS:
            value = entry.get(kind, [])
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                break
            names[kind] = [x.strip() for x in value if x.strip()]
        else:
            out[entry["n"]] = names
    return out


def place(title: str, names: Sequence[str], kind: str, evidence: str) -> list[Span]:
    """Spans for the names the model gave, located in the title left to right (exact text
    first, then ignoring case); a name that is not in the title is dropped: a span must quote
    the title. Overlapping repeats ("Will Grayson, Will Grayson") take successive occurrences."""
    spans: list[Span] = []
    taken: list[tuple[int, int]] = []
    for name in names:
        for haystack, needle in ((title, name), (title.casefold(), name.casefold())):
            if len(haystack) != len(title):
                continue  # casefold changed the length ("ß"): offsets would not hold
            start = 0
            found = None
            while (k := haystack.find(needle, start)) >= 0:
                if not any(k < e and k + len(needle) > s for s, e in taken):
                    found = k
                    break
                start = k + 1
            if found is not None:
                taken.append((found, found + len(needle)))
                spans.append(Span(found, found + len(needle), kind, title[found : found + len(needle)], evidence))
                break
    return sorted(spans)


class AnswerCache:
    """One SQLite file: cache key -> the JSON of one title's names. Committed per batch, so a
    run killed half-way keeps what it paid for."""

    def __init__(self, path: Path | str | None) -> None:
        self._db = sqlite3.connect(":memory:" if path is None else str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, names TEXT NOT NULL)")
        self._lock = threading.Lock()

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, list[str]]]:
        out = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                part = keys[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, names FROM answers WHERE key IN ({','.join('?' * len(part))})", part
                )
                out.update((k, json.loads(v)) for k, v in rows)
        return out

    def put_many(self, items: dict[str, dict[str, list[str]]]) -> None:
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO answers VALUES (?, ?)",
                [(k, json.dumps(v, ensure_ascii=False, sort_keys=True)) for k, v in items.items()],
            )


@dataclass
class ChatEndpoint:
    """``POST {base_url}/chat/completions``, temperature 0, with retries."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 120.0
    retries: int = 4
    backoff: float = 1.0  # seconds, doubled per retry

    def __post_init__(self) -> None:
        url = httpx.URL(self.base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ModelTaggerError(
                f"base URL {self.base_url!r}: expected an http(s) URL such as https://api.openai.com/v1"
            )
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self._client = httpx.Client(timeout=self.timeout, headers=headers)
        self.requests = 0

    def complete(self, system: str, user: str) -> str:
        payload = {
            "model": self.model,
            "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        url = self.base_url.rstrip("/") + "/chat/completions"
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                self.requests += 1
                response = self._client.post(url, json=payload)
            except httpx.TransportError as exc:
                if last:
                    raise ModelTaggerError(
                        f"{url}: no answer after {self.retries + 1} tries ({type(exc).__name__})"
                    ) from None
            else:
                status = response.status_code
                if status == 200:
                    try:
                        return response.json()["choices"][0]["message"]["content"] or ""
                    except (ValueError, KeyError, IndexError, TypeError):
                        raise ModelTaggerError(f"{url}: the answer is not an OpenAI chat completion") from None
                if status in FATAL_STATUS:
                    raise ModelTaggerError(
                        f"{url}: HTTP {status} (check the base URL, the model {self.model!r} and OPENAI_API_KEY)"
                    )
                if not (status in RETRY_STATUS or status >= 500) or last:
                    raise ModelTaggerError(f"{url}: HTTP {status} after {attempt + 1} tries")
            time.sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._client.close()


class ModelSession:
    """What the human and city model taggers share: the endpoint, the cache and the answers
    of the titles asked in this process (one request serves both kinds)."""

    def __init__(self, endpoint: ChatEndpoint, cache: AnswerCache, batch: int = BATCH) -> None:
        self.endpoint, self.cache, self.batch = endpoint, cache, batch
        self.model = endpoint.model

    def names(self, titles: Sequence[str]) -> list[dict[str, list[str]]]:
        """Per title, {"human": [...], "city": [...]} as the model gave them (cached)."""
        keys = [cache_key(self.model, PROMPT, t) for t in titles]
        known = self.cache.get_many(list(dict.fromkeys(keys)))
        todo = list(dict.fromkeys(t for t, k in zip(titles, keys) if k not in known))
        missing: list[str] = []
        for start in range(0, len(todo), self.batch):
            missing += self._ask(todo[start : start + self.batch], known)
        for title in missing:  # once more, alone: a long batch is where a model skips a line
            if self._ask([title], known):
                raise ModelTaggerError(
                    f"the model {self.model!r} gave no readable answer for {len(missing)} title(s), e.g. {title[:80]!r}"
                )
        return [known[k] for k in keys]

    def _ask(self, titles: list[str], known: dict) -> list[str]:
        answer = parse_answer(self.endpoint.complete(PROMPT, batch_message(titles)), len(titles))
        got = {cache_key(self.model, PROMPT, t): answer[n] for n, t in enumerate(titles, 1) if n in answer}
        self.cache.put_many(got)
        known.update(got)
        return [t for n, t in enumerate(titles, 1) if n not in answer]


class ModelTagger:
    """One kind ("human" or "city") of a model session's answers, as a tagger."""

    def __init__(self, session: ModelSession, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
        self.session, self.kind = session, kind
        self.name = kind
        self.version = f"{kind}_model_{PROMPT_VERSION}"
        self.evidence = f"model:{session.model}"

    def tag_many(self, titles: list[str]) -> list[list[Span]]:
        return [
            place(t, names[self.kind], self.kind, self.evidence) for t, names in zip(titles, self.session.names(titles))
        ]

    def fingerprint(self) -> dict:
        """What the output depends on besides the code: the model and the prompt (the endpoint's
        URL is not: the same model behind another gateway answers the same)."""
        return {"llm": self.session.model, "prompt": PROMPT_VERSION}


# Selecting the model taggers by configuration (KITAB_TAGGERS=human_model_v1,city_model_v1):
# the endpoint comes from these variables, and both kinds share one session per endpoint, model
# and cache, so one request answers for both.
ENV_BASE_URL = "KITAB_TAGGER_BASE_URL"
ENV_MODEL = "KITAB_TAGGER_MODEL"
ENV_CACHE = "KITAB_TAGGER_CACHE"
_SESSIONS: dict[tuple[str, str, str | None], ModelSession] = {}


def configured_session() -> ModelSession:
    base_url, model = os.environ.get(ENV_BASE_URL), os.environ.get(ENV_MODEL)
    if not base_url or not model:
        raise ModelTaggerError(
            f"the model taggers need {ENV_BASE_URL} (an OpenAI-compatible endpoint such as "
            f"http://127.0.0.1:8000/v1) and {ENV_MODEL}; {ENV_CACHE} names an optional cache file"
        )
    cache = os.environ.get(ENV_CACHE) or None
    key = (base_url, model, cache)
    if key not in _SESSIONS:
        endpoint = ChatEndpoint(base_url, model, os.environ.get("OPENAI_API_KEY") or None)
        _SESSIONS[key] = ModelSession(endpoint, AnswerCache(cache))
    return _SESSIONS[key]


@register_tagger
class HumanModelTagger(ModelTagger):
    """``human_model_v1`` from the registry; ``model`` (the spaCy model the registry passes to
    every tagger) is not used."""

    name = "human"
    version = f"human_model_{PROMPT_VERSION}"

    def __init__(self, model: str | None = None, session: ModelSession | None = None) -> None:
        super().__init__(session or configured_session(), "human")


@register_tagger
class CityModelTagger(ModelTagger):
    name = "city"
    version = f"city_model_{PROMPT_VERSION}"

    def __init__(self, model: str | None = None, session: ModelSession | None = None) -> None:
        super().__init__(session or configured_session(), "city")


def model_taggers(
    base_url: str,
    model: str,
    cache_path: Path | str | None = None,
    *,
    api_key: str | None = None,
    batch: int = BATCH,
    **endpoint_options,
) -> list[ModelTagger]:
    """The human and city model taggers on one endpoint and cache. The key defaults to
    ``OPENAI_API_KEY`` (absent: no Authorization header, as local servers expect)."""
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY") or None
    session = ModelSession(ChatEndpoint(base_url, model, key, **endpoint_options), AnswerCache(cache_path), batch)
    return [ModelTagger(session, "human"), ModelTagger(session, "city")]
