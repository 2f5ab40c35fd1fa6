"""Where ``kitab serve``'s scheduled runs read from, settled before anything is registered.

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
