"""The review loop: ``kitab review export`` (the unsure books and a sample of decided ones, as a
CSV to label) and ``kitab review import`` (the labels into the warehouse, read by every later
build). The logic is kitab/release/review.py."""

from __future__ import annotations

from pathlib import Path

import typer

from kitab.app.commands.common import WarehouseOpt, existing_warehouse, user_errors
from kitab.app.console import console

app = typer.Typer()
review_app = typer.Typer(help="Label the key's unsure books and a sample of its decided ones.", no_args_is_help=True)
app.add_typer(review_app, name="review")


@review_app.command("export")
def export(
    release: str = typer.Option(..., help="release id"),
    out: Path = typer.Option(..., help="the CSV to write (opens in a spreadsheet; fill the label column)"),
    sample: int = typer.Option(50, help="decided (book, kind) rows to sample beside every unsure one"),
    seed: int = typer.Option(0, help="the sample's seed (same seed and release: same file)"),
    budget: int | None = typer.Option(
        None,
        help="instead: the N (book, kind) rows whose labels most lower the estimated wrong-key share "
        "(the review queue), best first",
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Write the release's unsure (book, kind) rows and a seeded sample of decided ones, with an
    empty label column to fill with yes / no; with --budget N, the review queue's N rows."""
    from kitab.core.outputs import check_file
    from kitab.core.warehouse import Warehouse
    from kitab.release.review import export_queue, export_review, format_queue_summary

    root = existing_warehouse(warehouse, release)
    with user_errors():
        check_file(out, "--out", [root])  # the output-path rule (kitab/core/outputs.py)
    with user_errors(), Warehouse(root).connect(release=release) as con:
        if budget is not None:
            counts = export_queue(con, release, out, budget)
        else:
            counts = export_review(con, release, out, sample=sample, seed=seed)
    if budget is not None:
        console.print(format_queue_summary(counts, out))
    else:
        console.print(f"{counts['unsure']} unsure and {counts['decided']} decided rows -> {out}")


@review_app.command("import")
def import_(
    file: Path = typer.Argument(..., help="a CSV from `kitab review export` with its label column filled"),
    wait: float = typer.Option(60.0, min=0, help="seconds to wait for another import into the same warehouse"),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Store the file's labels (review_v1) in the warehouse; every later build reads them. A
    malformed file, a bad or contradictory row, a missing warehouse: refused, nothing stored."""
    from kitab.release.review import format_import_summary, import_review

    with user_errors():
        counts = import_review(existing_warehouse(warehouse), file, wait=wait)
    console.print(format_import_summary(counts), soft_wrap=True, markup=False, highlight=False)
