"""``kitab report`` shows what each model cost on the release (issue 40): requests, tokens in/out,
service and wall time, status and failure reason per (model, task), read from the table
model_runs; a release no cycle ran says so. Markdown and --output json, through the command."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kitab.app.cli import app
from kitab.release.model_costs import NO_CYCLE
from kitab.release.model_runs import write_model_run
from tests.model_run_rows import model_run_row
from tests.releases import dump_release

runner = CliRunner()


def report(warehouse, *extra: str) -> str:
    result = runner.invoke(app, ["report", "--release", "r1", "--warehouse", str(warehouse), *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    return dump_release(tmp_path_factory.mktemp("costs") / "wh", authors=10, seed=3, release="r1")


def test_the_report_says_no_cycle_ran_then_shows_each_models_costs(warehouse):
    text = report(warehouse)
    assert "## Model costs" in text and NO_CYCLE in text
    assert json.loads(report(warehouse, "--output", "json"))["model_runs"] == []

    write_model_run(warehouse, "r1", model_run_row())
    write_model_run(
        warehouse,
        "r1",
        model_run_row(model="beta|pipe", status="failed", reason="cannot connect (connection refused)", answered=0,
                requests=1, prompt_tokens=0, completion_tokens=0, service_seconds=0.0, wall_seconds=0.4),
    )  # fmt: skip
    text = report(warehouse)
    assert NO_CYCLE not in text
    section = text[text.index("## Model costs") :]
    assert "| alpha | queries | scored | 38 / 40 | 45 (2) | 12,345 | 6,789 | 51.2 | 63.5 |  |" in section
    assert "| beta\\|pipe | queries | failed | 0 / 40 | 1 (2) | 0 | 0 | 0.0 | 0.4 | cannot connect" in section
    runs = {r["model"]: r for r in json.loads(report(warehouse, "--output", "json"))["model_runs"]}
    assert runs["alpha"]["requests"] == 45 and runs["alpha"]["prompt_tokens"] == 12_345
    assert runs["alpha"]["completion_tokens"] == 6_789 and runs["alpha"]["service_seconds"] == 51.25
    assert runs["alpha"]["wall_seconds"] == 63.5 and runs["alpha"]["failed"] == 2
    assert runs["beta|pipe"]["status"] == "failed" and runs["beta|pipe"]["reason"].startswith("cannot connect")
