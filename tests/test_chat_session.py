"""One chat session for both callers (issue 36, item 5): ``kitab answer`` (kitab/release/answer.py)
and the model tagger (tasks/taggers/model.py) open the same ChatSession
(kitab/sources/chat_session.py) under one ChatPolicy whose numbers are written once
(kitab/core/policy.py); against the loopback chat endpoint (kitab/simulate/chat.py) both honour
a 429's Retry-After, and a cache hit sends nothing for either."""

from __future__ import annotations

import ast
import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path

import pytest
import typer

from kitab.core.config import Settings
from kitab.core.env import PROJECT_ROOT
from kitab.core.params import ModelEndpoint
from kitab.core.policy import ChatPolicy, RetryPolicy
from kitab.release.answer import Prompt, answer_prompts
from kitab.simulate.chat import ChatServer
from kitab.sources.chat import Params, cache_key
from kitab.sources.chat_session import ChatSession, open_chat_session
from tasks.taggers import model as model_module
from tasks.taggers.model import ModelSession, configured_session, model_taggers, title_key

TITLES = ["Emma", "Death in Venice", "Dune"]
PROMPTS = [Prompt(f"q{i}", "no-context", f"List the books of author {i}.") for i in range(3)]
PARAMS = Params(max_tokens=400)  # kitab answer's for no-context


def reply(prompt: str) -> str:
    """A model for both callers: the tagger's numbered titles get its JSON, a query a book list."""
    if prompt.startswith("1. "):
        entries = []
        for line in prompt.splitlines():
            n, title = line.split(". ", 1)
            entries.append({"n": int(n), "human": ["Emma"] if "Emma" in title else [], "city": []})
        return json.dumps({"titles": entries})
    return f"Output:\n1. Reason: r. Title: {prompt[-8:]}\n"


@pytest.fixture(autouse=True)
def no_key_no_sessions(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(model_module, "_SESSIONS", {})


def answer_session(url: str, cache: Path | None) -> ChatSession:
    """The session ``kitab answer`` opens (answer_release): the endpoint and the policy, nothing else."""
    return open_chat_session(ModelEndpoint(url, "m1", None if cache is None else str(cache)), ChatPolicy())


def test_both_callers_get_one_session_type_under_one_policy(tmp_path):
    with ChatServer(reply) as server:
        tagger = model_taggers(server.url, "m1", tmp_path / "tags.sqlite")[0]
        reader = configured_session(ModelEndpoint(server.url, "m1", str(tmp_path / "reader.sqlite")))
        with answer_session(server.url, tmp_path / "answers.sqlite") as answering:
            sessions = [tagger.session.chat, reader.chat, answering]
            assert [type(s) for s in sessions] == [ChatSession] * 3
            assert [s.policy for s in sessions] == [ChatPolicy()] * 3
            # the one session serves both: the tagger's batches and kitab answer's queries
            shared = ModelSession(answering)
            assert [[s.text for s in x] for x in model_module.ModelTagger(shared, "human").tag_many(TITLES)] == [
                ["Emma"],
                [],
                [],
            ]
            results, stats = answer_prompts(PROMPTS, session=answering, params=PARAMS)
            assert len(results) == 3 and stats.requests == 3
        assert len(server.chat_requests) == 4  # one batch of titles, three queries
    # kitab answer's options default to the policy's numbers; the sources' settings to its retry numbers
    from kitab.app.commands.evaluate import app

    options = {p.name: p.default for p in typer.main.get_command(app).commands["answer"].params}
    policy = ChatPolicy()
    assert (options["concurrency"], options["rate"], options["timeout"]) == (
        policy.concurrency,
        policy.rate,
        policy.timeout,
    )
    assert (options["max_attempts"], options["max_retry_after"]) == (
        policy.retry.max_attempts,
        policy.retry.max_retry_after,
    )
    fields = Settings.model_fields
    assert (
        RetryPolicy(*(fields[n].default for n in ("max_attempts", "backoff_initial", "backoff_max", "max_retry_after")))
        == policy.retry
    )


def constructed(name: str) -> list[str]:
    """The modules of kitab/, tasks/, flows/ that call ``name(...)``, or define ``name`` (a def)."""
    found = []
    for package in ("kitab", "tasks", "flows"):
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                called = (
                    isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name
                )
                if called or (isinstance(node, ast.FunctionDef) and node.name == name):
                    found.append(str(path.relative_to(PROJECT_ROOT)))
                    break
    return found


def test_only_the_session_composes_the_parts_and_one_module_parses_retry_after():
    session = "kitab/sources/chat_session.py"
    for part in ("ChatClient", "ResponseCache", "RateLimiter", "ChatSession"):
        assert constructed(part) == [session], part
    assert constructed("open_chat_session") == ["kitab/release/answer.py", session, "tasks/taggers/model.py"]
    assert constructed("parse_retry_after") == [
        "kitab/app/processes.py",
        "kitab/core/policy.py",
        "kitab/sources/chat.py",
        "kitab/sources/http.py",
        "kitab/sources/wikidata.py",
    ]
    defined = [
        str(p.relative_to(PROJECT_ROOT))
        for package in ("kitab", "tasks", "flows")
        for p in (PROJECT_ROOT / package).rglob("*.py")
        if "def parse_retry_after" in p.read_text(encoding="utf-8")
    ]
    assert defined == ["kitab/core/policy.py"]


def in_two_seconds() -> tuple[str, float]:
    """An HTTP date 2 s ahead (whole seconds, as the header carries it) and its epoch time."""
    text = format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    return text, parsedate_to_datetime(text).timestamp()


def sent_requests(server: ChatServer) -> list:
    sent = server.chat_requests
    assert [s.status for s in sent] == [429, 200], [s.status for s in sent]
    return sent


def retried_too_early(server: ChatServer, retry_after: str) -> str | None:
    """Why the retry after the 429 came before Retry-After allowed it, or None. Seconds: at least
    that long after the 429. A date: not before that moment (how long after the 429 that is
    depends on when the first request was sent, which a loaded machine delays)."""
    throttled, retry = sent_requests(server)
    if retry_after.isdigit():
        waited = retry.at - throttled.at
        return None if waited >= int(retry_after) - 0.05 else f"retried {waited:.2f} s after the 429"
    date = parsedate_to_datetime(retry_after).timestamp()
    retried_at = time.time() - (time.monotonic() - retry.at)  # the retry's arrival, in epoch time
    return None if retried_at >= date - 0.05 else f"retried {date - retried_at:.2f} s before {retry_after}"


@pytest.mark.parametrize("retry_after", ["1", "http-date"])
def test_retry_after_is_honoured_by_both_callers(tmp_path, retry_after):
    """The loopback server answers 429 with Retry-After (seconds, or an HTTP date 2 s ahead,
    which truncation to whole seconds makes 1-2 s): neither caller asks again before then."""
    header = (lambda: in_two_seconds()[0]) if retry_after == "http-date" else (lambda: retry_after)
    with ChatServer(reply) as server:
        server.throttle(1, retry_after=(sent := header()))
        tagger = model_taggers(server.url, "m1", None)[0]
        assert [s.text for s in tagger.tag_many(["Emma"])[0]] == ["Emma"]
        assert retried_too_early(server, sent) is None, retried_too_early(server, sent)
    with ChatServer(reply) as server:
        server.throttle(1, retry_after=(sent := header()))
        with answer_session(server.url, None) as session:
            results, stats = answer_prompts(PROMPTS[:1], session=session, params=PARAMS)
        assert len(results) == 1 and stats.retries == 1 and stats.waited_retry_after > 0
        assert retried_too_early(server, sent) is None, retried_too_early(server, sent)


def test_a_cache_hit_sends_nothing_for_both_callers_and_the_keys_are_as_before(tmp_path):
    tags, answers = tmp_path / "tags.sqlite", tmp_path / "answers.sqlite"
    with ChatServer(reply) as server:
        first = model_taggers(server.url, "m1", tags)[0].tag_many(TITLES)
        with answer_session(server.url, answers) as session:
            asked, _ = answer_prompts(PROMPTS, session=session, params=PARAMS)
        sent = len(server.chat_requests)
        assert sent == 1 + len(PROMPTS)
        model_module._SESSIONS.clear()  # a new process: only the cache files remain
        again = model_taggers(server.url, "m1", tags)[0].tag_many(TITLES)
        with answer_session(server.url, answers) as session:
            cached, stats = answer_prompts(PROMPTS, session=session, params=PARAMS)
        reader = configured_session(ModelEndpoint(server.url, "m1", str(tags)))
        assert reader.names(TITLES)[0]["human"] == ["Emma"]
        assert len(server.chat_requests) == sent  # a rerun of either sends 0 requests
    assert again == first and cached == asked and stats.requests == 0 and stats.from_cache == len(PROMPTS)
    # the keys are those of the caches written before the session (pinned from commit 1f2608e):
    # an existing cache file still answers
    assert title_key("m1", "Emma") == "d4cb993b6a5cf807c7213f804729ac13603a87fd86424bb7f4fbafdf401feaeb"
    assert (
        cache_key("fixture-model", "List the books of author 1.", PARAMS)
        == "abb0e4b62344efbb186169c524167a86b9b6551529147c5f739feaa6438a4e35"
    )


def test_a_bad_policy_is_one_line():
    from kitab.core.errors import KitabError

    with pytest.raises(KitabError, match="--rate 0: expected a positive number"):
        ChatPolicy(rate=0)
    with pytest.raises(KitabError, match="--concurrency 0: expected 1 or more"):
        ChatPolicy(concurrency=0)
