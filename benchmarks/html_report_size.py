"""The HTML report at many models: scores ``--models`` synthetic answers files on a copy of a
release's warehouse and writes ``kitab report --html``, then prints the page's size and the
size of the files beside it.

Each model answers every query with its key, keeps a seeded share of the titles, adds an invented
title on another share, and writes a few paragraphs of reasoning first (answers of the size a
chat model gives: ~1.5 KB). One model's name holds a ``|`` and a right-to-left override, one of
its invented titles is 3,000 characters long.

    .venv/bin/python benchmarks/html_report_size.py --warehouse warehouse --release demo --models 20 \
        --out /tmp/kitab-report [--screenshot docs/img/report-20-models.png]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

import argparse  # noqa: E402
import ast  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

from kitab.core.warehouse import Warehouse  # noqa: E402
from kitab.release.evaluation.run import evaluate_release  # noqa: E402
from kitab.release.html_report import write_html_report  # noqa: E402

THINKING = (
    "Let me think step by step. The author wrote many books over a long career; I list the ones I "
    "remember and check each against the constraint before I write it down. "
) * 6
LONG_TITLE = "Aa" * 1500  # 3,000 characters, no space to break at
ODD_NAME = "model|with a pipe \u202eevil"


def answer(titles: list[str]) -> str:
    lines = "".join(f"{n}. Reason: It satisfies the criteria. Title: {t}\n" for n, t in enumerate(titles, 1))
    return f"{THINKING}\n\nOutput:\n{lines}"


def write_models(warehouse: Path, release: str, n: int, folder: Path, seed: int = 20) -> list[str]:
    with Warehouse(warehouse).connect(release=release) as con:
        mapped = {
            q: ast.literal_eval(m)
            for q, m in con.execute("SELECT query_id, mapped_books FROM kitab_book_constraints").fetchall()
        }
    names = []
    for i in range(n):
        rng = random.Random(seed + i)
        keep, invent = rng.uniform(0.5, 1.0), rng.uniform(0.0, 0.5)
        name = ODD_NAME if i == n - 1 else f"synthetic-{i:02d}-keep{keep:.2f}"
        lines = []
        for q, key in sorted(mapped.items()):
            titles = [t for t in key if rng.random() < keep]
            if rng.random() < invent:
                titles.append(LONG_TITLE if i == n - 1 else f"Zqxv Wjkp {rng.randrange(10**6)}")
            lines.append(json.dumps({"query_id": q, "response": answer(titles)}) + "\n")
        path = folder / f"model{i:02d}.jsonl"
        path.write_text("".join(lines))
        evaluate_release(warehouse, release, path, model=name)
        names.append(name)
    return names


def size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


SHOT = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="%s" style="width:%dpx;height:%dpx;border:0"></iframe>
<script>document.getElementById("f").onload = function () {
  var img = this.contentDocument.querySelector('img[alt^="Leaderboard overall"]');
  if (img) { img.scrollIntoView(); }
};</script></body></html>"""


def screenshot(page: Path, png: Path, width: int = 1400, height: int = 1900, scale: float = 0.7) -> None:
    """The leaderboard's overall plot and what follows, as Chromium draws the page (``scale``
    keeps the PNG small). Through an iframe: headless Chromium wrote a blank image for a page
    opened scrolled (a #hash, or with --virtual-time-budget)."""
    chromium = shutil.which("chromium")
    shot = page.parent / ".screenshot.html"
    shot.write_text(SHOT % (page.name, width, height))
    try:
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--allow-file-access-from-files", f"--window-size={width},{height}",
             f"--force-device-scale-factor={scale}", f"--screenshot={png.resolve()}", shot.as_uri()],
            check=True, capture_output=True, timeout=180,
        )  # fmt: skip
    finally:
        shot.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"))
    parser.add_argument("--release", default="demo")
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--screenshot", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kitab-html-size-") as tmp:
        warehouse = Path(tmp) / "warehouse"
        shutil.copytree(args.warehouse, warehouse)  # evaluations land in the copy only
        write_models(warehouse, args.release, args.models, Path(tmp))
        args.out.mkdir(parents=True, exist_ok=True)
        page = write_html_report(warehouse, args.release, args.out / "report.html")
    beside = [p for p in args.out.iterdir() if p != page]
    print(
        f"{args.models} evaluations: page {size(page) / 1e6:.2f} MB, files beside it {sum(map(size, beside)) / 1e6:.2f} MB"
    )
    if args.screenshot:
        screenshot(page, args.screenshot)
        print(f"screenshot {args.screenshot} ({size(args.screenshot) / 1e3:.0f} KB)")


if __name__ == "__main__":
    main()
