"""Running a refresh from Python (the CLI, the demo, tests and benchmarks): through the
Prefect flow (what users run and schedule), or the same pipeline called directly."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

from kitab.core.errors import KitabError


def run_refresh(
    *,
    snapshot: Path | None = None,
    warehouse: Path,
    task_runner: str | None = None,
    dask_address: str | None = None,
    direct: bool = False,
    progress=None,
    **parameters,
) -> dict:
    """One release with ``parameters`` (kitab.core.params.RefreshParams' fields; a None
    batch_size or max_failed_share takes the default). ``direct``: the pipeline without
    Prefect (LocalRunner: threads for I/O, one process per core for CPU steps); else the
    ``refresh`` flow on ``task_runner``.
    ``progress`` (kitab.core.progress.Progress): updated as the refresh goes, either way (the flow
    finds it registered for the release in this process).

    Before anything starts (Prefect's server, a mirror, a request), the inputs are checked
    (kitab.core.errors.BadValue) and the warehouse's refresh lock is taken (kitab.core.locking.WarehouseBusy
    if another refresh holds it): both fail at once and write nothing but the lock file."""
    from flows.pipeline import check_inputs, running
    from kitab.core.locking import refresh_lock
    from kitab.sources.dump.prebuild import needs_prebuild, prebuilding

    inputs = {**parameters, "snapshot": str(snapshot) if snapshot else None, "warehouse": str(warehouse)}
    # resolved once (the defaults of today too): the lock names the release the flow then builds
    config = run_config(inputs, direct=direct, task_runner=task_runner, dask_address=dask_address)
    check_inputs(config.params)
    check_ledger_rows(Path(warehouse))
    # the wait before the first stage, said once: importing Prefect and starting its temporary
    # server (no PREFECT_API_URL) is most of a small refresh's wait
    starting = (
        None
        if direct or os.environ.get("PREFECT_API_URL")
        else "starting Prefect's temporary server (once per refresh, ~10 s)"
        + ("; the dump cache is built beside it" if needs_prebuild(config.params, config.settings) else "")
    )
    with (
        refresh_lock(Path(warehouse), config.params.release),
        # the views start here: a mistake found above is the only thing the user sees
        running(config, progress, **({"starting": starting} if starting else {})) as progress,
        serving(config.params) as params,
    ):
        config = dataclasses.replace(config, params=params)
        from flows.rebuild import check_rebuild_early

        check_rebuild_early(config)  # a refused rebuild: one line before Prefect's server starts
        with prebuilding(config.params, config.settings):  # the dump cache: built while the rest starts
            return _run(config, progress, direct=direct, dask_address=dask_address)


def _run(config, progress, *, direct: bool, dask_address: str | None) -> dict:
    """The checked ``config``'s pipeline: directly (LocalRunner) or as the refresh flow."""
    from flows.pipeline import run_pipeline

    warehouse = config.settings.warehouse
    if direct:
        from flows.runners import LocalRunner

        runner = LocalRunner(workers=config.workers)
        try:
            return run_pipeline(config, runner, progress=progress)
        finally:
            runner.close()
    from flows.refresh import with_task_runner
    from kitab.app.prefect_guard import guard_server, quiet_user_errors
    from kitab.core.params import runner_kind

    guard_server()  # Prefect's temporary server goes when this process goes, kill -9 included

    with quiet_user_errors():  # a KitabError reaches the caller whole; Prefect's traceback of it is noise
        try:
            # the config alone: the flow gets the run's parameters once
            return with_task_runner(runner_kind(config.runner), dask_address or _env_dask_address())(
                config=config.to_dict()
            )
        except Exception as exc:
            full = _disk_full(Path(warehouse))
            if full:  # e.g. Prefect's server could not write its database: the disk, not a bug
                import logging

                # Prefect's log workers would print "--- Error logging to API ---" and the
                # server's 500 at exit (its database is on the full disk): errors of logging
                # itself are not shown from here on, the one line below says what happened
                logging.raiseExceptions = False
                raise KitabError(
                    f"the refresh failed with the disk of {warehouse} full ({full}); free some space and run it again"
                ) from exc
            raise


def check_ledger_rows(warehouse: Path) -> None:
    """Every committed ledger row against its digests, before any work: a rebuild compares
    its parameters with its own row, and a new release's sample excludes the others by
    theirs, so an edited row is refused here, in one line (kitab.core.ledger.LedgerRowEdited)."""
    from kitab.core.ledger import WarehouseFiles

    files = WarehouseFiles(warehouse)
    for release in files.committed_releases():
        files.ledger_row(release)


# The environment a run reads, here and nowhere below kitab/app (tests/test_env_reads.py):
ENV_TASK_RUNNER, ENV_DASK_ADDRESS, ENV_WORKERS, ENV_TAGGERS = (
    "KITAB_TASK_RUNNER",
    "KITAB_DASK_ADDRESS",
    "KITAB_WORKERS",
    "KITAB_TAGGERS",
)
# the model endpoint (the model taggers, the model second reader; its key, a secret, stays in
# OPENAI_API_KEY, read where the request is sent) and the second reader
ENV_TAGGER_BASE_URL, ENV_TAGGER_MODEL, ENV_TAGGER_CACHE, ENV_SECOND_READER = (
    "KITAB_TAGGER_BASE_URL",
    "KITAB_TAGGER_MODEL",
    "KITAB_TAGGER_CACHE",
    "KITAB_SECOND_READER",
)


def _env_dask_address() -> str | None:
    return os.environ.get(ENV_DASK_ADDRESS) or None


def run_config(inputs, *, direct: bool, task_runner: str | None, dask_address: str | None):
    """The run's whole configuration (kitab.core.params.RunConfig) from ``inputs``
    (RefreshParams' fields, as the CLI or a deployment gives them, or a RefreshParams), the environment (KITAB_*:
    the settings, $KITAB_TAGGERS, $KITAB_WORKERS, $KITAB_TASK_RUNNER, $KITAB_DASK_ADDRESS, the
    model endpoint $KITAB_TAGGER_BASE_URL, $KITAB_TAGGER_MODEL, $KITAB_TAGGER_CACHE,
    $KITAB_SECOND_READER) and the defaults, by the one resolver (flows.configure.resolve_config);
    every step gets it as an argument, on whatever machine it runs."""
    from flows.configure import resolve_config
    from kitab.core.config import Settings
    from kitab.core.params import ModelEndpoint, RefreshParams

    if isinstance(inputs, RefreshParams):
        inputs = dataclasses.asdict(inputs)
    warehouse = inputs.get("warehouse")
    settings = Settings(**({"warehouse": warehouse} if warehouse else {}))
    if direct:
        runner = "local"
    else:
        kind = task_runner or os.environ.get(ENV_TASK_RUNNER) or "threads"
        address = dask_address or _env_dask_address()
        runner = f"prefect-{kind}" + (f"@{address}" if kind == "dask" and address else "")
    workers = os.environ.get(ENV_WORKERS)
    return resolve_config(
        inputs,
        settings=settings,
        taggers=os.environ.get(ENV_TAGGERS) or None,
        runner=runner,
        workers=int(workers) if workers else None,
        tagger_endpoint=ModelEndpoint(
            base_url=os.environ.get(ENV_TAGGER_BASE_URL, "").strip(),
            model=os.environ.get(ENV_TAGGER_MODEL, "").strip(),
            cache=os.environ.get(ENV_TAGGER_CACHE) or None,
        ),
        second_reader=os.environ.get(ENV_SECOND_READER, "").strip(),
    )


@contextlib.contextmanager
def serving(params) -> Iterator[object]:
    """``params`` as the pipeline gets them: a source kind that reads a mirror, given no URL,
    reads the snapshot served by an in-process mirror (kitab.simulate) for the run's duration."""
    from kitab.sources import source_kind

    if not source_kind(params.source).starts_mirror(params):
        yield params
        return
    from kitab.simulate.mirror.server import Mirror

    with Mirror(params.snapshot_dir()) as mirror:
        yield dataclasses.replace(params, snapshot=str(params.snapshot_dir()), mirror_url=mirror.url)


def _disk_full(root: Path) -> str | None:
    """How full the disk of ``root`` is, if (nearly) full: under 1 MB free."""
    import shutil

    where = root
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    return f"{free // 1024} KB free" if free < 2**20 else None
