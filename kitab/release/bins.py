"""The bins every reader of a release groups by: constrainedness κ = 1 − S/N (the paper's
Fig. 3 and 4) and author popularity by WikiData sitelinks. The report, the evaluation and the
leaderboard name bins the same way from here."""

from __future__ import annotations

# A bin of fewer authors is flagged wherever its interval is shown (tables, JSON ``few_authors``)
# and drawn hollow (plots): the intervals are a bootstrap over authors, so few say little.
FEW_AUTHORS = 5
# Author popularity: WikiData sitelinks, bucketed (lower bound inclusive).
SITELINK_EDGES = (0, 5, 10, 20, 50, 100)
# Constrainedness: kappa = 1 - S/N in [0, 1]; 1 exactly is an unsatisfiable query.
KAPPA_BINS = ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.0))


def bin_index(s: int, n: int, bins: int) -> int:
    """Which of ``bins`` equal bins on [0, 1] holds κ = (N − S)/N, in integers: with floats,
    κ = 0.6 lands in the bin below (0.6 / 0.2 = 2.999…)."""
    return min(bins * (n - s) // n, bins - 1)


def sitelink_labels() -> list[str]:
    edges = SITELINK_EDGES
    return [f"{lo}–{hi - 1}" for lo, hi in zip(edges, edges[1:])] + [f"{edges[-1]}+"]


def sitelink_bucket(sitelinks: int) -> int:
    return max(i for i, lo in enumerate(SITELINK_EDGES) if sitelinks >= lo)


def kappa_bin_label(s: int, n: int) -> str:
    """The constrainedness bin of a query with S = ``s`` of N = ``n`` books, as the report's
    table names it (S = 0: the unsatisfiable bin)."""
    return kappa_labels()[-1 if s == 0 else bin_index(s, n, len(KAPPA_BINS))]


def popularity_bin_label(sitelinks: int) -> str:
    """The author-popularity bucket of ``sitelinks``, as the report's table names it."""
    return sitelink_labels()[sitelink_bucket(sitelinks)]


def kappa_labels() -> list[str]:
    return [f"{lo:.1f} ≤ κ < {hi:.1f}" for lo, hi in KAPPA_BINS] + ["κ = 1 (unsatisfiable)"]
