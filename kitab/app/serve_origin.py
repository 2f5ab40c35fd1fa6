"""What ``kitab serve`` settles before anything is created or registered: its inputs
(:func:`check_serve`), and where its scheduled runs read from (:func:`served_mirror_url`).

A refused serve is one line and leaves nothing behind (no warehouse folder): the cron is
Prefect's own check, run first; each source kind's requirements follow (live: a contact;
dump: a snapshot, checked file by file; a mirror that serve runs itself: its snapshot).

prefect.yaml's ``mirror_url`` names docker-compose's mirror host (``http://mirror:8089``),
which resolves only inside compose. Off Docker, a deployment registered with it fails every
run. So: a mirror URL given on the command line must answer, or serve refuses in one line;
prefect.yaml's default that does not answer is replaced by a mirror of the snapshot that serve
itself runs (in-process, for as long as it serves: the runs are its subprocesses, on this
machine)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from kitab.core.errors import BadValue


def check_cron(cron: str) -> None:
    """BadValue (one line) unless Prefect's cron schedule takes ``cron`` (its validator, so
    that what passes here registers)."""
    import warnings

    from pydantic import ValidationError

    with warnings.catch_warnings():
        # Prefect makes its home (the warehouse's .prefect) on import; a warehouse that does not
        # exist yet is made only once everything is checked, so its failure here is expected
        warnings.filterwarnings("ignore", message="Failed to create the Prefect home directory")
        from prefect.client.schemas.schedules import CronSchedule

    try:
        CronSchedule(cron=cron, timezone="UTC")
    except ValidationError as exc:
        why = exc.errors()[0].get("msg", "invalid").removeprefix("Value error, ")
        raise BadValue(
            f"--cron {cron!r}: {why}; expected five fields (minute hour day-of-month month day-of-week), "
            "e.g. '0 3 * * 1'"
        ) from None


def check_serve(kind, *, cron: str, snapshot: Path | None, mirror_url: str | None, settings) -> None:
    """Everything ``kitab serve`` can check before it creates anything: ``cron``; the source
    ``kind``'s requirements (``settings``: kitab.core.config.Settings). The scheduled runs take the
    environment of this process, so a contact missing here is missing in every run; host names are
    not resolved (a run at 3 a.m. resolves them itself)."""
    from kitab.core.config import DEFAULT_CONTACT

    check_cron(cron)
    if kind.reads_live_services and settings.contact == DEFAULT_CONTACT:
        raise BadValue(
            "kitab serve --source live needs a real contact for the User-Agent of every scheduled run: "
            "set KITAB_CONTACT to your e-mail or URL (Wikimedia's policy requires it)"
        )
    if kind.reads_snapshot_files and snapshot is None:
        raise BadValue(f"kitab serve --source {kind.name} needs --snapshot DIR: the snapshot every scheduled run reads")
    if snapshot is not None and (kind.reads_snapshot_files or (kind.reads_mirror_url and not mirror_url)):
        from kitab.sources.snapshot.format import check_snapshot

        check_snapshot(snapshot)  # a folder that is not a snapshot: one line naming what is wrong


def answers(url: str, timeout: float = 2.0) -> bool:
    """Whether something accepts a TCP connection at ``url``'s host and port (a name that does
    not resolve, such as compose's ``mirror`` off Docker, does not)."""
    parts = urlsplit(url)
    if not parts.hostname:
        return False
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def served_mirror_url(
    reads_mirror: bool, given: str | None, default: str | None, snapshot: Path
) -> Iterator[str | None]:
    """The mirror URL the deployment's runs get: None when the source reads no mirror;
    ``given`` (--mirror-url) if it answers, else BadValue; prefect.yaml's ``default`` if it
    answers (compose); else the URL of a mirror of ``snapshot`` served here until exit."""
    if not reads_mirror:
        yield None
        return
    if given:
        if not answers(given):
            raise BadValue(
                f"no mirror answers at --mirror-url {given}; start one (`kitab mirror serve`) or leave it out"
            )
        yield given
        return
    if default and answers(default):
        yield default
        return
    from kitab.simulate.mirror.server import Mirror

    with Mirror(snapshot) as mirror:
        yield mirror.url
