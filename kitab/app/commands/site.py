"""``kitab site build``: the static site over every committed release of a warehouse
(kitab/release/site/, docs/site.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from kitab.app.commands.common import WarehouseOpt, existing_warehouse, user_errors

app = typer.Typer()
site_app = typer.Typer(help="The static site: every release's leaderboards and each model across releases.")
app.add_typer(site_app, name="site")


@site_app.command("build")
def build(
    out: Path | None = typer.Option(
        None, help="the site's folder (default <warehouse>/site): new, empty, or an earlier site, replaced whole"
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Write the site (index.html, a page per release and per model) from every committed release;
    it opens from disk, no network."""
    from kitab.release.site import build_site
    from kitab.release.site.build import DEFAULT_NAME

    root = existing_warehouse(warehouse)
    with user_errors():
        summary = build_site(root, out if out is not None else root / DEFAULT_NAME)
    print(
        f"site: {summary['pages']} pages, {len(summary['releases'])} releases (latest {summary['latest']}), "
        f"{len(summary['models'])} models -> {summary['out']}/index.html"
    )
