"""Uncertainty on every score: a 95% interval per metric from a cluster bootstrap over authors,
and the paired difference of two models on the same queries (docs/evaluate.md, "Intervals").

Queries of one author are correlated (the same books, the same knowledge gap), so the
bootstrap resamples authors, not queries: an author drawn once brings all of its queries. A
metric is a ratio over the rows where it is defined (a rate over listed books is undefined when
nothing is listed), so each author is reduced to ``(sum, count)`` and a resample's score is
``sum of sums / sum of counts`` over the authors drawn, the same estimator as the point value.
The interval is the percentile interval (2.5th and 97.5th) of ``B`` resamples; a resample with
no defined row for the metric is left out. Authors are sorted by their key before drawing, so
the result does not depend on row order, and the draws come from a seeded generator: the same
rows and seed give the same interval. A paired comparison draws the same authors for both
models, so what the two share (hard authors, easy authors) cancels out of the difference.

Pure functions of plain data; the rows come from ``per_query_scores``, the one place that
reads the evaluations table (kitab/release/leaderboard.py) for the leaderboard, the
comparison and the HTML report.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from functools import lru_cache

import numpy as np

B = 1000  # resamples: the percentile interval's ends move by < 0.005 between seeds at this size
SEED = 29  # the default seed (kitab report --seed, kitab evaluate --seed)
LEVEL = 0.95

# metric name (leaderboard, JSON) -> the per-query column it averages
METRIC_COLUMNS = {
    "coverage": "answered",
    "abstention_rate": "abstained",
    "cut_rate": "cut",
    "satisfied": "satisfied_rate",
    "unsatisfied": "unsatisfied_rate",
    "not_from_author": "not_from_author_rate",
    "completeness": "completeness",
    "all_correct": "all_correct",
}


def clusters(rows: Iterable[dict], column: str, key: str = "author_qid") -> dict[Hashable, tuple[float, int]]:
    """``{author: (sum, count)}`` of ``column`` over ``rows`` (a row whose value is None is left
    out of both; booleans count 1 / 0). An author with no defined row keeps ``(0, 0)``, so two
    models on the same queries have the same authors (a paired draw lines up)."""
    out: dict[Hashable, list[float]] = {}
    for row in rows:
        values = out.setdefault(row[key], [])
        if row[column] is not None:
            values.append(float(row[column]))
    # fsum: the exactly rounded sum, so the interval does not depend on the rows' order
    return {k: (math.fsum(values), len(values)) for k, values in out.items()}


@lru_cache(maxsize=64)
def _draws(n_clusters: int, b: int, seed: int) -> np.ndarray:
    """Which clusters each of ``b`` resamples draws (with replacement): shape (b, n_clusters).
    Cached and read-only: every metric and both models of a comparison share one draw."""
    picks = np.random.default_rng(seed).integers(0, n_clusters, size=(b, n_clusters))
    picks.flags.writeable = False
    return picks


def _ratios(picks: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    num, den = sums[picks].sum(axis=1), counts[picks].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _percentiles(values: np.ndarray, level: float) -> tuple[float | None, float | None]:
    values = values[~np.isnan(values)]
    if not len(values):
        return None, None
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def _arrays(cells: dict[Hashable, tuple[float, int]], order: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([cells.get(k, (0.0, 0))[0] for k in order], dtype=float),
        np.array([cells.get(k, (0.0, 0))[1] for k in order], dtype=float),
    )


def interval(
    cells: dict[Hashable, tuple[float, int]], *, b: int = B, seed: int = SEED, level: float = LEVEL
) -> dict[str, float | None]:
    """``{"value", "low", "high"}`` of the ratio estimator over ``cells`` (``{author: (sum,
    count)}``, see :func:`clusters`): the point value and its cluster-bootstrap percentile
    interval. All None when no row is defined. The interval is widened to hold the value when a
    lopsided resample distribution puts it outside (it never does for a metric that varies
    across many authors)."""
    order = sorted(cells, key=str)
    sums, counts = _arrays(cells, order)
    if counts.sum() == 0:
        return {"value": None, "low": None, "high": None}
    value = float(sums.sum() / counts.sum())
    low, high = _percentiles(_ratios(_draws(len(order), b, seed), sums, counts), level)
    return {"value": value, "low": min(low, value), "high": max(high, value)}


def paired_difference(
    cells_a: dict[Hashable, tuple[float, int]],
    cells_b: dict[Hashable, tuple[float, int]],
    *,
    b: int = B,
    seed: int = SEED,
    level: float = LEVEL,
) -> dict[str, float | None]:
    """``{"value", "low", "high", "a", "b"}``: model A's score minus model B's, with the interval
    of the difference when both are scored on the same resampled authors (the union of their
    authors; one missing from a model counts nothing for it). ``a`` and ``b`` are the two point
    values. All None when either model has no defined row."""
    order = sorted(set(cells_a) | set(cells_b), key=str)
    sums_a, counts_a = _arrays(cells_a, order)
    sums_b, counts_b = _arrays(cells_b, order)
    if counts_a.sum() == 0 or counts_b.sum() == 0:
        return {"value": None, "low": None, "high": None, "a": None, "b": None}
    a, bb = float(sums_a.sum() / counts_a.sum()), float(sums_b.sum() / counts_b.sum())
    draws = _draws(len(order), b, seed)
    low, high = _percentiles(_ratios(draws, sums_a, counts_a) - _ratios(draws, sums_b, counts_b), level)
    value = a - bb
    return {"value": value, "low": min(low, value), "high": max(high, value), "a": a, "b": bb}


def differs(difference: dict) -> bool:
    """Whether a paired difference's interval leaves out zero (the two models are told apart)."""
    low, high = difference["low"], difference["high"]
    return low is not None and (low > 0 or high < 0)


def metric_intervals(rows: list[dict], *, b: int = B, seed: int = SEED, level: float = LEVEL) -> dict[str, dict]:
    """Every metric of :data:`METRIC_COLUMNS` over ``rows`` (one evaluation's rows of a bin)."""
    return {
        metric: interval(clusters(rows, column), b=b, seed=seed, level=level)
        for metric, column in METRIC_COLUMNS.items()
    }


def compare(
    rows_a: list[dict],
    rows_b: list[dict],
    *,
    b: int = B,
    seed: int = SEED,
    level: float = LEVEL,
    metrics: Sequence[str] = tuple(METRIC_COLUMNS),
) -> dict[str, dict]:
    """The paired difference (A − B) of each of ``metrics`` of two evaluations of one release."""
    return {
        metric: paired_difference(
            clusters(rows_a, METRIC_COLUMNS[metric]),
            clusters(rows_b, METRIC_COLUMNS[metric]),
            b=b,
            seed=seed,
            level=level,
        )
        for metric in metrics
    }
