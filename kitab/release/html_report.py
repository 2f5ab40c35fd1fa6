"""``kitab report --html FILE``: the whole report as one self-contained HTML page a person opens
(no network at view time: the CSS and the script inline, every plot a PNG data URI).

The page holds the release's quality section (the dataset card's), the leaderboard with its
95% intervals and plots (kitab/release/leaderboard.py), and a per-query view: each query, its
key (``mapped_books``) and each model's parsed titles marked matched / unsatisfying / not from
the author / raw (found only in raw_books, not scored), with the raw answer where the
evaluations table holds it. The rows come from ``per_query_scores``, the leaderboard's own
read. The view filters by model, constraint type and outcome in plain JavaScript; the filters
live in the URL's hash (``#model=...&type=...&outcome=...``), so a filtered view is a link.
"""

from __future__ import annotations

import ast
import base64
import html
import re
import tempfile
from importlib.resources import files
from pathlib import Path

from kitab.core.files import write_bytes

OUTCOMES = ("all-correct", "wrong", "abstained", "unanswered")
MARKS = {  # match kind -> (css class, what it means)
    "matched": ("t-ok", "a book of the key (satisfies the query)"),
    "unsatisfying": ("t-unsat", "a book of the author that fails the query"),
    "none": ("t-nfa", "not from the author"),
    "raw": ("t-raw", "found only in raw_books (not scored)"),
}


def outcome(row: dict) -> str:
    """One word for how a model did on a query: the per-query view's filter."""
    if not row["answered"]:
        return "unanswered"
    if row["abstained"]:
        return "abstained"
    return "all-correct" if row["all_correct"] else "wrong"


def title_marks(row: dict, key: set[str]) -> list[tuple[str, str]]:
    """(title, mark) per title the model listed: matched (a book of the key), unsatisfying (a
    book of the author outside the key), none (not from the author) or raw (not scored)."""
    marks = []
    kinds = row["match_kinds"] or []
    matched = row["matched_titles"] or []
    for i, title in enumerate(row["model_titles"] or []):
        kind = kinds[i] if i < len(kinds) else "none"
        if kind in ("exact", "subset", "fuzzy"):
            marks.append((title, "matched" if (matched[i] if i < len(matched) else None) in key else "unsatisfying"))
        else:
            marks.append((title, "raw" if kind == "raw" else "none"))
    return marks


def _inline_images(body: str, plots: Path) -> str:
    def data_uri(match: re.Match) -> str:
        path = plots / match.group(1)
        if not path.is_file():
            return match.group(0)
        return f'src="data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()}"'

    return re.sub(r'src="plots/([^"]+\.png)"', data_uri, body)


def _markdown_html(text: str) -> str:
    from markdown_it import MarkdownIt

    page = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    return re.sub(  # ids for the page's links: <h2>Model evaluations</h2> -> id="model-evaluations"
        r"<h2>([^<]+)</h2>",
        lambda m: f'<h2 id="{re.sub(r"[^a-z0-9]+", "-", m.group(1).lower()).strip("-")}">{m.group(1)}</h2>',
        page,
    )


def _query_rows(rows: list[dict], queries: dict[str, dict]) -> str:
    out = []
    for row in rows:
        q = queries.get(row["query_id"], {})
        key = q.get("mapped", [])
        titles = title_marks(row, set(key))
        listed = (
            "".join(f'<li class="{MARKS[m][0]}" title="{MARKS[m][1]}">{html.escape(t)}</li>' for t, m in titles)
            or "<li class='t-none'>(no title)</li>"
        )
        raw = ""
        for field, label in (("response", "raw answer"), ("reasoning", "reasoning")):
            if row.get(field):
                raw += f"<details><summary>{label}</summary><pre>{html.escape(row[field])}</pre></details>"
        if row.get("finish_reason"):
            raw += f"<div class='small'>finish_reason: {html.escape(str(row['finish_reason']))}</div>"
        scores = " · ".join(
            f"{name} {'–' if row[col] is None else f'{float(row[col]):.2f}'}"
            for name, col in (
                ("satisfied", "satisfied_rate"),
                ("unsatisfied", "unsatisfied_rate"),
                ("not from author", "not_from_author_rate"),
                ("completeness", "completeness"),
            )
        )
        kind = outcome(row)
        out.append(
            f'<tr class="q" data-query="{html.escape(row["query_id"])}" data-model="{html.escape(row["model"])}" '
            f'data-types="{html.escape(" ".join(row["type_labels"]))}" data-outcome="{kind}">'
            f"<td><code>{html.escape(row['query_id'])}</code><div>{html.escape(q.get('author', ''))}</div>"
            f"<div class='small'>{html.escape(', '.join(row['type_labels']))} · κ {row['constrainedness']:.2f}</div>"
            f"</td><td>{html.escape(q.get('constraints', ''))}</td>"
            f"<td><ul class='key'>{''.join(f'<li>{html.escape(t)}</li>' for t in key) or '<li>(empty: unsatisfiable)</li>'}"
            f"</ul></td><td>{html.escape(row['model'])}</td>"
            f"<td><span class='o o-{kind}'>{kind}</span>{' <span class=o>cut</span>' if row['cut'] else ''}"
            f"<div class='small'>{scores}</div></td><td><ul class='titles'>{listed}</ul>{raw}</td></tr>"
        )
    return "\n".join(out)


def _options(values: list[str]) -> str:
    return "".join(f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in values)


def render_html(warehouse: Path, release: str, *, snapshot: Path | None = None, seed=None, resamples=None) -> str:
    """The page as a string (see the module's docstring)."""
    from kitab.core.warehouse import Warehouse
    from kitab.release.leaderboard import per_query_scores, type_order
    from kitab.release.report import render_report

    with tempfile.TemporaryDirectory(prefix="kitab-html-") as tmp:
        text = render_report(warehouse, release, Path(tmp), snapshot, seed=seed, resamples=resamples)
        body = _inline_images(_markdown_html(text), Path(tmp) / "plots")
    with Warehouse(Path(warehouse)).connect(release=release) as con:
        rows = [r for r in per_query_scores(con) if not r["stale"]]  # scores of a replaced version: not this one's
        queries = {
            query_id: {"author": author, "constraints": constraints, "mapped": ast.literal_eval(mapped)}
            for query_id, author, constraints, mapped in con.execute(
                'SELECT query_id, "Author", constraints, mapped_books FROM kitab_book_constraints'
            ).fetchall()
        }
    models = sorted({r["model"] for r in rows})
    types = sorted({t for r in rows for t in r["type_labels"]}, key=lambda t: (type_order(t), t))
    template = files("kitab.release").joinpath("templates/report.html").read_text(encoding="utf-8")
    legend = "".join(f'<span class="{c}">{html.escape(m)}: {html.escape(d)}</span> ' for m, (c, d) in MARKS.items())
    values = {
        "release": html.escape(release),
        "body": body,
        "models": _options(models),
        "types": _options(types),
        "outcomes": _options(list(OUTCOMES)),
        "legend": legend,
        "rows": _query_rows(rows, queries),
        "n_rows": str(len(rows)),
    }
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], template)


def write_html_report(
    warehouse: Path, release: str, path: Path, *, snapshot: Path | None = None, seed=None, resamples=None
) -> Path:
    """Write :func:`render_html` to ``path`` (temp file, then rename)."""
    page = render_html(warehouse, release, snapshot=snapshot, seed=seed, resamples=resamples)
    write_bytes(Path(path), page.encode("utf-8"))
    return Path(path)
