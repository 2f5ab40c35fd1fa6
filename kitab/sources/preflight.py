"""What a live refresh can know before it starts: a contact for the User-Agent, and that the
services' host names resolve. Both fail the refresh at once, in one line, before Prefect, a
lock or a request; a name that does not resolve now will not resolve in the next minute either,
so retrying it as a transient error only delays the same failure (issue 22)."""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlsplit

from kitab.core.config import DEFAULT_CONTACT, Settings
from kitab.core.errors import BadValue

RESOLVE_TIMEOUT = 10.0  # seconds for all names together (the resolver's own retries can take longer)


def unresolved_hosts(urls: list[str], timeout: float = RESOLVE_TIMEOUT) -> list[str]:
    """The host names of ``urls`` that do not resolve within ``timeout`` seconds, in order.
    Each lookup runs on its own daemon thread: ``getaddrinfo`` has no timeout of its own."""
    hosts = list(dict.fromkeys(urlsplit(u).hostname or "" for u in urls))
    resolved: dict[str, bool] = {}

    def lookup(host: str) -> None:
        try:
            socket.getaddrinfo(host, None)
            resolved[host] = True
        except (OSError, UnicodeError):
            resolved[host] = False

    threads = [threading.Thread(target=lookup, args=(h,), daemon=True, name=f"resolve {h}") for h in hosts if h]
    for thread in threads:
        thread.start()
    for thread in threads:  # one deadline for all: they run at the same time
        thread.join(max(0.0, timeout))
    return [h for h in hosts if not resolved.get(h, False)]


def check_live(settings: Settings, timeout: float = RESOLVE_TIMEOUT) -> None:
    """BadValue (one line) when a live refresh cannot work: no KITAB_CONTACT, or a service
    host that does not resolve (no network, no DNS, a typo in KITAB_*_URL)."""
    if settings.contact == DEFAULT_CONTACT:
        raise BadValue(
            "--source live needs a real contact for the User-Agent: set KITAB_CONTACT to your e-mail "
            "or URL (Wikimedia's policy requires it; Open Library asks for it)"
        )
    missing = unresolved_hosts([settings.wikidata_endpoint, settings.openlibrary_base], timeout)
    if missing:
        raise BadValue(
            f"--source live: cannot resolve {' and '.join(missing)} (no network or DNS?); "
            "nothing was started. Offline, use --source mirror or --source dump"
        )
