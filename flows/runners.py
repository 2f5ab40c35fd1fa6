"""Where the pipeline's steps run: the one composition (flows/pipeline.py) asks a runner to
``run`` a step or ``map`` it over batches, and does not know which runner it has.

- ``LocalRunner``: plain Python, no Prefect: I/O steps on threads, CPU steps (collecting from
  a dump, tagging, constraints) on a pool of worker processes, one per core, when there are
  several calls to spread (one call runs in place: a pool would only add its start-up). What
  the tests, the export fixtures and the benchmarks' "direct" column use.
- ``PrefectRunner``: one Prefect task run per step call, submitted to the flow's task
  runner. With the default thread pool, CPU steps still go to the same process pool as
  ``LocalRunner``; with ``DaskTaskRunner`` every step runs on the Dask workers.

``task_runner(kind, address)`` builds the flow's task runner: ``threads`` (default, nothing
else to start) or ``dask`` (prefect-dask: a ``LocalCluster`` with one worker process per core,
or the running scheduler at ``address``, which is how a refresh goes past one machine).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from typing import Any, Protocol

from kitab.core.refs import set_duck_threads
from kitab.core.workdir import StepResult

Step = Callable[..., StepResult]
OnDone = Callable[[int, StepResult], None]
TASK_RUNNERS = ("threads", "dask")
IO_THREADS = 4  # concurrent I/O steps: enough to overlap requests, few enough for the rate limits


_WORKERS: int | None = None  # the run's (RunConfig.workers, which the app layer resolves), set by a runner


def cpu_workers() -> int:
    """Processes for CPU steps: the run's number (a runner's ``workers``), else one per core.
    Read from no environment: the app layer resolves $KITAB_WORKERS once (kitab.app.runs)."""
    return max(1, _WORKERS or os.cpu_count() or 1)


def set_workers(workers: int | None) -> None:
    global _WORKERS
    _WORKERS = workers


class Runner(Protocol):
    def run(self, step: Step, *args: Any, cpu: bool = False, name: str, in_worker: bool = False) -> StepResult:
        """One step call; ``in_worker``: a CPU step runs in a worker process even alone (a pool
        gains it no speed, but what it loads and leaves stays out of this process's memory)."""

    def release_workers(self) -> None:
        """No more CPU steps: free the worker processes (their memory) before publishing."""

    def map(
        self,
        step: Step,
        calls: Sequence[tuple],
        *,
        cpu: bool = False,
        names: Sequence[str],
        on_done: OnDone | None = None,
    ) -> list[StepResult]: ...

    def close(self) -> None: ...


_POOL: Executor | None = None
_POOL_LOCK = threading.Lock()


def cpu_pool() -> Executor | None:
    """The process pool for CPU steps in this process (None: run them in the caller's thread).

    Worker processes are spawned, not forked (the parent has threads: DuckDB, HTTP, Prefect),
    and kept until the pipeline releases them after each stage of CPU steps (collect, tag,
    constrain): each loads what its stage uses once (the dump, spaCy, the lists), and what one
    stage loaded or left is not carried into the next one's memory (docs/scale.md)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None and cpu_workers() > 1 and not _in_dask_worker():
            _POOL = ProcessPoolExecutor(
                cpu_workers(),
                mp_context=multiprocessing.get_context("spawn"),
                initializer=set_duck_threads,
                initargs=(duck_share(cpu_workers()),),
            )
        return _POOL


def in_pool(cpu: bool, calls: int, in_worker: bool = False) -> bool:
    """Whether CPU steps go to the process pool: several calls, or one that is to stay out of
    this process (``in_worker``), or any once the pool is running (it costs no start-up then, and
    what the step loads (a dump's store, the word lists, fastText) stays out of the refresh,
    which holds on to the end: a collect round of one batch loaded them here). One call with
    no pool yet runs here: a pool gains it nothing and costs its start-up."""
    return cpu and (calls > 1 or in_worker or _POOL is not None)


def shutdown_cpu_pool() -> None:
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None:
            _POOL.shutdown(wait=True, cancel_futures=True)
            _POOL = None


def _in_dask_worker() -> bool:
    try:
        from distributed import get_worker

        get_worker()
        return True
    except (ImportError, ValueError):
        return False


def duck_share(workers: int) -> int:
    """DuckDB threads for each of ``workers`` processes sharing this machine's cores: with
    DuckDB's default (one thread per core) in each, 2 workers on 2 cores run 4 busy threads."""
    return max(1, (os.cpu_count() or 1) // workers)


# CPU steps that run in this process (one worker, or on a Dask worker) run one at a time: the
# runners submit a stage's calls to their I/O threads, and the steps of one process share its
# sources (a dump's DuckDB store, the prefetched records), which two threads must not use at
# once. With one worker and several batches, two collect steps on two threads failed
# (a KeyError in the prefetched work records, then "connection is busy" from DuckDB).
_IN_PLACE = threading.RLock()


def call_step(step: Step, args: tuple, cpu: bool, workers: int | None = None) -> StepResult:
    """Run a step here, or in the process pool when it is a CPU step and there is one (with
    none, CPU steps here run one at a time). ``workers``: the worker processes per machine
    (the run's), when this may be a Dask worker."""
    if workers is not None and _in_dask_worker():
        set_duck_threads(duck_share(workers))
    pool = cpu_pool() if cpu else None
    if pool is not None:
        return pool.submit(step, *args).result()
    if cpu:
        with _IN_PLACE:
            return step(*args)
    return step(*args)


class LocalRunner:
    """Plain Python: I/O steps on threads, CPU steps on worker processes."""

    def __init__(self, io_threads: int = IO_THREADS, workers: int | None = None):
        set_workers(workers)
        self.io = ThreadPoolExecutor(io_threads, thread_name_prefix="kitab-io")

    def run(self, step: Step, *args: Any, cpu: bool = False, name: str = "", in_worker: bool = False) -> StepResult:
        return call_step(step, args, in_pool(cpu, 1, in_worker))

    def map(
        self,
        step: Step,
        calls: Sequence[tuple],
        *,
        cpu: bool = False,
        names: Sequence[str] = (),
        on_done: OnDone | None = None,
    ) -> list[StepResult]:
        cpu = in_pool(cpu, len(calls))
        futures: dict[Future, int] = {self.io.submit(call_step, step, args, cpu): n for n, args in enumerate(calls)}
        return _collect(futures, len(calls), on_done)

    def release_workers(self) -> None:
        shutdown_cpu_pool()

    def close(self) -> None:
        self.io.shutdown(wait=True, cancel_futures=True)
        shutdown_cpu_pool()


def _collect(futures: dict, n: int, on_done: OnDone | None) -> list[StepResult]:
    """Results in call order; ``on_done`` as each finishes (progress)."""
    results: list[StepResult | None] = [None] * n
    for future in as_completed(futures):
        index = futures[future]
        results[index] = future.result()
        if on_done is not None:
            on_done(index, results[index])
    return results  # type: ignore[return-value]


def worth_retrying(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect's retry of a failed step: not for a KitabError (a user's mistake, a source that
    already had its own retries, a bad snapshot) nor a full disk, which will not be different
    five seconds later (they only made the failure later and its output longer)."""
    import errno

    from kitab.core.errors import KitabError

    exc = getattr(state, "data", None)
    if isinstance(exc, KitabError) or (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)):
        NOT_RETRIED.add(str(getattr(task_run, "id", None)))  # (as log records carry it; Prefect then logs
        # no traceback, only its end state)
        return False
    return True


# Task runs that failed with an error worth_retrying refused to retry: the console need not
# show their "Finished in state Failed" line (kitab.app.prefect_guard), the caller says it.
NOT_RETRIED: set = set()


class PrefectRunner:
    """Each step call is a Prefect task run on the flow's task runner (threads or Dask)."""

    def __init__(self, workers: int | None = None) -> None:
        set_workers(workers)
        self._tasks: dict[tuple[str, bool], Any] = {}

    def _task(self, step: Step, cpu: bool):
        from prefect import task
        from prefect.cache_policies import NO_CACHE

        key = (step.__name__, cpu)
        if key not in self._tasks:
            # No Prefect result cache and no persisted results: a result is a few refs, and the
            # work folder's checkpoints are the cache (kitab/core/workdir.py).
            self._tasks[key] = task(
                call_step,
                name=step.__name__.removesuffix("_step"),
                cache_policy=NO_CACHE,
                persist_result=False,
                retries=2,
                retry_delay_seconds=5,
                retry_condition_fn=worth_retrying,
            )
        return self._tasks[key]

    def run(self, step: Step, *args: Any, cpu: bool = False, name: str = "", in_worker: bool = False) -> StepResult:
        return self.map(step, [args], cpu=cpu, names=[name or step.__name__], in_worker=in_worker)[0]

    def map(
        self,
        step: Step,
        calls: Sequence[tuple],
        *,
        cpu: bool = False,
        names: Sequence[str] = (),
        on_done: OnDone | None = None,
        in_worker: bool = False,
    ) -> list[StepResult]:
        from prefect.futures import as_completed as prefect_completed

        cpu = in_pool(cpu, len(calls), in_worker)
        task = self._task(step, cpu)
        futures = {}
        for n, args in enumerate(calls):
            named = task.with_options(task_run_name=names[n]) if names else task
            futures[named.submit(step, args, cpu, cpu_workers())] = n
        results: list[StepResult | None] = [None] * len(calls)
        for future in prefect_completed(list(futures)):
            index = futures[future]
            results[index] = future.result()
            if on_done is not None:
                on_done(index, results[index])
        return results  # type: ignore[return-value]

    def release_workers(self) -> None:
        shutdown_cpu_pool()  # a Dask cluster's workers are the task runner's to keep

    def close(self) -> None:
        shutdown_cpu_pool()


def task_runner(kind: str = "threads", address: str | None = None, workers: int | None = None):
    """The Prefect task runner for ``--task-runner``."""
    if kind == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=IO_THREADS)
    if kind == "dask":
        from prefect_dask import DaskTaskRunner

        if address:
            return DaskTaskRunner(address=address)
        n = workers or cpu_workers()
        return DaskTaskRunner(
            cluster_kwargs={"n_workers": n, "threads_per_worker": 1, "processes": True, "dashboard_address": None}
        )
    raise ValueError(f"unknown task runner {kind!r}; expected one of {TASK_RUNNERS}")
