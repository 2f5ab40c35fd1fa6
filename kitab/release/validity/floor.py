"""Each task's floor and ceiling, read from the release's ``baselines`` table (the card,
``kitab report`` and its ``--output json``).

- **floor**: per metric, the best no-knowledge baseline (highest, or lowest for a metric where
  lower is better) with its 95% interval;
- **ceiling**: the perfect model (1 for a rate to raise, 0 for one to lower) and, for the list
  queries' all-correct, the key-error ceiling: what a perfect model can expect when an entity
  query's key holds a wrong book (kitab/release/key_quality.py), over all the release's queries.
"""

from __future__ import annotations

from kitab.release.key_quality import release_key_quality
from kitab.release.validity.battery import MARGIN, QUERY_METRICS
from kitab.release.validity.claims import CHANCE

HIGHER = {**QUERY_METRICS, "pair_accuracy": True}


def _dicts(con, sql: str, params: list | None = None) -> list[dict]:
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def floors(rows: list[dict]) -> dict[str, dict[str, dict]]:
    """``{task: {metric: best overall row}}`` of the baselines rows (ties: the baseline's name)."""
    best: dict[str, dict[str, dict]] = {}
    for r in sorted(rows, key=lambda r: r["baseline"]):
        if r["dimension"] != "overall" or r["value"] is None:
            continue
        held = best.setdefault(r["task"], {}).get(r["metric"])
        better = held is None or (r["value"] > held["value"] if HIGHER[r["metric"]] else r["value"] < held["value"])
        if better:
            best[r["task"]][r["metric"]] = r
    return best


def key_error_ceiling(quality: dict, n_queries: int) -> dict | None:
    """All-correct a perfect model can expect over all ``n_queries``: one minus the expected
    number of entity queries whose key holds a wrong book (a two-entity query counted under each
    of its types, so this errs low), with the range of key_quality's estimate."""
    if not quality or not n_queries:
        return None
    lost = {
        end: sum((q.get(f"wrong_key{end}") or 0.0) * q["queries"] for q in quality.values())
        for end in ("", "_low", "_high")
    }
    return {
        "value": round(1 - lost[""] / n_queries, 4),
        "low": round(1 - lost["_high"] / n_queries, 4),
        "high": round(1 - lost["_low"] / n_queries, 4),
    }


def release_validity(con) -> dict:
    """The floor and ceiling of each task of the release ``con`` is scoped to; ``{}`` when its
    ``baselines`` table is empty (published before the battery)."""
    rows = _dicts(con, "SELECT * EXCLUDE (release) FROM baselines ORDER BY task, baseline, metric, dimension, bin")
    if not rows:
        return {}
    best = floors(rows)
    out = {}
    order = list(HIGHER)  # the leaderboard's order
    for task, metrics in sorted(best.items()):
        floor = {
            m: {k: metrics[m][k] for k in ("baseline", "value", "low", "high", "n", "trained_on")}
            for m in sorted(metrics, key=order.index)
        }
        ceiling = {m: {"perfect": 1.0 if HIGHER[m] else 0.0} for m in metrics}
        entry = {"floor": floor, "ceiling": ceiling}
        if "pair_accuracy" in metrics:  # judged claim by claim: a coin's chance level, and a classifier
            trained = (r["trained_on"] for r in rows if r["task"] == task and r["baseline"] == "naive-bayes")
            entry.update(classifier_trained_on=next(trained, None), chance=CHANCE, fails_above=CHANCE + MARGIN)
        if "all_correct" in ceiling:  # the list queries' answer keys: what their errors leave a perfect model
            ((n,),) = con.execute("SELECT count(*) FROM queries").fetchall()
            ceiling["all_correct"]["key_error"] = key_error_ceiling(release_key_quality(con), n)
        out[task] = entry
    return out


def _num(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def format_validity(validity: dict) -> str:
    """The card's and ``kitab report``'s section: one line per task and metric."""
    head = "### Floor and ceiling (validity battery)\n\n"
    if not validity:
        return head + "This release has no `baselines` table (published before the validity battery).\n"
    lines = [
        "What a model that knows no book scores (the **floor**: the best of the no-knowledge baselines scored "
        "when the release was published, table `baselines`, with its 95% interval) and what a perfect model "
        "scores (the **ceiling**; for all-correct also the answer keys' expected error, above). A score is "
        "evidence of knowledge only where it clears the floor's interval.",
        "",
        "| task | metric | floor (95%) | baseline | ceiling |",
        "| --- | --- | ---: | --- | ---: |",
    ]
    for task, entry in validity.items():
        for metric, f in entry["floor"].items():
            c = entry["ceiling"][metric]
            ceiling = _num(c["perfect"])
            if c.get("key_error"):
                k = c["key_error"]
                ceiling += f"; key error: {_num(k['value'])} ({_num(k['low'])}–{_num(k['high'])})"
            arrow = "↑" if HIGHER[metric] else "↓"
            interval = f"{_num(f['value'])} ({_num(f['low'])}–{_num(f['high'])}; n = {f['n']:,})"
            lines.append(f"| {task} | {metric.replace('_', ' ')} {arrow} | {interval} | {f['baseline']} | {ceiling} |")
    for c in (entry for entry in validity.values() if "chance" in entry):
        lines += [
            "",
            f"Claims: chance is {c['chance']:.2f} (a coin per claim); a release where a baseline reading the "
            f"wording (wording-rule, naive-bayes) exceeds {c['fails_above']:.2f} with its 99.9% bound above chance "
            "fails its data tests. Baselines: always-true, coin, wording-rule, naive-bayes "
            f"(trained on: {c['classifier_trained_on']}); "
            "queries: none (`[]` everywhere), longest-titles, title-pattern (docs/evaluate.md). Satisfied, "
            "unsatisfied and not-from-author are rates over the titles listed: `none` lists none on a "
            "satisfiable query, so its rates come from the unsatisfiable ones (n: the queries a metric is a "
            "mean over), and reach the ceiling.",
        ]
    return head + "\n".join(lines) + "\n"
