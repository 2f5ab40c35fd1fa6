"""The table model_runs (kitab/release/model_runs.py): one row per (model, task) of a release,
replaced by a rerun, refused when its status and reason disagree."""

from __future__ import annotations

import pytest

from kitab.core.errors import KitabError
from kitab.core.warehouse import Warehouse
from kitab.release.model_runs import read_model_runs, write_model_run
from tests.model_run_rows import model_run_row
from tests.releases import dump_release


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    return dump_release(tmp_path_factory.mktemp("runs") / "wh", authors=10, seed=3, release="r1")


def test_a_rerun_replaces_the_model_tasks_row_and_keeps_the_others(warehouse):
    write_model_run(warehouse, "r1", model_run_row())
    write_model_run(warehouse, "r1", model_run_row(model="beta", status="failed", reason="connection refused"))
    write_model_run(warehouse, "r1", model_run_row(task="claims", requests=3))
    write_model_run(warehouse, "r1", model_run_row(requests=0, from_cache=10))  # alpha/queries again: its row replaced
    with Warehouse(warehouse).connect() as con:
        rows = {(r["model"], r["task"]): r for r in read_model_runs(con)}
    assert sorted(rows) == [("alpha", "claims"), ("alpha", "queries"), ("beta", "queries")]
    assert rows["alpha", "queries"]["requests"] == 0 and rows["alpha", "queries"]["from_cache"] == 10
    assert rows["beta", "queries"]["reason"] == "connection refused"
    assert rows["alpha", "claims"]["failed_ids"] == ["q1", "q2"]


@pytest.mark.parametrize("over", [dict(status="failed"), dict(reason="why"), dict(status="skipped", reason="x")])
def test_status_and_reason_must_agree(warehouse, over):
    with pytest.raises(ValueError):
        write_model_run(warehouse, "r1", model_run_row(**over))


def test_an_unknown_release_is_refused(warehouse):
    with pytest.raises(KitabError):
        write_model_run(warehouse, "nope", model_run_row())
