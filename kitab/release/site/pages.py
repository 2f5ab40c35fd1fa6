"""The site's pages as HTML text, from what kitab/release/site/data.py read: the index (the
latest release's leaderboards with the filter, every release, every model), one page per release
and one per model (its scores by release date and the between-release differences).

Every text from the data (model names, reasons, release ids) reaches a page escaped, with its
bidirectional controls shown as ``[U+202E]`` (kitab/release/markup.py), never as markup. Page
files are named by :func:`slug`: safe characters only, and a hash of the whole name, so two
names that read alike still get two pages and no name reaches outside its folder.
"""

from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from importlib.resources import files

from kitab.release.intervals import LEVEL
from kitab.release.markup import neutral_bidi
from kitab.release.site.differences import differences, told_apart
from kitab.release.validity.floor import HIGHER

QUERY_METRICS = (
    ("all_correct", "all correct ↑"),
    ("completeness", "completeness ↑"),
    ("satisfied", "satisfied ↑"),
    ("unsatisfied", "unsatisfied ↓"),
    ("not_from_author", "not from author ↓"),
)
TRACKED_LABELS = {
    "all_correct": "queries: all correct",
    "completeness": "queries: completeness",
    "pair_accuracy": "claims: pair accuracy",
    "claim_accuracy": "claims: claim accuracy",
}


def esc(value) -> str:
    """Text from the data as page text: bidi controls shown, markup escaped."""
    return html.escape(neutral_bidi(str(value)), quote=True)


def slug(name: str) -> str:
    """A file name (no extension) for ``name``: up to 40 of its letters, digits, ``-`` and ``_``
    (accents dropped, anything else a ``-``), then 10 hex digits of its sha256, so the name is
    safe in any file system and two names never share a page."""
    ascii_ = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    base = re.sub(r"[^A-Za-z0-9_]+", "-", ascii_).strip("-_").lower()[:40].strip("-_") or "x"
    return f"{base}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:10]}"


def release_href(release: str, root: str) -> str:
    return f"{root}releases/{slug(release)}.html"


def model_href(model: str, root: str) -> str:
    return f"{root}models/{slug(model)}.html"


def _num(x, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _ci(value, low, high) -> str:
    if value is None:
        return "–"
    return f'{value:.3f} <span class="ci">[{_num(low)}, {_num(high)}]</span>'


def _table(header: list[str], rows: list[str], cls: str = "") -> str:
    head = "".join(f'<th class="name">{h}</th>' if i == 1 else f"<th>{h}</th>" for i, h in enumerate(header))
    return f'<div class="wide"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def _row(cells: list[str], *, model: str | None = None, cls: str = "") -> str:
    attrs = f' data-model="{esc(model)}"' if model is not None else ""
    tds = "".join(
        c if c.startswith("<td") else (f'<td class="name">{c}</td>' if i == 1 else f"<td>{c}</td>")
        for i, c in enumerate(cells)
    )
    return f'<tr class="{cls}"{attrs}>{tds}</tr>'


def _model_link(model: str, root: str, label: str | None = None) -> str:
    return f'<a href="{model_href(model, root)}">{esc(label or model)}</a>'


def _status(runs: dict, model: str, task: str) -> str:
    run = runs.get((model, task))
    return "—" if run is None else run["status"]


def _failed_rows(release: dict, task: str, shown: set[str], width: int, root: str) -> list[str]:
    """A failed model run of ``task`` with no evaluation shown: one row with its reason."""
    out = []
    for run in release["runs"]:
        if run["task"] == task and run["status"] == "failed" and run["model"] not in shown:
            reason = f'<td class="reason" colspan="{width - 3}">failed: {esc(run["reason"])}</td>'
            out.append(_row(["failed", _model_link(run["model"], root), "–", reason], model=run["model"], cls="failed"))
    return out


def queries_board(release: dict, root: str) -> str:
    """The list queries' leaderboard: every evaluation with KITAB's metrics and intervals, then
    the failed runs, the floor and the ceiling."""
    runs = {(r["model"], r["task"]): r for r in release["runs"]}
    header = ["status", "model", "#", "answered", "coverage", "rated", *(label for _, label in QUERY_METRICS)]
    rows = []
    for e in release["board"]["evaluations"]:
        o = e["overall"]
        status = _status(runs, e["model"], "queries")
        rows.append(
            _row(
                [
                    status,
                    _model_link(e["model"], root, e["label"]),
                    str(e["rank"]),
                    f"{o['answered']} / {o['queries']}",
                    _ci(o["coverage"], *o["coverage_ci"]),
                    str(o["rated"]),
                    *(_ci(o[m], *o[f"{m}_ci"]) for m, _ in QUERY_METRICS),
                ],
                model=e["model"],
                cls="failed" if status == "failed" else "",
            )
        )
    shown = {e["model"] for e in release["board"]["evaluations"]}
    rows += _failed_rows(release, "queries", shown, len(header), root)
    validity = release["validity"].get("queries")
    if validity:
        floor, ceiling = validity["floor"], validity["ceiling"]
        cells = []
        for m, _ in QUERY_METRICS:
            f = floor.get(m)
            cells.append(
                "–" if f is None else f"{_ci(f['value'], f['low'], f['high'])}<br><small>{esc(f['baseline'])}</small>"
            )
        rows.append(_row(["floor", "best no-knowledge baseline", "", "", "", "", *cells], cls="floor"))
        cells = []
        for m, _ in QUERY_METRICS:
            c = ceiling.get(m, {})
            text = _num(c.get("perfect"))
            if c.get("key_error"):
                k = c["key_error"]
                text += f"<br><small>key error: {_num(k['value'])} ({_num(k['low'])}–{_num(k['high'])})</small>"
            cells.append(text)
        rows.append(_row(["ceiling", "perfect model", "", "", "", "", *cells], cls="ceiling"))
    if not rows:
        return '<p class="note">No model evaluated on the list queries of this release.</p>'
    return _table(header, rows, "board")


def claims_board(release: dict, root: str) -> str:
    """The claim pairs' leaderboard: pair and claim accuracy with intervals, failed runs, the
    floor (the best no-knowledge baseline, Wilson interval), chance and the ceiling."""
    runs = {(r["model"], r["task"]): r for r in release["runs"]}
    header = ["status", "model", "#", "pairs", "pair accuracy ↑", "processed", "pair accuracy of processed (NoCha)"]
    header += ["claim accuracy ↑", "answered"]
    rows = []
    for e in release["claims"]:
        o = e["overall"]
        status = _status(runs, e["model"], "claims")
        rows.append(
            _row(
                [
                    status,
                    _model_link(e["model"], root),
                    str(e["rank"]),
                    str(o["pairs"]),
                    _ci(**o["pair_accuracy"]),
                    str(o["pairs_processed"]),
                    _ci(**o["pair_accuracy_processed"]),
                    _ci(**o["claim_accuracy"]),
                    _num(o["answered"]),
                ],
                model=e["model"],
                cls="failed" if status == "failed" else "",
            )
        )
    rows += _failed_rows(release, "claims", {e["model"] for e in release["claims"]}, len(header), root)
    validity = release["validity"].get("claims")
    if validity and "pair_accuracy" in validity["floor"]:
        f = validity["floor"]["pair_accuracy"]
        floor = f"{_ci(f['value'], f['low'], f['high'])}<br><small>{esc(f['baseline'])}</small>"
        chance = f"chance {validity['chance']:.2f}"
        rows.append(
            _row(["floor", "best no-knowledge baseline", "", str(f["n"]), floor, "", chance, "", ""], cls="floor")
        )
        rows.append(_row(["ceiling", "perfect model", "", "", _num(1.0), "", "", _num(1.0), ""], cls="ceiling"))
    if not rows:
        return '<p class="note">No model evaluated on the claim pairs of this release.</p>'
    return _table(header, rows, "board")


def costs_table(release: dict, root: str, model: str | None = None) -> str:
    """Each model run of the release (table model_runs): status, reason, and what it cost."""
    runs = [r for r in release["runs"] if model is None or r["model"] == model]
    if not runs:
        return '<p class="note">No model runs recorded for this release (table <code>model_runs</code>: the cycle writes them).</p>'
    header = ["task", "model", "status", "reason", "served model", "prompts", "answered", "requests", "from cache"]
    header += ["tokens in", "tokens out", "service s", "wall s"]
    rows = []
    for r in runs:
        reason = f'<td class="reason">{esc(r["reason"])}</td>' if r["reason"] else "<td></td>"
        rows.append(
            _row(
                [
                    esc(r["task"]),
                    _model_link(r["model"], root),
                    esc(r["status"]),
                    reason,
                    esc(r["served_model"]),
                    f"{r['prompts']:,}",
                    f"{r['answered']:,}",
                    f"{r['requests']:,}",
                    f"{r['from_cache']:,}",
                    f"{r['prompt_tokens']:,}",
                    f"{r['completion_tokens']:,}",
                    _num(r["service_seconds"], 1),
                    _num(r["wall_seconds"], 1),
                ],
                model=r["model"],
                cls="failed" if r["status"] == "failed" else "",
            )
        )
    return _table(header, rows, "costs")


def _note_intervals(site: dict) -> str:
    return (
        f'<p class="note">[low, high]: the {round(100 * LEVEL)}% interval, a cluster bootstrap over the release\'s '
        f"authors ({site['resamples']} resamples, seed {site['seed']}), as <code>kitab report</code> computes it. "
        "An unanswered query or claim is wrong. Floor: the best no-knowledge baseline of the validity battery "
        "(table <code>baselines</code>); a score is evidence of knowledge only where it clears the floor's interval. "
        "Ceiling: a perfect model, and for all correct what the answer keys' estimated errors leave it.</p>"
    )


def release_sections(site: dict, release: dict, root: str) -> str:
    """A release's two leaderboards and its model runs (the index and the release page)."""
    return "".join(
        [
            '<h2 id="queries">List queries (KITAB\'s metrics)</h2>',
            queries_board(release, root),
            '<h2 id="claims">Claim pairs</h2>',
            claims_board(release, root),
            _note_intervals(site),
            '<h2 id="costs">Model runs: status and costs</h2>',
            costs_table(release, root),
        ]
    )


def _filter_box() -> str:
    return (
        '<p class="filter"><label>Filter models: <input id="filter" type="search" placeholder="part of a name"></label> '
        '<span id="shown" data-shown="">?</span> rows shown</p>'
    )


def releases_table(site: dict, root: str) -> str:
    rows = []
    for r in reversed(site["releases"]):
        card = r["card"]
        scored = len({e["model"] for e in r["board"]["evaluations"]} | {e["model"] for e in r["claims"]})
        failed = len({x["model"] for x in r["runs"] if x["status"] == "failed"})
        rows.append(
            _row(
                [
                    esc(str(r["created_at"])[:19]),
                    f'<a href="{release_href(r["release"], root)}">{esc(r["release"])}</a>',
                    _num(card["authors"], 0),
                    _num(card["queries"], 0),
                    _num(card["claim_pairs"], 0),
                    str(scored),
                    str(failed),
                ]
            )
        )
    header = ["created (UTC)", "release", "authors", "queries", "claim pairs", "models scored", "models failed"]
    return _table(header, rows, "releases")


def models_table(site: dict, root: str) -> str:
    rows = []
    for model in site["models"]:
        on = [r["release"] for r in site["releases"] if model in r["cells"]]
        failed = [
            r["release"]
            for r in site["releases"]
            if any(x["model"] == model and x["status"] == "failed" for x in r["runs"])
        ]
        rows.append(
            _row(
                [str(len(on)), _model_link(model, root), esc(", ".join(on) or "–"), esc(", ".join(failed) or "–")],
                model=model,
            )
        )
    return _table(["releases scored", "model", "scored on", "failed on"], rows, "models")


def page(title: str, body: str, root: str) -> str:
    template = files("kitab.release").joinpath("templates/site.html").read_text(encoding="utf-8")
    values = {"title": esc(title), "body": body, "root": root}
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], template)


def index_page(site: dict) -> str:
    if not site["releases"]:
        return page("kitab leaderboard", "<h1>kitab leaderboard</h1><p>No committed release yet.</p>", "")
    latest = site["releases"][-1]
    body = "".join(
        [
            "<h1>kitab leaderboard</h1>",
            f'<p>Latest release: <a href="{release_href(latest["release"], "")}">{esc(latest["release"])}</a> '
            f"(created {esc(str(latest['created_at'])[:19])} UTC; {_num(latest['card']['authors'], 0)} authors, "
            f"{_num(latest['card']['queries'], 0)} queries, {_num(latest['card']['claim_pairs'], 0)} claim pairs). "
            "Each model's page shows it on every release and the differences between releases.</p>",
            _filter_box(),
            release_sections(site, latest, ""),
            '<h2 id="releases">Releases</h2>',
            releases_table(site, ""),
            '<h2 id="models">Models</h2>',
            models_table(site, ""),
        ]
    )
    return page("kitab leaderboard", body, "")


def release_page(site: dict, release: dict) -> str:
    card, root = release["card"], "../"
    facts = [
        ("created (UTC)", str(release["created_at"])[:19]),
        ("authors", _num(card["authors"], 0)),
        ("queries", _num(card["queries"], 0)),
        ("claim pairs", _num(card["claim_pairs"], 0)),
        ("books", _num(card["books"], 0)),
        ("seed", str(release["seed"])),
        ("source", f"{release['source']} ({release['snapshot_id']})"),
    ]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    body = "".join(
        [
            f"<h1>Release {esc(release['release'])}</h1>",
            f'<dl class="card">{dl}</dl>',
            _filter_box(),
            release_sections(site, release, root),
        ]
    )
    return page(f"kitab release {release['release']}", body, root)


def _entry(release: dict, model: str, task: str) -> dict | None:
    sha = release["chosen"][task].get(model)
    found = {"queries": release["board"]["evaluations"], "claims": release["claims"]}[task]  # each task's entries
    return next((e for e in found if e["model"] == model and e["answers_sha256"] == sha), None)


def _run_cell(release: dict, model: str, task: str) -> str:
    run = next((r for r in release["runs"] if r["model"] == model and r["task"] == task), None)
    if run is None:
        return "<td>–</td>"
    if run["status"] == "failed":
        return f'<td class="reason">failed: {esc(run["reason"])}</td>'
    cost = (
        f"{run['requests']:,} requests<br>{run['prompt_tokens']:,} / {run['completion_tokens']:,} tokens in / out"
        f"<br>{run['wall_seconds']:.1f} s wall"
    )
    return f'<td class="text">{cost}</td>'


def model_scores(site: dict, model: str) -> str:
    rows = []
    for r in site["releases"]:
        q, c = _entry(r, model, "queries"), _entry(r, model, "claims")
        if q is None and c is None and not any(x["model"] == model for x in r["runs"]):
            continue
        qo = q["overall"] if q else {}
        co = c["overall"] if c else {}
        failed = any(x["model"] == model and x["status"] == "failed" for x in r["runs"])
        rows.append(
            _row(
                [
                    esc(str(r["created_at"])[:19]),
                    f'<a href="{release_href(r["release"], "../")}">{esc(r["release"])}</a>',
                    _ci(qo.get("all_correct"), *qo.get("all_correct_ci", (None, None))),
                    _ci(qo.get("completeness"), *qo.get("completeness_ci", (None, None))),
                    _num(qo.get("coverage")),
                    _ci(**co["pair_accuracy"]) if co else "–",
                    _ci(**co["claim_accuracy"]) if co else "–",
                    _run_cell(r, model, "queries"),
                    _run_cell(r, model, "claims"),
                ],
                cls="failed" if failed else "",
            )
        )
    header = ["created (UTC)", "release", "all correct ↑", "completeness ↑", "coverage", "pair accuracy ↑"]
    header += ["claim accuracy ↑", "queries run", "claims run"]
    return _table(header, rows, "scores")


def model_differences(site: dict, model: str) -> str:
    scored = [(r["release"], r["cells"][model]) for r in site["releases"] if model in r["cells"]]
    if len(scored) < 2:
        where = f"release {esc(scored[0][0])}" if scored else "no release"
        return f'<p class="note" id="one-release">This model is scored on {where} only: no difference between releases to show yet.</p>'
    rows = []
    for d in differences(scored, b=site["resamples"], seed=site["seed"]):
        value = (
            "–"
            if d["value"] is None
            else f'{d["value"]:+.3f} <span class="ci">[{d["low"]:+.3f}, {d["high"]:+.3f}]</span>'
        )
        apart = told_apart(d) if d["value"] is not None else False
        higher = HIGHER.get(d["metric"], True)
        reading = "–" if not apart else ("better on the older" if (d["value"] > 0) == higher else "better on the newer")
        rows.append(
            _row(
                [
                    esc(TRACKED_LABELS[d["metric"]]),
                    f'<a href="{release_href(d["older_release"], "../")}">{esc(d["older_release"])}</a>',
                    f'<a href="{release_href(d["newer_release"], "../")}">{esc(d["newer_release"])}</a>',
                    _num(d["older"]),
                    _num(d["newer"]),
                    f'<span class="{"apart" if apart else ""}">{value}</span>',
                    "yes" if apart else "no",
                    reading,
                ]
            )
        )
    header = [
        "score",
        "older release",
        "newer release",
        "on older",
        "on newer",
        "older − newer [95%]",
        "told apart",
        "reading",
    ]
    return _table(header, rows, "differences")


def model_page(site: dict, model: str) -> str:
    body = "".join(
        [
            f'<h1>Model <span class="model-name">{esc(model)}</span></h1>',
            "<h2>Scores by release (oldest first, by the release's creation date)</h2>",
            model_scores(site, model),
            '<h2 id="differences">Between releases: the contamination read</h2>',
            '<p class="note">For each pair of releases, the model\'s score on the older one minus its score on the newer '
            "one. A model that saw a release's books or queries in training tends to do better on the older release, "
            "so a difference whose interval lies above zero (below, for a rate to lower) is what contamination would "
            "show. The two releases hold different authors and queries, so the scores are not paired: the interval is "
            f"a two-sample bootstrap, the authors of each release resampled independently ({site['resamples']} resamples, "
            f"seed {site['seed']}). A difference is also what two releases of unequal difficulty show (other authors, other "
            "popularity): read it beside the other models' differences and the floors of each release.</p>",
            model_differences(site, model),
        ]
    )
    return page(f"kitab model {model}", body, "../")
