"""Calibrated error rates of the title rules' evidence classes (issue 37).

A class's *stated* error must hold on titles nobody chose rules on: the counts a kind registers
(``EntityKind.classes``) were counted on the sets its rules were built on, and held-out titles
showed 2-3x those rates. So each tagger version's classes are re-counted on labelled titles held
out from the rule-making (``calibration.json``, written by ``benchmarks/entity_calibration.py
--fit``; ``tests/test_entity_calibration.py`` checks it still matches the taggers), and every
decided book's stated error comes from there (tasks/entity_states.book_error).

A class's rate: (wrong + 1) / (titles + 2) (0 of 400 is not called perfect), or, for a class
with fewer than ``SMALL`` titles, the upper end of its Wilson 95% interval (too few titles to
trust the middle). Its interval: the Wilson 95% interval. A class the held-out sets never saw
falls back to the kind's own counts, at their upper end; a class nobody measured earns no
credit (error 1).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from kitab.core.proportions import wilson

CALIBRATION_FILE = Path(__file__).resolve().parent / "data" / "calibration.json"
SMALL = 30  # fewer held-out titles than this: state the upper end, not the middle
NO_CREDIT = (1.0, 1.0, 1.0)
Rate = tuple[float, float, float]  # (stated, low, high)


@cache
def calibration() -> dict:
    """The calibration file: ``{"measured_on": ..., "taggers": {version: {class: [wrong, titles]}}}``."""
    return json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))


def calibrated_counts(version: str, cls: str) -> tuple[int, int] | None:
    """(wrong, titles) of class ``cls`` of tagger ``version`` on the held-out sets, None if unseen."""
    found = calibration()["taggers"].get(version, {}).get(cls)
    return (int(found[0]), int(found[1])) if found else None


def rate(counts: tuple[int, int] | None, *, small: bool | None = None) -> Rate:
    """(wrong, titles) -> (stated, low, high). ``small``: state the upper end (default: fewer
    than SMALL titles). None -> no credit."""
    if counts is None:
        return NO_CREDIT
    wrong, n = counts
    low, high = wilson(wrong, n)
    if small is None:
        small = n < SMALL
    return (high if small else (wrong + 1) / (n + 2)), low, high


def class_rate(kind: str, version: str | None, cls: str, fitted: dict | None = None) -> Rate:
    """The stated error of a title of class ``cls`` (tagger ``version`` of ``kind``; None: the
    kind's default), with its interval: calibrated where the held-out sets saw the class, else
    the kind's own counts at their upper end, else no credit. ``fitted``: {class: (wrong,
    titles)} to use instead of the file's (a cross-validation fold's)."""
    from tasks.entities.registry import find_kind

    known = find_kind(kind)
    version = version or (known.default_tagger if known else "")
    counts = calibrated_counts(version, cls) if fitted is None else fitted.get(cls)
    if counts is not None:
        return rate(counts)
    own = known.class_errors(cls) if known else None
    return rate(own, small=True)
