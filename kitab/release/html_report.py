"""``kitab report --html FILE``: the whole report as an HTML page a person opens from disk (no
network at view time: the CSS and the script inline, every plot a PNG data URI), with each
model's per-query rows in a script file beside it (``<stem>_files/model-NN.js``), loaded only
when the view shows that model: the page stays small at many models (≤ 5 MB at 20, where one
file with every row was 42 MB; docs/evaluate.md).

The page holds the release's quality section (the dataset card's), the leaderboard with its
95% intervals and plots (kitab/release/leaderboard.py), and a per-query view: each query, its
key (``mapped_books``) and each model's parsed titles marked matched / unsatisfying / not from
the author / raw (found only in raw_books, not scored), with the raw answer where the
evaluations table holds it. The rows come from ``per_query_scores``, the leaderboard's own
read. The view filters by model, constraint type and outcome in plain JavaScript; the filters
live in the URL's hash (``#model=...&type=...&outcome=...``), so a filtered view is a link.

Every text from the data (titles, answers, model names) reaches the page as text, never markup:
escaped in the report's HTML, JSON the script puts in place with ``textContent``; bidirectional
controls are shown as ``[U+202E]`` (kitab/release/markup.py) and each title is isolated
(``dir="auto"``), so a title cannot reorder what stands around it. Long titles wrap.
"""

from __future__ import annotations

import ast
import base64
import html
import json
import re
import tempfile
from importlib.resources import files
from pathlib import Path

from kitab.core.files import write_bytes
from kitab.release.markup import neutral_bidi

OUTCOMES = ("all-correct", "wrong", "abstained", "unanswered")
MARKS = {  # match kind -> (css class, what it means)
    "matched": ("t-ok", "a book of the key (satisfies the query)"),
    "unsatisfying": ("t-unsat", "a book of the author that fails the query"),
    "none": ("t-nfa", "not from the author"),
    "raw": ("t-raw", "found only in raw_books (not scored)"),
}

MARK_CODES = tuple(MARKS)  # the per-query data names a mark by its index here
SCORE_NAMES = (
    ("satisfied", "satisfied_rate"),
    ("unsatisfied", "unsatisfied_rate"),
    ("not from author", "not_from_author_rate"),
    ("completeness", "completeness"),
)
SCORES = tuple(col for _, col in SCORE_NAMES)


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
    # a wide table scrolls in its own box, never the page
    page = page.replace("<table>", '<div class="wide"><table>').replace("</table>", "</table></div>")
    return re.sub(  # ids for the page's links: <h2>Model evaluations</h2> -> id="model-evaluations"
        r"<h2>([^<]+)</h2>",
        lambda m: f'<h2 id="{re.sub(r"[^a-z0-9]+", "-", m.group(1).lower()).strip("-")}">{m.group(1)}</h2>',
        page,
    )


def _query_data(rows: list[dict], queries: dict[str, dict]) -> tuple[dict, dict[str, list]]:
    """What the per-query view shows, as plain data the page's script renders (text only, never
    markup): each query once (author, constraints, key, types, κ) and each model's rows."""
    info: dict[str, list] = {}
    by_model: dict[str, list] = {}
    for row in rows:
        q = queries.get(row["query_id"], {})
        key = q.get("mapped", [])
        info.setdefault(
            row["query_id"],
            [q.get("author", ""), q.get("constraints", ""), key, row["type_labels"], round(row["constrainedness"], 2)],
        )
        scores = [None if row[c] is None else round(float(row[c]), 2) for c in SCORES]
        by_model.setdefault(row["model"], []).append(
            [
                row["query_id"],
                outcome(row),
                bool(row["cut"]),
                scores,
                [[t, MARK_CODES.index(m)] for t, m in title_marks(row, set(key))],
                row.get("response"),
                row.get("reasoning"),
                row.get("finish_reason"),
            ]
        )
    return info, by_model


def _json(value) -> str:
    """JSON safe inside a <script> element (no ``</script>``, no ``<!--``) with bidi controls shown."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return neutral_bidi(text).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _options(values: list[str]) -> str:
    # the value as the rows' data holds it (bidi controls shown), so a filter matches its rows
    return "".join(
        f'<option value="{html.escape(neutral_bidi(v))}">{html.escape(neutral_bidi(v))}</option>' for v in values
    )


def render_html(
    warehouse: Path, release: str, *, snapshot: Path | None = None, seed=None, resamples=None, files_dir: str = "files"
) -> tuple[str, dict[str, str]]:
    """The page and the files beside it (``files_dir/model-NN.js``: one model's per-query rows,
    loaded when the view shows that model), as ``(page, {relative path: text})``."""
    from kitab.core.warehouse import Warehouse
    from kitab.release.leaderboard import per_query_scores, type_order
    from kitab.release.report import render_report

    with tempfile.TemporaryDirectory(prefix="kitab-html-") as tmp:
        text = render_report(warehouse, release, Path(tmp), snapshot, seed=seed, resamples=resamples)
        body = _inline_images(_markdown_html(neutral_bidi(text)), Path(tmp) / "plots")
    with Warehouse(Path(warehouse)).connect(release=release) as con:
        rows = [r for r in per_query_scores(con) if not r["stale"]]  # scores of a replaced version: not this one's
        queries = {
            query_id: {"author": author, "constraints": constraints, "mapped": ast.literal_eval(mapped)}
            for query_id, author, constraints, mapped in con.execute(
                'SELECT query_id, "Author", constraints, mapped_books FROM kitab_book_constraints'
            ).fetchall()
        }
    info, by_model = _query_data(rows, queries)
    models = sorted(by_model)
    beside = {f"{files_dir}/model-{i:02d}.js": f"kitabRows({i},{_json(by_model[m])});\n" for i, m in enumerate(models)}
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
        "data": _json(
            {
                "queries": info,
                "models": [[m, f"{files_dir}/model-{i:02d}.js", len(by_model[m])] for i, m in enumerate(models)],
                "marks": [[MARKS[m][0], MARKS[m][1]] for m in MARK_CODES],
                "scores": [name for name, _ in SCORE_NAMES],
            }
        ),
        "n_rows": str(len(rows)),
    }
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], template), beside


def write_html_report(
    warehouse: Path, release: str, path: Path, *, snapshot: Path | None = None, seed=None, resamples=None
) -> Path:
    """Write :func:`render_html`: the page at ``path`` and its rows in ``<stem>_files/`` beside it
    (each through a temp file, then a rename)."""
    from kitab.core.files import atomic_dir
    from kitab.core.outputs import write_manifest

    rows = check_page(path, warehouse, snapshot)
    path = Path(path)
    files_dir = rows.path.name
    page, beside = render_html(
        warehouse, release, snapshot=snapshot, seed=seed, resamples=resamples, files_dir=files_dir
    )
    if beside or rows.path.exists():  # the rows first: a page never points at files not yet there
        with atomic_dir(rows.path) as tmp:
            for name, text in beside.items():
                (tmp / Path(name).relative_to(files_dir)).write_bytes(text.encode("utf-8"))
            write_manifest(tmp, HTML_COMMAND)
    write_bytes(path, page.encode("utf-8"))
    return path


HTML_COMMAND = "kitab report --html"


def check_page(path: Path, warehouse: Path, snapshot: Path | None = None):
    """The output-path rule (kitab/core/outputs.py) for the page and its rows' folder
    ``<stem>_files/`` beside it, before any work; returns the folder's check."""
    from kitab.core.outputs import check_file, check_folder

    inputs = [Path(warehouse)] if snapshot is None else [Path(warehouse), snapshot]
    check_file(path, "--html", inputs)
    files = Path(path).parent / f"{Path(path).stem}_files"
    return check_folder(files, "--html", HTML_COMMAND, inputs, legacy=_old_files)


def _old_files(folder: Path) -> str | None:
    """The rows folder of a page written before reports listed their files."""
    if any(folder.glob("model-*.js")):
        return "holds the rows of an earlier `kitab report --html` written before kitab listed its output's files"
    return None
