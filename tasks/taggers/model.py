"""An optional tagger that asks a language model, as the original KITAB asked GPT-4.

Where a user has an OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp's server, Ollama's
``/v1``), titles go in numbered batches with one fixed
prompt (``PROMPT``, versioned by ``PROMPT_VERSION``); the answer, one JSON object, is parsed
into spans that quote the title. Every title's answer is cached in the shared response cache
(kitab/sources/chat.py) under the key of (model, prompt, title), as if the title had been
asked alone, so a rerun sends nothing for the titles it has, whatever batch they came in. The spans are stored as their own tagger versions (``human_model_v1``,
``city_model_v1``; the evidence names the model), beside the offline taggers' rows; the offline
taggers stay the default. Their quality is the user's to measure:
``benchmarks/entity_quality.py --tagger model --base-url ... --llm-model ...``.

The client, the cache, the limiter, the retry policy and the key's handling are one chat
session's (kitab/sources/chat_session.py), opened as ``kitab answer`` opens its own and under
the same policy (kitab/core/policy.py's ChatPolicy): the key comes from ``OPENAI_API_KEY`` and
goes only into the request header, never into the cache, an error or a span; 429 (Retry-After
honoured), 5xx and dropped connections are retried with backoff; 401, 403 and 404 stop at once
(a wrong key, URL or model fails every title alike). A title the model
never answered for (after one retry on its own) is an error naming how many, not a silent
empty answer: an empty answer means "no names", which would be a wrong key for a constraint.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from kitab.core.errors import KitabError
from kitab.core.params import ModelEndpoint
from kitab.core.policy import ChatPolicy
from kitab.sources.chat import EndpointError, Params, cache_key, checked_base_url
from kitab.sources.chat_session import ChatSession, open_chat_session
from tasks.taggers.spans import Span

PROMPT_VERSION = "v1"


def _prompt_kinds() -> tuple[tuple[str, str], ...]:
    """(kind, its prompt clause) of every entity kind that has one, in the kinds' order."""
    from tasks.entities.registry import entity_kinds

    return tuple((k.name, k.prompt) for k in sorted(entity_kinds(), key=lambda k: k.order) if k.prompt)


def build_prompt(kinds: tuple[tuple[str, str], ...]) -> str:
    """The system prompt over the kinds' clauses: one list per kind in the JSON answer. With human
    and city it is v1's text to the byte (the cache keys include it); a kind that adds a clause
    changes it, and every title is asked again."""
    keys = ", ".join(f'"{name}": [...]' for name, _ in kinds)
    return (
        "You tag book titles. For each numbered title, list "
        + " and ".join(clause for _, clause in kinds)
        + ". Copy each name exactly as it is written in the title. Answer with one JSON object and nothing "
        + f'else: {{"titles": [{{"n": 1, {keys}}}, ...]}} with one entry per title, in order.'
    )


def prompt() -> str:
    """The system prompt of the registered kinds (PROMPT)."""
    return build_prompt(_prompt_kinds())


def prompt_kinds() -> tuple[str, ...]:
    """What the model is asked for: the kinds that have a prompt clause (KINDS)."""
    return tuple(name for name, _ in _prompt_kinds())


def __getattr__(name: str):
    # PROMPT and KINDS are read from the kind registry when asked for, not at import: an entity
    # kind's module may import a tagger (hence this package) while the registry is still loading
    if name == "PROMPT":
        return prompt()
    if name == "KINDS":
        return prompt_kinds()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


BATCH = 20  # titles per request: long enough to amortise the prompt, short enough to answer reliably
PARAMS = Params(temperature=0.0, max_tokens=None)


class ModelTaggerError(KitabError):
    """The endpoint could not tag the titles (a wrong URL/key/model, or answers we cannot read)."""


def title_key(model: str, title: str) -> str:
    """The cache key of one title's answer: (model, prompt, title) as if it were asked alone."""
    return cache_key(model, title, PARAMS, system=prompt())


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
        for kind in prompt_kinds():
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


class ModelSession:
    """What the human and city model taggers share: one chat session (client, cache, limiter,
    retry policy) and the batches they ask in (one request serves both kinds)."""

    def __init__(self, chat: ChatSession, batch: int = BATCH) -> None:
        self.chat, self.batch = chat, batch
        self.model = chat.model

    def names(self, titles: Sequence[str]) -> list[dict[str, list[str]]]:
        """Per title, {"human": [...], "city": [...]} as the model gave them (cached)."""
        keys = [title_key(self.model, t) for t in titles]
        known = self.chat.cache.get_many(dict.fromkeys(keys))
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
        try:
            text = self.chat.ask(batch_message(titles), PARAMS, system=prompt()).completion.text
        except EndpointError as exc:
            hint = f" (check the base URL, the model {self.model!r} and OPENAI_API_KEY)" if exc.fatal else ""
            raise ModelTaggerError(f"{self.chat.client.url}: {exc}{hint}") from None
        answer = parse_answer(text, len(titles))
        got = {title_key(self.model, t): answer[n] for n, t in enumerate(titles, 1) if n in answer}
        self.chat.cache.put_many(self.model, got)
        known.update(got)
        return [t for n, t in enumerate(titles, 1) if n not in answer]


class ModelTagger:
    """One kind ("human" or "city") of a model session's answers, as a tagger."""

    def __init__(self, session: ModelSession, kind: str) -> None:
        if kind not in prompt_kinds():
            raise ValueError(f"kind must be one of {prompt_kinds()}, not {kind!r}")
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


# Selecting the model taggers by configuration (--taggers human_model_v1,city_model_v1): the
# endpoint is the run's (kitab.core.params.RunConfig.tagger_endpoint, resolved once by the app
# layer from KITAB_TAGGER_BASE_URL / KITAB_TAGGER_MODEL / KITAB_TAGGER_CACHE) and comes in as an
# argument; both kinds share one session per endpoint in a process, so one request answers for both.
_SESSIONS: dict[ModelEndpoint, ModelSession] = {}
NEEDS_ENDPOINT = (
    "KITAB_TAGGER_BASE_URL (an OpenAI-compatible endpoint such as http://127.0.0.1:8000/v1) and "
    "KITAB_TAGGER_MODEL; KITAB_TAGGER_CACHE names an optional cache file"
)


def configured_session(endpoint: ModelEndpoint | None) -> ModelSession:
    """The session on the run's endpoint (one per endpoint in this process)."""
    if endpoint is None or not endpoint.base_url or not endpoint.model:
        raise ModelTaggerError(f"the model taggers need a model endpoint: {NEEDS_ENDPOINT}")
    if endpoint not in _SESSIONS:
        _SESSIONS[endpoint] = ModelSession(_open(endpoint))
    return _SESSIONS[endpoint]


class HumanModelTagger(ModelTagger):
    """``human_model_v1`` from the registry, on the run's ``endpoint`` (the registry passes it to
    the model taggers); ``model`` (the spaCy model the registry passes to every tagger) is not used."""

    name = "human"
    version = f"human_model_{PROMPT_VERSION}"

    def __init__(
        self, model: str | None = None, session: ModelSession | None = None, endpoint: ModelEndpoint | None = None
    ) -> None:
        super().__init__(session or configured_session(endpoint), "human")


class CityModelTagger(ModelTagger):
    name = "city"
    version = f"city_model_{PROMPT_VERSION}"

    def __init__(
        self, model: str | None = None, session: ModelSession | None = None, endpoint: ModelEndpoint | None = None
    ) -> None:
        super().__init__(session or configured_session(endpoint), "city")


def _open(endpoint: ModelEndpoint, policy: ChatPolicy | None = None) -> ChatSession:
    """The chat session on ``endpoint`` (a malformed base URL: ModelTaggerError)."""
    try:
        return open_chat_session(endpoint, policy, user_agent="kitab-tagger")
    except KitabError as exc:
        raise ModelTaggerError(str(exc)) from None


def model_taggers(
    base_url: str,
    model: str,
    cache_path: Path | str | None = None,
    *,
    batch: int = BATCH,
    policy: ChatPolicy | None = None,
) -> list[ModelTagger]:
    """The human and city model taggers on one chat session (``policy`` None: the defaults;
    the key from ``OPENAI_API_KEY``, absent: no Authorization header, as local servers expect)."""
    endpoint = ModelEndpoint(base_url, model, None if cache_path is None else str(cache_path))
    session = ModelSession(_open(endpoint, policy), batch)
    return [ModelTagger(session, "human"), ModelTagger(session, "city")]


# -- the model as the second reader (issue 28) ----------------------------------------------
# The run's second_reader "model" (RunConfig.second_reader: --second-reader model or
# KITAB_SECOND_READER=model, resolved by the app layer): the offline taggers stay the title rules,
# and the model's answer per title is independent evidence for each book's state
# (tasks/entity_states.decide). It asks the run's endpoint, with the same session and cache as
# the model taggers. Not with the model taggers selected as the title rules: a reader cannot
# second itself.
SECOND_READERS = ("", "model")


def asks_model(taggers: Sequence[str]) -> bool:
    """Whether the tagger versions ``taggers`` include a model tagger."""
    return any(v.startswith(f"{k}_model_") for v in taggers for k in prompt_kinds())


def check_second_reader(second_reader: str, taggers: Sequence[str]) -> None:
    """A ModelTaggerError (one line) unless ``second_reader`` is one of SECOND_READERS and is not
    the model seconding the model taggers."""
    if second_reader not in SECOND_READERS:
        raise ModelTaggerError(
            f"second reader {second_reader!r} (--second-reader, KITAB_SECOND_READER): the one second reader is "
            "'model' (or none)"
        )
    if second_reader == "model" and asks_model(taggers):
        raise ModelTaggerError(
            "second reader 'model' with the model taggers selected as the title rules (--taggers, KITAB_TAGGERS): "
            "the model cannot second its own answer; select the offline taggers"
        )


def endpoint_in_use(taggers: Sequence[str], second_reader: str, endpoint: ModelEndpoint | None) -> ModelEndpoint | None:
    """The endpoint a run with these taggers and this second reader asks: ``endpoint`` if a model
    tagger is selected or the model is the second reader (it must then name a URL and a model),
    else None (nothing asks it, so the run does not record it). Raises ModelTaggerError before
    the run starts on a bad second reader or a missing endpoint."""
    check_second_reader(second_reader, taggers)
    if not asks_model(taggers) and second_reader != "model":
        return None
    if endpoint is None or not endpoint.base_url or not endpoint.model:
        who = "the model taggers" if asks_model(taggers) else "the model as second reader"
        raise ModelTaggerError(f"{who} need a model endpoint: {NEEDS_ENDPOINT}")
    try:  # a malformed URL is told now, not in a step
        checked_base_url(endpoint.base_url)
    except KitabError as exc:
        raise ModelTaggerError(str(exc)) from None
    return endpoint


def second_reader_session(
    second_reader: str, endpoint: ModelEndpoint | None, taggers: Sequence[str] = ()
) -> ModelSession | None:
    """The run's second reader's session, or None (``second_reader`` "": none)."""
    check_second_reader(second_reader, taggers)
    return configured_session(endpoint) if second_reader == "model" else None


def second_reader_version(session: ModelSession) -> str:
    """The second reader's version in evidence and cache keys: model and prompt."""
    return f"model_{PROMPT_VERSION}:{session.model}"


def book_spans(
    session: ModelSession, titles_of: dict[str, Sequence[str]], kinds: Sequence[str] | None = None
) -> dict[str, dict[str, list[str]]]:
    """book_id -> {kind: the names the model found in any of its titles} (a name that does not
    quote its title is dropped, as for the model taggers; a book whose titles have none: [])."""
    asked = sorted({t for titles in titles_of.values() for t in titles if t})
    answers = dict(zip(asked, session.names(asked))) if asked else {}
    asked_kinds = prompt_kinds()
    out: dict[str, dict[str, list[str]]] = {}
    for book_id, titles in titles_of.items():
        found: dict[str, list[str]] = {k: [] for k in (asked_kinds if kinds is None else kinds) if k in asked_kinds}
        for t in dict.fromkeys(x for x in titles if x):
            for kind in found:
                found[kind] += [s.text for s in place(t, answers[t].get(kind, []), kind, "model")]
        out[book_id] = found
    return out
