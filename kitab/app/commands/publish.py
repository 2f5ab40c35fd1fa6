"""A release for the Hub and for people: ``kitab export``, ``kitab report``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from kitab.app.commands.common import WarehouseOpt, check_report_output, existing_warehouse, user_errors
from kitab.app.console import console, print_rows
from kitab.core.errors import KitabError
from kitab.release.intervals import SEED, B

app = typer.Typer()


@app.command()
def export(
    release: str = typer.Option(..., help="release id to export"),
    out: Path = typer.Option(..., help="output folder (a Hugging Face dataset folder)"),
    push: str | None = typer.Option(
        None,
        "--push",
        help="Hub repo id, e.g. org/kitab; token from HF_TOKEN or the Hugging Face login, never from the command line",
    ),
    force: bool = typer.Option(
        False, "--overwrite", "--force", help="replace what --out holds (another export, or any other files)"
    ),
    private: bool = typer.Option(False, help="create the Hub repo private"),
    layout: str = typer.Option(
        "hf",
        help="hf (Parquet per config) | kitab (also KITAB's JSON-lines files "
        "data/KITAB-*.json, which the card's configs then name)",
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Write a release as a Hugging Face dataset folder (Parquet per config + card); optionally push and tag it."""
    from kitab.core.warehouse import Warehouse
    from kitab.release.export import LAYOUTS, ExportExists, export_release

    if layout not in LAYOUTS:
        raise typer.BadParameter(f"expected one of {', '.join(LAYOUTS)}", param_hint="--layout")
    root = existing_warehouse(warehouse, release)
    if push:  # what would refuse the push refuses it before the export is written
        from kitab.release.hub import check_token, valid_tag

        if not valid_tag(release):
            raise KitabError(f"release id {release!r} is not usable as a git tag; nothing exported")
        with user_errors():
            check_token()
    Warehouse(root).require_intact(release, nothing="nothing exported")  # damage is never exported, so never pushed
    try:
        summary = export_release(root, release, out, force=force, layout=layout)
    except ExportExists as exc:
        raise KitabError(str(exc)) from exc
    print_rows(["config", "rows"], list(summary["rows"].items()), title=f"release {release} -> {summary['out']}")
    if push:
        from kitab.release.hub import push_release

        with user_errors():
            pushed = push_release(Path(summary["out"]), push, release=release, private=private)
        how = "tagged the commit an earlier push left untagged" if pushed["finished_earlier_commit"] else "pushed"
        console.print(f"{how}: {pushed['repo_url']} at commit {pushed['commit']}, tag {pushed['tag']}")


@app.command()
def report(
    release: str = typer.Option(..., help="release id"),
    out: Path | None = typer.Option(None, help="also write report.md and plots/ here"),
    output: str = typer.Option(
        "markdown", help="markdown (the whole report) | json (the leaderboard of every model evaluated on the release)"
    ),
    snapshot: Path | None = typer.Option(
        None,
        help="also show this snapshot's provenance (input dump "
        "files, kept and skipped counts: kitab snapshot from-dumps)",
    ),
    html: Path | None = typer.Option(
        None,
        help="also write the whole report as an HTML page here (plots inline, no network; each model's rows in <stem>_files/ beside it)",
    ),
    compare: tuple[str, str] | None = typer.Option(
        None,
        "--compare",
        help="only compare two evaluations: A B (model names, or model@sha256-prefix): A − B per metric "
        "with its paired interval",
    ),
    seed: int = typer.Option(SEED, help="the seed of the intervals' bootstrap over authors"),
    resamples: int = typer.Option(B, min=100, help="the bootstrap's resamples"),
    include_stale: bool = typer.Option(
        False,
        "--include-stale",
        help="also show evaluations of an earlier version of the release (replaced since), marked stale",
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """The release's quality section (the same as the dataset card's), its refresh's stages and
    the leaderboard of the models evaluated on it (every score with its 95% interval), as
    markdown; or the leaderboard as JSON; or, with --compare, the paired difference of two."""
    from kitab.core.warehouse import Warehouse
    from kitab.release.report import render_report

    check_report_output(output)
    root = existing_warehouse(warehouse, release)
    Warehouse(root).require_release(release)
    Warehouse(root).ledger_row(release)  # a ledger row edited since its commit: one line, nothing written
    if compare:
        from kitab.release.leaderboard import comparison, format_comparison

        with user_errors(), Warehouse(root).connect(release=release) as con:
            result = comparison(con, release, compare[0], compare[1], b=resamples, seed=seed)
        print(json.dumps(result, indent=2) if output == "json" else format_comparison(result))
        return
    if html is not None:  # the output-path rule, before the report is rendered (--out's: in render_report)
        from kitab.release.html_report import check_page

        with user_errors():
            check_page(html, root, snapshot)
    text = render_report(root, release, out, snapshot, include_stale, seed=seed, resamples=resamples)
    if html is not None:
        from kitab.release.html_report import write_html_report

        with user_errors():
            write_html_report(root, release, html, snapshot=snapshot, seed=seed, resamples=resamples)
        print(f"HTML report -> {html}", file=sys.stderr)
    if output == "json":
        from kitab.release.model_costs import model_costs
        from kitab.release.task import report_json

        with Warehouse(root).connect(release=release) as con:
            board = report_json(con, release, b=resamples, seed=seed, include_stale=include_stale)
            board["model_runs"] = model_costs(con)  # per (model, task): requests, tokens, time; [] when no cycle ran
        print(json.dumps(board, ensure_ascii=False, indent=2, default=str))
    else:
        print(text)  # plain print: rich would eat [..] as markup
