"""The site's test warehouse (tests/test_site*.py): two small releases of the bundled snapshot
(the second drawn excluding the first's authors, as every refresh does), each scored for both
tasks by synthetic models written from the release's own truths, and ``model_runs`` rows with
one failed model.

- **perfect**: every query's key, every claim's label;
- **fixed-wrong**: one invented title for every query, every claim judged "False";
- ``<b>odd|name</b>\u202e`` (:data:`ODD`): a name that is markup, a table pipe and a bidi
  override: answers every claim "True", and the queries with their key: all of them on the
  older release, half on the newer (what contamination would look like);
- **down**: failed on the newer release (its endpoint refused), scored on neither.
"""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime
from pathlib import Path

from tests.model_run_rows import model_run_row
from tests.releases import dump_release

OLD, NEW = "2026.11.20-s5", "2026.11.27-s11"
ODD = "<b>odd|name</b>\u202e"
FIXED_WRONG = "Output:\n1. Reason: It is a famous book. Title: Zqxv Wjkp Yfgh\n"
DOWN_REASON = "connection refused: http://127.0.0.1:9/v1 (endpoint down)"


def _answer(titles: list[str]) -> str:
    lines = "".join(f"{n}. Reason: It satisfies the criteria. Title: {t}\n" for n, t in enumerate(titles, 1))
    return f"Output:\n{lines}"


def _run_row(model: str, task: str, **over) -> dict:
    """The fixture's model_runs row: every model 100 prompts answered in 100 requests."""
    fixture = dict(
        served_model=f"served-{len(model)}",
        base_url="http://127.0.0.1:8000/v1",
        answers_sha256=None,
        prompts=100,
        answered=100,
        failed_ids=None,
        failed_reasons=None,
        requests=100,
        from_cache=0,
        completion_tokens=2_345,
        service_seconds=12.5,
        wall_seconds=14.25,
        started_at=datetime(2026, 11, 27, 3, 0, tzinfo=UTC),
    )
    return model_run_row(model=model, task=task, **{**fixture, **over})


def score_release(warehouse: Path, release: str, folder: Path) -> None:
    """Answers files for the synthetic models of ``release``, evaluated (both tasks), and the
    release's model_runs rows."""
    from kitab.core.warehouse import Warehouse
    from kitab.release.claims import evaluate_claims
    from kitab.release.evaluation.run import evaluate_release
    from kitab.release.model_runs import write_model_run

    with Warehouse(warehouse).connect(release=release) as con:
        mapped = {
            q: ast.literal_eval(m)
            for q, m in con.execute(
                "SELECT query_id, mapped_books FROM kitab_book_constraints ORDER BY query_id"
            ).fetchall()
        }
        labels = dict(con.execute("SELECT query_id, label FROM claims ORDER BY query_id").fetchall())
    queries = {
        "perfect": {q: _answer(t) for q, t in mapped.items()},
        "fixed-wrong": {q: FIXED_WRONG for q in mapped},
        # as if it had read the older release: every key there, half of them on the newer one
        ODD: {q: _answer(t) for i, (q, t) in enumerate(sorted(mapped.items())) if release == OLD or i % 2 == 0},
    }
    claims = {
        "perfect": {q: str(bool(label)) for q, label in labels.items()},
        "fixed-wrong": {q: "False" for q in labels},
        ODD: {q: "True" for q in labels},
    }
    folder.mkdir(parents=True, exist_ok=True)
    for i, model in enumerate(queries):
        for task, answers in (("queries", queries[model]), ("claims", claims[model])):
            path = folder / f"{release}-{i}-{task}.jsonl"
            path.write_text(
                "".join(json.dumps({"query_id": q, "response": r}) + "\n" for q, r in answers.items()),
                encoding="utf-8",
            )
            if task == "queries":
                result = evaluate_release(warehouse, release, path, model=model)
            else:
                result = evaluate_claims(warehouse, release, path, model=model)
            write_model_run(
                warehouse,
                release,
                _run_row(
                    model,
                    task,
                    answers_sha256=result["answers_sha256"],
                    prompts=len(answers if task == "claims" else mapped),
                    answered=len(answers),
                    requests=len(answers) + i,
                ),
            )
    if release == NEW:
        for task in ("queries", "claims"):
            write_model_run(
                warehouse,
                release,
                _run_row(
                    "down",
                    task,
                    status="failed",
                    reason=DOWN_REASON,
                    answered=0,
                    requests=6,
                    prompts=0,
                    prompt_tokens=0,
                    completion_tokens=0,
                    service_seconds=0.0,
                    wall_seconds=0.4,
                ),
            )


def site_warehouse(root: Path) -> Path:
    """The warehouse at ``root``: OLD (12 authors, seed 5) then NEW (12 authors, seed 11), scored."""
    dump_release(root, authors=12, seed=5, release=OLD)
    dump_release(root, authors=12, seed=11, release=NEW)
    for release in (OLD, NEW):
        score_release(root, release, root.parent / "answers")
    return root
