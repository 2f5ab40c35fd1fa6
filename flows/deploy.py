"""The scheduled refresh: a Prefect deployment of ``refresh`` with a cron schedule.

Each scheduled run leaves ``seed`` and ``release`` unset, so the flow derives them from the
UTC date: every run is a new release, disjoint from all earlier ones (the ledger), and a
rerun on the same day rebuilds that day's release instead of adding another. One run at
a time (``concurrency_limit=1``, as in prefect.yaml): two at once would sample against the
same ledger, and the second would be refused at publish; later runs wait for a slot.
"""
from __future__ import annotations

from prefect.deployments.runner import RunnerDeployment

from flows.refresh import refresh

DEPLOYMENT_NAME = "scheduled-refresh"
DEFAULT_CRON = "0 3 * * 1"  # Mondays 03:00 UTC


def refresh_deployment(*, cron: str = DEFAULT_CRON, source: str = "mirror", authors: int = 40,
                       mirror_url: str | None = None, snapshot: str | None = None, warehouse: str | None = None,
                       work_pool_name: str | None = None) -> RunnerDeployment:
    """The deployment object; ``.apply()`` registers it with the Prefect API, ``serve`` runs it."""
    parameters = {"source": source, "authors": authors, "mirror_url": mirror_url, "snapshot": snapshot,
                  "warehouse": warehouse}
    return refresh.to_deployment(
        name=DEPLOYMENT_NAME, cron=cron, parameters={k: v for k, v in parameters.items() if v is not None},
        description="Refresh the KITAB benchmark: a new release with a fresh, disjoint author sample.",
        tags=["kitab"], work_pool_name=work_pool_name, concurrency_limit=1,
    )
