"""``kitab model serve --fake``: the command in a subprocess on a free port, asked by ``kitab
answer`` and scored by ``kitab evaluate`` on a small release, both tasks: perfect scores all
correct and pair accuracy 1.000, refusal abstains everywhere, one-title is between; a release
published after the endpoint started is answered perfectly; an unknown prompt gets "I don't
know." after one re-read of the releases; SIGTERM stops it with exit 0.

One warehouse for the module (two releases of the bundled dump, ~20 s each)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from kitab.app.cli import app
from kitab.release.fake_models import REFUSAL, UNKNOWN, FakeModel, first_book, list_answer
from tests.releases import dump_release

FIRST, LATER = "2026.11.27-s5", "2026.11.28-s6"
runner = CliRunner()
SERVED = re.compile(r"^serving model (?P<model>\S+) at (?P<url>http://127\.0\.0\.1:\d+/v1) ")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    return dump_release(tmp_path_factory.mktemp("model-serve") / "warehouse", authors=12, seed=5, release=FIRST)


@contextmanager
def serving(behaviour: str, warehouse: Path, *extra: str):
    """``kitab model serve --fake`` in its own process on a free port: (model id, base URL, process)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "kitab.app.cli", "model", "serve", "--fake", "--behaviour", behaviour, "--port", "0"]
        + ["--warehouse", str(warehouse), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"},
    )
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(child.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout=120)
    try:
        match = SERVED.match(first[0] if first else "")
        assert match, f"no served line: {first} {child.stderr.read() if child.poll() is not None else ''}"
        yield match["model"], match["url"], child
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
        child.wait(timeout=60)


def answer_and_evaluate(warehouse: Path, release: str, model: str, url: str, out: Path, task: str) -> dict:
    answered = runner.invoke(
        app,
        ["answer", "--release", release, "--model", model, "--base-url", url, "--out", str(out)]
        + ["--task", task, "--cache", str(out.with_suffix(".sqlite")), "--warehouse", str(warehouse)],
    )
    assert answered.exit_code == 0, answered.output
    scored = runner.invoke(
        app,
        ["evaluate", "--release", release, "--answers", str(out), "--task", task, "--output", "json"]
        + ["--warehouse", str(warehouse)],
    )
    assert scored.exit_code == 0, scored.output
    return json.loads(scored.stdout)


def query_scores(result: dict) -> dict:
    overall = result["leaderboard"]["evaluations"][0]["overall"]
    return {"all_correct": overall["all_correct"], "abstention_rate": overall["abstention_rate"]}


def claim_scores(result: dict) -> dict:
    overall = result["pair_accuracy"][0]["overall"]
    return {"pair_accuracy": overall["pair_accuracy"]["value"], "claim_accuracy": overall["claim_accuracy"]["value"]}


@pytest.fixture(scope="module")
def scored(warehouse, tmp_path_factory) -> dict:
    """Each behaviour's scores on FIRST, both tasks, through the commands."""
    tmp = tmp_path_factory.mktemp("answers")
    out = {}
    for behaviour in ("perfect", "one-title", "refusal"):
        with serving(behaviour, warehouse) as (model, url, child):
            assert model == f"fake-{behaviour}"
            queries = answer_and_evaluate(warehouse, FIRST, model, url, tmp / f"{behaviour}.jsonl", "queries")
            claims = answer_and_evaluate(warehouse, FIRST, model, url, tmp / f"{behaviour}-claims.jsonl", "claims")
            child.send_signal(signal.SIGTERM)
            assert child.wait(timeout=60) == 0  # SIGTERM is the normal stop
            assert re.search(r"stopped: \d+ requests answered", child.stderr.read())
        out[behaviour] = (query_scores(queries), claim_scores(claims), queries)
    return out


def test_perfect_scores_one_on_both_tasks(scored):
    queries, claims, result = scored["perfect"]
    assert result["coverage"] == 1.0 and result["answered"] == result["queries"] > 50
    assert queries == {"all_correct": 1.0, "abstention_rate": 0.0}
    assert claims == {"pair_accuracy": 1.0, "claim_accuracy": 1.0}


def test_refusal_abstains_everywhere(scored, warehouse):
    queries, claims, result = scored["refusal"]
    from kitab.core.warehouse import Warehouse

    with Warehouse(warehouse).connect(release=FIRST) as con:
        satisfiable = con.execute("SELECT avg((mapped_books <> '[]')::int) FROM kitab_book_constraints").fetchone()[0]
    assert result["coverage"] == 1.0
    assert queries["all_correct"] == 0.0 and queries["abstention_rate"] == pytest.approx(satisfiable)
    assert claims == {"pair_accuracy": 0.0, "claim_accuracy": 0.0}  # no verdict read: every claim wrong


def test_one_title_is_between(scored):
    queries, claims, _ = scored["one-title"]
    assert 0.0 < queries["all_correct"] < 1.0 and queries["abstention_rate"] == 0.0
    assert claims["pair_accuracy"] == 0.0 and claims["claim_accuracy"] == pytest.approx(0.5)  # always True


def test_a_release_published_while_it_serves(warehouse, tmp_path, scored):
    with serving("perfect", warehouse) as (model, url, _):
        dump_release(warehouse, authors=12, seed=6, release=LATER)
        queries = answer_and_evaluate(warehouse, LATER, model, url, tmp_path / "later.jsonl", "queries")
        claims = answer_and_evaluate(warehouse, LATER, model, url, tmp_path / "later-claims.jsonl", "claims")
        unknown = httpx.post(
            f"{url}/chat/completions",
            json={"model": model, "messages": [{"role": "user", "content": "Name a book by nobody."}]},
        ).json()
    assert query_scores(queries) == {"all_correct": 1.0, "abstention_rate": 0.0}
    assert claim_scores(claims) == {"pair_accuracy": 1.0, "claim_accuracy": 1.0}
    assert unknown["choices"][0]["message"]["content"] == UNKNOWN


def test_the_key_is_read_from_the_variable(warehouse, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODEL_KEY", "sk-local-test-key")
    with serving("refusal", warehouse, "--key-env", "FAKE_MODEL_KEY") as (model, url, _):
        body = {"model": model, "messages": [{"role": "user", "content": "hello"}]}
        wrong = httpx.post(f"{url}/chat/completions", json=body, headers={"Authorization": "Bearer nope"})
        right = httpx.post(f"{url}/chat/completions", json=body, headers={"Authorization": "Bearer sk-local-test-key"})
    assert wrong.status_code == 401
    assert right.json()["choices"][0]["message"]["content"] == REFUSAL
    missing = runner.invoke(app, ["model", "serve", "--fake", "--key-env", "NO_SUCH_VARIABLE_SET"])
    assert missing.exit_code == 1 and "NO_SUCH_VARIABLE_SET" in missing.output


def test_an_unknown_prompt_rereads_the_releases_once(warehouse):
    fake = FakeModel(warehouse, "perfect")
    assert fake.refresh() and fake.reads == 1
    assert fake.answer("Who wrote nothing?") == UNKNOWN and fake.reads == 2  # one re-read, nothing new
    assert fake.answer("Who wrote nothing at all?") == UNKNOWN and fake.reads == 3
    prompt, known = next(iter(fake.known.items()))
    assert fake.answer(prompt) == known.perfect and fake.reads == 3  # a known prompt reads nothing


def test_answers_in_kitab_format():
    assert first_book(["Zeta (2001)", "Alpha (1999)", "Beta (1999)"]) == "Alpha"
    assert first_book([]) is None
    assert list_answer(["Beloved", "Jazz"]) == (
        "Output:\n1. Reason: It satisfies the criteria. Title: Beloved\n"
        "2. Reason: It satisfies the criteria. Title: Jazz\n"
    )
    assert list_answer([]) == "Output:\nNo books found.\n"


def test_gguf_needs_its_file_and_runtime(tmp_path):
    from kitab.app.commands.model import gguf_command

    model = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    missing = runner.invoke(app, ["model", "serve", "--gguf", str(model)])
    assert missing.exit_code == 1 and "no such file" in missing.output
    model.write_bytes(b"GGUF")
    no_runtime = runner.invoke(app, ["model", "serve", "--gguf", str(model), "--python", str(tmp_path / "python")])
    assert no_runtime.exit_code == 1 and "make local-model" in no_runtime.output
    both = runner.invoke(app, ["model", "serve", "--fake", "--gguf", str(model)])
    assert both.exit_code == 1 and "one of --fake or --gguf" in both.output
    command = gguf_command(Path("py"), model, "smollm2", 8123, 4096)
    assert command[:3] == ["py", "-m", "llama_cpp.server"]
    assert dict(zip(command[3::2], command[4::2])) == {
        "--model": str(model),
        "--model_alias": "smollm2",
        "--host": "127.0.0.1",
        "--port": "8123",
        "--n_ctx": "4096",
    }
