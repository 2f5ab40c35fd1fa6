"""The scheduled refresh's entry point (prefect.yaml's ``entrypoint``, and what ``kitab serve``
serves). A run that a worker starts has no ``kitab refresh`` before it, so this is where its
configuration is resolved, once, from the worker's environment (``KITAB_*``: the warehouse, the
contact, the taggers, the model endpoint) and the deployment's parameters, as kitab.app.runs does
for a command; the refresh flow's body (flows/refresh.py) then gets it whole and nothing below
the app reads the environment."""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import flow

from flows.refresh import _refresh
from flows.runners import task_runner
from kitab.core.params import RefreshParams, flow_signature


def _scheduled(**parameters) -> dict:
    """The ``refresh`` flow as a deployment runs it (parameters: RefreshParams' fields; a
    ``config`` given whole is used as it is)."""
    from kitab.app.runs import run_config

    if parameters.get("config"):
        return _refresh(**parameters)
    parameters.pop("config", None)
    params = RefreshParams(**parameters).resolved(datetime.now(UTC).date())
    config = run_config(params, direct=False, task_runner="threads", dask_address=None)
    return _refresh(**{**parameters, "seed": params.seed, "release": params.release}, config=config.to_dict())


_scheduled.__signature__ = flow_signature()  # the same parameters, and schema, as the refresh flow
scheduled_refresh = flow(name="refresh", log_prints=True, task_runner=task_runner("threads"))(_scheduled)
