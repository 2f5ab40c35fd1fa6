"""The ``cycle`` flow's body: flows/cycle.py's :func:`~flows.cycle.run_cycle` on Prefect, what
``kitab serve --models`` schedules (the flow itself is kitab/app/scheduled.py's ``scheduled_cycle``,
which resolves the configuration from the worker's environment). Thin: the release is the
refresh flow's body (flows/refresh.py, its steps as Prefect task runs and its progress
artifact), the rest is run_cycle's; each run logs one line per model and task and what the
cycle did, and leaves it as a markdown artifact (``cycle-<release>``).

A run whose release is published but some model failed ends Completed (the release and the
others' scores are there), with a warning line naming the failed models; ``kitab cycle`` exits 3
for the same outcome. Here apart from flows/cycle.py so that ``kitab cycle --runner local``
never imports Prefect.
"""

from __future__ import annotations

import re

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from flows.cycle import cycle_text, run_cycle
from flows.refresh import refresh_release
from kitab.core.params import RunConfig
from kitab.release.models_file import read_models


def cycle_run(
    config: RunConfig,
    models: str,
    *,
    limit: int | None = None,
    site: str | None = None,
    export: str | None = None,
    push: str | None = None,
) -> dict:
    """The flow's body for a resolved ``config`` and the models file at ``models`` (read now:
    the file as it is when the run starts)."""
    logger = get_run_logger()
    specs = read_models(models)
    summary = run_cycle(
        config,
        specs,
        make_release=refresh_release,
        limit=limit,
        site_dir=site,
        export_dir=export,
        push=push,
        log=logger.info,
    )
    line = (
        f"cycle of release {summary['release']}: scored {', '.join(summary['scored']) or 'none'}; "
        f"failed {', '.join(summary['failed']) or 'none'}; {summary['requests']:,} requests to the models"
    )
    # the run's one line says what it did on every run, so at WARNING: kitab keeps Prefect's level
    # there (a process-wide INFO would also print every refresh's progress); each model's INFO line
    # and the artifact hold the rest
    logger.warning(line)
    create_markdown_artifact(cycle_text(summary), key=artifact_key(summary["release"]), description=line)
    return summary


def artifact_key(release: str) -> str:
    """The artifact's key (Prefect's keys: lowercase letters, digits and dashes)."""
    return "cycle-" + re.sub(r"[^a-z0-9-]+", "-", release.lower()).strip("-")
