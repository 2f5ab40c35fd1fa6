"""What an evaluation is scored over (docs/evaluate.md, "Trials"): its population.

``kitab answer --limit N`` asks a seeded sample of N queries (or claim pairs) and writes
``limit`` and ``limit_seed`` on every line of its answers file; ``kitab evaluate`` then scores
that sample, not the whole release: every query of the sample has a row (one the file leaves
unanswered is still wrong), and none outside it. ``--over`` says it explicitly:

- ``release``: every query of the release (the default for a file without a limit);
- ``sample``: the --limit sample the file names (the default for a file with a limit);
- ``answered``: only the queries the file answers.

The population's note ("a --limit 40 sample (seed 0) of 1,122 queries") goes with the result,
its JSON and every stored row, so a trial is never read as a score over the release.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kitab.core.errors import BadValue, KitabError

OVER = ("release", "sample", "answered")


@dataclass(frozen=True)
class Population:
    over: str  # release | sample | answered
    ids: frozenset[str] | None  # the ids scored (None: every one of the release)
    note: str  # in words, for the output, the JSON and the stored rows
    limit: int | None = None
    limit_seed: int | None = None

    def as_json(self, scored: int) -> dict:
        return {"over": self.over, "note": self.note, "limit": self.limit, "limit_seed": self.limit_seed, "n": scored}


def file_limit(limits: Iterable[tuple[int | None, int | None]], path) -> tuple[int, int] | None:
    """The (limit, limit_seed) every line of an answers file names, None when no line names one;
    lines that disagree (two trials in one file, or a trial mixed with a full run) are refused."""
    found = set(limits)
    if not found or found == {(None, None)}:
        return None
    if len(found) > 1:
        shown = ", ".join(
            "no limit" if lim is None else f"--limit {lim} (seed {seed})"
            for lim, seed in sorted(found, key=lambda x: (x[0] is not None, x))
        )
        raise KitabError(f"{path}: lines answer different populations ({shown}); one answers file holds one run")
    ((limit, seed),) = found
    return limit, seed or 0


def choose_population(
    over: str | None,
    limit: tuple[int, int] | None,
    *,
    total: int,
    answered: Iterable[str],
    sample: Callable[[int, int], set[str]],
    noun: str,
) -> Population:
    """The population ``over`` names (None: the file's sample when it has a limit, else the
    release). ``total``: how many ``noun`` (queries, pairs) the release has; ``sample(limit,
    seed)``: the ids of that --limit sample, drawn as ``kitab answer`` drew it."""
    if over is None:
        over = "sample" if limit is not None else "release"
    if over not in OVER:
        raise BadValue(f"--over {over!r}: use one of {', '.join(OVER)}")
    if over == "release":
        return Population("release", None, f"the whole release: {total:,} {noun}")
    if over == "answered":
        ids = frozenset(answered)
        return Population("answered", ids, f"the {len(ids):,} {noun} the file answers, of {total:,}")
    if limit is None:
        raise BadValue("--over sample: the answers file names no --limit sample (no limit on its lines)")
    n, seed = limit
    ids = frozenset(sample(n, seed))
    return Population("sample", ids, f"a --limit {n:,} sample (seed {seed}) of {total:,} {noun}", n, seed)
