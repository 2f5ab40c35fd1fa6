"""The leaderboard of a release: every evaluation (model, answers file) of it in one place,
overall and per constraint type, constrainedness bin and author-popularity bin (the paper's
Tables 6-7 and Figures 2-3), with coverage beside every score.

One builder (:func:`leaderboard`, from the ``evaluations`` table and the ``evaluation_summary``
view) feeds every view: the markdown of ``kitab evaluate`` and ``kitab report``
(:func:`format_leaderboard`), their ``--output json`` (the builder's dict as is) and the plots
(:func:`write_leaderboard_plots`). Scores count an unanswered query as wrong (docs/evaluate.md),
so a model cannot rise by answering less; coverage says how much it answered.

Plots draw grouped bars (one bar per evaluation in each bin, side by side): two models with the
same score stay visible, which lines drawn over each other did not.
"""

from __future__ import annotations

from pathlib import Path

METRICS = (
    ("all_correct", "all correct ↑"),
    ("completeness", "completeness ↑"),
    ("satisfied", "satisfied ↑"),
    ("unsatisfied", "unsatisfied ↓"),
    ("not_from_author", "not from author ↓"),
)
DIMENSIONS = (
    ("type", "constraint type"),
    ("kappa", "constrainedness κ"),
    ("popularity", "author popularity (WikiData sitelinks)"),
)
PLOTS = ("leaderboard.png", "leaderboard_type.png", "leaderboard_kappa.png", "leaderboard_popularity.png")
_SIZES = {None: "all", 1: "one", 2: "two"}


def _dicts(con, sql: str, params: list | None = None) -> list[dict]:
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def type_order(label: str) -> int:
    """Constraint types in the paper's Table 2 order (others after)."""
    from tasks.constraints.table2 import PAPER_TABLE2

    labels = list(PAPER_TABLE2)
    return labels.index(label) if label in labels else len(labels)


def _scores(row: dict) -> dict:
    return {
        "queries": row["queries"],
        "answered": row["answered"],
        "coverage": row["coverage"],
        **{m: row[m] for m, _ in METRICS},
    }


def leaderboard(con, release: str, *, model: str | None = None, answers_sha256: str | None = None) -> dict:
    """Every evaluation of ``release`` (or the one given), best first (all-correct, then
    completeness, then the model's name): ``{"release", "evaluations": [...]}``, each with its
    ``overall`` scores, ``by_size`` (one / two constraints) and ``by`` dimension, bins in order."""
    where, params = "", []
    if model is not None:
        where, params = "WHERE model = ? AND answers_sha256 = ?", [model, answers_sha256]
    heads = _dicts(
        con,
        "SELECT model, answers_sha256, any_value(answers_file) AS answers_file, "
        "max(evaluated_at) AS evaluated_at FROM evaluations " + where + " GROUP BY model, answers_sha256",
        params,
    )
    summary = _dicts(con, "SELECT * FROM evaluation_summary " + where, params)
    names = [h["model"] for h in heads]
    out = []
    for head in heads:
        key = (head["model"], head["answers_sha256"])
        mine = [r for r in summary if (r["model"], r["answers_sha256"]) == key]
        overall = next(r for r in mine if r["dimension"] == "all" and r["n_constraints"] is None)
        by_size = {
            _SIZES[r["n_constraints"]]: _scores(r)
            for r in sorted(
                (r for r in mine if r["dimension"] == "all" and r["n_constraints"] is not None),
                key=lambda r: r["n_constraints"],
            )
        }
        by = {}
        for dimension, _ in DIMENSIONS:
            bins = [r for r in mine if r["dimension"] == dimension and r["n_constraints"] is None]
            bins.sort(key=lambda r: (type_order(r["bin"]) if dimension == "type" else r["bin_order"], r["bin"]))
            by[dimension] = [{"bin": r["bin"], **_scores(r)} for r in bins]
        label = head["model"] if names.count(head["model"]) == 1 else f"{head['model']} ({head['answers_sha256'][:8]})"
        out.append(
            {
                "model": head["model"],
                "label": label,
                "answers_sha256": head["answers_sha256"],
                "answers_file": head["answers_file"],
                "evaluated_at": str(head["evaluated_at"]),
                "overall": _scores(overall),
                "by_size": by_size,
                "by": by,
            }
        )
    out.sort(key=lambda e: (-(e["overall"]["all_correct"] or 0.0), -(e["overall"]["completeness"] or 0.0), e["label"]))
    for rank, evaluation in enumerate(out, start=1):
        evaluation["rank"] = rank
    from kitab.release.key_quality import release_key_quality

    # issue 28: each entity type's key quality, beside its scores (an estimate: key_quality.NOTE)
    quality = release_key_quality(con) if out else {}
    for evaluation in out:
        for b in evaluation["by"]["type"]:
            if b["bin"] in quality:
                b["key_quality"] = quality[b["bin"]]
    return {"release": release, "evaluations": out, "key_quality": quality}


# -- markdown ----------------------------------------------------------------------------------------
def _cell(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def _table(header: list[str], rows: list[list[str]], align: str) -> str:
    rule = ["---:" if a == "r" else "---" for a in align]
    return "\n".join(
        [
            "| " + " | ".join(header) + " |",
            "| " + " | ".join(rule) + " |",
            *("| " + " | ".join(row) + " |" for row in rows),
        ]
    )


def format_leaderboard(board: dict) -> str:
    """The leaderboard as markdown: one table of every evaluation overall (with coverage and the
    one- and two-constraint all-correct), then all-correct per bin of each dimension, one row per
    evaluation and one column per bin (coverage in the bin's heading when it is not 1)."""
    evaluations = board["evaluations"]
    if not evaluations:
        return "No evaluation of this release yet (`kitab evaluate`, `kitab answer --evaluate`).\n"
    header = [
        "#",
        "model",
        "answered",
        "coverage",
        *(label for _, label in METRICS),
        "all correct (one)",
        "all correct (two)",
    ]
    rows = []
    for e in evaluations:
        o = e["overall"]
        rows.append(
            [
                str(e["rank"]),
                e["label"],
                f"{o['answered']} / {o['queries']}",
                _cell(o["coverage"]),
                *(_cell(o[m]) for m, _ in METRICS),
                _cell(e["by_size"].get("one", {}).get("all_correct")),
                _cell(e["by_size"].get("two", {}).get("all_correct")),
            ]
        )
    parts = [
        f"**Leaderboard, release `{board['release']}`** (an unanswered query is scored wrong on every "
        "metric; coverage = answered / queries)",
        "",
        _table(header, rows, "rl" + "r" * (len(header) - 2)),
    ]
    for dimension, heading in DIMENSIONS:
        bins = list(dict.fromkeys(b["bin"] for e in evaluations for b in e["by"][dimension]))
        if not bins:
            continue
        cells = []
        for e in evaluations:
            found = {b["bin"]: b for b in e["by"][dimension]}
            cells.append([e["label"], *(_cell(found[b]["all_correct"]) if b in found else "–" for b in bins)])
        queries = {
            b: next(x["queries"] for e in evaluations for x in e["by"][dimension] if x["bin"] == b) for b in bins
        }
        quality = board.get("key_quality", {}) if dimension == "type" else {}
        # an entity type's heading carries its key's estimated share of wrong keys (issue 28)
        titles = [
            f"{b} ({queries[b]}; key wrong ≈{100 * quality[b]['wrong_key']:.0f}%)"
            if quality.get(b, {}).get("wrong_key") is not None
            else f"{b} ({queries[b]})"
            for b in bins
        ]
        note = "; entity types: estimated share of keys with a wrong book, kitab report" if quality else ""
        parts += [
            "",
            f"**All correct by {heading}** (queries per bin in the heading{note})",
            "",
            _table(["model", *titles], cells, "l" + "r" * len(bins)),
        ]
    return "\n".join(parts) + "\n"


# -- plots -------------------------------------------------------------------------------------------
def write_leaderboard_plots(board: dict, plots_dir: Path) -> list[Path]:
    """``leaderboard.png`` (every evaluation's overall scores and coverage) and one figure per
    dimension (a panel per metric plus coverage, grouped bars per bin). Deterministic PNGs
    (kitab/release/figures.py). Returns the files written."""
    import matplotlib.style

    from kitab.release.figures import figure as _figure
    from kitab.release.figures import save_png as _save_png

    evaluations = board["evaluations"]
    if not evaluations:
        return []
    plots_dir = Path(plots_dir)
    written = []
    colors = [f"C{i % 10}" for i in range(len(evaluations))]
    panels = [("coverage", "coverage ↑"), *METRICS]
    with matplotlib.style.context("default"):
        # overall: one group per metric, one bar per evaluation
        fig = _figure(max(9.0, 1.6 * len(panels) + 0.35 * len(panels) * len(evaluations)), 4.2)
        fig.subplots_adjust(left=0.06, right=0.99, bottom=0.16, top=0.78)
        ax = fig.subplots(1, 1)
        _grouped_bars(
            ax,
            [label for _, label in panels],
            [[e["overall"][m] for m, _ in panels] for e in evaluations],
            evaluations,
            colors,
        )
        ax.set_ylabel("score", fontsize=10)
        _legend(fig, ax, evaluations)
        fig.suptitle(f"kitab release {board['release']}: leaderboard ({len(evaluations)} evaluations)", fontsize=12)
        _save_png(fig, plots_dir / "leaderboard.png")
        written.append(plots_dir / "leaderboard.png")
        for dimension, heading in DIMENSIONS:
            bins = list(dict.fromkeys(b["bin"] for e in evaluations for b in e["by"][dimension]))
            if not bins:
                continue
            columns = 3
            rows = (len(panels) + columns - 1) // columns
            width = max(12.0, columns * (0.9 + 0.18 * len(bins) * max(2, len(evaluations))))
            fig = _figure(width, 3.3 * rows + 1.0)
            fig.subplots_adjust(
                left=0.05, right=0.99, bottom=0.12, top=1 - 0.9 / (3.3 * rows + 1.0), hspace=0.75, wspace=0.15
            )
            axes = fig.subplots(rows, columns, squeeze=False).ravel()
            for ax, (metric, label) in zip(axes, panels):
                values = []
                for e in evaluations:
                    found = {b["bin"]: b for b in e["by"][dimension]}
                    values.append([found[b][metric] if b in found else None for b in bins])
                _grouped_bars(ax, bins, values, evaluations, colors, rotate=dimension != "popularity")
                ax.set_title(label, fontsize=11)
            for ax in axes[len(panels) :]:
                ax.set_visible(False)
            _legend(fig, axes[0], evaluations)
            fig.suptitle(f"kitab release {board['release']}: scores by {heading}", fontsize=12, y=0.995)
            path = plots_dir / f"leaderboard_{dimension}.png"
            _save_png(fig, path)
            written.append(path)
    return written


def _grouped_bars(
    ax,
    groups: list[str],
    values: list[list[float | None]],
    evaluations: list[dict],
    colors: list[str],
    rotate: bool = False,
) -> None:
    n = len(evaluations)
    width = 0.8 / n
    for i, (series, color) in enumerate(zip(values, colors)):
        x = [g - 0.4 + width * (i + 0.5) for g in range(len(groups))]
        heights = [0.0 if v is None else v for v in series]
        bars = ax.bar(x, heights, width=width * 0.92, color=color, label=evaluations[i]["label"])
        for bar, v in zip(bars, series):
            if v is None:  # no score in this bin: a hatched stub, not a zero that reads as a score
                bar.set_height(0.02)
                bar.set_hatch("//")
                bar.set_alpha(0.4)
    ax.set_xticks(
        range(len(groups)), groups, rotation=25 if rotate else 0, ha="right" if rotate else "center", fontsize=9
    )
    ax.tick_params(axis="y", labelsize=9)
    ax.set_ylim(0, 1.05)
    ax.grid(axis="y", alpha=0.3)


def _legend(fig, ax, evaluations: list[dict]) -> None:
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.955),
        ncol=min(len(evaluations), 5),
        fontsize=9,
        frameon=False,
    )
