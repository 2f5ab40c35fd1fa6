"""docker-compose.yml and prefect.yaml say what the README says (no Docker engine here)."""
from __future__ import annotations

import yaml

from kitab.env import PROJECT_ROOT


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
    for step in ("prefect work-pool create kitab-pool", "prefect deploy --all", "prefect worker start --pool kitab-pool"):
        assert step in worker
    assert services["worker"]["environment"]["PREFECT_API_URL"] == "http://prefect-server:4200/api"
    assert services["mirror"]["command"][:3] == ["kitab", "mirror", "serve"]
    assert "ports" not in services["mirror"]  # the mirror is reachable inside the compose network only


def test_prefect_yaml_deploys_the_refresh_on_a_schedule():
    deployment = load("prefect.yaml")["deployments"][0]
    assert deployment["entrypoint"] == "flows/refresh.py:refresh"
    assert deployment["work_pool"]["name"] == "kitab-pool"
    assert deployment["schedules"][0]["cron"] == "0 3 * * 1"
    assert deployment["parameters"]["mirror_url"] == "http://mirror:8089"
    assert "seed" not in deployment["parameters"] and "release" not in deployment["parameters"]


def test_readme_documents_compose():
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert "docker compose up -d" in readme and "http://127.0.0.1:4200" in readme
