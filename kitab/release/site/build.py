"""``kitab site build``: every page of the site (kitab/release/site/pages.py) over every
committed release of a warehouse, written into a temp folder beside ``out`` and swapped in whole
(kitab/core/files.py), with the output rule's manifest (kitab/core/outputs.py): a rebuild
replaces an earlier site, never a folder that is not one. ``<warehouse>/site`` (the cycle's
default) is the one folder inside a warehouse it may write."""

from __future__ import annotations

from pathlib import Path

from kitab.core.files import atomic_dir
from kitab.core.outputs import Folder, check_warehouse_folder, write_manifest
from kitab.release.site.data import read_site
from kitab.release.site.pages import index_page, model_page, release_page, slug

COMMAND = "kitab site build"
DEFAULT_NAME = "site"  # the default --out: <warehouse>/site


def check_out(warehouse: Path, out: Path) -> Folder:
    """The output rule for ``out`` (one ``kitab: error:`` line before anything is read or written)."""
    return check_warehouse_folder(out, "--out", COMMAND, warehouse, DEFAULT_NAME)


def render_site(site: dict) -> dict[str, str]:
    """Every page: ``{relative path: HTML}``."""
    pages = {"index.html": index_page(site)}
    for release in site["releases"]:
        pages[f"releases/{slug(release['release'])}.html"] = release_page(site, release)
    for model in site["models"]:
        pages[f"models/{slug(model)}.html"] = model_page(site, model)
    return pages


def build_site(warehouse: Path, out: Path) -> dict:
    """Build the site of ``warehouse`` into ``out``: ``{"out", "pages", "releases", "models",
    "latest"}`` (pages written; releases oldest first; models by name)."""
    warehouse = Path(warehouse).resolve()
    folder = check_out(warehouse, Path(out))
    site = read_site(warehouse)
    pages = render_site(site)
    with atomic_dir(folder.path) as tmp:
        for name, text in pages.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        write_manifest(tmp, COMMAND)
    releases = [r["release"] for r in site["releases"]]
    return {
        "out": str(folder.path),
        "pages": len(pages),
        "releases": releases,
        "models": site["models"],
        "latest": releases[-1] if releases else None,
    }
