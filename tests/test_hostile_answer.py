"""Issue 31's hostile pass on ``kitab answer`` (item 7), through the real ``kitab`` command
against the loopback chat endpoint (kitab/simulate/chat.py) misbehaving on purpose: a total
deadline per request, a size cap before and after decompression, Ctrl-C and SIGTERM that stop
the run within seconds wherever it waits, a malformed body failing its query only, and the key
scrubbed before the error message is cut."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kitab.simulate.chat import ChatServer
from tests.releases import dump_release
from tests.test_cli_errors import assert_user_error, kitab, kitab_cmd
from tests.test_hostile import RELEASE


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """One release of 8 authors from the bundled dump (tests/test_hostile.py's)."""
    return dump_release(tmp_path_factory.mktemp("hostile_answer") / "wh", authors=8, seed=42, release=RELEASE)


KEY = "sk-hostile-4b7e19c2d8a05f63"


def out(result) -> str:
    return result.stdout.decode("utf-8", "replace")


def answer_args(url: str, tmp_path: Path, warehouse: Path, *extra) -> list[str]:
    return [
        "answer",
        "--release",
        RELEASE,
        "--model",
        "hostile",
        "--base-url",
        url,
        "--out",
        str(tmp_path / "answers.jsonl"),
        "--cache",
        str(tmp_path / "cache.sqlite"),
        "--warehouse",
        str(warehouse),
        "--quiet",
        *extra,
    ]


def test_a_body_that_never_ends_gives_up_at_the_timeout_in_one_line(released, tmp_path):
    with ChatServer() as server:
        server.hostile("endless", 5)
        started = time.monotonic()
        result = kitab(
            *answer_args(server.url, tmp_path, released, "--limit", "1", "--timeout", "5", "--max-attempts", "1"),
            timeout=120,
        )
        elapsed = time.monotonic() - started
    assert_user_error(result, "within 5 s")
    assert elapsed <= 30, elapsed


@pytest.mark.parametrize("kind", ["gzip_bomb", "deep_json", "huge_tokens", "surrogate"])
def test_a_hostile_body_fails_its_query_only(released, tmp_path, kind):
    with ChatServer() as server:
        server.hostile(kind, 1)
        result = kitab(
            *answer_args(
                server.url,
                tmp_path,
                released,
                "--limit",
                "3",
                "--concurrency",
                "1",
                "--max-attempts",
                "1",
                "--allow-missing",
            ),
            timeout=120,
        )
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0 and "Traceback" not in err, err
    lines = (tmp_path / "answers.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all(json.loads(line)["response"].startswith("Output:") for line in lines)
    assert "2 of 3 queries answered" in out(result) and "1 failed" in out(result), out(result)


def test_the_key_is_scrubbed_before_the_message_is_cut(released, tmp_path):
    with ChatServer() as server:
        server.hostile("echo_key", 5)
        result = kitab(
            *answer_args(server.url, tmp_path, released, "--limit", "1", "--max-attempts", "1"),
            env={"OPENAI_API_KEY": KEY},
            timeout=120,
        )
    err = assert_user_error(result, "HTTP 400")
    assert KEY[:6] not in err and KEY[-6:] not in err, err


def _interrupted(released, tmp_path, server: ChatServer, sig: int, *extra) -> tuple[subprocess.Popen, float]:
    child = subprocess.Popen(
        [*kitab_cmd(), *answer_args(server.url, tmp_path, released, "--limit", "2", *extra)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if k != "KITAB_DEBUG"},
    )
    deadline = time.monotonic() + 60
    while not server.chat_requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.chat_requests, "no request arrived"
    time.sleep(0.5)  # in the request (or the wait) for sure
    child.send_signal(sig)
    sent = time.monotonic()
    child.wait(timeout=60)
    return child, time.monotonic() - sent


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_hanging_request_within_seconds(released, tmp_path, sig):
    with ChatServer() as server:
        server.hostile("hang", 5)
        child, took = _interrupted(released, tmp_path, server, sig, "--timeout", "600")
    err = child.stderr.read().decode()
    assert child.returncode != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert took <= 5, took


def test_a_signal_stops_a_retry_after_wait_within_seconds(released, tmp_path):
    with ChatServer() as server:
        server.throttle(1, retry_after=200)
        child, took = _interrupted(released, tmp_path, server, signal.SIGINT, "--concurrency", "2")
    err = child.stderr.read().decode()
    assert child.returncode != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert took <= 5, took


# -- kitab evaluate (item 8): every malformed value is one line naming its line -------------------
@pytest.mark.parametrize("kind", ["a lone surrogate", "a 100,000-digit integer"])
def test_a_malformed_value_in_an_answers_file_is_one_line_naming_the_line(released, tmp_path, kind):
    from kitab.core.warehouse import Warehouse

    with Warehouse(released).connect() as con:
        (query_id,) = con.execute("select query_id from queries order by query_id limit 1").fetchone()
    good = json.dumps({"query_id": query_id, "response": "Output:\n1. Reason: r. Title: T\n"})
    head = json.dumps({"query_id": query_id})[:-1]  # written by hand: json.dumps would not write these
    bad = head + (
        ', "response": "Title: \\ud800"}'
        if kind == "a lone surrogate"
        else ', "response": "x", "sample": ' + "9" * 100_000 + "}"
    )
    answers = tmp_path / "answers.jsonl"
    answers.write_text(good + "\n" + bad + "\n", encoding="utf-8")
    result = kitab("evaluate", "--release", RELEASE, "--answers", answers, "--warehouse", released, timeout=120)
    assert_user_error(result, f"{answers.name}:2:")
