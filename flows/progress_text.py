"""The words of a refresh's progress: what each stage does and the one-line status, read by
both views of :class:`~kitab.core.progress.Progress` (the Prefect progress artifact,
flows/refresh.py; ``kitab refresh``'s display, kitab/app/progress_display.py).

Here rather than in kitab/core: the numbers stay in the core, the sentences in the lowest
layer that shows them, outside the code digest (kitab/core/version.py), so rewording a line
keeps every cached step of a resumable refresh.
"""

from __future__ import annotations

from kitab.core.progress import ROWS, STAGES, Status, format_count, format_rate, format_seconds

# What each stage does, while it has no count to show.
DOING = {
    "start": "opening the sources, reading the ledger",
    "sample_authors": "sampling authors (WikiData)",
    "collect": "Open Library match and works, cleaning, dedup",
    "tag_entities": "tagging names and cities in titles",
    "generate_constraints": "constraints and each author's queries",
    "sample_queries": "query top-ups over the release",
    "publish": "writing, testing and committing the release",
}


def requests_text(status: Status) -> str:
    """Requests sent, and each service's recent rate against its client's cap (services this
    process sent nothing to are left out: on Dask the workers send, and report per batch)."""
    parts = [f"{status.requests:,} requests"]
    for s in status.services:
        if not s.sent:
            continue
        cap = f" (cap {s.cap:g}/s)" if s.cap else ""
        parts.append(f"{s.name} {format_rate(s.rate)}{cap}")
    return " · ".join(parts)


def stage_text(record: dict) -> str:
    """A finished stage in a few words: ``sample 1.3 s, 1,000 authors``."""
    rows = record.get("rows")
    what = f", {format_count(rows)} {ROWS.get(record['stage'], 'rows')}" if rows is not None else ""
    return f"{record['stage']} {format_seconds(record['seconds'])}{what}"


def status_line(status: Status) -> str:
    """The state of a refresh in one line: the plain lines of ``kitab refresh`` and the
    description of Prefect's progress artifact."""
    if status.ended:  # no rates: they are of the last few seconds, not of the run
        return f"done in {format_seconds(status.elapsed)} · {status.requests:,} requests"
    if status.stage is None:
        return status.phase
    head = f"{status.stage} ({status.position}/{len(STAGES)})"
    if status.total is not None:
        pct = f" ({100 * status.done / status.total:.0f}%)" if status.total else ""
        body = f"{status.done:,} / {status.total:,} {status.unit}{pct}"
    else:
        body = DOING[status.stage]
    eta = f" · ETA {format_seconds(status.eta)}" if status.eta is not None else ""
    return f"{head}: {body} · {requests_text(status)}{eta}"
