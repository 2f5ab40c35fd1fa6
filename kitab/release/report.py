"""A release's quality section: headline rates, the paper's Table 2, constrainedness and
author-popularity histograms (PNG), rejects by reason.

``quality_section`` is the one renderer: the dataset card of ``kitab export`` embeds its text
and ``kitab report`` prints it, so the two never disagree. Images are linked as
``plots/<name>.png``, relative to the markdown, and written to ``plots_dir`` when given.

Plots are deterministic: matplotlib's Agg canvas on a bare ``Figure`` (no pyplot state, no
global backend switch), matplotlib's default style whatever the user's matplotlibrc says, and
no ``Software`` entry in the PNG metadata, so the same release gives byte-identical PNGs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from statistics import median

import duckdb

from kitab.core.files import atomic_dir, write_bytes
from kitab.core.outputs import check_folder, write_manifest
from kitab.release.bins import KAPPA_BINS, bin_index, kappa_labels, sitelink_bucket, sitelink_labels
from kitab.release.figures import figure, save_png
from kitab.release.key_quality import format_key_quality, release_key_quality
from kitab.release.markup import markdown_cell
from kitab.release.validity.floor import format_validity, release_validity
from tasks.constraints.table2 import format_table2, table2
from tasks.entities.registry import entity_phrase, release_kinds

PLOTS = ("kappa.png", "popularity.png")
# Reference rates from the paper (kitab-original.md §2.4): unsatisfiable one-constraint
# queries, jointly unsatisfiable two-constraint queries.
PAPER_ONE_UNSATISFIABLE = 0.0799
PAPER_TWO_UNSATISFIABLE = 0.0076
HIST_BINS = 20


@dataclass(frozen=True)
class _Stats:
    release: str
    n_authors: int
    n_books: int
    n_constraints: int
    one_sn: list[tuple[int, int]]  # (S, N) per one-constraint query
    two_sn: list[tuple[int, int]]

    @property
    def one_kappas(self) -> list[float]:
        return [(n - s) / n for s, n in self.one_sn]

    @property
    def two_kappas(self) -> list[float]:
        return [(n - s) / n for s, n in self.two_sn]

    books_per_author: list[int]
    books_with_name: dict[str, int]  # entity kind -> books with a decided name of it in a title
    author_sitelinks: list[int]
    query_sitelinks: list[tuple[int, int]]  # (sitelinks, n_constraints) per query
    rejects: list[tuple[str, str, str, int]]
    table2_text: str
    key_quality_text: str = ""
    validity_text: str = ""


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()  # fetch everything: DuckDB 2 refuses new work on a half-read result


def _dicts(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    return con.sql(sql).to_arrow_table().to_pylist()


def _collect(con: duckdb.DuckDBPyConnection, release: str) -> _Stats:
    sn = _rows(con, "SELECT n_constraints, n_mapped, n_books FROM queries ORDER BY query_id")
    named = dict(_rows(con, "SELECT kind, count(*) FILTER (WHERE has_name) FROM book_entity_flags GROUP BY kind"))
    t2 = table2(
        _dicts(con, "SELECT constraint_id, spec FROM constraints ORDER BY constraint_id"),
        _dicts(con, "SELECT n_constraints, constraint_ids, constrainedness FROM queries ORDER BY query_id"),
    )
    return _Stats(
        release=release,
        n_authors=_rows(con, "SELECT count(*) FROM kitab_author_metadata")[0][0],
        n_books=_rows(con, "SELECT count(*) FROM books")[0][0],
        n_constraints=_rows(con, "SELECT count(*) FROM constraints")[0][0],
        one_sn=[(s, n) for c, s, n in sn if c == 1],
        two_sn=[(s, n) for c, s, n in sn if c == 2],
        books_per_author=[r[0] for r in _rows(con, "SELECT books FROM books_per_author ORDER BY qid")],
        books_with_name={kind: named.get(kind, 0) for kind in release_kinds(named)},
        author_sitelinks=[
            r[0] for r in _rows(con, 'SELECT "# of sitelinks" FROM kitab_author_metadata ORDER BY "WikiData ID"')
        ],
        query_sitelinks=[
            (r[0], r[1])
            for r in _rows(
                con,
                "SELECT a.sitelinks, q.n_constraints FROM queries q JOIN authors a ON a.qid = q.author_qid "
                "ORDER BY q.query_id",
            )
        ],
        rejects=[
            tuple(r)
            for r in _rows(
                con,
                "SELECT stage, reason, record_kind, sum(n) AS n FROM rejects_by_reason GROUP BY ALL "
                "ORDER BY stage, n DESC, reason, record_kind",
            )
        ],
        table2_text=format_table2(t2),
        key_quality_text=format_key_quality(release_key_quality(con)),
        validity_text=format_validity(release_validity(con)),
    )


# -- numbers ---------------------------------------------------------------------------
def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "–"


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "–"


def _kappa_bin_counts(sn: list[tuple[int, int]]) -> list[int]:
    counts = [0] * (len(KAPPA_BINS) + 1)
    for s, n in sn:
        counts[-1 if s == 0 else bin_index(s, n, len(KAPPA_BINS))] += 1  # S = 0: unsatisfiable
    return counts


def _popularity(stats: _Stats) -> list[tuple[str, int, int, int]]:
    """(bucket label, authors, one-constraint queries, two-constraint queries) per bucket."""
    labels = sitelink_labels()
    authors, one, two = [0] * len(labels), [0] * len(labels), [0] * len(labels)
    for s in stats.author_sitelinks:
        authors[sitelink_bucket(s)] += 1
    for s, n in stats.query_sitelinks:
        (one if n == 1 else two)[sitelink_bucket(s)] += 1
    return list(zip(labels, authors, one, two))


# -- plots -----------------------------------------------------------------------------
UNSATISFIABLE_BAR = "κ = 1 (unsatisfiable)"


def kappa_histogram(sn: list[tuple[int, int]], bins: int = HIST_BINS) -> list[tuple[str, int]]:
    """The κ plot's bars: ``bins`` equal bins of satisfiable queries on [0, 1) (κ < 1 whenever
    S > 0), then unsatisfiable queries (S = 0, κ = 1) as a bar of their own, so they are never
    counted with the most constrained satisfiable ones. (label, queries) per bar."""
    counts = [0] * (bins + 1)
    for s, n in sn:  # binned in integers, see bin_index
        counts[-1 if s == 0 else bin_index(s, n, bins)] += 1
    labels = [f"{i / bins:.2f}–{(i + 1) / bins:.2f}" for i in range(bins)] + [UNSATISFIABLE_BAR]
    return list(zip(labels, counts))


def _write_plots(stats: _Stats, plots_dir: Path) -> None:
    import matplotlib.style

    with matplotlib.style.context("default"):
        fig = figure(9.0, 3.4)
        axes = fig.subplots(1, 2, sharey=False)
        width = 1 / HIST_BINS
        gap_at = 1 + width  # the unsatisfiable bar stands apart, right of κ = 1
        for ax, sn, kappas, label, color in (
            (axes[0], stats.one_sn, stats.one_kappas, "one-constraint", "tab:blue"),
            (axes[1], stats.two_sn, stats.two_kappas, "two-constraint", "tab:orange"),
        ):
            bars = kappa_histogram(sn)
            ax.bar(
                [i * width for i in range(HIST_BINS)],
                [n for _, n in bars[:-1]],
                width=width,
                align="edge",
                color=color,
                edgecolor="white",
                label="satisfiable (κ < 1)",
            )
            ax.bar(
                [gap_at],
                [bars[-1][1]],
                width=width,
                align="edge",
                color="tab:red",
                edgecolor="white",
                label=f"unsatisfiable (κ = 1): {bars[-1][1]}",
            )
            ax.axvline(1.0, color="grey", linewidth=0.8, linestyle=":")
            ax.set_title(f"{label} queries (n={len(sn)}, mean κ {_mean(kappas)})", fontsize=10)
            ax.set_xlabel("constrainedness κ = 1 − S/N")
            ax.set_ylabel("queries")
            ax.set_xlim(0, gap_at + 1.5 * width)
            ax.set_xticks(
                [0, 0.2, 0.4, 0.6, 0.8, 1.0, gap_at + width / 2], ["0", "0.2", "0.4", "0.6", "0.8", "1", "κ=1"]
            )
            ax.legend(fontsize=8, loc="upper left")
        fig.suptitle(f"kitab release {stats.release}: constrainedness", fontsize=11)
        save_png(fig, plots_dir / "kappa.png")

        rows = _popularity(stats)
        labels = [r[0] for r in rows]
        x = list(range(len(rows)))
        fig = figure(9.0, 3.4)
        left, right = fig.subplots(1, 2)
        left.bar(x, [r[1] for r in rows], color="tab:green")
        left.set_title(f"authors with queries (n={len(stats.author_sitelinks)})", fontsize=10)
        left.set_ylabel("authors")
        one, two = [r[2] for r in rows], [r[3] for r in rows]
        right.bar(x, one, color="tab:blue", label="one-constraint")
        right.bar(x, two, bottom=one, color="tab:orange", label="two-constraint")
        right.set_title("queries by author popularity", fontsize=10)
        right.set_ylabel("queries")
        right.legend(fontsize=8)
        for ax in (left, right):
            ax.set_xticks(x, labels)
            ax.set_xlabel("WikiData sitelinks of the author")
        fig.suptitle(f"kitab release {stats.release}: author popularity", fontsize=11)
        save_png(fig, plots_dir / "popularity.png")


# -- markdown --------------------------------------------------------------------------
def _table(header: tuple[str, ...], rows: list[tuple], align: str | None = None) -> str:
    align = align or "l" + "r" * (len(header) - 1)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(map(markdown_cell, header)) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(map(markdown_cell, row)) + " |" for row in rows]
    return "\n".join(lines)


def _markdown(stats: _Stats) -> str:
    n_one, n_two = len(stats.one_sn), len(stats.two_sn)
    one_unsat = sum(1 for s, _ in stats.one_sn if s == 0)
    two_unsat = sum(1 for s, _ in stats.two_sn if s == 0)
    bpa = sorted(stats.books_per_author)
    bpa_text = f"{bpa[0]} / {median(bpa):g} / {bpa[-1]}" if bpa else "–"
    headline = _table(
        ("measure", "this release", "KITAB (paper)"),
        [
            (
                "one-constraint queries that are unsatisfiable (S = 0)",
                f"{_pct(one_unsat, n_one)} ({one_unsat} of {n_one})",
                f"{100 * PAPER_ONE_UNSATISFIABLE:.2f}%",
            ),
            (
                "two-constraint queries that are jointly unsatisfiable",
                f"{_pct(two_unsat, n_two)} ({two_unsat} of {n_two})",
                f"{100 * PAPER_TWO_UNSATISFIABLE:.2f}%",
            ),
            ("books per author (min / median / max)", bpa_text, "≥ 5"),
            *(
                (f"books with a {entity_phrase(kind)} in a title", f"{_pct(n, stats.n_books)}", "–")
                for kind, n in stats.books_with_name.items()
            ),
        ],
        align="lrr",
    )
    kappa_table = _table(
        ("constrainedness", "one-constraint", "two-constraint"),
        list(zip(kappa_labels(), _kappa_bin_counts(stats.one_sn), _kappa_bin_counts(stats.two_sn))),
    )
    popularity_table = _table(
        ("author sitelinks", "authors", "one-constraint queries", "two-constraint queries"), _popularity(stats)
    )
    rejects_table = (
        _table(("stage", "reason", "record kind", "rows"), stats.rejects, align="lllr")
        if stats.rejects
        else "No record was rejected."
    )
    n_rejects = sum(r[3] for r in stats.rejects)
    return f"""## Quality

Release `{stats.release}`: {stats.n_authors} authors with queries, {stats.n_books} books,
{stats.n_constraints} candidate constraints, {n_one} one-constraint and {n_two} two-constraint queries.
Every release passed kitab's data tests (`sql/tests/`) before it was committed.

{headline}

### Queries and constrainedness per constraint type (the paper's Table 2)

Each cell is `queries / mean κ`; a two-constraint query counts under each of its types, the
Summary row counts it once. The paper's columns are KITAB's full release (611 authors).

```text
{stats.table2_text}
```

{stats.key_quality_text}
{stats.validity_text}
### Constrainedness

κ = 1 − S/N, where S is the number of the author's books that satisfy the query and N the
number of the author's books.

![Histograms of the constrainedness of one- and two-constraint queries; unsatisfiable queries (κ = 1) are the separate red bar](plots/kappa.png)

{kappa_table}

### Author popularity

Popularity is the author's number of WikiData sitelinks (KITAB's `# of sitelinks`).

![Authors and queries per bucket of WikiData sitelinks](plots/popularity.png)

{popularity_table}

### Rejects by reason

Every record a stage dropped is kept in the `rejects` config with its evidence
({n_rejects} rows in this release).

{rejects_table}
"""


def quality_section(con: duckdb.DuckDBPyConnection, release: str, plots_dir: Path | None = None) -> str:
    """The quality section (markdown) of ``release``; ``con`` is a connection scoped to it
    (``Warehouse.connect(release=...)``). Writes ``kappa.png`` and ``popularity.png`` into
    ``plots_dir`` when given. The text does not depend on ``plots_dir``."""
    stats = _collect(con, release)
    if plots_dir is not None:
        _write_plots(stats, Path(plots_dir))
    return _markdown(stats)


def stages_section(release: str, ledger_row: dict) -> str:
    """How long each stage of the refresh that made ``release`` took, with its rows: from the
    ledger's ``stages`` column (a release from before it was recorded says so)."""
    from kitab.core.progress import format_seconds, parse_stages, stage_rows

    stages = parse_stages(ledger_row.get("stages"))
    if not stages:
        body = f"Not recorded: release `{release}` was made before kitab recorded stage timings."
    else:
        total = sum(r["seconds"] for r in stages)
        requests = sum(r.get("requests", 0) for r in stages)
        slowest = max(stages, key=lambda r: r["seconds"])
        rows = [(f"**{r[0]}**" if r[0] == slowest["stage"] else r[0], *r[1:]) for r in stage_rows(stages)]
        rows.append(("total", format_seconds(total), "100%", "", "", f"{requests:,}" if requests else ""))
        body = (
            f"Wall time of each stage and its output rows, recorded in the ledger when the release was "
            f"published (publish: up to the commit). The slowest stage, in bold, is `{slowest['stage']}`.\n\n"
            + _table(("stage", "time", "share", "rows", "tasks", "requests"), rows, align="lrrrrr")
        )
    return f"## Refresh stages\n\n{body}\n"


def provenance_section(manifest: dict) -> str:
    """Where a snapshot built by ``kitab snapshot from-dumps`` came from: each input file (name,
    size, dump date, fingerprint) and the records kept and skipped, by reason (its manifest)."""
    lines = [f"## Snapshot provenance\n\nSnapshot `{manifest.get('snapshot_id')}`, as of {manifest.get('created_at')}."]
    inputs = manifest.get("inputs")
    if not inputs:
        lines.append("\nNo input files recorded (a generated snapshot, or one assembled by hand).")
        return "\n".join(lines) + "\n"
    rows = [
        (i["name"], i["kind"], f"{i['size']:,}", f"{i['dump_date']} ({i['dump_date_from']})", i["fingerprint"][-16:])
        for i in inputs
    ]
    lines += ["", _table(("file", "kind", "bytes", "dump date (from)", "fingerprint (end)"), rows, align="llrll")]
    kept = manifest.get("kept", {})
    rows = [(f"{source} {what}", f"{count:,}") for source, counts in kept.items() for what, count in counts.items()]
    lines += ["", "Kept:", "", _table(("what", "count"), rows, align="lr")]
    skipped = manifest.get("skipped") or {}
    rows = [(reason, f"{count:,}") for reason, count in skipped.items()]
    lines += ["", "Skipped, by reason:", "", _table(("reason", "count"), rows, align="lr") if rows else "none"]
    return "\n".join(lines) + "\n"


REPORT = "kitab report"


def _old_report(folder: Path) -> str | None:
    """A report folder written before reports listed their files."""
    if (folder / "report.md").is_file():
        return "holds an earlier `kitab report` written before kitab listed its output's files"
    return None


def render_report(
    warehouse: Path,
    release: str,
    out_dir: Path | None = None,
    snapshot: Path | None = None,
    include_stale: bool = False,
    *,
    seed: int | None = None,
    resamples: int | None = None,
) -> str:
    """``kitab report --release R``: the quality section of ``release``, exactly as in its
    dataset card, then how long each stage of its refresh took (:func:`stages_section`), then
    the release's model evaluations when there are any (``kitab evaluate``), then what each
    model's run cost (table model_runs, kitab/release/model_costs.py; or that no cycle ran).
    None of the last three is part of the card. With ``out_dir``, also writes ``out_dir/report.md`` and the
    plots under ``out_dir/plots/`` (the markdown's image links are relative to ``report.md``)."""
    import contextlib

    from kitab.core.warehouse import Warehouse
    from kitab.release.model_costs import costs_section
    from kitab.release.review import review_section
    from kitab.release.task import report_sections

    wh = Warehouse(Path(warehouse))
    wh.require_release(release)
    ledger = wh.ledger_row(release)  # checked against its digests before anything is written
    inputs = [wh.root] if snapshot is None else [wh.root, snapshot]
    # the output-path rule (kitab/core/outputs.py), before anything is read or written
    folder = None if out_dir is None else check_folder(out_dir, "--out", REPORT, inputs, legacy=_old_report).path
    with contextlib.ExitStack() as stack:
        tmp = None if folder is None else stack.enter_context(atomic_dir(folder))  # swapped in whole at the end
        plots = None if tmp is None else tmp / "plots"
        with wh.connect(release=release) as con:
            text = quality_section(con, release, plots)
            evaluations = report_sections(con, release, plots, include_stale, seed=seed, resamples=resamples)
            costs = costs_section(con)  # per model: requests, tokens, time (table model_runs), or "no cycle ran"
            reviewed = review_section(con, release, wh.root)
        if reviewed:
            text += "\n" + reviewed
        text += "\n" + stages_section(release, ledger)
        if snapshot is not None:
            from kitab.core.errors import BadValue
            from kitab.sources.snapshot.format import read_manifest

            manifest = read_manifest(snapshot)
            if manifest.get("snapshot_id") != ledger.get("snapshot_id"):
                built = (
                    f"snapshot {ledger['snapshot_id']}" if ledger.get("snapshot_id") else f"source {ledger['source']}"
                )
                raise BadValue(
                    f"--snapshot {snapshot} is snapshot {manifest.get('snapshot_id')}, "
                    f"but release {release} was built from {built}"
                )
            text += "\n" + provenance_section(manifest)
        for section in evaluations:  # every evaluation task's (kitab/release/task.py)
            text = f"{text}\n{section}"
        text = f"{text}\n{costs}"
        if tmp is not None:
            write_bytes(tmp / "report.md", f"# kitab release {release}: quality report\n\n{text}".encode())
            write_manifest(tmp, REPORT)
    return text
