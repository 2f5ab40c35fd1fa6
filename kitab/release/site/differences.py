"""The contamination read of the site's model pages: a model's score on an older release minus
its score on a newer one, with a 95% interval (docs/site.md).

Two releases hold different authors and queries (every refresh excludes the authors of the
earlier ones), so nothing pairs the two scores: the interval is a **two-sample** cluster
bootstrap. Each resample draws the authors of each release independently, with replacement,
within that release (an author drawn once brings all of its queries, as kitab/release/intervals.py
does for one release), and takes the difference of the two ratio estimates; the interval is the
2.5th and 97.5th percentile of ``B`` such differences. Authors are sorted by key before drawing
and the draws come from one seeded generator, so the same scores and seed give the same interval.

Pure functions of plain data: ``cells`` are ``{author: (sum, count)}`` as
:func:`kitab.release.intervals.clusters` makes them.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from kitab.release.intervals import LEVEL, SEED, B

Cells = dict[Hashable, tuple[float, int]]


def _arrays(cells: Cells) -> tuple[np.ndarray, np.ndarray]:
    order = sorted(cells, key=str)
    return (
        np.array([cells[k][0] for k in order], dtype=float),
        np.array([cells[k][1] for k in order], dtype=float),
    )


def _resampled(rng: np.random.Generator, sums: np.ndarray, counts: np.ndarray, b: int) -> np.ndarray:
    picks = rng.integers(0, len(sums), size=(b, len(sums)))
    num, den = sums[picks].sum(axis=1), counts[picks].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def two_sample_difference(
    older: Cells, newer: Cells, *, b: int = B, seed: int = SEED, level: float = LEVEL
) -> dict[str, float | None]:
    """``{"value", "low", "high", "older", "newer"}``: the ratio estimate over ``older`` minus the
    one over ``newer``, and the percentile interval of the two-sample bootstrap (module doc).
    All None when either side has no defined row. The interval is widened to hold the value when
    a lopsided resample distribution leaves it outside (as intervals.interval does)."""
    sums_o, counts_o = _arrays(older)
    sums_n, counts_n = _arrays(newer)
    if counts_o.sum() == 0 or counts_n.sum() == 0:
        return {"value": None, "low": None, "high": None, "older": None, "newer": None}
    a, c = float(sums_o.sum() / counts_o.sum()), float(sums_n.sum() / counts_n.sum())
    rng = np.random.default_rng(seed)
    # one generator, the older release's draws first: the same inputs and seed, the same interval
    diffs = _resampled(rng, sums_o, counts_o, b) - _resampled(rng, sums_n, counts_n, b)
    diffs = diffs[~np.isnan(diffs)]
    value = a - c
    tail = 100 * (1 - level) / 2
    low, high = (float(x) for x in np.percentile(diffs, [tail, 100 - tail])) if len(diffs) else (value, value)
    return {"value": value, "low": min(low, value), "high": max(high, value), "older": a, "newer": c}


def release_pairs(releases: Sequence[str]) -> list[tuple[str, str]]:
    """Every (older, newer) pair of ``releases`` (given oldest first): each newer release
    against each older one, newest first, then the older of each pair newest first."""
    return [(releases[i], releases[j]) for j in range(len(releases) - 1, 0, -1) for i in range(j - 1, -1, -1)]


def differences(
    scores: Sequence[tuple[str, dict[str, Cells]]], *, b: int = B, seed: int = SEED, level: float = LEVEL
) -> list[dict]:
    """``scores``: one model's ``(release, {metric: cells})`` oldest first. One row per release
    pair (:func:`release_pairs`) and metric both releases score: ``{"older_release",
    "newer_release", "metric", **two_sample_difference}``; [] when the model has fewer than two releases."""
    by_release = dict(scores)
    out = []
    for older, newer in release_pairs([r for r, _ in scores]):
        for metric in by_release[older]:
            if metric in by_release[newer]:
                d = two_sample_difference(
                    by_release[older][metric], by_release[newer][metric], b=b, seed=seed, level=level
                )
                out.append({"older_release": older, "newer_release": newer, "metric": metric, **d})
    return out


def told_apart(difference: dict) -> bool:
    """The interval leaves out zero: the model scored differently on the two releases."""
    low, high = difference["low"], difference["high"]
    return low is not None and (low > 0 or high < 0)
