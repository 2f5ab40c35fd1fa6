"""One row of the table model_runs (schemas/model_runs.json) for tests, every column given;
``over`` replaces any of them."""

from __future__ import annotations

from datetime import UTC, datetime


def model_run_row(**over) -> dict:
    row = dict(
        model="alpha",
        task="queries",
        status="scored",
        reason=None,
        served_model="served",
        base_url="http://127.0.0.1:9/v1",
        answers_sha256="ab" * 32,
        prompts=40,
        answered=38,
        failed_ids=["q1", "q2"],
        failed_reasons=["HTTP 500", "timeout"],
        requests=45,
        from_cache=2,
        prompt_tokens=12_345,
        completion_tokens=6_789,
        service_seconds=51.25,
        wall_seconds=63.5,
        started_at=datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
    )
    return {**row, **over}
