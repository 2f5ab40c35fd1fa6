"""The scheduled refresh: a Prefect deployment of ``refresh`` with a cron schedule, defined
once, in prefect.yaml (what ``prefect deploy`` and the compose worker register). ``kitab
serve`` reads the same definition here and overrides only what its options name.

Each scheduled run leaves ``seed`` and ``release`` unset, so the flow derives them from the
UTC date: every run is a new release, disjoint from all earlier ones (the ledger), and a
rerun on the same day rebuilds that day's release instead of adding another. One run at
a time (``concurrency_limit``): two at once would sample against the same ledger, and the
second would be refused at publish; later runs wait for a slot.
"""

from __future__ import annotations

from functools import lru_cache

import yaml
from prefect.deployments.runner import RunnerDeployment

from flows.refresh import refresh
from kitab.core.env import PROJECT_ROOT

PREFECT_YAML = PROJECT_ROOT / "prefect.yaml"


@lru_cache(maxsize=1)
def deployment_spec() -> dict:
    """The scheduled refresh as prefect.yaml defines it."""
    [spec] = [d for d in yaml.safe_load(PREFECT_YAML.read_text())["deployments"] if d["name"] == "scheduled-refresh"]
    return spec


DEPLOYMENT_NAME = deployment_spec()["name"]
DEFAULT_CRON = deployment_spec()["schedules"][0]["cron"]
# ``kitab serve --models``: the same schedule and parameters, running the cycle flow
# (flows/cycle_flow.py) under a name of its own
CYCLE_DEPLOYMENT = "scheduled-cycle"


def refresh_deployment(
    *,
    cron: str | None = None,
    work_pool_name: str | None = None,
    flow=None,
    name: str | None = None,
    **parameters: object,
) -> RunnerDeployment:
    """prefect.yaml's deployment as an object (``.apply()`` registers it, ``serve`` runs it);
    ``cron`` and any flow parameter given here (not None) replace prefect.yaml's; ``name``
    prefect.yaml's name (the cycle's deployment)."""
    spec = deployment_spec()
    merged = {**spec.get("parameters", {}), **{k: v for k, v in parameters.items() if v is not None}}
    # ``flow``: what the worker runs (kitab serve passes prefect.yaml's entry point, which resolves
    # the run's configuration from the worker's environment: kitab/app/scheduled.py)
    return (flow or refresh).to_deployment(
        name=name or spec["name"],
        cron=cron or DEFAULT_CRON,
        parameters=merged,
        description=spec["description"],
        tags=spec["tags"],
        work_pool_name=work_pool_name,
        concurrency_limit=spec["concurrency_limit"],
    )
