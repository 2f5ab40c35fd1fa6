"""What the site reads from a warehouse: every committed release (oldest first by its ledger's
``created_at``), each with the leaderboards ``kitab report`` computes (KITAB's metrics:
kitab/release/leaderboard.py; the claim pairs: kitab/release/claims.py), its floor and ceiling
(the validity battery, table ``baselines``), its ``model_runs`` rows (status, reason, costs) and
its card numbers; and per model, the per-author cells the between-release differences need
(kitab/release/site/differences.py).

One evaluation stands for a model on a release in its page and the differences: the one its
``model_runs`` row names (``answers_sha256``), else the one scored last. The leaderboards show
every evaluation, as ``kitab report`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

from kitab.core.warehouse import Warehouse
from kitab.release.claims import claim_entries, pair_rows
from kitab.release.intervals import SEED, B, clusters
from kitab.release.leaderboard import leaderboard, per_query_scores
from kitab.release.model_runs import read_model_runs
from kitab.release.validity.floor import release_validity

TASKS = ("queries", "claims")
# the scores a model page follows across releases: metric -> (task, the per-row column it averages)
TRACKED = {
    "all_correct": ("queries", "all_correct"),
    "completeness": ("queries", "completeness"),
    "pair_accuracy": ("claims", "pair_correct"),
    "claim_accuracy": ("claims", "correct"),
}


def _dicts(con, sql: str, params: list | None = None) -> list[dict]:
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def _chosen(groups: dict[tuple[str, str], list[dict]], runs: dict[tuple[str, str], dict], task: str):
    """model -> the rows of the evaluation that stands for it on this release (module doc)."""
    candidates: dict[str, list[list[dict]]] = {}
    for (model, _), rows in sorted(groups.items(), key=lambda kv: max(str(r["evaluated_at"]) for r in kv[1])):
        candidates.setdefault(model, []).append(rows)
    out = {}
    for model, evaluations in candidates.items():
        named = (runs.get((model, task)) or {}).get("answers_sha256")
        found = [rows for rows in evaluations if rows[0]["answers_sha256"] == named]
        out[model] = found[0] if found else evaluations[-1]
    return out


def _card(ledger: dict) -> dict:
    counts = json.loads(ledger["counts"] or "{}")
    return {
        "authors": counts.get("released_authors", counts.get("authors")),
        "queries": counts.get("queries"),
        "claims": counts.get("claims"),
        "claim_pairs": (counts["claims"] // 2) if counts.get("claims") is not None else None,
        "books": counts.get("books"),
    }


def read_release(wh: Warehouse, ledger: dict, *, b: int = B, seed: int = SEED) -> dict:
    """One release: its ledger facts, card numbers, both leaderboards, floor and ceiling, model
    runs, and per model the per-author cells of each tracked metric."""
    release = ledger["release"]
    with wh.connect(release=release) as con:
        board = leaderboard(con, release, b=b, seed=seed)
        claims = claim_entries(con, b=b, seed=seed)
        validity = release_validity(con)
        runs = read_model_runs(con)
        query_rows = [r for r in per_query_scores(con, transcripts=False) if not r["stale"]]
        claim_rows = _dicts(
            con,
            "SELECT model, answers_sha256, evaluated_at, query_id, sample, pair_id, author_qid, kind, "
            "constraint_type, popularity_bin, answered, correct FROM claim_evaluations "
            "ORDER BY model, answers_sha256, query_id, sample",
        )
    by_run = {(r["model"], r["task"]): r for r in runs}
    groups: dict[str, dict] = {task: {} for task in TASKS}
    for task, rows in (("queries", query_rows), ("claims", claim_rows)):
        for r in rows:
            groups[task].setdefault((r["model"], r["answers_sha256"]), []).append(r)
    chosen = {task: _chosen(groups[task], by_run, task) for task in TASKS}
    cells: dict[str, dict[str, dict]] = {}
    for metric, (task, column) in TRACKED.items():
        for model, rows in chosen[task].items():
            source = pair_rows(rows) if column == "pair_correct" else rows
            cells.setdefault(model, {})[metric] = clusters(source, column)
    shas = {task: {m: rows[0]["answers_sha256"] for m, rows in chosen[task].items()} for task in TASKS}
    return {
        "release": release,
        "created_at": ledger["created_at"],
        "seed": ledger["seed"],
        "source": ledger["source"],
        "snapshot_id": ledger["snapshot_id"],
        "card": _card(ledger),
        "board": board,
        "claims": claims,
        "validity": validity,
        "runs": runs,
        "cells": cells,
        "chosen": shas,
    }


def models_of(release: dict) -> set[str]:
    """Every model a release names: evaluated on either task, or in its model runs."""
    return (
        {e["model"] for e in release["board"]["evaluations"]}
        | {e["model"] for e in release["claims"]}
        | {r["model"] for r in release["runs"]}
    )


def read_site(warehouse: Path, *, b: int = B, seed: int = SEED) -> dict:
    """``{"releases": [...] oldest first, "models": [names, sorted]}`` of every committed release."""
    wh = Warehouse(Path(warehouse))
    with wh.connect() as con:
        ledgers = _dicts(
            con,
            "SELECT release, created_at, seed, source, snapshot_id, counts FROM releases ORDER BY created_at, release",
        )
    releases = [read_release(wh, ledger, b=b, seed=seed) for ledger in ledgers]
    models = sorted(set().union(*(models_of(r) for r in releases))) if releases else []
    return {"releases": releases, "models": models, "resamples": b, "seed": seed}
