"""A ``--limit`` trial is scored over the queries it asked, and says so (issue 40): ``kitab
answer --limit N`` writes ``limit`` and ``limit_seed`` on every line, ``kitab evaluate`` (both
tasks) scores that sample (an unanswered query inside it still wrong), ``--over answered`` /
``--over release`` choose otherwise, and the population is in the result, its rows and the
report. The abstention and cut rates are over the queries answered. Through the real
``kitab answer`` against the loopback endpoint (kitab/simulate/chat.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kitab.core.errors import KitabError
from kitab.core.warehouse import Warehouse
from kitab.release.answer import answer_release
from kitab.release.claims import evaluate_claims, format_claim_result
from kitab.release.evaluation.run import evaluate_release
from kitab.release.leaderboard import format_evaluation, leaderboard
from kitab.simulate.chat import ChatServer
from tests.releases import dump_release

RELEASE = "trial"


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    return dump_release(tmp_path_factory.mktemp("wh"), authors=12, seed=3, release=RELEASE)


def reply(prompt: str) -> str:
    """Every third query refused (an abstention where the key has books), the rest one title."""
    if sum(map(ord, prompt)) % 3 == 0:
        return "I'm sorry, but I can't help with that."
    return 'Output:\n1. Reason: a guess. Title: "The Unwritten Book"'


@pytest.fixture(scope="module")
def trial(released, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("answers") / "trial.jsonl"
    with ChatServer(reply) as server:
        answer_release(
            released, RELEASE, model="m", base_url=server.url, out=out, limit=10, limit_seed=3,
            cache_path=out.parent / "cache.sqlite",
        )  # fmt: skip
    return out


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def stored(warehouse: Path, model: str) -> list[tuple]:
    with Warehouse(warehouse).connect(release=RELEASE) as con:
        return con.execute(
            "SELECT query_id, answered, abstained, population FROM evaluations WHERE model = ? ORDER BY query_id",
            [model],
        ).fetchall()


def total_queries(warehouse: Path) -> int:
    with Warehouse(warehouse).connect(release=RELEASE) as con:
        return con.execute("SELECT count(*) FROM queries").fetchone()[0]


def test_a_limit_trial_is_scored_over_its_sample_and_says_so(released, trial):
    rows = lines(trial)
    assert len(rows) == 10 and all((r["limit"], r["limit_seed"]) == (10, 3) for r in rows)
    total = total_queries(released)
    result = evaluate_release(released, RELEASE, trial)
    note = f"a --limit 10 sample (seed 3) of {total:,} queries"
    assert result["population"] == {"over": "sample", "note": note, "limit": 10, "limit_seed": 3, "n": 10}
    assert (result["queries"], result["release_queries"], result["answered"], result["coverage"]) == (
        10,
        total,
        10,
        1.0,
    )
    kept = stored(released, "m")
    assert len(kept) == 10 and {r[3] for r in kept} == {note}
    assert {r[0] for r in kept} == {r["query_id"] for r in rows}
    abstained = sum(bool(r[2]) for r in kept)
    assert 0 < abstained < 10 and result["abstention_rate"] == abstained / 10
    assert note in format_evaluation(result)
    with Warehouse(released).connect(release=RELEASE) as con:
        (entry,) = leaderboard(con, RELEASE, b=50)["evaluations"]
    assert entry["population"] == note and entry["overall"]["queries"] == 10
    assert entry["overall"]["abstention_rate"] == abstained / 10


def test_an_unanswered_query_of_the_sample_stays_wrong_and_rates_are_over_the_answered(released, trial, tmp_path):
    rows = lines(trial)
    kept = write(tmp_path / "short.jsonl", rows[:7])
    result = evaluate_release(released, RELEASE, kept, model="short")
    assert (result["queries"], result["answered"], result["coverage"]) == (10, 7, 0.7)
    scored = stored(released, "short")
    assert len(scored) == 10 and sum(1 for r in scored if not r[1]) == 3
    abstained = sum(bool(r[2]) for r in scored)
    # over the 7 answered, not the 10 in the sample, nor the release's queries
    assert result["abstention_rate"] == abstained / 7
    with Warehouse(released).connect(release=RELEASE) as con:
        (summary,) = con.execute(
            "SELECT queries, answered, abstention_rate, cut_rate FROM evaluation_summary WHERE model = 'short' "
            "AND dimension = 'all' AND n_constraints IS NULL"
        ).fetchall()
        (entry,) = leaderboard(con, RELEASE, model="short", answers_sha256=result["answers_sha256"], b=50)[
            "evaluations"
        ]
    assert summary == (10, 7, abstained / 7, 0.0)
    assert entry["overall"]["abstention_rate"] == abstained / 7 and entry["overall"]["cut_rate"] == 0.0

    answered = evaluate_release(released, RELEASE, kept, model="short-answered", over="answered")
    assert (answered["queries"], answered["coverage"]) == (7, 1.0)
    assert answered["population"]["note"] == f"the 7 queries the file answers, of {total_queries(released):,}"
    assert len(stored(released, "short-answered")) == 7

    whole = evaluate_release(released, RELEASE, kept, model="short-release", over="release")
    assert whole["queries"] == total_queries(released) and whole["abstention_rate"] == abstained / 7


def test_a_file_without_a_limit_is_scored_over_the_release_and_mixed_files_are_refused(released, trial, tmp_path):
    rows = lines(trial)
    plain = write(
        tmp_path / "plain.jsonl", [{k: v for k, v in r.items() if k not in ("limit", "limit_seed")} for r in rows]
    )
    result = evaluate_release(released, RELEASE, plain, model="plain")
    assert result["population"]["over"] == "release" and result["queries"] == total_queries(released)
    with pytest.raises(KitabError, match="--over sample: the answers file names no --limit"):
        evaluate_release(released, RELEASE, plain, model="plain", over="sample")
    mixed = write(tmp_path / "mixed.jsonl", [*rows[:5], *(dict(r, limit=None) for r in rows[5:])])
    with pytest.raises(KitabError, match="lines answer different populations"):
        evaluate_release(released, RELEASE, mixed, model="mixed")
    wrong = write(tmp_path / "wrong.jsonl", [dict(r, limit_seed=99) for r in rows])
    with pytest.raises(KitabError, match="outside the file's --limit 10 sample"):
        evaluate_release(released, RELEASE, wrong, model="wrong")


def test_a_claims_trial_is_scored_over_its_sample_of_pairs(released, tmp_path):
    out = tmp_path / "claims.jsonl"
    with ChatServer(lambda prompt: "True") as server:
        answer_release(
            released, RELEASE, model="c", base_url=server.url, out=out, task="claims", limit=5,
            cache_path=tmp_path / "cache.sqlite",
        )  # fmt: skip
    assert len(lines(out)) == 10 and all(r["limit"] == 5 for r in lines(out))
    result = evaluate_claims(released, RELEASE, out)
    with Warehouse(released).connect(release=RELEASE) as con:
        pairs = con.execute("SELECT count(DISTINCT pair_id) FROM claims").fetchone()[0]
    note = f"a --limit 5 sample (seed 0) of {pairs:,} pairs"
    assert result["population"]["note"] == note and result["claims"] == 10 and result["coverage"] == 1.0
    (entry,) = result["pair_accuracy"]
    assert entry["overall"]["pairs"] == 5 and entry["population"] == note
    assert note in format_claim_result(result)
    answered = evaluate_claims(
        released, RELEASE, write(tmp_path / "part.jsonl", lines(out)[:3]), model="c2", over="answered"
    )
    assert answered["population"]["n"] == 2 and answered["pair_accuracy"][0]["overall"]["pairs"] == 2
