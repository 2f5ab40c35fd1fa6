"""The two external services, each behind one small interface with three implementations:
live (real endpoints), mirror (the same HTTP clients pointed at the local mirror) and dump
(the snapshot files read directly)."""

from __future__ import annotations

import atexit
import hashlib
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kitab.core.config import DEFAULT_CONTACT, LIVE_OPENLIBRARY, LIVE_WIKIDATA, Settings
from kitab.core.errors import BadValue
from kitab.core.params import SOURCES  # noqa: F401  (declared with the refresh parameters)
from kitab.sources.openlibrary import HttpOpenLibrary, OpenLibrary
from kitab.sources.wikidata import HttpWikidata, Wikidata


@dataclass
class Sources:
    kind: str
    wikidata: Wikidata
    openlibrary: OpenLibrary

    def requests_sent(self) -> int:
        return self.wikidata.counter.sent + self.openlibrary.counter.sent

    def requests_sent_by_this_thread(self) -> int:
        return self.wikidata.counter.sent_by_this_thread() + self.openlibrary.counter.sent_by_this_thread()

    def close(self) -> None:
        self.wikidata.close()
        self.openlibrary.close()


def open_sources(
    kind: str,
    settings: Settings,
    *,
    snapshot: Path | None = None,
    mirror_url: str | None = None,
    cache_scope: str | None = None,
) -> Sources:
    """The clients for ``kind``. ``cache_scope`` names the HTTP cache: the same scope replays
    earlier answers with no request. Callers pass the snapshot id (mirror) or the release id
    (live, so each new release sees today's services); the defaults are the mirror's URL and
    the UTC date."""
    if kind == "live":
        if settings.contact == DEFAULT_CONTACT:
            raise BadValue(
                "--source live needs a real contact for the User-Agent: set KITAB_CONTACT "
                "(Wikimedia's policy requires it; Open Library asks for it)"
            )
        if settings.ol_rate > 3:
            raise BadValue(f"ol_rate {settings.ol_rate}/s exceeds Open Library's ~3 req/s")
        live = settings.model_copy(
            update={
                "wikidata_endpoint": settings.wikidata_endpoint or LIVE_WIKIDATA,
                "openlibrary_base": settings.openlibrary_base or LIVE_OPENLIBRARY,
            }
        )
        scope = cache_scope or f"{datetime.now(UTC):%Y.%m.%d}"
        return Sources(kind, HttpWikidata(live, "live", scope), HttpOpenLibrary(live, "live", scope))
    if kind == "mirror":
        if not mirror_url:
            raise BadValue("--source mirror needs the mirror's base URL")
        mirrored = settings.for_mirror(mirror_url)
        scope = cache_scope or "url-" + hashlib.sha256(mirror_url.encode()).hexdigest()[:12]
        return Sources(kind, HttpWikidata(mirrored, "mirror", scope), HttpOpenLibrary(mirrored, "mirror", scope))
    if kind == "dump":
        if snapshot is None:
            raise BadValue("--source dump needs --snapshot DIR")
        from kitab.sources.dump import DumpOpenLibrary, DumpWikidata

        return Sources(kind, DumpWikidata(snapshot, settings), DumpOpenLibrary(snapshot, settings))
    raise BadValue(f"unknown source {kind!r}; expected one of {SOURCES}")


@dataclass(frozen=True)
class SourceSpec:
    """How to open a refresh's sources in any process (a step on a Dask worker opens its own):
    plain, picklable values only."""

    kind: str
    settings_json: str
    snapshot: str | None = None
    mirror_url: str | None = None
    cache_scope: str | None = None

    @classmethod
    def of(
        cls, kind: str, settings: Settings, *, snapshot: Path | None, mirror_url: str | None, cache_scope: str | None
    ) -> SourceSpec:
        return cls(kind, settings.model_dump_json(), str(snapshot) if snapshot else None, mirror_url, cache_scope)

    def open(self) -> Sources:
        settings = Settings.model_validate_json(self.settings_json)
        return open_sources(
            self.kind,
            settings,
            snapshot=Path(self.snapshot) if self.snapshot else None,
            mirror_url=self.mirror_url,
            cache_scope=self.cache_scope,
        )


_OPENED: dict[SourceSpec, Sources] = {}
_OPENED_LOCK = threading.Lock()


def sources_for(spec: SourceSpec) -> Sources:
    """The process's clients for ``spec``, opened once (their rate limits, gates and HTTP
    caches are shared by every step the process runs), closed at exit."""
    with _OPENED_LOCK:
        if spec not in _OPENED:
            _OPENED[spec] = spec.open()
        return _OPENED[spec]


def close_sources() -> None:
    with _OPENED_LOCK:
        for sources in _OPENED.values():
            sources.close()
        _OPENED.clear()


atexit.register(close_sources)


@dataclass
class Origin:
    """Where a refresh's data comes from: the snapshot's id (none for live or for a mirror
    whose snapshot was not named, whose contents we cannot vouch for)."""

    snapshot_id: str | None
