"""The scheduled refresh's entry point (prefect.yaml's ``entrypoint``, and what ``kitab serve``
serves). A run that a worker starts has no ``kitab refresh`` before it, so this is where its
configuration is resolved, once, from the worker's environment (``KITAB_*``: the warehouse, the
contact, the taggers, the model endpoint) and the deployment's parameters, as kitab.app.runs does
for a command; the refresh flow's body (flows/refresh.py) then gets it whole and nothing below
the app reads the environment."""

from __future__ import annotations

import inspect

from prefect import flow

from flows.configure import flow_config
from flows.refresh import refresh_release
from flows.runners import task_runner
from kitab.core.params import flow_signature


def _scheduled(**parameters) -> dict:
    """The ``refresh`` flow as a deployment runs it (parameters: RefreshParams' fields, or a
    ``config`` given whole, used as it is)."""
    from kitab.app.runs import run_config

    if parameters.get("config"):
        config = flow_config(parameters)
    else:
        parameters.pop("config", None)
        config = run_config(parameters, direct=False, task_runner="threads", dask_address=None)
    from kitab.sources.dump.prebuild import prebuilding

    with prebuilding(config.params, config.settings):  # the dump cache: its build's memory not kept
        return refresh_release(config)


_scheduled.__signature__ = flow_signature()  # the same parameters, and schema, as the refresh flow
scheduled_refresh = flow(name="refresh", log_prints=True, task_runner=task_runner("threads"))(_scheduled)


def _scheduled_cycle(
    models: str,
    limit: int | None = None,
    site: str | None = None,
    export: str | None = None,
    push: str | None = None,
    **parameters,
) -> dict:
    """The ``cycle`` flow as ``kitab serve --models`` runs it: the release's parameters
    (RefreshParams' fields) resolved here from the worker's environment, as for the refresh,
    then flows/cycle_flow.py's body (``models``: the models file, read when the run starts)."""
    from flows.cycle_flow import cycle_run
    from kitab.app.runs import run_config

    parameters.pop("config", None)
    config = run_config(parameters, direct=False, task_runner="threads", dask_address=None)
    from kitab.sources.dump.prebuild import prebuilding

    with prebuilding(config.params, config.settings):
        return cycle_run(config, models, limit=limit, site=site, export=export, push=push)


def _cycle_signature() -> inspect.Signature:
    """The cycle's own parameters, then the refresh's (Prefect builds the deployment's schema from it)."""
    own = [
        inspect.Parameter("models", inspect.Parameter.KEYWORD_ONLY, annotation=str),
        *(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
            for name, kind in (
                ("limit", int | None),
                ("site", str | None),
                ("export", str | None),
                ("push", str | None),
            )
        ),
    ]
    refresh = [p for p in flow_signature().parameters.values() if p.name != "config"]
    return inspect.Signature([*own, *refresh], return_annotation=dict)


_scheduled_cycle.__signature__ = _cycle_signature()
scheduled_cycle = flow(name="cycle", log_prints=True, task_runner=task_runner("threads"))(_scheduled_cycle)
