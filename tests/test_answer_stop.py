"""Issue 39 item 5: ``kitab answer``'s early stop holds, through the real ``kitab`` command
against the loopback chat endpoint (kitab/simulate/chat.py), counting what the server received:

- a 400 whose message carries its own request id each time is still one error: the run stops
  after the first 10 queries (both tasks: queries and claim pairs share the loop);
- at ``--concurrency 64`` the requests sent before the stop are bounded by what is in flight
  (at most 20 + concurrency);
- a refused connection (nothing listens at ``--base-url``) is one line after one try, with no
  time-left estimate;
- an endpoint that replies with reasoning only gives answers flagged ``reasoning_only`` and one
  warning with their count (rc 0: they are abstentions), and ``kitab evaluate`` counts them in
  a file written before the flag existed too.

The pure parts (the error signature, the progress line, a refusal after the endpoint answered)
are tested on the functions below the command."""

from __future__ import annotations

import io
import json
import socket
import sys
import time
from pathlib import Path

import pytest

from kitab.app.progress_display import AnswerProgress
from kitab.core.errors import KitabError
from kitab.core.params import ModelEndpoint
from kitab.core.policy import ChatPolicy, RetryPolicy
from kitab.release.answer import Prompt, RunStats, answer_prompts
from kitab.release.evaluation.parse import is_reasoning_only
from kitab.simulate.chat import THINKING, ChatServer, thinker
from kitab.sources.chat import EndpointError, Params, error_signature
from kitab.sources.chat_session import open_chat_session
from tests.releases import dump_release
from tests.test_cli_errors import assert_user_error, kitab

RELEASE = "stop"


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """A release of 10 authors (223 queries, 120 claims): more than a stop lets through."""
    # seed 8: seed 7's 10 authors draw claim pairs a wording rule answers 0.467 of, which the
    # claim-floor data test refuses (docs/claims.md)
    return dump_release(tmp_path_factory.mktemp("answer_stop") / "wh", authors=10, seed=8, release=RELEASE)


def answer(url: str, folder: Path, warehouse: Path, *extra, quiet: bool = True):
    args = ["answer", "--release", RELEASE, "--model", "m", "--base-url", url, "--out", folder / "answers.jsonl"]
    args += ["--cache", folder / "cache.sqlite", "--warehouse", warehouse, *(["--quiet"] if quiet else []), *extra]
    return kitab(*args, timeout=300)


def counts(warehouse: Path) -> dict[str, int]:
    from kitab.core.warehouse import Warehouse

    with Warehouse(warehouse).connect(warn=False) as con:
        return {t: con.execute(f"select count(*) from {t}").fetchone()[0] for t in ("queries", "claims")}


# -- the same error, whatever id each message carries ---------------------------------------------
@pytest.mark.parametrize("task", ["queries", "claims"])
def test_a_400_with_its_own_request_id_each_time_stops_after_the_first_ten(released, tmp_path, task):
    with ChatServer() as server:
        server.fail(100_000, 400, unique=True)
        result = answer(server.url, tmp_path, released, "--task", task)
        sent = len(server.chat_requests)
    assert_user_error(result, "stopped: the first 10 queries all failed with HTTP 400")
    assert sent <= 10 + 4, sent  # the first 10, and at most the 4 in flight: not 1 per query
    assert counts(released)[task] > 100  # (the run would have asked that many)
    assert not (tmp_path / "answers.jsonl").exists()


def test_the_requests_before_the_stop_are_bounded_by_those_in_flight(released, tmp_path):
    with ChatServer() as server:
        server.fail(100_000, 400, unique=True)
        result = answer(server.url, tmp_path, released, "--concurrency", "64")
        sent = len(server.chat_requests)
    err = assert_user_error(result, "stopped: the first 10 queries all failed")
    assert sent <= 20 + 64, sent
    assert f"({sent} requests)" in err  # what the command says it sent is what arrived


def test_errors_that_differ_in_words_or_status_do_not_stop_the_run(tmp_path):
    """A mix of errors is not one error: every query is asked (each fails on its own)."""
    with ChatServer() as server:
        for status in (400, 422) * 10:
            server.fail(1, status, unique=True)
        chat = open_chat_session(
            ModelEndpoint(server.url, "m", None), ChatPolicy(concurrency=1, retry=RetryPolicy(max_attempts=1))
        )
        with chat:
            items = [Prompt(f"q{i}", "t", f"prompt {i}") for i in range(30)]
            results, stats = answer_prompts(items, session=chat, params=Params())
    assert len(server.chat_requests) == 30 and len(stats.failed) == 20 and len(results) == 10


def test_the_signature_strips_ids_numbers_and_hex_but_keeps_words_and_status():
    def sig(message: str, status: int | None = 400):
        return error_signature(EndpointError(message, status=status))

    one = sig("HTTP 400: bad request (request id req_8f3a9c2e11d04b7a, trace 1b4e28ba-2fa1-11d2-883f-0016d3cca427)")
    two = sig("HTTP 400: bad request (request id req_0c1d2e3f4a5b6c7d, trace 6fa459ea-ee8a-3ca4-894e-db77e160355e)")
    assert one == two
    assert sig("HTTP 400: limit 4096 < 5000 at 0xdeadbeef") == sig("HTTP 400: limit 2048 < 7311 at 0x00c0ffee")
    assert sig("HTTP 400: id cafebabedeadbeef") == sig("HTTP 400: id 0123abcdef456789")
    assert sig("HTTP 400: id aBcDeFgHiJkLmNoPqR") == sig("HTTP 400: id ZyXwVuTsRqPoNmLkJi")  # ids without digits
    assert sig("HTTP 400: bad request") != sig("HTTP 400: context too long")  # words are the error
    assert sig("HTTP 422: bad request", 422) != sig("HTTP 400: bad request")  # and so is the status
    assert "internationalization" in sig("HTTP 400: Internationalization problem")[1]  # a word, not an id


# -- a refused connection -----------------------------------------------------------------------
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed on exit: nothing listens there


@pytest.mark.parametrize("task", ["queries", "claims"])
def test_a_refused_connection_is_one_line_after_one_try(released, tmp_path, task):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    started = time.monotonic()
    result = answer(url, tmp_path, released, "--task", task, quiet=False)  # the progress display on
    took = time.monotonic() - started
    err = assert_user_error(result, f"cannot connect to {url} (connection refused)", "--base-url")
    assert len(err.strip().splitlines()) == 1 and " left" not in err, err
    assert took < 30, took  # the retries (75 s before) are gone; the rest is the command starting


def test_a_refusal_after_the_endpoint_answered_is_retried_then_stops_the_run(tmp_path):
    """A server that answered and then went away is restarting, or gone: retried, then the run
    stops at once with what it has cached (not one failed query after another)."""
    items = [Prompt(f"q{i}", "t", f"prompt {i}") for i in range(40)]
    policy = ChatPolicy(concurrency=1, retry=RetryPolicy(max_attempts=3, backoff_initial=0.01, backoff_max=0.02))
    with ChatServer() as server:
        chat = open_chat_session(ModelEndpoint(server.url, "m", str(tmp_path / "c.sqlite")), policy)
        first, _ = answer_prompts(items[:5], session=chat, params=Params())
    with chat:  # the same session, the server gone (its port and connections closed)
        with pytest.raises(KitabError) as stopped:
            answer_prompts(items, session=chat, params=Params())
        assert chat.stopped_by is not None and chat.stopped_by.refused
    message = str(stopped.value)
    assert len(first) == 5 and "cannot connect to" in message, message
    assert "(after 3 attempts)" in message and "5 answers are cached" in message, message


def test_the_time_left_comes_from_answers_and_is_not_shown_at_the_end():
    stats = RunStats(total=1000)
    stats.started -= 60
    stats.add(requests=70, retries=60)
    stats.failed.update({f"q{i}": "no answer" for i in range(10)})
    assert " left" not in stats.line()  # failures alone say nothing of how long answers take
    stats.add(answered=10, requests=10)
    assert " left" in stats.line() and " left" not in stats.line(final=True)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("answered", [0, 3])
def test_a_failed_run_leaves_no_estimate_on_a_terminal(monkeypatch, answered):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    progress = AnswerProgress(quiet=False)
    stats = RunStats(total=100)
    stats.started -= 30
    stats.add(answered=answered, requests=answered + 1)
    stats.failed["q"] = "cannot connect"
    progress._last = 0.0  # as after the first interval
    progress(stats)
    progress.end(stats, ended=False)
    shown = terminal.getvalue().split("\r\x1b[2K")[-1]  # what is left on the terminal
    if answered:
        assert shown.startswith("kitab answer: answered 3/100") and shown.endswith("\n") and " left" not in shown
    else:
        assert shown == ""  # erased: the error line that follows is the only one


# -- an endpoint that replies with reasoning only ------------------------------------------------
@pytest.mark.parametrize("where", THINKING)
def test_a_reasoning_only_reply_is_flagged_per_row_and_warned_once(released, tmp_path, where):
    with ChatServer(thinker(where)) as server:
        result = answer(server.url, tmp_path, released, "--limit", "12")
        sent = len(server.chat_requests)
    err = result.stderr.decode()
    assert result.returncode == 0 and sent == 12, err
    assert err.strip().splitlines() == [
        "kitab: warning: 12 answers are reasoning only, no content (flagged reasoning_only; scored as abstentions): "
        "raise --max-tokens or --max-completion-tokens, or check the server's reasoning parser"
    ], err
    rows = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text(encoding="utf-8").split("\n") if line]
    assert len(rows) == 12 and all(row["reasoning_only"] is True for row in rows)


def test_reasoning_only_claims_are_flagged_and_the_evaluator_counts_old_files_too(released, tmp_path):
    with ChatServer(thinker()) as server:
        result = answer(server.url, tmp_path, released, "--task", "claims", "--limit", "4")
    assert result.returncode == 0 and b"8 answers are reasoning only" in result.stderr, result.stderr
    path = tmp_path / "answers.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]
    assert rows and all(row["reasoning_only"] for row in rows)
    old = tmp_path / "old.jsonl"  # as written before the flag existed
    old.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "reasoning_only"}) + "\n" for r in rows))
    for file in (path, old):
        scored = kitab(
            "evaluate", "--release", RELEASE, "--task", "claims", "--answers", file, "--warehouse", released,
            "--output", "json", timeout=300,
        )  # fmt: skip
        assert scored.returncode == 0, scored.stderr
        assert json.loads(scored.stdout)["reasoning_only"] == len(rows)
        assert b"reasoning only" in scored.stderr


def test_an_answer_with_content_is_not_flagged(released, tmp_path):
    with ChatServer() as server:  # answers with a book list
        result = answer(server.url, tmp_path, released, "--limit", "5")
    assert result.returncode == 0 and b"reasoning only" not in result.stderr, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text(encoding="utf-8").split("\n") if line]
    assert len(rows) == 5 and not any(row["reasoning_only"] for row in rows)


def test_what_counts_as_reasoning_only():
    assert is_reasoning_only("", "I think Beloved")
    assert is_reasoning_only(None, "I think")
    assert is_reasoning_only("<think>Beloved?</think>\n", None)
    assert is_reasoning_only("<think>cut before the end", None)
    assert not is_reasoning_only("<think>hm</think>Output:\n1. Title: Beloved", None)
    assert not is_reasoning_only("Output: none", "I think")
    assert not is_reasoning_only("", None) and not is_reasoning_only("  ", "  ")  # empty: not reasoning
