"""The one way kitab draws a PNG: matplotlib's Agg canvas on a bare ``Figure`` (no pyplot
state, no global backend switch), fixed margins, and no ``Software`` entry in the PNG
metadata, so the same data gives byte-identical files (the report's and the leaderboard's)."""

from __future__ import annotations

import io
from pathlib import Path

from kitab.core.files import write_bytes


def figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))  # fixed margins: constrained layout costs extra draws
    fig.subplots_adjust(left=0.07, right=0.985, bottom=0.15, top=0.82, wspace=0.22)
    FigureCanvasAgg(fig)
    return fig


def save_png(fig, path: Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    write_bytes(path, buf.getvalue())
