"""``kitab cycle``: one cycle of the benchmark: a new release, every model of a models file
answered and scored on both tasks, the site rebuilt, the release exported (and pushed) when
asked (flows/cycle.py composes it; docs/cycle.md).

Exit codes: 0 every model scored; 3 the release is published and the site built, but some
model failed (its model_runs rows say why); 1 an error (nothing decided about the models)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import typer

from kitab.app.commands.common import WarehouseOpt, user_errors, warehouse_root
from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.params import DEFAULTS

app = typer.Typer()


@app.command()
def cycle(
    models: Path = typer.Option(
        ..., "--models", help="the models file (TOML: one model table per model, docs/cycle.md)"
    ),
    source: str = typer.Option(DEFAULTS.source, help="live | mirror | dump"),
    snapshot: Path = typer.Option(BUNDLED_SNAPSHOT, help="snapshot folder (mirror / dump)"),
    authors: int = typer.Option(DEFAULTS.authors, min=1, help="authors to sample"),
    seed: int | None = typer.Option(None, help="sampling seed (default: the UTC date, YYYYMMDD)"),
    release: str | None = typer.Option(None, help="release id (default YYYY.MM.DD-s<seed>, as kitab refresh)"),
    mirror_url: str | None = typer.Option(None, help="use a running mirror instead of starting one"),
    batch_size: int | None = typer.Option(
        DEFAULTS.batch_size, min=1, help="authors per batch (default: by the run's size, as refresh)"
    ),
    allow_fewer: bool = typer.Option(False, "--allow-fewer", help="publish fewer eligible authors than --authors"),
    max_failed_share: float = typer.Option(DEFAULTS.max_failed_share, min=0.0, max=1.0, help="as kitab refresh"),
    replace: bool = typer.Option(False, "--replace", help="rebuild a committed release even if it changes"),
    redraw_rejected: bool = typer.Option(False, "--redraw-rejected", help="as kitab refresh"),
    max_key_error: float = typer.Option(DEFAULTS.max_key_error, min=0.0, max=1.0, help="as kitab refresh"),
    taggers: str | None = typer.Option(None, help="as kitab refresh"),
    runner: str = typer.Option(
        "prefect", help="how the release is built: prefect (the refresh flow) | local (no Prefect, as kitab demo)"
    ),
    site: Path | None = typer.Option(None, help="the static site's folder (default: <warehouse>/site)"),
    export: Path | None = typer.Option(
        None, "--export", help="also export the release to DIR/<release> (a Hugging Face dataset folder)"
    ),
    push: str | None = typer.Option(
        None, "--push", help="also push the export to this Hub repo (ORG/NAME; needs --export; token from HF_TOKEN)"
    ),
    limit: int | None = typer.Option(
        None, min=1, help="only N prompts per task and model, a seeded sample across authors (a trial)"
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress while it runs"),
    as_json: bool = typer.Option(False, "--json", help="print the cycle's summary as JSON"),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """One cycle: a new release, then every model of --models answered and scored on both tasks
    (queries and claim pairs), the site rebuilt, the release exported when asked. A model that
    fails (down, refusing, over budget, no key) is recorded failed and the others go on; exit 3
    then (0: every model scored). A rerun the same day resumes: the release is not rebuilt and
    cached answers are not asked again."""
    from kitab.release.models_file import read_models

    with user_errors():
        specs = read_models(models)  # a bad file is one line, before anything starts
    if push and export is None:
        raise typer.BadParameter("--push uploads the export: give --export DIR too", param_hint="--push")
    if runner not in ("prefect", "local"):
        raise typer.BadParameter("expected prefect or local", param_hint="--runner")
    from kitab.core.locking import refuse_if_busy

    root = warehouse_root(warehouse, create=False)
    refuse_if_busy(root)
    from kitab.app.guard import check_free_space

    check_free_space(root)
    started = time.monotonic()
    with user_errors():
        summary = cycle_once(
            specs,
            dict(
                source=source,
                authors=authors,
                seed=seed,
                release=release,
                mirror_url=mirror_url,
                batch_size=batch_size,
                allow_fewer=allow_fewer,
                max_failed_share=max_failed_share,
                replace=replace,
                redraw_rejected=redraw_rejected,
                max_key_error=max_key_error,
                taggers=taggers,
            ),
            snapshot=snapshot,
            warehouse=root,
            direct=runner == "local",
            quiet=quiet,
            site_dir=site,
            export_dir=export,
            push=push,
            limit=limit,
        )
    if as_json:
        print(json.dumps(summary, default=str, indent=2))
    else:
        from flows.cycle import cycle_text

        print(cycle_text(summary) + f"\nwall time {time.monotonic() - started:.1f} s")
    raise typer.Exit(summary["exit_code"])


def check_publishing(root: Path, release: str, export: Path | None, push: str | None) -> None:
    """What would refuse the export or the push, refused before the cycle starts."""
    if export is not None:
        from kitab.core.outputs import check_place

        check_place(export, "--export", [root])
    if push:
        from kitab.core.errors import KitabError
        from kitab.release.hub import check_token, valid_tag

        if not valid_tag(release):
            raise KitabError(f"release id {release!r} is not usable as a git tag; nothing started")
        check_token()


def cycle_once(
    specs,
    inputs: dict,
    *,
    snapshot: Path | None,
    warehouse: Path,
    direct: bool,
    quiet: bool = True,
    **options,
) -> dict:
    """One cycle (flows/cycle.py) of the models ``specs`` (kitab.release.models_file) on the
    release ``inputs`` asks for (RefreshParams' fields, resolved as ``kitab refresh`` resolves
    them: the release id from the date by default), made as ``kitab refresh`` makes one
    (``direct``: on the local runner, else the refresh flow), its progress shown unless
    ``quiet``, one line per model and task on stderr. ``options``: run_cycle's (limit,
    site_dir, export_dir, push). Returns the cycle's summary."""
    from flows.cycle import run_cycle
    from kitab.app.progress_display import showing_refresh
    from kitab.app.runs import run_config, run_refresh
    from kitab.core.progress import Progress

    config = run_config(
        {**inputs, "snapshot": str(snapshot) if snapshot else None, "warehouse": str(warehouse)},
        direct=direct,
        task_runner=None,
        dask_address=None,
    )
    check_publishing(warehouse, config.params.release, options.get("export_dir"), options.get("push"))

    def make_release(config) -> dict:
        progress = Progress()
        with showing_refresh(progress, quiet):
            return run_refresh(
                **{**inputs, "seed": config.params.seed, "release": config.params.release},
                snapshot=snapshot,
                warehouse=warehouse,
                direct=direct,
                progress=progress,
            )

    def log(line: str) -> None:
        if not quiet:
            print(line, file=sys.stderr, flush=True)

    return run_cycle(config, specs, make_release=make_release, log=log, **options)
