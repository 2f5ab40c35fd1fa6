"""kitab cycle (flows/cycle.py, kitab/app/commands/cycle.py): issue 40's Done-when, on the
bundled snapshot's dump with 10 authors per release and two loopback endpoints
(kitab/simulate/chat.py), and each way one model fails while the others are scored."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kitab.core.env import BUNDLED_SNAPSHOT, PROJECT_ROOT
from kitab.core.warehouse import Warehouse
from kitab.release.models_file import read_models
from kitab.simulate.chat import ChatServer
from tests.browser import chromium_path, dom

AUTHORS = 10


def alpha_answer(prompt: str) -> str:
    return (
        "True\nIt is." if prompt.startswith("Is the following claim") else "Output:\n1. Reason: fits. Title: Beloved\n"
    )


def beta_answer(prompt: str) -> str:
    return "False" if prompt.startswith("Is the following claim") else "Output:\n1. Reason: none. Title: Nothing\n"


def write_models(path: Path, entries: list[dict]) -> Path:
    """A models file with one [[model]] table per entry."""
    lines = []
    for entry in entries:
        lines.append("[[model]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def cycle(root: Path, models: Path, release: str, seed: int, **options) -> dict:
    from kitab.app.commands.cycle import cycle_once

    inputs = dict(source="dump", authors=AUTHORS, seed=seed, release=release)
    return cycle_once(read_models(models), inputs, snapshot=BUNDLED_SNAPSHOT, warehouse=root, direct=True, **options)


def rows(root: Path, sql: str) -> list[tuple]:
    with Warehouse(root).connect() as con:
        return con.execute(sql).fetchall()


def runs_of(root: Path, release: str) -> dict[tuple[str, str], dict]:
    from kitab.release.model_runs import read_model_runs

    with Warehouse(root).connect(release=release) as con:
        return {(r["model"], r["task"]): r for r in read_model_runs(con)}


def test_two_cycles_two_models_then_one_endpoint_down_and_a_rerun(tmp_path):
    root = tmp_path / "wh"
    with ChatServer(alpha_answer) as alpha, ChatServer(beta_answer) as beta:
        models = write_models(
            tmp_path / "models.toml",
            [
                {"name": "alpha", "base_url": alpha.url, "model": "served-a"},
                {"name": "beta", "base_url": beta.url, "model": "served-b", "concurrency": 2},
            ],
        )
        first = cycle(root, models, "r1", 3)
        second = cycle(root, models, "r2", 5)
    for summary in (first, second):
        assert summary["scored"] == ["alpha", "beta"] and summary["failures"] == [] and summary["exit_code"] == 0
        assert summary["release_step"]["built"]
    # two releases, disjoint authors
    authors = rows(root, "SELECT release, qid FROM authors")
    r1, r2 = ({q for r, q in authors if r == rel} for rel in ("r1", "r2"))
    assert len(r1) == len(r2) == AUTHORS and not r1 & r2
    # both tasks scored for both models on both releases: evaluations, claim_evaluations, model_runs
    for release in ("r1", "r2"):
        runs = runs_of(root, release)
        assert sorted(runs) == [("alpha", "claims"), ("alpha", "queries"), ("beta", "claims"), ("beta", "queries")]
        assert {r["status"] for r in runs.values()} == {"scored"}
        queries = runs["alpha", "queries"]
        assert queries["answered"] == queries["prompts"] > 0 and queries["requests"] == queries["prompts"]
        assert queries["prompt_tokens"] > 0 and queries["service_seconds"] > 0 and queries["failed_ids"] == []
    assert sorted(rows(root, "SELECT DISTINCT release, model FROM evaluations")) == [
        ("r1", "alpha"), ("r1", "beta"), ("r2", "alpha"), ("r2", "beta"),
    ]  # fmt: skip
    assert sorted(rows(root, "SELECT DISTINCT release, model FROM claim_evaluations")) == [
        ("r1", "alpha"), ("r1", "beta"), ("r2", "alpha"), ("r2", "beta"),
    ]  # fmt: skip
    # the site, rebuilt by the cycle: its index, read in headless Chromium, names both models and both releases
    index = root / "site" / "index.html"
    assert second["site"]["out"] == str((root / "site").resolve()) and second["site"]["releases"] == ["r1", "r2"]
    html, log = dom(chromium_path(), index)
    assert ":CONSOLE" not in log
    for name in ("r1", "r2", "alpha", "beta"):
        assert f">{name}</a>" in html, name
    # the answers files stay where a rerun finds them, and are what was scored
    answers = root / "answers" / "r2" / "alpha.claims.jsonl"
    assert runs_of(root, "r2")["alpha", "claims"]["answers_sha256"] == _sha256(answers)

    # a third cycle with beta's endpoint stopped: the CLI publishes, scores alpha, marks beta failed, exits 3
    with ChatServer(alpha_answer) as alpha:
        models = write_models(
            tmp_path / "models.toml",
            [
                {"name": "alpha", "base_url": alpha.url, "model": "served-a"},
                {"name": "beta", "base_url": beta.url, "model": "served-b"},  # nothing listens there now
            ],
        )
        argv = ["--models", str(models), "--source", "dump", "--authors", str(AUTHORS), "--seed", "11"]
        argv += ["--release", "r3", "--runner", "local", "--quiet", "--warehouse", str(root)]
        done = subprocess.run(
            [sys.executable, "-m", "kitab.app.cli", "cycle", *argv],
            capture_output=True,
            text=True,
            cwd=PROJECT_ROOT,
            env={**os.environ, "COLUMNS": "200"},
            timeout=600,
        )
        assert done.returncode == 3, done.stderr
        assert "failed: beta" in done.stdout and "Models scored: alpha" in done.stdout
        assert f"Site: 6 pages in {(root / 'site').resolve()}" in done.stdout
        runs = runs_of(root, "r3")
        assert runs["alpha", "queries"]["status"] == runs["alpha", "claims"]["status"] == "scored"
        for task in ("queries", "claims"):
            failed = runs["beta", task]
            assert failed["status"] == "failed" and "is the server running" in failed["reason"]
            # a refused connection stops the model's run at once: what was in flight (concurrency 4), no retries
            assert 1 <= failed["requests"] <= 8 and failed["answered"] == 0
        assert "r3" in Warehouse(root).committed_releases()
        assert rows(root, "SELECT count(*) FROM evaluations WHERE release = 'r3' AND model = 'beta'") == [(0,)]
        html, _ = dom(chromium_path(), index)  # the site says so: beta's row on r3 is failed, with its reason
        assert ">r3</a>" in html and re.search(r'<tr[^>]*class="failed"[^>]*data-model="beta"', html), html[-3000:]
        sent = len(alpha.chat_requests)
        assert sent == sum(runs["alpha", t]["requests"] for t in ("queries", "claims")) > 0

        # the rerun of the third cycle: the release stands, alpha's answers come from the cache
        again = cycle(root, models, "r3", 11, quiet=True)
        assert not again["release_step"]["built"] and again["exit_code"] == 3
        assert len(alpha.chat_requests) == sent  # 0 requests to the live endpoint for what is done
        assert runs_of(root, "r3")["alpha", "queries"]["from_cache"] == runs["alpha", "queries"]["prompts"]

        # beta back (elsewhere): only beta is asked, and the cycle ends with every model scored
        with ChatServer(beta_answer) as beta_again:
            models = write_models(
                tmp_path / "models.toml",
                [
                    {"name": "alpha", "base_url": alpha.url, "model": "served-a"},
                    {"name": "beta", "base_url": beta_again.url, "model": "served-b"},
                ],
            )
            resumed = cycle(root, models, "r3", 11)
            assert resumed["exit_code"] == 0 and resumed["scored"] == ["alpha", "beta"]
            assert len(alpha.chat_requests) == sent and len(beta_again.chat_requests) > 0
            assert resumed["requests"] == len(beta_again.chat_requests)


def _sha256(path: Path) -> str:
    from kitab.core.files import sha256_file

    return sha256_file(path)


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    from tests.releases import dump_release

    return dump_release(tmp_path_factory.mktemp("cycle") / "wh", authors=AUTHORS, seed=3, release="r1")


def test_each_failure_is_its_models_row_and_the_others_are_scored(released, tmp_path, monkeypatch):
    """Over budget, no key, a refused key: each that model's failed rows with the reason; the
    release is not rebuilt (committed with these parameters) and the good model is scored."""
    monkeypatch.setenv("KITAB_TEST_CYCLE_KEY", "sk-good-key-0123456789")
    monkeypatch.setenv("KITAB_TEST_CYCLE_WRONG", "sk-wrong-key-9876543210")
    monkeypatch.delenv("KITAB_TEST_CYCLE_NONE", raising=False)
    with (
        ChatServer(alpha_answer, key="sk-good-key-0123456789") as keyed,
        ChatServer(alpha_answer) as cheap,
    ):
        models = write_models(
            tmp_path / "models.toml",
            [
                {"name": "good", "base_url": keyed.url, "model": "m", "api_key_env": "KITAB_TEST_CYCLE_KEY"},
                {"name": "thrifty", "base_url": cheap.url, "model": "m", "budget": 7, "concurrency": 3},
                {"name": "keyless", "base_url": keyed.url, "model": "m", "api_key_env": "KITAB_TEST_CYCLE_NONE"},
                {"name": "refused", "base_url": keyed.url, "model": "m", "api_key_env": "KITAB_TEST_CYCLE_WRONG"},
            ],
        )
        before = len(keyed.chat_requests)
        summary = cycle(released, models, "r1", 3, limit=12)
        assert not summary["release_step"]["built"]  # r1 stands: committed with these parameters
        assert summary["scored"] == ["good"] and summary["exit_code"] == 3
        runs = runs_of(released, "r1")
        good = runs["good", "queries"]
        assert good["status"] == "scored" and good["prompts"] == good["answered"] == 12  # --limit's sample
        # the budget: exactly 7 requests, the 8th never sent; the claims got none left
        assert len(cheap.chat_requests) == 7
        assert runs["thrifty", "queries"]["reason"].startswith("over budget (7 requests per cycle)")
        assert runs["thrifty", "queries"]["requests"] == 7 and runs["thrifty", "claims"]["requests"] == 0
        assert runs["thrifty", "claims"]["reason"].startswith("over budget (7 requests per cycle)")
        assert runs["keyless", "queries"]["reason"] == "no API key: the variable KITAB_TEST_CYCLE_NONE is not set"
        assert runs["keyless", "queries"]["requests"] == 0
        refused = [runs["refused", t] for t in ("queries", "claims")]
        assert all("HTTP 401" in r["reason"] and 1 <= r["requests"] <= 8 for r in refused)  # in flight, then stopped
        # good: 12 queries and 12 claim pairs (24 claims: --limit samples pairs), each asked once; keyless: nothing
        assert runs["good", "claims"]["prompts"] == runs["good", "claims"]["answered"] == 24
        assert len(keyed.chat_requests) - before == 12 + 24 + sum(r["requests"] for r in refused)
        # the key is in no row and not in the summary (the server's own 401 text masks it, as OpenAI's does)
        text = json.dumps(summary, default=str) + json.dumps(list(runs.values()), default=str)
        assert "sk-good-key-0123456789" not in text and "sk-wrong-key-9876543210" not in text

        # a rerun with more budget: the 7 cached answers are not asked again
        write_models(
            tmp_path / "models.toml",
            [{"name": "thrifty", "base_url": cheap.url, "model": "m", "budget": 100, "concurrency": 3}],
        )
        again = cycle(released, tmp_path / "models.toml", "r1", 3, limit=12)
        assert again["scored"] == ["thrifty"]
        assert len(cheap.chat_requests) == 7 + (12 - 7) + 24


def test_a_repeated_prompt_is_asked_once_and_a_rerun_writes_the_same_file(tmp_path):
    """Two prompts of one text (a release's claims can repeat a claim) share one cache key: asked
    once, both get that answer, so the rerun from the cache writes the very same answers file
    (else its sha256 differs and the rerun scores a second evaluation of the same model)."""
    from kitab.core.params import ModelEndpoint
    from kitab.core.policy import ChatPolicy
    from kitab.release.answer import Prompt, answer_prompts, answers_lines
    from kitab.sources.chat import Params
    from kitab.sources.chat_session import open_chat_session

    prompts = [
        Prompt("c1", "claims", "Is it true?"),
        Prompt("c2", "claims", "Other?"),
        Prompt("c3", "claims", "Is it true?"),
    ]
    files = []
    with ChatServer(alpha_answer) as server:
        for _ in range(2):
            endpoint = ModelEndpoint(server.url, "m", str(tmp_path / "cache.sqlite"))
            with open_chat_session(endpoint, ChatPolicy(concurrency=3)) as session:
                results, stats = answer_prompts(prompts, session=session, params=Params())
            files.append(answers_lines(prompts, results, "m"))
        assert len(server.chat_requests) == 2  # the repeated text once, in the first run only
    assert len(files[0]) == 3 and files[0] == files[1]
    assert results["c1", 0] == results["c3", 0] and stats.from_cache == 3


def test_export_and_push_when_asked_and_a_rerun_finds_them_done(released, tmp_path, monkeypatch):
    """--export DIR writes DIR/<release> (kitab export's folder), --push uploads and tags it (the
    loopback Hub, tests/fake_hub.py); the rerun leaves the export as it is and does not push again."""
    import secrets

    from tests.fake_hub import FakeHub

    token = "hf_kitabtest" + secrets.token_hex(16)
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("HF_XET_CACHE", str(tmp_path / "xet"))
    exports = tmp_path / "exports"
    with ChatServer(alpha_answer) as alpha, FakeHub(token, max_seconds=120) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        models = write_models(tmp_path / "models.toml", [{"name": "alpha", "base_url": alpha.url, "model": "a"}])
        first = cycle(released, models, "r1", 3, limit=3, export_dir=exports, push="kitab-org/kitab")
        assert first["exit_code"] == 0 and first["export"]["written"]
        assert json.loads((exports / "r1" / "provenance.json").read_text())["release"] == "r1"
        assert first["export"]["push"].startswith("pushed") and set(hub.repos["kitab-org/kitab"].tags) == {"r1"}
        again = cycle(released, models, "r1", 3, limit=3, export_dir=exports, push="kitab-org/kitab")
        assert not again["export"]["written"] and again["export"]["push"].startswith("not pushed again")
        assert again["requests"] == 0
    with pytest.raises(Exception, match="lies inside the warehouse"):  # kitab export's output rule
        cycle(released, models, "r1", 3, limit=3, export_dir=released / "exports")


def test_a_site_folder_the_output_rule_refuses_stops_the_cycle_before_any_model_is_asked(released, tmp_path):
    from kitab.core.outputs import OutputRefused

    with ChatServer(alpha_answer) as alpha:
        models = write_models(tmp_path / "models.toml", [{"name": "alpha", "base_url": alpha.url, "model": "a"}])
        with pytest.raises(OutputRefused, match="--out"):
            cycle(released, models, "r1", 3, site_dir=released / "tables", quiet=True)
        assert alpha.chat_requests == []
