"""Making a release: ``kitab refresh`` (once), ``kitab demo`` (on the bundled snapshot),
``kitab serve`` (on a schedule)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import typer

from kitab.app.commands.common import WarehouseOpt, warehouse_root, warn
from kitab.app.console import console, print_json
from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.params import DEFAULTS

app = typer.Typer()


@app.command()
def refresh(
    source: str = typer.Option(DEFAULTS.source, help="live | mirror | dump"),
    snapshot: Path = typer.Option(BUNDLED_SNAPSHOT, help="snapshot folder (mirror / dump)"),
    authors: int = typer.Option(DEFAULTS.authors, min=1, help="authors to sample"),
    seed: int | None = typer.Option(None, help="sampling seed (default: the UTC date, YYYYMMDD)"),
    release: str | None = typer.Option(None, help="release id (default YYYY.MM.DD-s<seed>)"),
    mirror_url: str | None = typer.Option(None, help="use a running mirror instead of starting one"),
    batch_size: int | None = typer.Option(
        DEFAULTS.batch_size,
        min=1,
        help="authors per batch (one task run per batch and step; default 250, a hundredth of a "
        "run over 25,000 authors, up to 1,000)",
    ),
    task_runner: str = typer.Option(
        "threads",
        help="threads (this machine, nothing to start) | dask (a LocalCluster, one worker per core, or --dask-address)",
    ),
    dask_address: str | None = typer.Option(None, help="a running Dask scheduler, e.g. tcp://host:8786"),
    runner: str = typer.Option(
        "prefect",
        help="prefect (the refresh flow: its UI and logs; a temporary server unless PREFECT_API_URL is set) | "
        "local (the same pipeline without Prefect, as kitab demo runs it: no server start-up)",
    ),
    allow_fewer: bool = typer.Option(
        False,
        "--allow-fewer",
        help="fewer eligible authors than --authors: publish those (the summary says the shortfall) instead of failing",
    ),
    max_failed_share: float = typer.Option(
        DEFAULTS.max_failed_share,
        min=0.0,
        max=1.0,
        help="fail, publishing nothing, if more "
        "than this share of the authors is lost to a source that does "
        "not answer (each is a source_unavailable reject)",
    ),
    replace: bool = typer.Option(
        False,
        "--replace",
        help="rebuild a committed release even if its parameters, review labels or tables change (the same "
        "exclusions, so the same authors unless the sample's settings changed; the old version stays in "
        "`kitab releases --history`, with what changed and why; its evaluations become stale); without it such "
        "a rebuild is refused",
    ),
    redraw_rejected: bool = typer.Option(
        False,
        "--redraw-rejected",
        help="draw again authors that an earlier release drew and rejected (by default they are not drawn again)",
    ),
    max_key_error: float = typer.Option(
        DEFAULTS.max_key_error,
        min=0.0,
        max=1.0,
        help="leave out an entity query (human / city name, ...) whose key's estimated chance of holding a wrong "
        "book is above this (each drop is a key_error_over_bound reject; the summary and card say what it cost); "
        "1 keeps them all",
    ),
    taggers: str | None = typer.Option(
        None, help="tagger versions, comma-separated, one per kind (default: $KITAB_TAGGERS, else human_v7,city_v7)"
    ),
    second_reader: str | None = typer.Option(
        None,
        help="model: the model endpoint ($KITAB_TAGGER_BASE_URL, $KITAB_TAGGER_MODEL) reads each book's titles as "
        "a second reader beside the title rules (default: $KITAB_SECOND_READER, else none)",
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet",
        "-q",
        help="no progress while it runs: only the summary (or --json) on stdout, and warnings and errors on stderr",
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="print the run summary as JSON (the machine-readable document) instead of the human summary",
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Run the refresh flow once and publish a release. While it runs: a live display on a
    terminal, plain progress lines on stderr otherwise (none with --quiet); then a summary."""
    from kitab.core.locking import refuse_if_busy

    root = warehouse_root(warehouse, create=False)
    refuse_if_busy(root)  # before the slow imports: a second refresh is told at once
    from kitab.app.guard import check_free_space

    check_free_space(root)  # a full disk is told now, not after Prefect has started on it
    from flows.runners import TASK_RUNNERS
    from kitab.app.runs import run_refresh

    if task_runner not in TASK_RUNNERS:
        raise typer.BadParameter(f"expected one of {', '.join(TASK_RUNNERS)}", param_hint="--task-runner")
    if dask_address and task_runner != "dask":
        raise typer.BadParameter("--dask-address needs --task-runner dask", param_hint="--dask-address")
    from kitab.app.progress_display import showing_refresh
    from kitab.core.progress import Progress

    progress, started = Progress(), time.monotonic()
    with showing_refresh(progress, quiet):
        # run_refresh checks the inputs and takes the warehouse's lock before it creates anything
        summary = run_refresh(
            source=source,
            snapshot=snapshot,
            authors=authors,
            seed=seed,
            release=release,
            warehouse=root,
            mirror_url=mirror_url,
            batch_size=batch_size,
            task_runner=task_runner,
            dask_address=dask_address,
            direct=_direct(runner, task_runner, dask_address),
            allow_fewer=allow_fewer,
            max_failed_share=max_failed_share,
            replace=replace,
            redraw_rejected=redraw_rejected,
            max_key_error=max_key_error,
            taggers=taggers,
            second_reader=second_reader,
            progress=progress,
        )
    if as_json:
        # key_quality, per entity slice: kept, left out by the key-error bound, est. wrong keys,
        # ceiling (read at publish, flows/run_summary.py)
        print_json(summary)
    else:
        from kitab.app.summary import print_summary

        print_summary(summary, wall=time.monotonic() - started, command="kitab refresh")
    wanted = summary["authors"]
    if wanted["shortfall"]:
        warn(
            f"{wanted['released']} authors released of {wanted['requested']} requested: the candidates ran out "
            f"after {wanted['drawn']} drawn ({wanted['shortfall']} short)"
        )


def _direct(runner: str, task_runner: str, dask_address: str | None) -> bool:
    """Whether ``--runner`` asks for the pipeline without Prefect (kitab.app.runs' ``direct``)."""
    if runner not in ("prefect", "local"):
        raise typer.BadParameter("expected prefect or local", param_hint="--runner")
    if runner == "local" and (task_runner != "threads" or dask_address):
        raise typer.BadParameter("--runner local runs on this machine: no --task-runner dask", param_hint="--runner")
    return runner == "local"


@app.command()
def demo(
    warehouse: Path | None = WarehouseOpt,
    authors: int = typer.Option(DEFAULTS.authors, min=1, help="authors to sample from the bundled snapshot"),
    seed: int = typer.Option(42),
    replace: bool = typer.Option(
        False, "--replace", help="rebuild the demo release even if its parameters or tables change"
    ),
) -> None:
    """The whole refresh on the bundled snapshot, through the local mirror, then a summary
    (in this process, on the local runner: no Prefect server to start)."""
    from kitab.app.demo import run_demo
    from kitab.app.progress_display import showing_refresh
    from kitab.core.progress import Progress

    progress = Progress()
    with showing_refresh(progress, quiet=False):
        run_demo(warehouse_root(warehouse), authors=authors, seed=seed, replace=replace, progress=progress)


@app.command()
def serve(
    cron: str = typer.Option("0 3 * * 1", help="cron schedule (UTC)"),
    source: str = typer.Option(DEFAULTS.source, help="live | mirror | dump"),
    authors: int = typer.Option(DEFAULTS.authors, min=1),
    mirror_url: str | None = typer.Option(
        None,
        help="a running mirror (source mirror); must answer. Default: prefect.yaml's if it answers "
        "(compose), else a mirror of --snapshot that serve runs itself",
    ),
    snapshot: Path | None = typer.Option(
        None,
        help="snapshot folder (source dump; source mirror: what serve's own mirror serves, default the bundled one)",
    ),
    models: Path | None = typer.Option(
        None,
        "--models",
        help="a models file (docs/cycle.md): each run is a cycle (the release, then every model scored on it, "
        "the site, the export) instead of a refresh",
    ),
    site: Path | None = typer.Option(None, help="with --models: the site's folder (default <warehouse>/site)"),
    export: Path | None = typer.Option(None, "--export", help="with --models: export each release to DIR/<release>"),
    limit: int | None = typer.Option(None, min=1, help="with --models: N prompts per task and model (a trial)"),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Serve the scheduled refresh deployment (needs a Prefect server: PREFECT_API_URL); with
    --models, the scheduled cycle (docs/cycle.md). Everything is checked before anything is
    created: a refusal is one line and no folder."""
    from kitab.app.prefect_guard import check_prefect_server
    from kitab.app.serve_origin import check_serve, served_mirror_url
    from kitab.core.config import Settings
    from kitab.sources import source_kind

    cycle = _cycle_parameters(models, site, export, limit, warehouse)  # a bad models file: one line, nothing made
    kind = source_kind(source)
    root = warehouse_root(warehouse, create=False)
    check_serve(kind, cron=cron, snapshot=snapshot, mirror_url=mirror_url, settings=Settings(warehouse=root))
    # the mirror first: a --mirror-url that does not answer is one line, before the Prefect server is asked
    with served_mirror_url(
        kind.reads_mirror_url, mirror_url, _yaml_mirror_url(), snapshot or BUNDLED_SNAPSHOT
    ) as served_url:
        check_prefect_server(os.environ.get("PREFECT_API_URL", ""))  # a missing server is one line
        warehouse_root(root)  # all checked: now the warehouse (and Prefect's home in it) may exist
        from flows.deploy import CYCLE_DEPLOYMENT, refresh_deployment
        from kitab.app.scheduled import scheduled_cycle, scheduled_refresh
        from kitab.app.serve_runner import serve_until_stopped

        own = served_url is not None and served_url not in (mirror_url, _yaml_mirror_url())
        if own:
            console.print(
                f"the scheduled runs read this process's mirror of {snapshot or BUNDLED_SNAPSHOT}: {served_url}"
            )
        deployment = refresh_deployment(
            flow=scheduled_cycle if cycle else scheduled_refresh,
            name=CYCLE_DEPLOYMENT if cycle else None,
            cron=cron,
            **cycle,
            source=source,
            authors=authors,
            # "" drops prefect.yaml's compose URL for a source that reads no mirror
            mirror_url=served_url or "",
            # the snapshot this process's mirror serves: the runs' ledger rows name it
            snapshot=str(snapshot or BUNDLED_SNAPSHOT) if own else str(snapshot) if snapshot else None,
            warehouse=str(root),
        )
        console.print(
            f"serving {deployment.name} ({cron} UTC) on {os.environ['PREFECT_API_URL']}; Ctrl-C or SIGTERM stops it"
        )
        serve_until_stopped(deployment)  # a stop signal: the Runner stopped, then kitab's one line


def _cycle_parameters(
    models: Path | None, site: Path | None, export: Path | None, limit: int | None, warehouse: Path | None
) -> dict:
    """The cycle's deployment parameters (absolute paths: the runs start elsewhere), the models
    file read and checked now; {} without --models."""
    if models is None:
        if site or export or limit:
            raise typer.BadParameter("--site, --export and --limit go with --models", param_hint="--models")
        return {}
    from kitab.app.commands.common import user_errors
    from kitab.release.models_file import read_models

    with user_errors():
        read_models(models)
        if export is not None:
            from kitab.core.outputs import check_place

            check_place(export, "--export", [warehouse_root(warehouse, create=False)])
    return {
        "models": str(models.resolve()),
        "site": str(site.resolve()) if site else None,
        "export": str(export.resolve()) if export else None,
        "limit": limit,
    }


def _yaml_mirror_url() -> str | None:
    """prefect.yaml's mirror_url for the scheduled refresh (compose's mirror host); read here,
    not through flows.deploy, so that a refusal comes before Prefect's import."""
    import yaml

    from kitab.core.env import PROJECT_ROOT

    for spec in yaml.safe_load((PROJECT_ROOT / "prefect.yaml").read_text())["deployments"]:
        if spec["name"] == "scheduled-refresh":
            return spec.get("parameters", {}).get("mirror_url")
    return None
