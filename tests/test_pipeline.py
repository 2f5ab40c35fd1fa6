"""The one composition (flows/pipeline.py): the release does not depend on where or in what
batches the steps run, and a rerun resumes from the work folder's checkpoints."""

from __future__ import annotations

import json

import pytest

from kitab.core.errors import BadValue
from kitab.core.refs import read_rows, write_rows
from kitab.core.workdir import StepResult, WorkDir
from tasks.steps import merge_stats

AUTHORS, SEED = 14, 5


def _refresh(tmp_path, name: str, source: str = "dump", **kwargs) -> dict:
    from kitab.app.runs import run_refresh
    from kitab.core.env import BUNDLED_SNAPSHOT

    return run_refresh(
        source=source,
        snapshot=BUNDLED_SNAPSHOT,
        authors=AUTHORS,
        seed=SEED,
        release="same",
        warehouse=tmp_path / name,
        **kwargs,
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """Direct (no Prefect), one batch of every author, its CPU steps in this process (a run of
    14 authors names no workers: flows/configure.py, IN_PROCESS_BELOW)."""
    return _refresh(tmp_path_factory.mktemp("pipeline"), "reference", direct=True, batch_size=500)


def test_batch_size_one_gives_the_same_bytes(reference, tmp_path, monkeypatch):
    """A batch per author, on a pool of two worker processes: the reference's bytes."""
    monkeypatch.setenv("KITAB_WORKERS", "2")
    single = _refresh(tmp_path, "single", direct=True, batch_size=1)
    assert single["batches"]["collect"] == single["authors"]["drawn"] >= AUTHORS  # one per author drawn
    assert json.loads(single["checksums"]) == json.loads(reference["checksums"])


@pytest.mark.flow
def test_dask_local_cluster_gives_the_same_bytes(reference, tmp_path):
    """The Prefect flow on a 2-worker Dask LocalCluster, batches of 4 authors."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        on_dask = _refresh(tmp_path, "dask", task_runner="dask", batch_size=4)
    # batches of 4 over the first draw of 14, then one per later draw (of the authors still missing)
    assert on_dask["batches"]["collect"] >= 4 and on_dask["authors"]["released"] == AUTHORS
    assert json.loads(on_dask["checksums"]) == json.loads(reference["checksums"])
    assert on_dask["stage_counts"] == reference["stage_counts"]


def test_the_summary_states_the_committed_release_key_quality(reference):
    """Read from the staged tables at publish (while the claims are drawn), the same as from the
    committed release after it."""
    from pathlib import Path

    from kitab.core.warehouse import Warehouse
    from kitab.release.key_quality import release_key_quality

    with Warehouse(Path(reference["warehouse"])).connect(release="same") as con:
        committed = release_key_quality(con)
    assert any(q["queries"] for q in committed.values())  # entity slices with queries: not vacuous
    assert reference["key_quality"] == committed


def test_work_folder_resumes_only_unchanged_steps(tmp_path):
    work = WorkDir(str(tmp_path / "work"))
    calls = []

    def compute(rows):
        def run() -> StepResult:
            calls.append(rows)
            return StepResult({"t": write_rows("t", rows, work.path("s", "00000", "t"))}, {"n": len(rows)})

        return run

    first = work.run("s", "00000", compute([{"a": 1}]), inputs=1)
    again = work.run("s", "00000", compute([{"a": 1}]), inputs=1)
    assert len(calls) == 1 and again.outputs == first.outputs and again.stats["resumed"]
    work.run("s", "00000", compute([{"a": 2}]), inputs=2)  # other inputs: runs again
    assert len(calls) == 2 and read_rows(work.cached("s", "00000", _key(work, 2)).outputs["t"]) == [{"a": 2}]
    # a damaged output is not trusted: the step runs again
    path = work.path("s", "00000", "t")
    path.write_bytes(path.read_bytes()[:-3])
    work.run("s", "00000", compute([{"a": 2}]), inputs=2)
    assert len(calls) == 3


def _key(work: WorkDir, inputs: int) -> str:
    from kitab.core.workdir import step_key

    return step_key("s", part="00000", inputs=inputs)


def test_merge_stats_adds_numbers_and_counters():
    merged = merge_stats([{"n": 1, "by": {"a": 1}, "name": "x", "ok": True}, {"n": 2, "by": {"a": 2, "b": 1}}])
    assert merged == {"n": 3, "by": {"a": 3, "b": 1}, "name": "x", "ok": True}


def test_a_fourth_source_kind_needs_no_edit_of_the_composition(reference, tmp_path, monkeypatch):
    """A kind registered here (the dump's clients, collected on threads, its own cache scope) is
    run by the composition as it stands: it asks the kind, never compares its name. Its name
    also goes into kitab.core.params.SOURCES, which validates --source without this layer."""
    from kitab.core import params
    from kitab.sources import SOURCE_KINDS
    from kitab.sources.kinds import register_source_kind
    from kitab.sources.kinds.dump import Dump

    class DumpOnThreads(Dump):
        name = "dump-on-threads"
        collect_is_cpu_work = False

        def __init__(self):
            self.asked: list[str] = []

        def check_inputs(self, params):
            self.asked.append("check_inputs")
            super().check_inputs(params)

        def cache_scope(self, *, snapshot_id, mirror_url, release):
            self.asked.append("cache_scope")
            return f"threads-{snapshot_id}"

        def open(self, settings, *, snapshot, mirror_url, cache_scope):
            self.asked.append(f"open {cache_scope}")
            return super().open(settings, snapshot=snapshot, mirror_url=mirror_url, cache_scope=cache_scope)

    kind = register_source_kind(DumpOnThreads())
    monkeypatch.setattr(params, "SOURCES", (*params.SOURCES, kind.name))
    try:
        summary = _refresh(tmp_path, "fourth", direct=True, batch_size=500, source=kind.name)
    finally:
        del SOURCE_KINDS[kind.name]
    assert summary["source"] == kind.name
    assert json.loads(summary["checksums"]) == json.loads(reference["checksums"])
    assert summary["stage_counts"] == reference["stage_counts"]
    # asked before the run, for the scope, and opened with that scope in this process (threads)
    scope = f"threads-{summary['snapshot_id']}"
    assert kind.asked[:2] == ["check_inputs", "cache_scope"] and f"open {scope}" in kind.asked


def test_claims_drawn_in_this_process_give_the_same_bytes(reference, tmp_path, monkeypatch):
    """The claims draw runs in a child process while the other tables are staged; drawn in the
    refresh's own process when awaited (the reference form), the release is the same, table for table."""
    import flows.pipeline

    monkeypatch.setattr(flows.pipeline, "CLAIMS_IN_CHILD", False)
    in_process = _refresh(tmp_path, "in-process", direct=True, batch_size=500)
    assert json.loads(in_process["checksums"]) == json.loads(reference["checksums"])
    assert in_process["stage_counts"] == reference["stage_counts"]


def _failing_draw(ctx, constrained):
    raise BadValue("claims: the claim material of batch 0 is unreadable")


def test_a_failing_claims_draw_is_the_same_clear_error_and_commits_nothing(tmp_path, monkeypatch):
    """The draw's child raises while this process stages the other tables: the refresh fails with
    the child's error (type and message), no release is committed, and no child is left."""
    import multiprocessing

    import flows.pipeline
    from kitab.core.warehouse import Warehouse

    monkeypatch.setattr(flows.pipeline, "claims_step", _failing_draw)
    with pytest.raises(BadValue, match="^claims: the claim material of batch 0 is unreadable$"):
        _refresh(tmp_path, "failing", direct=True, batch_size=500)
    assert Warehouse(tmp_path / "failing").committed_releases() == []
    assert not list((tmp_path / "failing").glob("releases/*/*.parquet"))  # no ledger row written
    assert multiprocessing.active_children() == []
