"""The claim-pairs task on a release (issue 32, docs/claims.md): its prompts, reading a model's
verdicts, scoring them NoCha's way and keeping the scores.

- ``kitab prompts --task claims``: one fixed template per claim (:data:`CLAIM_TEMPLATE`),
  JSON lines ``{query_id, template, prompt}``, so prompts -> model -> ``kitab evaluate --task
  claims`` is the same loop as for list queries; ``kitab answer --task claims`` asks them.
  The commands reach this module through its task object (kitab/release/task.py).
- A response is read as True, False or no answer (``read_verdict``,
  kitab/release/evaluation/verdict.py: reasoning blocks removed; NoCha's ``<answer>``
  element, JSON, "Answer: TRUE", the first word, "the claim is false", else the only verdict
  word). No answer is wrong (an abstention never scores).
- Two denominators: kitab's pair accuracy divides by every pair of the release (a pair the
  answers file leaves out is wrong); NoCha's divides by the pairs the model processed (both
  claims answered), ``pair_accuracy_processed`` beside it.
- Pair accuracy: a pair is right when both of its claims are judged right (chance 0.25;
  always "True" or always "False" 0). Claim accuracy: share of claims judged right (chance
  0.5). Overall, per kind, per constraint type (attribute pairs) and per author-popularity bin,
  each with the cluster bootstrap over authors of kitab/release/intervals.py.
- Scores go to the annex table ``claim_evaluations`` (schemas/claim_evaluations.json), one
  file per release rewritten atomically; evaluating the same answers again replaces its rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from kitab.core import jsonl
from kitab.core.errors import KitabError
from kitab.core.warehouse import Warehouse
from kitab.release.bins import FEW_AUTHORS, popularity_bin_label, sitelink_labels
from kitab.release.evaluation.answers import answers_model, read_answers
from kitab.release.evaluation.parse import is_reasoning_only
from kitab.release.evaluation.population import choose_population, file_limit
from kitab.release.evaluation.verdict import read_verdict
from kitab.release.intervals import LEVEL, SEED, B, clusters, interval
from kitab.release.markup import markdown_cell
from kitab.release.prompts import intact_release, sample_across_authors

TABLE = "claim_evaluations"
TEMPLATE_NAME = "claims"
CLAIM_TEMPLATE = (
    "Is the following claim true or false? Answer from your own knowledge of the author's books.\n\n"
    "Claim: {claim}\n\n"
    "Answer with one word, True or False, on the first line. You may add a short reason (one sentence) "
    "on the next line."
)
DIMENSIONS = (("kind", "kind"), ("constraint_type", "constraint type"), ("popularity_bin", "author popularity"))


def render_claim_prompt(claim: str) -> str:
    return CLAIM_TEMPLATE.format(claim=claim)


def _claims(con) -> list[dict]:
    cursor = con.execute(
        "SELECT c.query_id, c.pair_id, c.position, c.author_qid, c.kind, c.constraint_type, c.claim, c.label, "
        "a.sitelinks FROM claims c JOIN authors a ON a.qid = c.author_qid ORDER BY c.pair_id, c.position"
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def claim_prompts(
    warehouse: Path, release: str, *, limit: int | None = None, seed: int = 0, sample=sample_across_authors
) -> Iterator[str]:
    """One JSON line per claim of ``release`` (pairs in id order, each pair's claims in their
    recorded order); with ``limit``, a seeded sample of that many pairs across authors (both
    claims of each: a pair is scored whole) drawn by ``sample``."""
    wh = Warehouse(Path(warehouse))
    wh.require_release(release)
    with wh.connect(release=release) as con:
        rows = _claims(con)
    pairs = sorted({(r["pair_id"], r["author_qid"]) for r in rows})
    keep = {p for p, _ in pairs} if sample is None else sample(pairs, limit, seed)
    for r in rows:
        if r["pair_id"] in keep:
            yield jsonl.dumps(
                {"query_id": r["query_id"], "template": TEMPLATE_NAME, "prompt": render_claim_prompt(r["claim"])},
                ensure_ascii=False,
            )


def release_claim_prompts(warehouse: Path, release: str, *, limit: int | None = None, seed: int = 0) -> Iterator[str]:
    """``kitab prompts --task claims``: :func:`claim_prompts` of an intact release."""
    intact_release(warehouse, release)
    yield from claim_prompts(warehouse, release, limit=limit, seed=seed)


def score_claims(claims: list[dict], verdicts: dict[tuple[str, int], dict], head: dict) -> list[dict]:
    """One ``claim_evaluations`` row per claim and sample: its verdict and whether it is right
    (a claim without an answer, or with no verdict in it, is wrong)."""
    samples = sorted({s for _, s in verdicts}) or [0]
    rows = []
    for c in claims:
        for sample in samples:
            answer = verdicts.get((c["query_id"], sample))
            verdict = read_verdict(answer["response"]) if answer else None
            rows.append(
                {
                    **head,
                    "query_id": c["query_id"],
                    "sample": sample,
                    "pair_id": c["pair_id"],
                    "position": c["position"],
                    "author_qid": c["author_qid"],
                    "kind": c["kind"],
                    "constraint_type": c["constraint_type"],
                    "sitelinks": c["sitelinks"],
                    "popularity_bin": popularity_bin_label(c["sitelinks"]),
                    "label": c["label"],
                    "answered": answer is not None,
                    "verdict": verdict,
                    "correct": verdict is not None and verdict == c["label"],
                    "response": answer["response"] if answer else None,
                }
            )
    return rows


def pair_rows(rows: list[dict]) -> list[dict]:
    """Claim rows -> one row per (pair, sample): ``pair_correct`` when both claims are right."""
    pairs: dict[tuple[str, int], dict] = {}
    for r in rows:
        p = pairs.setdefault(
            (r["pair_id"], r["sample"]),
            {k: r[k] for k in ("pair_id", "sample", "author_qid", "kind", "constraint_type", "popularity_bin")}
            | {"pair_correct": True, "n": 0},
        )
        p["pair_correct"] = p["pair_correct"] and r["correct"]
        p["answered"] = p.get("answered", True) and r["answered"]
        p["n"] += 1
    # processed (NoCha's denominator): both claims have an answer, read or not
    return [
        {**p, "pair_correct": p["pair_correct"] and p["n"] == 2, "processed": p["answered"] and p["n"] == 2}
        for p in pairs.values()
    ]


def _scores(claim_rows: list[dict], pairs: list[dict], b: int, seed: int) -> dict:
    processed = [p for p in pairs if p["processed"]]
    authors = len({p["author_qid"] for p in pairs})  # the bootstrap's clusters
    return {
        "pairs": len(pairs),
        "authors": authors,
        "few_authors": authors < FEW_AUTHORS,  # an interval over so few authors says little
        "pair_accuracy": interval(clusters(pairs, "pair_correct"), b=b, seed=seed),
        # NoCha's: correct pairs / pairs the model processed
        "pairs_processed": len(processed),
        "pair_accuracy_processed": interval(clusters(processed, "pair_correct"), b=b, seed=seed),
        "claim_accuracy": interval(clusters(claim_rows, "correct"), b=b, seed=seed),
        "answered": sum(r["answered"] for r in claim_rows) / len(claim_rows) if claim_rows else None,
    }


def _bin_order(dimension: str, label: str | None):
    if dimension == "popularity_bin":
        labels = sitelink_labels()
        return (labels.index(label) if label in labels else len(labels), "")
    return (0, label or "")


def claim_entries(con, *, model: str | None = None, answers_sha256: str | None = None, b: int = B, seed: int = SEED):
    """Every claim evaluation of the release ``con`` is scoped to, best pair accuracy first:
    overall and per dimension, each score with its interval."""
    sql = "SELECT * FROM claim_evaluations WHERE true"
    params: list = []
    if model is not None:
        sql += " AND model = ?"
        params.append(model)
    if answers_sha256 is not None:
        sql += " AND answers_sha256 = ?"
        params.append(answers_sha256)
    cursor = con.execute(sql + " ORDER BY model, answers_sha256, query_id, sample", params)
    names = [d[0] for d in cursor.description]
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in cursor.fetchall():
        r = dict(zip(names, row))
        groups.setdefault((r["model"], r["answers_sha256"]), []).append(r)
    out = []
    for (name, sha), mine in groups.items():
        pairs = pair_rows(mine)
        by = {}
        for dimension, _ in DIMENSIONS:
            labels = sorted(
                {r[dimension] for r in mine if r[dimension] is not None}, key=lambda x: _bin_order(dimension, x)
            )
            by[dimension] = [
                {
                    "bin": label,
                    **_scores(
                        [r for r in mine if r[dimension] == label], [p for p in pairs if p[dimension] == label], b, seed
                    ),
                }
                for label in labels
            ]
        out.append(
            {
                "model": name,
                "answers_sha256": sha,
                "answers_file": mine[0]["answers_file"],
                "population": mine[0].get("population")
                or f"every pair of the release: {len({p['pair_id'] for p in pairs}):,} pairs",
                "overall": _scores(mine, pairs, b, seed),
                "by": by,
            }
        )
    out.sort(key=lambda e: (-(e["overall"]["pair_accuracy"]["value"] or 0.0), e["model"]))
    for rank, entry in enumerate(out, 1):
        entry["rank"] = rank
    return out


def _ci(score: dict) -> str:
    if score["value"] is None:
        return "–"
    return f"{score['value']:.3f} [{score['low']:.3f}, {score['high']:.3f}]"


def _kind_cell(scores: dict) -> str:
    """A kind's pair accuracy with its interval, flagged when it rests on few authors."""
    flag = f" ⚠ {scores['authors']} authors" if scores["few_authors"] else ""
    return _ci(scores["pair_accuracy"]) + flag


def format_claim_entries(entries: list[dict]) -> str:
    """The claim-pairs leaderboard as markdown: overall, then pair accuracy per kind."""
    if not entries:
        return ""
    kinds = sorted({b["bin"] for e in entries for b in e["by"]["kind"]})
    header = [
        "rank",
        "model",
        "pairs",
        "pair accuracy",
        "processed",
        "pair accuracy of processed (NoCha)",
        "claim accuracy",
        *(f"pairs: {k}" for k in kinds),
    ]
    # a model's name may hold a | or a line break: escaped, it keeps the columns (issue 38)
    lines = ["| " + " | ".join(map(markdown_cell, header)) + " |", "|" + "---|" * len(header)]
    for e in entries:
        per_kind = {b["bin"]: b for b in e["by"]["kind"]}
        cells = [
            str(e["rank"]),
            e["model"],
            str(e["overall"]["pairs"]),
            _ci(e["overall"]["pair_accuracy"]),
            str(e["overall"]["pairs_processed"]),
            _ci(e["overall"]["pair_accuracy_processed"]),
            _ci(e["overall"]["claim_accuracy"]),
            *(_kind_cell(per_kind[k]) if k in per_kind else "–" for k in kinds),
        ]
        lines.append("| " + " | ".join(map(markdown_cell, cells)) + " |")
    return (
        "## Claim pairs\n\nNoCha-style minimal pairs (docs/claims.md): a pair counts only when both claims are "
        "judged right (chance 0.25; always True 0). Pair accuracy divides by every pair (one left unanswered is "
        "wrong); NoCha divides by the pairs the model processed (both claims answered). "
        f"{int(LEVEL * 100)}% intervals: bootstrap over authors (⚠ n authors: fewer than {FEW_AUTHORS}, "
        "the interval says little).\n\n"
        + "\n".join(lines)
        + "\n\nScored over: "
        + "; ".join(f"{markdown_cell(e['model'])}: {e['population']}" for e in entries)
        + ".\n"
    )


def claim_section(con, *, seed: int | None = None, resamples: int | None = None) -> str:
    """``kitab report``'s section of the claim pairs ("" when none was evaluated)."""
    return format_claim_entries(claim_entries(con, b=resamples or B, seed=SEED if seed is None else seed))


def format_claim_result(result: dict) -> str:
    """``kitab evaluate --task claims``' result as markdown."""
    return (
        f"{result['model']} on release {result['release']}, scored over {result['population']['note']}: "
        f"{result['answered']} of {result['claims']} claims answered (an unanswered claim is wrong), scores in "
        f"table claim_evaluations\n\n" + format_claim_entries(result["pair_accuracy"])
    )


def write_claim_evaluation(wh: Warehouse, release: str, rows: list[dict]) -> None:
    """Add ``rows`` (one evaluation, in key order) to the release's claim evaluations, replacing
    an earlier run of the same (model, answers file); atomic, in bounded memory, under the
    warehouse's author lock, as evaluations (Warehouse.store_annex)."""
    if rows:
        replaced = {"model": rows[0]["model"], "answers_sha256": rows[0]["answers_sha256"]}
        wh.store_annex(TABLE, release, sorted(rows, key=lambda r: (r["query_id"], r["sample"])), replaced)


def evaluate_claims(
    warehouse: Path, release: str, answers_path: Path, *, model: str | None = None, over: str | None = None
) -> dict:
    """``kitab evaluate --task claims``: score ``answers_path`` (JSON lines ``{query_id,
    response}``) against the release's claims (the pairs of its population,
    evaluation/population.py: every pair, the file's --limit sample of pairs, or with
    ``over="answered"`` the pairs it answers), store the rows, return the summary and this
    evaluation's entry."""
    wh = Warehouse(Path(warehouse))
    wh.require_release(release)
    answers_path = Path(answers_path)
    answers, sha256 = read_answers(answers_path)
    # --model, else the name the lines give (kitab answer writes it), else the file's name;
    # lines naming two models are refused even with --model (the file mixes two evaluations)
    named = answers_model(answers, answers_path)
    model = model or named or answers_path.stem
    with wh.connect(release=release) as con:
        claims = _claims(con)
        ledger = con.execute("SELECT checksums FROM releases").fetchall()
    known = {c["query_id"] for c in claims}
    verdicts: dict[tuple[str, int], dict] = {}
    for a in answers:
        if a.query_id not in known:
            raise KitabError(f"{answers_path}: line {a.line} answers {a.query_id!r}, no claim of release {release}")
        if (a.query_id, a.sample) in verdicts:
            raise KitabError(f"{answers_path}: line {a.line} answers claim {a.query_id} a second time")
        verdicts[a.query_id, a.sample] = {"response": a.response}
    pair_of = {c["query_id"]: c["pair_id"] for c in claims}
    population = choose_population(
        over,
        file_limit(((a.limit, a.limit_seed) for a in answers), answers_path),
        total=len(set(pair_of.values())),
        answered={pair_of[q] for q, _ in verdicts},
        sample=lambda n, seed: sample_across_authors(
            sorted({(c["pair_id"], c["author_qid"]) for c in claims}), n, seed
        ),
        noun="pairs",
    )
    if population.ids is not None:
        outside = sorted(q for q, _ in verdicts if pair_of[q] not in population.ids)
        if outside and population.over == "sample":
            raise KitabError(
                f"{answers_path}: {len(outside)} answer(s) outside the file's --limit {population.limit} sample "
                f"(seed {population.limit_seed}), e.g. {outside[0]}: score it with --over answered or --over release"
            )
        claims = [c for c in claims if c["pair_id"] in population.ids]
    head = {
        "model": model,
        "answers_sha256": sha256,
        "answers_file": answers_path.name,
        "evaluated_at": datetime.now(UTC).replace(microsecond=0),
        "claims_sha256": json.loads(ledger[0][0]).get("claims") if ledger else None,
        "population": population.note,
    }
    rows = score_claims(claims, verdicts, head)
    write_claim_evaluation(wh, release, rows)
    with wh.connect(release=release) as con:
        (entry,) = claim_entries(con, model=model, answers_sha256=sha256)
    answered = sum(r["answered"] for r in rows)
    return {
        "task": "claims",
        "release": release,
        "model": model,
        "answers_sha256": sha256,
        "answered": answered,
        "claims": len(rows),
        "population": population.as_json(len({c["pair_id"] for c in claims})),
        "coverage": answered / len(rows) if rows else None,
        "reasoning_only": sum(is_reasoning_only(a.response, a.reasoning) for a in answers),  # abstentions
        "pair_accuracy": [entry],
    }
