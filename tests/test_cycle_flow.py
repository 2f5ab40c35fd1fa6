"""The scheduled cycle (kitab serve --models; kitab/app/scheduled.py's ``cycle`` flow over
flows/cycle_flow.py): a run as the deployment starts it makes the release on Prefect task
runs, scores the models, logs what it did and leaves it as a markdown artifact; a bad models
file is refused by ``kitab serve`` before anything is registered or created."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kitab.core.env import BUNDLED_SNAPSHOT, PROJECT_ROOT
from kitab.simulate.chat import ChatServer
from tests.test_cli_errors import assert_user_error
from tests.test_cycle import alpha_answer, write_models
from tests.test_serve import bare_env


def test_serve_refuses_a_bad_models_file_in_one_line_and_creates_nothing(tmp_path):
    models = tmp_path / "models.toml"
    models.write_text('[[model]]\nname = "a"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nbudget = -1\n')
    warehouse = tmp_path / "wh"
    result = subprocess.run(
        [sys.executable, "-m", "kitab.app.cli", "serve", "--models", str(models), "--warehouse", str(warehouse)],
        capture_output=True,
        env=bare_env(),
        cwd=PROJECT_ROOT,
        timeout=120,
    )
    err = assert_user_error(result, f"{models}: model 'a': budget = -1")
    assert len(err.strip().splitlines()) == 1, err
    assert not warehouse.exists()


@pytest.mark.flow
def test_a_scheduled_cycle_run_logs_and_leaves_an_artifact(tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey, LogFilter, LogFilterFlowRunId
    from prefect.testing.utilities import prefect_test_harness

    from kitab.app.scheduled import scheduled_cycle

    warehouse = tmp_path / "wh"
    with prefect_test_harness(server_startup_timeout=120), ChatServer(alpha_answer) as alpha:
        models = write_models(
            tmp_path / "models.toml",
            [
                {"name": "alpha", "base_url": alpha.url, "model": "a"},
                {"name": "gone", "base_url": "http://127.0.0.1:9/v1", "model": "g"},  # nothing listens on port 9
            ],
        )
        state = scheduled_cycle(
            models=str(models),
            limit=5,
            source="dump",
            snapshot=str(BUNDLED_SNAPSHOT),
            authors=10,
            seed=3,
            release="f1",
            warehouse=str(warehouse),
            return_state=True,
        )
        assert state.is_completed()  # published: a failed model is a warning, not a failed run
        summary = state.result()
        assert summary["scored"] == ["alpha"] and summary["failed"] == ["gone"]
        assert summary["release_step"]["built"] and summary["release"] == "f1"
        with get_client(sync_client=True) as client:
            [artifact] = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["cycle-f1"])))
            assert "| alpha | queries | scored |" in artifact.data and "| gone | claims | failed |" in artifact.data
            run_id = state.state_details.flow_run_id
            deadline, said = time.monotonic() + 30, []
            while time.monotonic() < deadline and not any("cycle of release f1" in m for m in said):
                time.sleep(1)  # logs reach the API in batches
                said = [
                    r.message
                    for r in client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
                ]
        assert any(m.startswith("cycle of release f1: scored alpha; failed gone") for m in said), said
