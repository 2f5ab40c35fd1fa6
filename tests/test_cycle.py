"""kitab cycle (flows/cycle.py, kitab/app/commands/cycle.py): issue 40's Done-when, on the
bundled snapshot's dump with 10 authors per release and two loopback endpoints
(kitab/simulate/chat.py). Each other way one model fails: tests/test_cycle_failures.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from kitab.core.env import PROJECT_ROOT
from kitab.core.warehouse import Warehouse
from kitab.simulate.chat import ChatServer
from tests.browser import chromium_path, dom
from tests.cycle_helpers import AUTHORS, alpha_answer, beta_answer, cycle, rows, runs_of, write_models


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
