"""The validity battery of a release (issue 38): every no-knowledge baseline of both tasks,
scored when the release is published and stored with it (table ``baselines``, committed and
checksummed like the release's other tables); each task's floor (the best baseline per metric)
and ceiling (the perfect model, and for the list queries the answer keys' error), for the card
and ``kitab report``.

The baselines' logic is kitab/release/validity/claims.py and queries.py; the scores are the
tasks' own: pair accuracy with its Wilson interval (as benchmarks/claim_floor.py), KITAB's
metrics from kitab/release/evaluation with the leaderboard's cluster-bootstrap intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime

from kitab.core.release_commit import Derive
from kitab.core.warehouse import Warehouse
from kitab.release.evaluation.answers import Answer
from kitab.release.evaluation.run import load_truths, score_rows
from kitab.release.intervals import METRIC_COLUMNS, SEED, clusters, interval
from kitab.release.validity.claims import stable_hash, streamed_claim_scores
from kitab.release.validity.queries import longest_titles, median_key_size, none_everywhere, title_pattern

TABLE = "baselines"
MARGIN = 0.07  # a release whose claim floor exceeds CHANCE + MARGIN fails its data tests (sql/tests)
# KITAB's metrics the leaderboard shows, and whether higher is better
QUERY_METRICS = {
    "all_correct": True,
    "completeness": True,
    "satisfied": True,
    "unsatisfied": False,
    "not_from_author": False,
}
# what the classifier reads of other releases' claims (claims.py: naive_bayes, claim_verdicts):
# a training claim's other columns (titles, years, ids) are not held in memory
TRAIN_COLUMNS = ("release", "author_qid", "claim_author_qid", "kind", "label", "claim")
# what the baselines read of the release's own claims, BATCH at a time (claims.py: streamed_claim_scores)
CLAIM_COLUMNS = (
    "query_id",
    "pair_id",
    "position",
    "author_qid",
    "claim_author_qid",
    "kind",
    "constraint_type",
    "claim",
    "label",
)
BATCH = 50_000
MAX_QUERIES = 20_000  # above this, a seeded sample of authors' queries is scored (~400 queries/s, 3 baselines, at load)
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # score_rows' evaluated_at, never stored


def _row(task, baseline, metric, dimension, label, value, low, high, n, trained_on) -> dict:
    return {
        "task": task,
        "baseline": baseline,
        "metric": metric,
        "dimension": dimension,
        "bin": label,
        "value": value,
        "low": low,
        "high": high,
        "n": n,
        "trained_on": trained_on,
    }


def claim_rows(scores: dict[str, tuple[dict, str]]) -> list[dict]:
    """The claim baselines' pair accuracy (overall, per kind, per constraint type), from each
    baseline's pair scores and what it was trained on (claims.py: claim_scores)."""
    out = []
    for name, (bins_of, trained_on) in scores.items():
        for dimension, bins in bins_of.items():
            for label, s in bins.items():
                score = (s["pair_accuracy"], s["low"], s["high"], s["pairs"])
                out.append(_row("claims", name, "pair_accuracy", dimension, label, *score, trained_on))
    return out


def claim_batches(con, size: int = BATCH) -> Callable[[], Iterator[list[dict]]]:
    """The release's claims, ``size`` at a time, as the baselines read them (a pass each call)."""

    def read() -> Iterator[list[dict]]:
        cursor = con.cursor()  # (its own result: the passes interleave with no other query, but say so)
        try:
            reader = cursor.sql(f"SELECT {', '.join(CLAIM_COLUMNS)} FROM claims").to_arrow_reader(size)
            for batch in reader:
                yield batch.to_pylist()
        finally:
            cursor.close()

    return read


def other_claims(warehouse: Warehouse, releases: list[str], size: int = BATCH) -> Iterator[list[dict]]:
    """The claims of ``releases`` the classifier trains on (TRAIN_COLUMNS), ``size`` at a time,
    one release read at a time."""
    for release in releases:
        table = warehouse.read_table("claims", [release], columns=[c for c in TRAIN_COLUMNS if c != "release"])
        for batch in table.to_batches(size):
            yield batch.to_pylist()


def sample_authors(counts: dict[str, int], limit: int = MAX_QUERIES, seed: int = SEED) -> list[str] | None:
    """The authors whose queries are scored: all (None) when they have at most ``limit`` queries,
    else authors in a seeded order until their queries reach ``limit`` (whole authors, the
    bootstrap's clusters). ``counts``: queries per author."""
    if sum(counts.values()) <= limit:
        return None
    kept, total = [], 0
    for author in sorted(counts, key=lambda a: (stable_hash("baselines", seed, a), a)):
        if total >= limit:
            break
        kept.append(author)
        total += counts[author]
    return sorted(kept)


def _scope_to_sample(con, limit: int) -> str:
    """Above ``limit`` queries, the connection's ``queries`` (and every view over it) shows a
    seeded sample of authors only (a temporary view shadows it: the battery's own connection);
    returns what ``trained_on`` says of it."""
    counts = dict(con.execute("SELECT author_qid, count(*) FROM queries GROUP BY ALL").fetchall())
    kept = sample_authors(counts, limit)
    if kept is None:
        return ""
    con.execute("CREATE TEMP TABLE battery_authors (author_qid VARCHAR)")
    con.executemany("INSERT INTO battery_authors VALUES (?)", [[a] for a in kept])
    # the queries, and what their truths read per author (books, their states, the raw titles
    # KITAB's views aggregate per author), of the sampled authors only: at 10,000 authors
    # reading every author's books cost more than scoring the sample
    for table in ("queries", "books", "book_entities", "works_raw"):
        con.execute(
            f"CREATE TEMP TABLE battery_{table} AS SELECT * FROM {table} "
            "WHERE author_qid IN (SELECT * FROM battery_authors)"
        )
        con.execute(f"CREATE TEMP VIEW {table} AS SELECT * FROM battery_{table}")
    n = sum(counts[a] for a in kept)
    return f"; a seeded sample of {len(kept)} of {len(counts)} authors ({n} of {sum(counts.values())} queries)"


def query_rows(con, limit: int = MAX_QUERIES) -> list[dict]:
    """The list-query baselines' KITAB metrics (overall and per constraint type) over the
    release ``con``'s views show, each with the leaderboard's interval."""
    sampled = _scope_to_sample(con, limit)
    infos = load_truths(con)
    truths = {q: info.truth for q, info in infos.items()}
    k = median_key_size(truths)
    baselines = {
        "none": (none_everywhere(truths), "none"),
        "longest-titles": (longest_titles(truths, k), f"the release's books (k = {k}, the median key size)"),
        "title-pattern": (title_pattern(truths), "none"),
    }
    out = []
    for name, (responses, trained_on) in baselines.items():
        learned = (trained_on + sampled).removeprefix("none; ")
        answers = [(Answer(i, text, query_id=q), q) for i, (q, text) in enumerate(sorted(responses.items()), 1)]
        rows = list(  # every row is read twice (overall and per type)
            score_rows(answers, infos, model=name, sha256="", answers_file="", evaluated_at=_EPOCH, queries_sha256=None)
        )
        groups: dict[tuple[str, str], list[dict]] = {("overall", "all"): rows}
        for row in rows:
            for label in dict.fromkeys(row["type_labels"]):
                groups.setdefault(("type", label), []).append(row)
        for (dimension, label), group in groups.items():
            for metric in QUERY_METRICS:  # (the leaderboard's interval of each, intervals.metric_intervals)
                cells = clusters(group, METRIC_COLUMNS[metric])
                ci = interval(cells)
                # n: the queries the metric is a mean over (a rate: those that listed a title)
                n = sum(count for _, count in cells.values())
                score = (ci["value"], ci["low"], ci["high"], n)
                out.append(_row("queries", name, metric, dimension, label, *score, learned))
    return out


def with_claim_rows(con, train_claims: Iterable[list[dict]], queries: list[dict]) -> list[dict]:
    """The ``baselines`` table: the claim baselines' rows over ``con``'s claims, with the
    query baselines' rows ``queries`` (:func:`query_rows`, which reads no claims)."""
    rows = claim_rows(streamed_claim_scores(claim_batches(con), train_claims)) + queries
    return sorted(rows, key=lambda r: (r["task"], r["baseline"], r["metric"], r["dimension"], r["bin"]))


def battery(read_claims: Callable[[], Iterable[list[dict]]], limit: int = MAX_QUERIES) -> Derive:
    """What publishing runs over the staged release (kitab.core.release_commit's ``derive``):
    the query baselines first (they read no claims, so they run while the claims are drawn),
    then the claim baselines. ``read_claims`` returns the claims of the releases the classifier
    trains on, batch by batch (:func:`other_claims`)."""
    return Derive(
        early=lambda con: query_rows(con, limit),
        late=lambda con, queries: {TABLE: with_claim_rows(con, read_claims(), queries)},
    )
