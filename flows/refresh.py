"""The ``refresh`` flow: what users run and schedule. Composition lives in
flows/pipeline.py (``run_pipeline``); the flow gives it a runner whose steps are Prefect task
runs (tens per 10,000 authors: one per batch, not per author) and shows the refresh's progress
(kitab/core/progress.py, the object ``kitab refresh`` displays too) as a Prefect progress artifact.

The task runner is ``threads`` unless the caller gives another (``with_task_runner``: the app
layer resolves ``--task-runner`` / ``$KITAB_TASK_RUNNER`` once, flows/runners.py). The run's
whole configuration (kitab.core.params.RunConfig) comes in as the ``config`` parameter (from
kitab.app.runs), or is resolved from the other parameters (flows/configure.py); nothing here
reads the environment.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from prefect import flow, get_run_logger
from prefect.artifacts import create_progress_artifact, update_progress_artifact

from flows.configure import flow_config
from flows.pipeline import run_pipeline, running
from flows.progress_text import status_line
from flows.runners import PrefectRunner, task_runner
from kitab.core.params import RunConfig, default_release_id, default_seed, flow_signature
from kitab.core.progress import Progress, Throttled

__all__ = ["refresh", "default_release_id", "default_seed", "with_task_runner"]


def with_task_runner(kind: str | None = None, address: str | None = None):
    """The refresh flow on the task runner ``kind`` (default threads) at ``address``."""
    return refresh.with_options(task_runner=task_runner(kind or "threads", address or None))


def _refresh(**parameters) -> dict:
    """Sample ``authors`` authors not released before, collect their Open Library works and
    publish the tables as release ``release``. Defaults for scheduled runs: the seed is the
    UTC date (YYYYMMDD) and the release id ``YYYY.MM.DD-s<seed>``, so each day's run is a
    new release and a rerun the same day rebuilds it. Fewer eligible authors than ``authors``
    fail the run unless ``allow_fewer``. If more than ``max_failed_share`` of the authors are
    lost to a source that does not answer, the run fails and publishes nothing.
    The parameters are kitab.core.params.RefreshParams' fields, declared there once, or else
    ``config``: the run's whole configuration as the app layer resolved it (RunConfig.to_dict),
    never both (flows.configure.flow_config)."""
    return refresh_release(flow_config(parameters))


def refresh_release(config: RunConfig) -> dict:
    """The flow's body for a resolved ``config`` (the refresh flow's, the scheduled one's, the
    cycle's release), with the progress ``kitab refresh`` registered and began for this run (it
    displays it too), else the run's own."""
    with running(config) as progress:
        return refresh_run(config, progress)


def refresh_run(config: RunConfig, progress: Progress) -> dict:
    """The flow's body for a resolved ``config``: the pipeline on Prefect task runs, its
    ``progress`` shown as a Prefect progress artifact."""
    runner = PrefectRunner(workers=config.workers)
    with progress_artifact(progress):
        try:
            return run_pipeline(config, runner, progress=progress)
        finally:
            runner.close()


_refresh.__signature__ = flow_signature()  # what Prefect reads for the parameters and their schema
refresh = flow(name="refresh", log_prints=True, task_runner=task_runner("threads"))(_refresh)


@contextlib.contextmanager
def progress_artifact(progress: Progress, every: float = 2.0) -> Iterator[None]:
    """Prefect's view of ``progress``: a progress artifact (percent of the stages, the status
    line as its description) and a run-log line, on every stage change and at most every
    ``every`` seconds in between."""
    artifact = create_progress_artifact(0.0, description="starting")
    logger = get_run_logger()

    def show(p: Progress, event: str) -> None:
        status = p.status()
        line = status_line(status)
        update_progress_artifact(artifact, round(100.0 * status.fraction, 1), description=line)
        logger.info(line)

    stop = progress.subscribe(Throttled(show, every))
    try:
        yield
    finally:
        stop()
