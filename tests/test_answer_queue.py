"""Issue 40, item 4's client fixes, against the loopback chat endpoint (kitab/simulate/chat.py):
service time apart from queue time and a timeout that does not count queue time (a one-at-a-time
server, as llama_cpp.server), the session's concurrency lowered by a timeout in company, one
default temperature for the command and the library, and the failed queries named."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kitab.core.params import ModelEndpoint
from kitab.core.policy import DEFAULT_TEMPERATURE, ChatPolicy, RetryPolicy
from kitab.release.answer import Prompt, answer_prompts, answer_release, answers_lines, failed_path
from kitab.simulate.chat import ChatServer
from kitab.sources.chat import Params
from kitab.sources.chat_session import Flights, open_chat_session
from tests.releases import dump_release

FAST = RetryPolicy(max_attempts=3, backoff_initial=0.01, backoff_max=0.05)
RELEASE = "queue"


def prompts(n: int) -> list[Prompt]:
    return [Prompt(f"q{i:03d}", "no-context", f"List the books of author {i}.") for i in range(n)]


def ask(url: str, tmp_path: Path, items: list[Prompt], **policy):
    policy.setdefault("retry", FAST)
    with open_chat_session(ModelEndpoint(url, "m", str(tmp_path / "cache.sqlite")), ChatPolicy(**policy)) as chat:
        started = time.monotonic()
        results, stats = answer_prompts(items, session=chat, params=Params())
        return results, stats, chat.flights, time.monotonic() - started


def test_a_one_at_a_time_server_behind_kitabs_own_queue_times_nothing_out(tmp_path, monkeypatch):
    """12 queries, concurrency 4, a server computing one at a time (0.3 s each), a timeout of
    0.7 s (below 4 x 0.3): before, 24 requests and 12 answers computed for nobody, median
    seconds 1.1; now one request per query, none wasted, and each answer's seconds is its
    service time (about 0.3), the time behind the others in queued_seconds."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    slow, items = 0.3, prompts(12)
    with ChatServer(slow=slow, serial=True) as server:
        results, stats, flights, wall = ask(server.url, tmp_path, items, concurrency=4, timeout=0.7)
        time.sleep(1.0)  # what the server still had queued is computed: counted as wasted if nobody waits
    assert len(results) == len(items) and not stats.failed
    assert stats.requests <= len(items) + 2 and server.wasted == 0, (stats.requests, server.wasted)
    assert server.max_in_flight == 1  # the server did compute one at a time
    seconds = [r["seconds"] for r in results.values()]
    queued = [r["queued_seconds"] for r in results.values()]
    assert statistics.median(seconds) == pytest.approx(slow, abs=0.1), seconds
    assert max(seconds) < 2.5 * slow, seconds  # two sent together may reach it in either order
    assert sum(queued) > 4 * slow, queued  # with 4 in flight, most answers waited behind others
    # service + queued is each query's whole time; service summed is at most the wall time
    assert sum(seconds) <= wall + 0.05
    assert all(q >= 0 for q in queued)


def test_a_timeout_in_company_halves_the_concurrency_once_per_round_and_answers_grow_it_back():
    clock = [0.0]
    flights = Flights(4, clock=lambda: clock[0])
    stop = threading.Event()

    def send():
        assert flights.take(stop)
        return flights.send()

    sent = [send() for _ in range(4)]
    clock[0] = 1.0
    assert flights.end(sent[0], timed_out=True) and flights.limit == 2  # in company: halved, a free retry
    assert not flights.end(sent[1], timed_out=True) and flights.limit == 2  # the same round: once
    flights.end(sent[2], answered=True)
    clock[0] = 2.0
    again = send()  # sent after the lowering, behind sent[3]
    clock[0] = 2.5
    flights.end(sent[3], answered=True)  # 2 answers in a row at limit 2: raised to 3
    assert flights.limit == 3
    clock[0] = 3.0
    assert flights.end(again, timed_out=True) and flights.limit == 1 and flights.lowest == 1
    alone = send()
    clock[0] = 4.0
    assert not flights.end(alone, timed_out=True) and flights.limit == 1  # alone: the model's own slowness
    # service: from sent, or from the last end before its own among those ahead of it (four
    # sent together: each may be ahead of the others)
    assert [f.service() for f in sent] == [1.0, 1.0, 1.0, 1.5]
    assert again.service() == 0.5 and alone.service() == 1.0


def test_a_query_slower_than_the_timeout_lowers_the_concurrency_and_uses_its_tries_only_alone(tmp_path, monkeypatch):
    """One query the model needs 2 s for, a timeout of 0.5 s, concurrency 4, 3 tries: its
    timeouts in company halve the concurrency (4 -> 2 -> 1) without using a try; alone, it
    uses its 3 and fails; every other query is answered once."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def answer(prompt: str) -> str:
        if "author 0." in prompt:
            time.sleep(2.0)
        else:
            time.sleep(0.1)
        return "Output:\n1. Reason: r. Title: T\n"

    items = prompts(30)
    with ChatServer(answer) as server:
        results, stats, flights, _ = ask(server.url, tmp_path, items, concurrency=4, timeout=0.5)
        time.sleep(2.5)  # the server records a request once it has answered it
    slow_requests = [s for s in server.chat_requests if s.prompt == items[0].text]
    assert list(stats.failed) == ["q000"] and "after 3 attempts" in stats.failed["q000"]
    assert len(results) == 29 and flights.lowest < 4
    assert 3 <= len(slow_requests) <= 3 + 2  # 3 tries, plus at most log2(4) free retries
    assert stats.requests == 29 + len(slow_requests)


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    return dump_release(tmp_path_factory.mktemp("answer_queue") / "wh", authors=10, seed=42, release=RELEASE)


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("OPENAI_API_KEY", "KITAB_DEBUG")}
    return subprocess.run(
        [sys.executable, "-m", "kitab.app.cli", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def answer_args(url: str, warehouse: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    return [
        "answer",
        "--release",
        RELEASE,
        "--model",
        "m",
        "--base-url",
        url,
        "--out",
        str(out),
        "--cache",
        str(cache),
        "--warehouse",
        str(warehouse),
        "--quiet",
        "--limit",
        "8",
        *extra,
    ]


def test_kitab_answer_names_its_failed_queries_sends_the_librarys_temperature_and_gives_its_costs(
    released, tmp_path, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out, cache = tmp_path / "answers.jsonl", tmp_path / "cache.sqlite"
    with ChatServer(slow=0.05, serial=True) as server:
        server.fail(2, 400)  # two queries refused (a 400 is not retried)
        done = cli(*answer_args(server.url, released, out, cache, "--allow-missing", "--output", "json"))
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert [s.body["temperature"] for s in server.chat_requests] == [DEFAULT_TEMPERATURE] * 8
        # the failed queries, named with their reason: in the summary, the file beside the answers, the terminal
        assert len(summary["failed"]) == 2 and all("HTTP 400" in why for why in summary["failed"].values())
        assert summary["failed_file"] == str(failed_path(out)) == str(tmp_path / "answers.failed.jsonl")
        listed = [json.loads(line) for line in failed_path(out).read_text().splitlines()]
        assert [(row["query_id"], row["reason"]) for row in listed] == list(summary["failed"].items())
        for query_id in summary["failed"]:
            assert f"  {query_id}: HTTP 400" in done.stderr
        # the costs: this run's requests and wall time, the answers' tokens, service and queued seconds
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert summary["requests"] == 8 and summary["answered"] == len(lines) == 6
        assert summary["service_seconds"] == pytest.approx(sum(r["seconds"] for r in lines), abs=0.01)
        assert summary["queued_seconds"] == pytest.approx(sum(r["queued_seconds"] for r in lines), abs=0.01)
        assert summary["prompt_tokens"] == sum(r["prompt_tokens"] for r in lines) > 0
        assert 0 < summary["service_seconds"] <= summary["seconds"]
        assert "s service +" in done.stderr and "s wall" in done.stderr
        # the library asks the same questions: only the two that failed are sent again
        before = len(server.chat_requests)
        again = answer_release(released, RELEASE, model="m", base_url=server.url, out=out, cache_path=cache, limit=8)
        assert len(server.chat_requests) - before == again["requests"] == 2 and again["failed"] == {}
        assert not failed_path(out).exists()  # no failures now: the earlier list is gone
        # --temperature none sends none (a new question: a new key)
        cli(*answer_args(server.url, released, tmp_path / "none.jsonl", cache, "--temperature", "none", "--limit", "1"))
        assert "temperature" not in server.chat_requests[-1].body


def test_without_allow_missing_the_error_names_the_first_failed_queries(released, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out, cache = tmp_path / "answers.jsonl", tmp_path / "cache.sqlite"
    with ChatServer() as server:
        server.fail(5, 400)
        done = cli(*answer_args(server.url, released, out, cache, "--concurrency", "1"))
    err = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(err) == 1 and err[0].startswith("kitab: error: 5 of 8 queries got no answer")
    listed = [json.loads(line)["query_id"] for line in failed_path(out).read_text().splitlines()]
    assert len(listed) == 5 and all(f"{q}: HTTP 400" in err[0] for q in listed[:3]) and listed[3] not in err[0]
    assert "and 2 more" in err[0] and str(failed_path(out)) in err[0] and not out.exists()


def test_an_answers_line_keeps_service_and_queued_seconds_and_an_old_cached_answer_reads_as_before():
    item = Prompt("q1", "no-context", "p")
    old = {"response": "r", "finish_reason": "stop", "prompt_tokens": 1, "completion_tokens": 1}
    line = json.loads(answers_lines([item], {("q1", 0): {**old, "seconds": 2.0, "attempts": 1}}, "m")[0])
    assert line["seconds"] == 2.0 and line["queued_seconds"] is None


def test_a_temperature_is_a_number_from_0_to_2_or_none():
    from kitab.core.errors import KitabError
    from kitab.core.policy import temperature_value

    assert temperature_value("0") == 0.0 == Params().temperature == DEFAULT_TEMPERATURE
    assert temperature_value(0.7) == 0.7 and temperature_value(" None ") is None
    for bad in ("hot", "-1", "2.5", "nan", True):
        with pytest.raises(KitabError, match="expected a number from 0 to 2"):
            temperature_value(bad)
