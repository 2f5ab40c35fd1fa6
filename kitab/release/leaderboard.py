"""The leaderboard of a release: every evaluation (model, answers file) of it in one place,
overall and per constraint type, constrainedness bin and author-popularity bin (the paper's
Tables 6-7 and Figures 2-3), with coverage beside every score.

One builder (:func:`leaderboard`, from the ``evaluations`` rows :func:`per_query_scores` reads) feeds every view: the markdown of ``kitab evaluate`` and ``kitab report``
(:func:`format_leaderboard`), their ``--output json`` (the builder's dict as is) and the plots
(kitab/release/leaderboard_plots.py). Completeness and all-correct count an unanswered query (and an
abstention) as wrong, so a model cannot rise on them by answering less; the three rates over listed
books (satisfied, unsatisfied, not-from-author) are shares of what a model listed, so they are
means over the queries where it listed something (``rated``), shown beside coverage
(docs/evaluate.md, "Unanswered").

Plots draw one bar per evaluation, named beside it: two models with the same score stay
visible, which lines drawn over each other did not. Every score carries its 95% interval (a
cluster bootstrap over authors, kitab/release/intervals.py): in brackets in the tables,
``<metric>_ci`` in the JSON, an error bar in the plots. Each bin counts its ``authors``; one of
fewer than 5 is flagged in the tables and drawn hollow.
"""

from __future__ import annotations

from pathlib import Path

from kitab.release.intervals import LEVEL, METRIC_COLUMNS, SEED, B, compare, differs, metric_intervals
from kitab.release.leaderboard_plots import FEW_AUTHORS, few_authors, write_leaderboard_plots
from kitab.release.markup import markdown_cell  # a model's name may hold a | (issue 38)

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


def per_query_scores(
    con, *, model: str | None = None, answers_sha256: str | None = None, transcripts: bool = True
) -> list[dict]:
    """The one read of the evaluations table behind the leaderboard, its intervals, the paired
    comparison and the HTML report: one row per scored query (and sample), in a fixed order.

    ``abstained`` (an answered, satisfiable query whose answer lists no title) and ``cut`` (the
    answer stopped at the token limit) are read from the table when it has them and derived or
    defaulted here when it does not (evaluations written before they were stored); so are
    ``sample``, ``finish_reason`` and the raw ``response`` (None when not stored). ``stale``: the
    evaluation scored another version of the release (its queries' checksum is not the ledger's).
    ``transcripts=False``: ``response``, ``reasoning`` and the title lists are None (the scores
    need none of them; a large evaluation's transcripts would be read into memory whole)."""
    present = {row[0] for row in con.execute("DESCRIBE evaluations").fetchall()}
    if not transcripts:
        present -= {"response", "reasoning"}
    # abstained and cut are NULL on an unanswered row: their rates are over the queries answered
    derived = {
        "abstained": "(len(model_titles) = 0 AND n_mapped > 0)",
        "cut": "false",
        "sample": "0",
        "finish_reason": "CAST(NULL AS VARCHAR)",
        "response": "CAST(NULL AS VARCHAR)",
        "reasoning": "CAST(NULL AS VARCHAR)",
        "population": "CAST(NULL AS VARCHAR)",  # (rows written before it was kept: the whole release)
    }
    over_answered = ("abstained", "cut")
    extra = ", ".join(
        (f"CASE WHEN answered THEN {expr} END" if name in over_answered else expr) + f" AS {name}"
        for name, expr in ((name, name if name in present else sql) for name, sql in derived.items())
    )
    titles = ", ".join(
        name if transcripts else f"CAST(NULL AS VARCHAR[]) AS {name}"
        for name in ("model_titles", "matched_titles", "match_kinds")
    )
    where, params = "", []
    if model is not None:
        where, params = "WHERE model = ? AND answers_sha256 = ?", [model, answers_sha256]
    return _dicts(
        con,
        "SELECT model, answers_sha256, answers_file, evaluated_at, query_id, author_qid, n_constraints, "
        "constraint_type, type_labels, constrainedness, kappa_bin, sitelinks, popularity_bin, n_mapped, n_books, "
        f"answered, {titles}, satisfied_rate, unsatisfied_rate, "
        "not_from_author_rate, completeness, all_correct, "
        "queries_sha256 IS DISTINCT FROM (SELECT json_extract_string(r.checksums, '$.queries') FROM releases r "
        "WHERE r.release = evaluations.release) AS stale, "
        f"{extra} FROM evaluations {where} "
        "ORDER BY model, answers_sha256, query_id, sample",
        params,
    )


def _scores(rows: list[dict], b: int, seed: int) -> dict:
    """Counts, every metric's point value (``<metric>``) and its 95% interval (``<metric>_ci``:
    [low, high]) over ``rows``. ``rated``: the queries the rates over listed books are means over
    (those that listed something); ``few_authors``: fewer than ``FEW_AUTHORS`` authors, so the
    intervals (a bootstrap over authors) say little."""
    authors = len({r["author_qid"] for r in rows})  # the bootstrap's clusters: few make a thin interval
    out = {
        "queries": len(rows),
        "authors": authors,
        "few_authors": authors < FEW_AUTHORS,
        "answered": sum(1 for r in rows if r["answered"]),
        "rated": sum(1 for r in rows if r["satisfied_rate"] is not None),
    }
    for metric, ci in metric_intervals(rows, b=b, seed=seed).items():
        out[metric] = ci["value"]
        out[f"{metric}_ci"] = [ci["low"], ci["high"]]
    return out


def _bins(rows: list[dict], dimension: str) -> list[tuple[str, list[dict]]]:
    """``rows`` grouped into the bins of ``dimension``, in order (a two-constraint query counts
    under each of its types)."""
    groups: dict[str, list[dict]] = {}
    order: dict[str, float] = {}
    for row in rows:
        if dimension == "type":
            labels, rank = row["type_labels"], None
        elif dimension == "kappa":
            labels, rank = [row["kappa_bin"]], row["constrainedness"]
        else:
            labels, rank = [row["popularity_bin"]], float(row["sitelinks"])
        for label in dict.fromkeys(labels):
            groups.setdefault(label, []).append(row)
            order[label] = min(order.get(label, rank if rank is not None else 0.0), rank if rank is not None else 0.0)
    if dimension == "type":
        return sorted(groups.items(), key=lambda kv: (type_order(kv[0]), kv[0]))
    return sorted(groups.items(), key=lambda kv: (order[kv[0]], kv[0]))


def leaderboard(
    con,
    release: str,
    *,
    model: str | None = None,
    answers_sha256: str | None = None,
    b: int = B,
    seed: int = SEED,
    include_stale: bool = False,
) -> dict:
    """Every evaluation of ``release`` (or the one given), best first (all-correct, then
    completeness, then the model's name): ``{"release", "seed", "resamples", "evaluations":
    [...], "stale_left_out"}``, each with its ``overall`` scores, ``by_size`` (one / two
    constraints) and ``by`` dimension, bins in order; every metric with its interval
    (kitab/release/intervals.py), and ``stale`` (it scored another version of the release).
    Stale ones are left out unless ``include_stale`` (or asked for by model and answers file);
    ``stale_left_out`` counts them."""
    rows = per_query_scores(con, model=model, answers_sha256=answers_sha256, transcripts=False)
    stale = {(r["model"], r["answers_sha256"]) for r in rows if r["stale"]}
    left_out = 0
    if not include_stale and model is None:
        left_out = len(stale)
        rows = [r for r in rows if (r["model"], r["answers_sha256"]) not in stale]
    evaluations: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        evaluations.setdefault((row["model"], row["answers_sha256"]), []).append(row)
    names = [m for m, _ in evaluations]
    out = []
    for (name, sha256), mine in evaluations.items():
        by_size = {
            _SIZES[size]: _scores([r for r in mine if r["n_constraints"] == size], b, seed)
            for size in sorted({r["n_constraints"] for r in mine})
        }
        by = {
            dimension: [{"bin": label, **_scores(group, b, seed)} for label, group in _bins(mine, dimension)]
            for dimension, _ in DIMENSIONS
        }
        out.append(
            {
                "model": name,
                "label": (name if names.count(name) == 1 else f"{name} ({sha256[:8]})")
                + (" [stale]" if (name, sha256) in stale else ""),
                "answers_sha256": sha256,
                "answers_file": mine[0]["answers_file"],
                "evaluated_at": str(max(r["evaluated_at"] for r in mine)),
                "stale": (name, sha256) in stale,
                # what it is scored over, in words (a --limit trial is a sample, not the release)
                "population": mine[0]["population"] or f"the whole release: {len(mine):,} queries",
                "overall": _scores(mine, b, seed),
                "by_size": by_size,
                "by": by,
            }
        )
    out.sort(key=lambda e: (-(e["overall"]["all_correct"] or 0.0), -(e["overall"]["completeness"] or 0.0), e["label"]))
    for rank, evaluation in enumerate(out, start=1):
        evaluation["rank"] = rank
    from kitab.release.key_quality import release_key_quality

    # issue 28: each entity type's key quality, beside its scores (an estimate: key_quality.NOTE);
    # a property of the release, so reported before any model is evaluated on it
    quality = release_key_quality(con)
    for evaluation in out:
        for entry in evaluation["by"]["type"]:
            if entry["bin"] in quality:
                entry["key_quality"] = quality[entry["bin"]]

    return {
        "release": release,
        "seed": seed,
        "resamples": b,
        "level": LEVEL,
        "evaluations": out,
        "stale_left_out": left_out,
        "key_quality": quality,
    }


# -- the queries task's report section and result (kitab/release/task.py) -------------------------------------------------
def evaluation_section(
    con,
    release: str,
    plots_dir: Path | None = None,
    include_stale: bool = False,
    *,
    seed: int | None = None,
    resamples: int | None = None,
) -> str:
    """The leaderboard of ``release`` (every model and answers file scored with ``kitab
    evaluate``), as markdown and, with ``plots_dir``, its plots; "" when nothing was evaluated."""
    board = leaderboard(
        con, release, include_stale=include_stale, b=resamples or B, seed=SEED if seed is None else seed
    )
    # evaluations of an earlier version of the release (replaced since) are said, not shown
    stale_note = (
        f"{board['stale_left_out']} stale evaluation(s) of an earlier version of this release left out "
        "(`--include-stale` shows them)."
        if board.get("stale_left_out")
        else ""
    )
    if not board["evaluations"]:
        return "\n".join(["## Model evaluations", "", stale_note, ""]) if stale_note else ""
    if plots_dir is not None:
        write_leaderboard_plots(board, Path(plots_dir), METRICS, DIMENSIONS, PLOTS)
    captions = ("overall", "by constraint type", "by constrainedness", "by author popularity")
    return "\n".join(
        [
            "## Model evaluations",
            "",
            f"KITAB's metrics (paper §4.1, docs/evaluate.md) of every answers file scored with `kitab evaluate` "
            f"against release `{release}`: {len(board['evaluations'])} evaluation(s), best first.",
            *([stale_note] if stale_note else []),
            "",
            format_leaderboard(board),
            *(f"![Leaderboard {caption}](plots/{name})" for caption, name in zip(captions, PLOTS)),
            "",
        ]
    )


def format_evaluation(result: dict) -> str:
    """``kitab evaluate``'s result as markdown: the leaderboard entry of this evaluation, coverage
    first (an unanswered query is wrong in completeness and all-correct)."""
    coverage = result["coverage"]
    return (
        f"{result['model']} on release {result['release']}, scored over {result['population']['note']}: "
        f"{result['answered']} of {result['queries']} queries answered (coverage {coverage:.3f}; an unanswered query is wrong in completeness and all-correct; "
        f"of the answered: abstention rate {_cell(result['abstention_rate'])}, no titles for a query that has "
        f"some, wrong there too; cut rate {_cell(result['cut_rate'])}; {result['parse_failures']} answer(s) with "
        f"a line no title could be read from, {result['unread_lines']} line(s)), answers sha256 "
        f"{result['answers_sha256'][:16]}…, scores in table evaluations\n\n"
        f"{format_leaderboard(result['leaderboard'])}\n"
        f"every model on this release: kitab report --release {result['release']} (--output json)"
    )


def find_evaluation(rows: list[dict], name: str) -> list[dict]:
    """The rows of the evaluation named ``name``: a model's name (when it has one answers
    file) or ``model@<answers sha256 prefix>``. A clear error when none or several match."""
    from kitab.core.errors import KitabError

    model, _, prefix = name.partition("@")
    keys = sorted({(r["model"], r["answers_sha256"]) for r in rows})
    found = [k for k in keys if k[0] == model and k[1].startswith(prefix)]
    if not found:
        known = ", ".join(sorted({k[0] for k in keys})) or "none"
        raise KitabError(f"no evaluation {name!r} of this release (evaluated: {known})")
    if len(found) > 1:
        options = ", ".join(f"{m}@{s[:8]}" for m, s in found)
        raise KitabError(f"{name!r} names {len(found)} evaluations; say which: {options}")
    return [r for r in rows if (r["model"], r["answers_sha256"]) == found[0]]


def _key(row: dict) -> tuple:
    return row["query_id"], row["sample"]


def _paired(rows_a: list[dict], rows_b: list[dict], answered: set[tuple], b: int, seed: int) -> dict[str, dict]:
    """Every metric's A − B on the same queries, ``queries`` saying how many: coverage on every
    query both evaluations have a row for; every other metric on the queries both ``answered``
    where both define it (a rate over listed books is undefined where a model listed nothing)."""
    out = {}
    for metric, column in METRIC_COLUMNS.items():
        keys = {_key(r) for r in rows_a} & {_key(r) for r in rows_b}
        if metric != "coverage":
            keys &= answered
            keys &= {_key(r) for r in rows_a if r[column] is not None}
            keys &= {_key(r) for r in rows_b if r[column] is not None}
        ra = [r for r in rows_a if _key(r) in keys]
        rb = [r for r in rows_b if _key(r) in keys]
        (d,) = compare(ra, rb, b=b, seed=seed, metrics=(metric,)).values()
        out[metric] = {**d, "differs": differs(d), "queries": len(keys)}
    return out


def comparison(con, release: str, a: str, b_name: str, *, b: int = B, seed: int = SEED) -> dict:
    """``kitab report --compare A B``: A − B per metric with its paired cluster-bootstrap
    interval (the same resampled authors for both), overall and per number of constraints.

    A paired difference compares the same queries: coverage on every query of both, every
    other metric on the queries (and samples) **both answered**, each where both define it
    (issue 38: a half-covered model's satisfied 1.000 is a mean over its half; set against a
    mean over every query it "told apart" what was only coverage). ``common``, ``answered_a``
    and ``answered_b`` count the queries, and each difference its ``queries``. A clear error
    when the two answered no query in common."""
    from kitab.core.errors import KitabError

    rows = per_query_scores(con, transcripts=False)
    rows_a, rows_b = find_evaluation(rows, a), find_evaluation(rows, b_name)
    answered_a = {_key(r) for r in rows_a if r["answered"]}
    answered_b = {_key(r) for r in rows_b if r["answered"]}
    common = answered_a & answered_b
    if not common:
        raise KitabError(
            f"{a} and {b_name} answered no query in common ({a}: {len(answered_a)}, {b_name}: "
            f"{len(answered_b)} answered): nothing to compare"
        )
    parts = {"all": (rows_a, rows_b)}
    for size, label in ((1, "one"), (2, "two")):
        parts[label] = (
            [r for r in rows_a if r["n_constraints"] == size],
            [r for r in rows_b if r["n_constraints"] == size],
        )
    return {
        "release": release,
        "a": a,
        "b": b_name,
        "common": len(common),
        "answered_a": len(answered_a),
        "answered_b": len(answered_b),
        "seed": seed,
        "resamples": b,
        "level": LEVEL,
        "difference": {part: _paired(ra, rb, common, b, seed) for part, (ra, rb) in parts.items() if ra and rb},
    }


# -- markdown ----------------------------------------------------------------------------------------
def _cell(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def _ci_cell(scores: dict, metric: str) -> str:
    """``0.512 [0.431, 0.600]``: the value and its 95% interval."""
    value, (low, high) = scores.get(metric), scores.get(f"{metric}_ci", (None, None))
    if value is None:
        return "–"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]" if low is not None else f"{value:.3f}"


def _table(header: list[str], rows: list[list[str]], align: str) -> str:
    rule = ["---:" if a == "r" else "---" for a in align]
    return "\n".join(
        [
            "| " + " | ".join(map(markdown_cell, header)) + " |",
            "| " + " | ".join(rule) + " |",
            *("| " + " | ".join(map(markdown_cell, row)) + " |" for row in rows),
        ]
    )


RATES = (("abstention_rate", "abstained"), ("cut_rate", "cut"))


def format_leaderboard(board: dict) -> str:
    """The leaderboard as markdown: one table of every evaluation overall (coverage, abstention
    and cut-answer rates, every metric with its 95% interval, the one- and two-constraint
    all-correct), then every metric per bin of each dimension (a row per bin and evaluation)."""
    evaluations = board["evaluations"]
    if not evaluations:
        return "No evaluation of this release yet (`kitab evaluate`, `kitab answer --evaluate`).\n"
    header = [
        "#",
        "model",
        "answered",
        "coverage",
        "rated",
        *(label for _, label in RATES),
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
                str(o["rated"]),
                *(_cell(o.get(m)) for m, _ in RATES),
                *(_ci_cell(o, m) for m, _ in METRICS),
                _ci_cell(e["by_size"].get("one", {}), "all_correct"),
                _ci_cell(e["by_size"].get("two", {}), "all_correct"),
            ]
        )
    level = round(100 * board.get("level", LEVEL))
    parts = [
        f"**Leaderboard, release `{board['release']}`** (an unanswered query, like an abstention, is wrong "
        "in completeness and all-correct, which rank; satisfied, unsatisfied and not from author are shares "
        "of the titles listed, means over the queries that listed something (rated), so read them beside "
        "coverage = answered / queries and rated; abstained: share of the answered queries whose answer lists "
        "no title where the key has some; cut: share of the answered queries whose answer stopped at the token "
        f"limit; [low, high]: {level}% interval, a bootstrap over authors "
        f"with {board.get('resamples', B)} resamples, seed {board.get('seed', SEED)})",
        "",
        _table(header, rows, "rl" + "r" * (len(header) - 2)),
        "",
        "Scored over: " + "; ".join(f"{markdown_cell(e['label'])}: {e['population']}" for e in evaluations) + ".",
    ]
    for dimension, heading in DIMENSIONS:
        bins = list(dict.fromkeys(b["bin"] for e in evaluations for b in e["by"][dimension]))
        if not bins:
            continue
        cells = []
        for label in bins:
            for e in evaluations:
                found = next((x for x in e["by"][dimension] if x["bin"] == label), None)
                if found is None:
                    continue
                wrong = (found.get("key_quality") or {}).get("wrong_key")
                # an entity type carries its key's estimated share of wrong keys (issue 28)
                shown = f"{label} ({found['queries']}; key wrong ≈{100 * wrong:.0f}%)" if wrong is not None else None
                shown = shown or f"{label} ({found['queries']})"
                if few_authors(found):  # its interval, a bootstrap over authors, says little
                    shown += f" ⚠ {found['authors']} authors"
                cells.append(
                    [
                        shown,
                        e["label"],
                        _cell(found["coverage"]),
                        str(found["rated"]),
                        *(_cell(found.get(m)) for m, _ in RATES),
                        *(_ci_cell(found, m) for m, _ in METRICS),
                    ]
                )
        parts += [
            "",
            f"**Scores by {heading}** (queries per bin in brackets; ⚠ n authors: a bin of fewer than "
            f"{FEW_AUTHORS} authors, whose interval says little)",
            "",
            _table(
                [dimension if dimension != "kappa" else "κ", "model", "coverage", "rated", *(x for _, x in RATES)]
                + [x for _, x in METRICS],
                cells,
                "ll" + "r" * (4 + len(METRICS)),
            ),
        ]
    return "\n".join(parts) + "\n"


def format_comparison(result: dict) -> str:
    """``kitab report --compare A B`` as markdown: A − B per metric with its paired interval and
    whether the interval leaves out zero, on the queries both answered (said first)."""
    level = round(100 * result["level"])
    header = ["queries", "metric", "compared on", result["a"], result["b"], f"A − B [{level}% interval]", "told apart"]
    rows = []
    for part, metrics in result["difference"].items():
        for metric, d in metrics.items():
            if d["value"] is None:
                rows.append([part, metric, str(d["queries"]), _cell(d["a"]), _cell(d["b"]), "–", "–"])
                continue
            rows.append(
                [
                    part,
                    metric,
                    str(d["queries"]),
                    _cell(d["a"]),
                    _cell(d["b"]),
                    f"{d['value']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]",
                    "yes" if d["differs"] else "no",
                ]
            )
    a, b = markdown_cell(result["a"]), markdown_cell(result["b"])
    return (
        f"**{a} − {b} on release `{result['release']}`**, compared on {result['common']} queries both "
        f"answered; {a} answered {result['answered_a']}, {b} answered {result['answered_b']} (compared on: "
        "the queries each row's means are over, the same for both: coverage over every query, the rates over "
        "listed books where both listed something; paired bootstrap over authors: the same "
        f"{result['resamples']} resampled author sets for both, seed {result['seed']}; told apart: the "
        "interval leaves out 0)\n\n" + _table(header, rows, "llrrrrl") + "\n"
    )
