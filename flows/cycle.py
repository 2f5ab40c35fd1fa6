"""One cycle of the benchmark, composed once (``kitab cycle``, and the ``cycle`` flow that
``kitab serve --models`` schedules):

    a new release (the refresh's composition)  ─►  for every model of the models file, both
    tasks: answer ─► score ─► one model_runs row  ─►  the site  ─►  export (and push)

- **The release**: made by the caller's ``make_release`` (kitab.app.runs.run_refresh, or the
  refresh flow's body on Prefect task runs), unless it is committed already with the very
  parameters asked for (a rerun of the same cycle, the same day): then it stands as it is and
  is not rebuilt (flows/rebuild.py says when a rebuild would change nothing).
- **The models**: each (model, task) is answered into a file of its own,
  ``<warehouse>/answers/<release>/<model>.<task>.jsonl``, through a response cache of its own,
  ``<warehouse>/.cache/cycle/<model>.sqlite`` (the leaderboard name's: two entries serving
  the same model id never answer for each other), and scored into ``evaluations`` /
  ``claim_evaluations``. One that fails (nothing listening, 401/403/404, over its budget, no
  key, answers missing) is a ``failed`` model_runs row with the reason, and the cycle goes on
  with the others; what it answered stays cached, so a rerun asks only for the rest.
- **The site**: :func:`site_step`, the one place the static site is rebuilt.
- **Export**: only when asked, to ``<export_dir>/<release>``; pushed when ``push`` names a
  repo.

The whole cycle holds the warehouse's refresh lock (re-entrant: the refresh inside takes it
again), so two cycles never answer into one warehouse at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from kitab.core.errors import KitabError
from kitab.core.files import sha256_file
from kitab.core.locking import refresh_lock
from kitab.core.params import RunConfig
from kitab.core.warehouse import Warehouse
from kitab.release.models_file import ModelSpec
from kitab.release.task import task_names

TASKS = task_names()  # both tasks, each model (kitab/release/task.py)
ANSWERS = "answers"  # <warehouse>/answers/<release>/<model>.<task>.jsonl
EXIT_SOME_FAILED = 3  # published, and some model failed (0: all scored; 1: an error, nothing decided)


def answers_path(warehouse: Path, release: str, model: str, task: str) -> Path:
    """Where the cycle keeps a (model, task)'s answers on ``release``: stable, so a rerun finds them."""
    return Path(warehouse) / ANSWERS / release / f"{model}.{task}.jsonl"


def cache_path(warehouse: Path, model: str) -> Path:
    """The response cache of the models file's entry ``model`` (by its leaderboard name)."""
    return Path(warehouse) / ".cache" / "cycle" / f"{model}.sqlite"


# -- the release ------------------------------------------------------------------------------------
def committed_as_asked(config: RunConfig) -> bool:
    """Whether ``config``'s release is committed and a rebuild of it would read nothing
    differently (flows/rebuild.py: the same parameters, snapshot and review labels): a rerun of
    the same cycle, which leaves it as it is. ``--replace`` always rebuilds."""
    from flows.rebuild import rebuild_causes
    from kitab.sources import Origin, source_kind

    params = config.params
    wh = Warehouse(config.settings.warehouse)
    if params.replace or not wh.root.is_dir() or params.release not in wh.committed_releases():
        return False
    kind = source_kind(params.source)
    # a mirror this run would start serves the snapshot folder (kitab.app.runs.serving)
    snapshot = params.snapshot_dir() if kind.starts_mirror(params) else kind.snapshot(params)
    origin = Origin.of(kind.name, config.settings, snapshot=snapshot, mirror_url=params.mirror_url)
    return not rebuild_causes(wh, config, origin.snapshot_id)


def release_step(config: RunConfig, make_release: Callable[[RunConfig], dict]) -> dict:
    """The cycle's release: made by ``make_release`` (the refresh's summary), or left as it is."""
    release = config.params.release
    if committed_as_asked(config):
        return {"release": release, "built": False, "note": "committed already with these parameters: not rebuilt"}
    summary = make_release(config)
    authors = summary.get("authors") or {}
    return {
        "release": summary.get("release", release),
        "built": True,
        "unchanged": bool(summary.get("unchanged")),
        "authors": authors.get("released"),
        "requests": summary.get("requests_made"),
        "wall_seconds": summary.get("wall_seconds"),
    }


# -- the models -------------------------------------------------------------------------------------
def run_task(
    warehouse: Path, release: str, spec: ModelSpec, task: str, *, budget_left: int | None, limit: int | None
) -> tuple[dict, dict | None]:
    """Answer and score one (model, task): its model_runs row, and its headline scores (None
    when it failed). Only a KitabError (the endpoint, the key, the budget, the answers) fails
    it; anything else is a bug and propagates."""
    from kitab.release.answer import answer_release, release_prompt_list
    from kitab.release.task import task as task_named

    chosen = task_named(task)
    template = chosen.template(None)
    out = answers_path(warehouse, release, spec.name, task)
    out.parent.mkdir(parents=True, exist_ok=True)
    started_at, started = datetime.now(UTC).replace(microsecond=0), time.monotonic()
    seen: list = []  # the run's counters (answer.RunStats), kept even when it raises

    def keep(stats) -> None:
        if not seen:
            seen.append(stats)

    row = {
        "model": spec.name,
        "task": task,
        "served_model": spec.model,
        "base_url": spec.base_url,
        "started_at": started_at,
    }
    try:
        summary = answer_release(
            warehouse,
            release,
            model=spec.model,
            base_url=spec.base_url,
            out=out,
            template=template,
            task=task,
            policy=spec.policy(budget_left),
            params=spec.params(chosen.max_tokens.get(template)),
            cache_path=cache_path(warehouse, spec.name),
            limit=limit,
            on_progress=keep,
            key=spec.key(),
        )
        result = chosen.evaluate(warehouse, release, out, model=spec.name)
    except KitabError as exc:
        stats = seen[0] if seen else None
        order = [p.query_id for p in release_prompt_list(warehouse, release, template, limit=limit, task=task)]
        failed = dict(stats.failed) if stats else {}
        ids = [q for q in order if q in failed]
        reason = " ".join(str(exc).split())
        if reason.startswith("over budget (") and spec.budget is not None:  # the model's budget, not what was left
            reason = f"over budget ({spec.budget} requests per cycle)" + reason.split(")", 1)[1]
        row.update(
            status="failed",
            reason=reason,
            answers_sha256=None,
            prompts=len(order),
            answered=(stats.from_cache + stats.answered) if stats else 0,
            failed_ids=ids,
            failed_reasons=[failed[q] for q in ids],
            requests=stats.requests if stats else 0,
            from_cache=stats.from_cache if stats else 0,
            # no answers file: the new answers' tokens (the cached ones are counted when scored)
            prompt_tokens=stats.prompt_tokens if stats else 0,
            completion_tokens=stats.completion_tokens if stats else 0,
            service_seconds=0.0,
            wall_seconds=round(time.monotonic() - started, 3),
        )
        return row, None
    row.update(
        status="scored",
        reason=None,
        answers_sha256=sha256_file(out),
        prompts=summary["queries"],
        answered=summary["answered"],
        failed_ids=list(summary["failed"]),
        failed_reasons=list(summary["failed"].values()),
        requests=summary["requests"],
        from_cache=summary["from_cache"],
        # what the answers cost when asked, cached ones included (answer_release's answer_costs)
        **{k: summary[k] for k in ("prompt_tokens", "completion_tokens", "service_seconds")},
        wall_seconds=round(time.monotonic() - started, 3),
    )
    return row, chosen.headline(result)


def run_model(
    warehouse: Path,
    release: str,
    spec: ModelSpec,
    *,
    limit: int | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> dict:
    """Both tasks of one model, each stored as its model_runs row; the model's part of the
    summary. The budget is the model's for the whole cycle: the claims get what the queries left."""
    from kitab.release.model_runs import write_model_run

    budget_left = spec.budget
    tasks = {}
    for task in TASKS:
        row, score = run_task(warehouse, release, spec, task, budget_left=budget_left, limit=spec.limit or limit)
        write_model_run(warehouse, release, row)
        if budget_left is not None:
            budget_left = max(0, budget_left - row["requests"])
        tasks[task] = {
            k: row[k] for k in ("status", "reason", "prompts", "answered", "requests", "from_cache", "wall_seconds")
        } | {
            "tokens_in": row["prompt_tokens"],
            "tokens_out": row["completion_tokens"],
            "service_seconds": row["service_seconds"],
            "failed_ids": row["failed_ids"],
            "score": score,
        }
        log(model_line(spec.name, task, tasks[task]))
    failed = [t for t, r in tasks.items() if r["status"] == "failed"]
    return {"model": spec.name, "status": "failed" if failed else "scored", "tasks": tasks}


def model_line(model: str, task: str, run: dict) -> str:
    """One (model, task) in one line: the run log's, kitab cycle's and the artifact's."""
    if run["status"] == "failed":
        return f"{model} {task}: failed: {run['reason']} ({run['requests']} requests)"
    score = ", ".join(f"{k} {v:.3f}" for k, v in (run["score"] or {}).items() if v is not None)
    return (
        f"{model} {task}: scored {run['answered']}/{run['prompts']} ({score}); {run['requests']} requests, "
        f"{run['from_cache']} cached, {run['tokens_in']:,} + {run['tokens_out']:,} tokens, "
        f"{run['service_seconds']:.1f} s service, {run['wall_seconds']:.1f} s wall"
    )


# -- publishing ---------------------------------------------------------------------------------------
def site_step(warehouse: Path, site_dir: Path) -> dict:
    """The static site, rebuilt from the warehouse into ``site_dir`` (``kitab site build``,
    kitab/release/site/): every release, every model's page with its differences between
    releases. Returns what it wrote."""
    from kitab.release.site import build_site

    return build_site(warehouse, site_dir)


def export_step(warehouse: Path, release: str, export_dir: Path, push: str | None) -> dict:
    """The release exported to ``<export_dir>/<release>`` (kitab export's rule and folder), and
    pushed to ``push`` if given; a rerun finds the same export (unchanged) and the tag pushed."""
    from kitab.release.export import ExportExists, export_release

    wh = Warehouse(Path(warehouse))
    wh.require_intact(release, nothing="nothing exported")
    try:
        exported = export_release(wh.root, release, Path(export_dir) / release)
    except ExportExists as exc:
        raise KitabError(str(exc)) from exc
    out = {"out": exported["out"], "written": exported["written"]}
    if push:
        from kitab.release.hub import ReleaseAlreadyPushed, push_release

        try:
            pushed = push_release(Path(exported["out"]), push, release=release)
            out["push"] = f"pushed {pushed['repo_url']} at commit {pushed['commit']}, tag {pushed['tag']}"
        except ReleaseAlreadyPushed as exc:  # a rerun of a pushed cycle: the tag is there
            out["push"] = f"not pushed again: {exc}"
    return out


# -- the cycle ---------------------------------------------------------------------------------------
def run_cycle(
    config: RunConfig,
    models: Sequence[ModelSpec],
    *,
    make_release: Callable[[RunConfig], dict],
    limit: int | None = None,
    site_dir: Path | None = None,
    export_dir: Path | None = None,
    push: str | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> dict:
    """One cycle (the module's docstring): the release of ``config``, every model of
    ``models`` on both tasks (``limit``: a seeded sample of N prompts per task), the site
    (``site_dir``, default ``<warehouse>/site``), the export to ``export_dir`` (pushed to
    ``push``). ``log`` hears one line per step. Returns the summary: the release, each model's
    status and runs, the failures, the requests, and ``exit_code`` (0 all scored,
    :data:`EXIT_SOME_FAILED` published with some model failed)."""
    from kitab.release.site.build import check_out

    warehouse = Path(config.settings.warehouse)
    started = time.monotonic()
    site_dir = Path(site_dir) if site_dir else warehouse / "site"
    if site_dir.resolve() != warehouse.resolve() / "site":  # the default is the site's own place (the first
        check_out(warehouse, site_dir)  # cycle makes the warehouse); another is refused before any model is asked
    with refresh_lock(warehouse, config.params.release):
        release = release_step(config, make_release)
        rid = release["release"]
        log(
            f"release {rid}: "
            + (release.get("note") or ("built" if not release["unchanged"] else "rebuilt, unchanged"))
        )
        runs = [run_model(warehouse, rid, spec, limit=limit, log=log) for spec in models]
        site = site_step(warehouse, site_dir)
        log(f"site: {site['pages']} pages in {site['out']}")
        exported = export_step(warehouse, rid, Path(export_dir), push) if export_dir else None
        if exported:
            log(f"exported to {exported['out']}" + (f"; {exported['push']}" if "push" in exported else ""))
    failures = [
        {"model": m["model"], "task": t, "reason": r["reason"]}
        for m in runs
        for t, r in m["tasks"].items()
        if r["status"] == "failed"
    ]
    return {
        "release": rid,
        "release_step": release,
        "models": runs,
        "scored": [m["model"] for m in runs if m["status"] == "scored"],
        "failed": [m["model"] for m in runs if m["status"] == "failed"],
        "failures": failures,
        "requests": sum(r["requests"] for m in runs for r in m["tasks"].values()),
        "site": site,
        "export": exported,
        "wall_seconds": round(time.monotonic() - started, 2),
        "exit_code": EXIT_SOME_FAILED if failures else 0,
    }


def cycle_text(summary: dict) -> str:
    """What a cycle did, as markdown: Prefect's artifact and kitab cycle's printout."""
    lines = [f"# Cycle: release {summary['release']}", ""]
    release = summary["release_step"]
    lines.append(
        release.get("note")
        or f"Release built: {release.get('authors')} authors, {release.get('requests')} requests to the sources."
    )
    lines += ["", "| model | task | status | requests | cached | tokens in / out | service s | wall s | scores |"]
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for m in summary["models"]:
        for task, r in m["tasks"].items():
            scores = (
                ", ".join(f"{k} {v:.3f}" for k, v in r["score"].items() if v is not None)
                if r["score"]
                else r["reason"].replace("|", "/")
            )
            lines.append(
                f"| {m['model']} | {task} | {r['status']} | {r['requests']} | {r['from_cache']} | "
                f"{r['tokens_in']:,} / {r['tokens_out']:,} | {r['service_seconds']:.1f} | {r['wall_seconds']:.1f} | "
                f"{scores} |"
            )
    lines += [
        "",
        f"Models scored: {', '.join(summary['scored']) or 'none'}; failed: {', '.join(summary['failed']) or 'none'}.",
    ]
    if summary.get("site"):
        lines.append(f"Site: {summary['site']['pages']} pages in {summary['site']['out']} (open index.html).")
    if summary["export"]:
        lines.append(f"Exported to {summary['export']['out']}.")
    return "\n".join(lines) + "\n"
