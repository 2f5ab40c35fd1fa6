"""Running a refresh from Python (the CLI, the demo, tests and benchmarks): through the
Prefect flow (what users run and schedule), or the same pipeline called directly."""
from __future__ import annotations

from pathlib import Path


def run_refresh(*, source: str, snapshot: Path, authors: int, seed: int | None, release: str | None,
                warehouse: Path, mirror_url: str | None = None, batch_size: int | None = None,
                task_runner: str | None = None, dask_address: str | None = None, direct: bool = False,
                max_failed_share: float | None = None) -> dict:
    """One release. ``direct``: the pipeline without Prefect (LocalRunner: threads for I/O,
    one process per core for CPU steps); else the ``refresh`` flow on ``task_runner``."""
    from flows.pipeline import DEFAULT_BATCH_SIZE, DEFAULT_MAX_FAILED_SHARE, RefreshParams, run_pipeline

    kwargs = dict(source=source, snapshot=str(snapshot), authors=authors, seed=seed, release=release,
                  warehouse=str(warehouse), mirror_url=mirror_url, batch_size=batch_size or DEFAULT_BATCH_SIZE,
                  max_failed_share=DEFAULT_MAX_FAILED_SHARE if max_failed_share is None else max_failed_share)
    if direct:
        from flows.runners import LocalRunner

        runner = LocalRunner()
        try:
            return run_pipeline(RefreshParams(**kwargs), runner)
        finally:
            runner.close()
    from flows.refresh import with_task_runner

    return with_task_runner(task_runner, dask_address)(**kwargs)
