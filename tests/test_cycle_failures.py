"""kitab cycle (flows/cycle.py): each way one model fails while the others are scored (over budget,
no key, a refused key), a repeated prompt, the export and push, a refused site folder. Apart from
tests/test_cycle.py (the Done-when) so that the two run on both test workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kitab.simulate.chat import ChatServer
from tests.cycle_helpers import AUTHORS, alpha_answer, cycle, runs_of, write_models


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
