"""The leaderboard's plots (kitab/release/leaderboard.py builds the board they draw), legible
at 20 models: the figures keep a fixed width (1,400 px, the report page's column) and grow in
height with the models, one horizontal bar per model, named on the axis beside it, its value
written at its end and its 95% interval as an error bar. Text stays at 9-11 pt at any count.

- ``leaderboard.png``: a panel per metric (coverage, abstained, cut and KITAB's metrics);
- ``leaderboard_<dimension>.png``: all-correct, a panel per bin of the dimension (constraint
  type, constrainedness, author popularity). A bin with fewer than ``FEW_AUTHORS`` authors is
  drawn hollow and says so in its title: its interval, a bootstrap over authors, says little.
  Every metric per bin is in the report's tables.

Deterministic PNGs (kitab/release/figures.py)."""

from __future__ import annotations

import re
from pathlib import Path

from kitab.release.bins import FEW_AUTHORS
from kitab.release.figures import figure, save_png
from kitab.release.markup import neutral_bidi

WIDTH = 14.0  # inches at 100 dpi: the page's column, so 1 pt of text stays ~1.4 px on screen
BAR = 0.28  # inches per model in a panel
LABEL_CHARS = 32


def few_authors(scores: dict) -> bool:
    """True when a bin's scores rest on fewer than ``FEW_AUTHORS`` authors."""
    return scores.get("authors") is not None and scores["authors"] < FEW_AUTHORS


def plot_label(label: str, limit: int = LABEL_CHARS) -> str:
    """A model's name as the plots show it: bidi controls shown as ``[U+202E]`` (as on the page),
    other control characters dropped, cut to ``limit`` characters."""
    text = re.sub(r"[\x00-\x1f\x7f]", "", neutral_bidi(label))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _colors(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab20" if n > 10 else "tab10"]
    return [cmap(i % cmap.N) for i in range(n)]


def _panel(ax, names, values, intervals, colors, *, hollow=False, labels=True) -> None:
    """One horizontal bar per model, best first from the top, its value at its end."""
    y = list(range(len(names)))
    heights = [0.0 if v is None else v for v in values]
    if hollow:
        ax.barh(y, heights, height=0.72, color="none", edgecolor=colors, linewidth=1.3)
    else:
        ax.barh(y, heights, height=0.72, color=colors)
    for yi, v, ci in zip(y, values, intervals):
        if v is None:
            ax.text(0.01, yi, "no score", va="center", fontsize=8, color="grey")
            continue
        end = v
        if ci and ci[0] is not None:
            ax.errorbar([v], [yi], xerr=[[max(0.0, v - ci[0])], [max(0.0, ci[1] - v)]], fmt="none",
                        ecolor="black", elinewidth=0.9, capsize=2)  # fmt: skip
            end = max(v, ci[1])
        ax.text(end + 0.015, yi, f"{v:.2f}", va="center", fontsize=8)
    ax.set_yticks(y, names if labels else [""] * len(names), fontsize=9)
    ax.set_ylim(len(names) - 0.4, -0.6)
    ax.set_xlim(0, 1.22)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0", ".25", ".5", ".75", "1"])
    ax.tick_params(axis="x", labelsize=9)
    ax.grid(axis="x", alpha=0.3)


def _grid(n_panels: int, n_models: int, most_columns: int):
    rows = (n_panels + most_columns - 1) // most_columns
    columns = (n_panels + rows - 1) // rows  # 6 panels: 2 rows of 3, not 5 and 1
    panel_h = BAR * n_models + 0.9
    height = rows * panel_h + 0.9
    fig = figure(WIDTH, height)
    label_room = 0.09 * min(LABEL_CHARS, 22) + 0.3  # inches for the model names at 9 pt
    fig.subplots_adjust(left=label_room / WIDTH, right=0.99, bottom=0.35 / height, top=1 - 1.05 / height,
                        hspace=0.55 / panel_h * rows, wspace=0.08)  # fmt: skip
    return fig, fig.subplots(rows, columns, squeeze=False)


def write_leaderboard_plots(board: dict, plots_dir: Path, metrics, dimensions, names) -> list[Path]:
    """``names``: ``leaderboard.png`` and ``leaderboard_<dimension>.png`` for each of the
    leaderboard's ``dimensions`` with bins, panels for its ``metrics`` (see the module's
    docstring). Returns the files written."""
    import matplotlib.style

    evaluations = board["evaluations"]
    if not evaluations:
        return []
    plots_dir = Path(plots_dir)
    labels = [plot_label(e["label"]) for e in evaluations]
    colors = _colors(len(evaluations))
    written = []
    panels = [("coverage", "coverage ↑"), ("abstention_rate", "abstained ↓"), ("cut_rate", "cut ↓"), *metrics]
    with matplotlib.style.context("default"):
        fig, axes = _grid(len(panels), len(evaluations), 4)
        for j, (ax, (metric, label)) in enumerate(zip(axes.ravel(), panels)):
            o = [e["overall"] for e in evaluations]
            _panel(ax, labels, [x.get(metric) for x in o], [x.get(f"{metric}_ci") for x in o], colors,
                   labels=j % axes.shape[1] == 0)  # fmt: skip
            ax.set_title(label, fontsize=11)
        for ax in axes.ravel()[len(panels) :]:
            ax.set_visible(False)
        fig.suptitle(f"kitab release {board['release']}: leaderboard ({len(evaluations)} evaluations, best first; "
                     "95% intervals)", fontsize=12)  # fmt: skip
        save_png(fig, plots_dir / names[0])
        written.append(plots_dir / names[0])
        for (dimension, heading), name in zip(dimensions, names[1:]):
            bins = list(dict.fromkeys(b["bin"] for e in evaluations for b in e["by"][dimension]))
            if not bins:
                continue
            fig, axes = _grid(len(bins), len(evaluations), 5)
            for j, (ax, bin_) in enumerate(zip(axes.ravel(), bins)):
                found = [next((b for b in e["by"][dimension] if b["bin"] == bin_), {}) for e in evaluations]
                authors = max((f.get("authors") or 0 for f in found), default=0)
                hollow = any(few_authors(f) for f in found)
                _panel(ax, labels, [f.get("all_correct") for f in found], [f.get("all_correct_ci") for f in found],
                       colors, hollow=hollow, labels=j % axes.shape[1] == 0)  # fmt: skip
                queries = max((f.get("queries") or 0 for f in found), default=0)
                flag = f"\n{authors} authors (< {FEW_AUTHORS}): hollow" if hollow else f"\n{queries} queries"
                ax.set_title(f"{plot_label(bin_, 28)}{flag}", fontsize=10, color="#b42318" if hollow else "black")
            for ax in axes.ravel()[len(bins) :]:
                ax.set_visible(False)
            fig.suptitle(f"kitab release {board['release']}: all correct by {heading} (95% intervals; hollow: "
                         f"fewer than {FEW_AUTHORS} authors)", fontsize=12)  # fmt: skip
            save_png(fig, plots_dir / name)
            written.append(plots_dir / name)
    return written
