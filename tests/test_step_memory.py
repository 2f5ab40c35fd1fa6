"""What a process keeps between steps (kitab/core/step_memory.py, WorkDir.run, the worker
processes' set-up in flows/runners.py): per-step caches bounded and emptied after each step,
the C heap trimmed, Arrow's buffers from the C heap in the workers only."""

from __future__ import annotations

import os
import sys

import pytest

from kitab.core.step_memory import clear_step_caches, step_cache, trim_heap
from kitab.core.workdir import StepResult, WorkDir
from tasks.constraints.counting import title_words
from tasks.text import match_key


@step_cache(maxsize=8)
def _square(n: int) -> int:
    return n * n


def test_a_step_cache_stays_bounded_within_a_step():
    clear_step_caches()
    assert [_square(n) for n in range(100)] == [n * n for n in range(100)]
    assert _square.cache_info().currsize == 8
    assert _square(99) == 9801 and _square.cache_info().hits == 1  # still a cache


def test_a_step_keeps_none_of_its_batch_in_the_caches(tmp_path):
    """The title caches the collect and constrain steps fill are empty once each step is done,
    recorded or failed: a worker's next batch starts from what it had loaded, not from the
    titles of every batch before."""
    seen = {}

    def compute() -> StepResult:
        for title in ("The Bluest Eye", "Sula", "Song of Solomon"):
            match_key(title), title_words(title), _square(len(title))
        seen.update(key=match_key.cache_info().currsize, words=title_words.cache_info().currsize)
        return StepResult({}, {"n": 3})

    work = WorkDir(str(tmp_path / "work"))
    assert work.run("s", "p", compute).stats == {"n": 3}
    assert seen == {"key": 3, "words": 3}  # filled while the step ran
    assert match_key.cache_info().currsize == title_words.cache_info().currsize == 0
    assert _square.cache_info().currsize == 0

    def failing() -> StepResult:
        match_key("Beloved")
        raise ValueError("no")

    with pytest.raises(ValueError):
        work.run("s", "q", failing)
    assert match_key.cache_info().currsize == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_the_heap_is_trimmed_on_linux():
    assert trim_heap() is True


def test_every_kitab_process_takes_arrows_buffers_from_the_c_heap_unless_told_otherwise():
    """Arrow's default allocator (mimalloc) kept what a batch or a publish step freed (40-50 MiB
    a worker, ~0.1 GiB in the refresh): kitab's processes use the C heap, whose free pages go
    back after every step. Any process that imports kitab first has it as its default (the
    pool's workers inherit it), unless ARROW_DEFAULT_MEMORY_POOL says otherwise."""
    import subprocess

    from flows.runners import LocalRunner

    backend = "__import__('pyarrow').default_memory_pool().backend_name"
    runner = LocalRunner(workers=2)
    try:
        found = runner.map(eval, [(backend,), (backend,)], cpu=True)
    finally:
        runner.close()
    assert found == ["system", "system"]
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    code = f"import kitab; print({backend})"
    for chosen, expected in ((None, "system"), ("mimalloc", "mimalloc")):
        run_env = env if chosen is None else {**env, "ARROW_DEFAULT_MEMORY_POOL": chosen}
        out = subprocess.run([sys.executable, "-c", code], env=run_env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == expected


def test_released_workers_are_new_processes():
    """The pipeline releases the pool after each stage of CPU steps: the next stage's steps run
    in new processes, without what the last stage loaded."""
    import os

    from flows.runners import LocalRunner

    runner = LocalRunner(workers=2)
    try:
        before = set(runner.map(os.getpid, [(), ()], cpu=True))
        runner.release_workers()
        after = set(runner.map(os.getpid, [(), ()], cpu=True))
    finally:
        runner.close()
    assert os.getpid() not in before | after
    assert not before & after


def test_a_single_call_runs_in_a_worker_when_asked_or_once_the_pool_runs():
    """One call gains nothing from starting the pool, so it runs here, unless ``in_worker``
    (the sample step from a dump) or the pool is running already (a collect round of one batch:
    it loaded the collect step's lists into the refresh, which keeps them to the end)."""
    import os

    from flows.runners import LocalRunner

    runner = LocalRunner(workers=2)
    try:
        here = runner.run(os.getpid, cpu=True)
        alone = runner.map(os.getpid, [()], cpu=True)
        io_step = runner.run(os.getpid, in_worker=True)  # not a CPU step: stays on this process
        away = runner.run(os.getpid, cpu=True, in_worker=True)  # starts the pool
        then = runner.map(os.getpid, [()], cpu=True)
        runner.release_workers()
        after_release = runner.map(os.getpid, [()], cpu=True)
    finally:
        runner.close()
    assert here == alone[0] == io_step == after_release[0] == os.getpid()
    assert away != os.getpid() and then[0] != os.getpid()


def _overlap_probe(state: dict, n: int) -> int:
    """A CPU step that records the most of its calls running at once (each call sleeps inside
    its count, so calls that overlap see each other)."""
    import time

    state["now"] += 1
    state["most"] = max(state["most"], state["now"])
    time.sleep(0.05)  # long enough for the runner's other I/O threads to start theirs
    state["now"] -= 1
    return n


def test_cpu_steps_run_here_one_at_a_time_with_one_worker():
    """With one worker, a stage's CPU steps run in this process: the runner still hands the calls
    to its I/O threads, but one step runs at a time, since the steps of a process share its
    sources (two collect steps at once on one dump store failed). I/O steps stay concurrent."""
    from flows.runners import LocalRunner

    runner = LocalRunner(workers=1)
    try:
        cpu_state = {"now": 0, "most": 0}
        done = runner.map(_overlap_probe, [(cpu_state, n) for n in range(6)], cpu=True)
        io_state = {"now": 0, "most": 0}
        runner.map(_overlap_probe, [(io_state, n) for n in range(6)])
    finally:
        runner.close()
    assert done == list(range(6))
    assert cpu_state["most"] == 1
    assert io_state["most"] > 1  # the probe can see overlap: the I/O threads do run together
