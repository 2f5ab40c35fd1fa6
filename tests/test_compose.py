"""docker-compose.yml and prefect.yaml say what the README says (no Docker engine here)."""

from __future__ import annotations

import yaml

from kitab.core.env import PROJECT_ROOT


def load(name: str) -> dict:
    return yaml.safe_load((PROJECT_ROOT / name).read_text())


def test_compose_services_ports_volumes_and_worker():
    compose = load("docker-compose.yml")
    services = compose["services"]
    assert set(services) == {"postgres", "prefect-server", "worker", "mirror"}
    assert services["prefect-server"]["ports"] == ["127.0.0.1:4200:4200"]
    assert "postgresql+asyncpg://" in services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"]
    assert services["postgres"]["volumes"] == ["pgdata:/var/lib/postgresql/data"]
    assert services["worker"]["volumes"] == ["warehouse:/app/warehouse"]
    assert set(compose["volumes"]) == {"pgdata", "warehouse"}
    worker = " ".join(services["worker"]["command"])
    for step in (
        "prefect work-pool create kitab-pool",
        "prefect deploy --all",
        "prefect worker start --pool kitab-pool",
    ):
        assert step in worker
    assert services["worker"]["environment"]["PREFECT_API_URL"] == "http://prefect-server:4200/api"
    assert services["mirror"]["command"][:3] == ["kitab", "mirror", "serve"]
    assert "ports" not in services["mirror"]  # the mirror is reachable inside the compose network only


def test_prefect_yaml_deploys_the_refresh_on_a_schedule():
    deployment = load("prefect.yaml")["deployments"][0]
    # a module path, no pull step: the worker imports the installed package wherever it runs
    # the app's entry point: a scheduled run resolves its configuration from the worker's environment
    assert deployment["entrypoint"] == "kitab.app.scheduled.scheduled_refresh"
    assert load("prefect.yaml")["pull"] == []
    assert deployment["concurrency_limit"] == 1
    assert deployment["work_pool"]["name"] == "kitab-pool"
    assert deployment["schedules"][0]["cron"] == "0 3 * * 1"
    assert deployment["parameters"]["mirror_url"] == "http://mirror:8089"
    assert "seed" not in deployment["parameters"] and "release" not in deployment["parameters"]


def test_readme_documents_compose():
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert "docker compose up -d" in readme and "http://127.0.0.1:4200" in readme


def test_deploy_py_and_prefect_yaml_define_the_same_deployment():
    """`kitab serve` (flows/deploy.py) and compose (prefect.yaml) schedule the same thing."""
    from prefect.flows import load_flow_from_entrypoint

    from flows.deploy import refresh_deployment
    from kitab.app.scheduled import scheduled_refresh

    spec = load("prefect.yaml")["deployments"][0]
    served = refresh_deployment(flow=scheduled_refresh, mirror_url=spec["parameters"]["mirror_url"])
    assert load_flow_from_entrypoint(spec["entrypoint"]) is scheduled_refresh
    assert served.name == spec["name"]
    assert served.parameters == spec["parameters"]
    assert [s.schedule.cron for s in served.schedules] == [s["cron"] for s in spec["schedules"]]
    assert served.tags == spec["tags"]
    assert served.concurrency_limit == spec["concurrency_limit"]
