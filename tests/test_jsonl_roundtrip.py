"""Issue 39, item 2: JSON Lines that round-trip. A model's answer holding a line separator
(every character ``str.splitlines()`` splits on: U+2028, U+2029, U+0085, \\v, \\f, \\x1c-\\x1e,
\\r, \\n) is one line of the answers file, read back whole; a file written before (the
separators raw inside its strings) evaluates too. Through the real ``kitab answer`` against
the loopback chat endpoint (kitab/simulate/chat.py), then ``kitab evaluate``, in both tasks."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kitab.core import jsonl
from kitab.core.warehouse import Warehouse
from kitab.release.answer import release_prompt_list
from kitab.release.evaluation.answers import read_answers
from kitab.simulate.chat import ChatServer
from tests.releases import dump_release
from tests.test_cli_errors import kitab
from tests.test_hostile import RELEASE

BREAKS = jsonl.LINE_BREAKS
# what differs between two evaluations of the same answers but for the separators
NOT_SCORES = {"model", "answers_sha256", "answers_file", "evaluated_at", "response", "release"}


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """One release of 8 authors from the bundled dump (tests/test_hostile.py's)."""
    return dump_release(tmp_path_factory.mktemp("jsonl") / "wh", authors=8, seed=42, release=RELEASE)


@pytest.mark.parametrize("char", BREAKS, ids=[f"U+{ord(c):04X}" for c in BREAKS])
def test_a_line_holds_one_record_whatever_its_strings_hold(char, tmp_path):
    record = {"query_id": "q1", "response": f"Output:{char}1. Title: A{char}B", f"k{char}": [char]}
    line = jsonl.dumps(record)
    assert char not in line and len(line.splitlines()) == 1 and json.loads(line) == record
    # written before: the character raw inside a string (what json.dumps leaves raw), read by "\n" only
    raw = json.dumps(record, ensure_ascii=False)
    path = tmp_path / "old.jsonl"
    path.write_bytes((raw + "\n" + jsonl.dumps({"query_id": "q2", "response": "x"}) + "\n").encode("utf-8"))
    if char not in "\n\r\x0b\x0c\x1c\x1d\x1e":  # json escapes these itself
        assert char in raw
    answers, _ = read_answers(path)
    assert [(a.line, a.query_id, a.response) for a in answers] == [(1, "q1", record["response"]), (2, "q2", "x")]


def _perfect_queries(warehouse: Path, breaks: str):
    """Each query's exported mapped_books in Template 2a's format, ``breaks`` inside its preamble."""
    with Warehouse(warehouse).connect(release=RELEASE, warn=False) as con:
        mapped = dict(con.execute("SELECT query_id, mapped_books FROM kitab_book_constraints").fetchall())
    by_prompt = {}
    for p in release_prompt_list(warehouse, RELEASE, "no-context", limit=12):
        lines = "".join(
            f"{n}. Reason: It satisfies the criteria. Title: {t}\n"
            for n, t in enumerate(ast.literal_eval(mapped[p.query_id]), 1)
        )
        by_prompt[p.text] = f"Let me think{breaks} step by step.\n\nOutput:\n{lines}"
    return by_prompt.__getitem__


def _perfect_claims(warehouse: Path, breaks: str):
    """Each claim's label, then a reason with ``breaks`` inside."""
    from kitab.release.claims import render_claim_prompt

    with Warehouse(warehouse).connect(release=RELEASE, warn=False) as con:
        labels = dict(con.execute("SELECT claim, label FROM claims").fetchall())
    truth = {render_claim_prompt(claim): label for claim, label in labels.items()}
    return lambda prompt: f"{truth[prompt]}\nThe release's{breaks} tables say so."


def _answer(server: ChatServer, warehouse: Path, folder: Path, model: str, task: str) -> Path:
    out = folder / f"{model}.jsonl"
    result = kitab(
        "answer", "--release", RELEASE, "--task", task, "--model", model, "--base-url", server.url,
        "--out", out, "--cache", folder / "cache.sqlite", "--limit", 12 if task == "queries" else 6,
        "--warehouse", warehouse, "--quiet", timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    return out


def _evaluate(warehouse: Path, answers: Path, model: str, task: str) -> dict:
    result = kitab(
        "evaluate", "--release", RELEASE, "--task", task, "--answers", answers, "--model", model,
        "--warehouse", warehouse, timeout=300,
    )  # fmt: skip
    err = result.stderr.decode()
    assert result.returncode == 0 and "Traceback" not in err, err
    table = "evaluations" if task == "queries" else "claim_evaluations"
    with Warehouse(warehouse).connect(release=RELEASE, warn=False) as con:
        cursor = con.execute(f"SELECT * FROM {table} WHERE model = ? ORDER BY query_id, sample", [model])
        names = [d[0] for d in cursor.description]
        return {(r["query_id"], r["sample"]): r for r in (dict(zip(names, row)) for row in cursor.fetchall())}


def _scores(rows: dict) -> dict:
    return {key: {k: v for k, v in row.items() if k not in NOT_SCORES} for key, row in rows.items()}


@pytest.mark.parametrize("task", ["queries", "claims"])
def test_every_line_break_in_a_model_answer_round_trips(released, tmp_path, task):
    perfect = _perfect_queries if task == "queries" else _perfect_claims
    with ChatServer(perfect(released, "")) as server:
        plain = _evaluate(released, _answer(server, released, tmp_path, f"plain-{task}", task), f"plain-{task}", task)
    with ChatServer(perfect(released, BREAKS)) as server:
        path = _answer(server, released, tmp_path, f"breaks-{task}", task)
        asked = len(server.chat_requests)
    text = path.read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.split("\n") if line]
    assert len(records) == asked == sum(r["answered"] for r in plain.values()) > 0
    assert len(text.splitlines()) == len(records), "a separator was written raw"
    assert all(BREAKS in r["response"] for r in records)
    rows = _evaluate(released, path, f"breaks-{task}", task)
    assert _scores(rows) == _scores(plain)  # the same rows as without the characters
    assert sorted(r["response"] for r in rows.values() if r["answered"]) == sorted(r["response"] for r in records)

    # a file written before: the same records with the separators raw (json.dumps' own output)
    old = tmp_path / f"old-{task}.jsonl"
    old.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    assert "\u2028" in old.read_text(encoding="utf-8")
    assert _scores(_evaluate(released, old, f"old-{task}", task)) == _scores(plain)


def test_a_rerun_from_the_cache_writes_the_same_readable_file(released, tmp_path):
    with ChatServer(_perfect_claims(released, "\u2028\u2029\x85")) as server:
        first = _answer(server, released, tmp_path, "cached", "claims").read_bytes()
        asked = len(server.chat_requests)
        second = _answer(server, released, tmp_path, "cached", "claims").read_bytes()
        assert len(server.chat_requests) == asked  # all from the cache
    assert first == second and "\u2028".encode() not in second
    rows = _evaluate(released, tmp_path / "cached.jsonl", "cached", "claims")
    assert sum(r["answered"] for r in rows.values()) == asked
