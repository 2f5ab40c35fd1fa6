"""The two external services, each behind one small interface with three implementations:
live (real endpoints), mirror (the same HTTP clients pointed at the local mirror) and dump
(the snapshot files read directly)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kitab.config import DEFAULT_CONTACT, LIVE_OPENLIBRARY, LIVE_WIKIDATA, Settings
from kitab.sources.openlibrary import DumpOpenLibrary, HttpOpenLibrary, OpenLibrary
from kitab.sources.wikidata import DumpWikidata, HttpWikidata, Wikidata

SOURCES = ("live", "mirror", "dump")


@dataclass
class Sources:
    kind: str
    wikidata: Wikidata
    openlibrary: OpenLibrary

    def requests_sent(self) -> int:
        return self.wikidata.counter.sent + self.openlibrary.counter.sent

    def close(self) -> None:
        self.wikidata.close()
        self.openlibrary.close()


def open_sources(kind: str, settings: Settings, *, snapshot: Path | None = None,
                 mirror_url: str | None = None) -> Sources:
    if kind == "live":
        if settings.contact == DEFAULT_CONTACT:
            raise ValueError("--source live needs a real contact for the User-Agent: set KITAB_CONTACT "
                             "(Wikimedia's policy requires it; Open Library asks for it)")
        if settings.ol_rate > 3:
            raise ValueError(f"ol_rate {settings.ol_rate}/s exceeds Open Library's ~3 req/s")
        live = settings.model_copy(update={"wikidata_endpoint": settings.wikidata_endpoint or LIVE_WIKIDATA,
                                           "openlibrary_base": settings.openlibrary_base or LIVE_OPENLIBRARY})
        return Sources(kind, HttpWikidata(live, "live"), HttpOpenLibrary(live, "live"))
    if kind == "mirror":
        if not mirror_url:
            raise ValueError("--source mirror needs the mirror's base URL")
        mirrored = settings.for_mirror(mirror_url)
        return Sources(kind, HttpWikidata(mirrored, "mirror"), HttpOpenLibrary(mirrored, "mirror"))
    if kind == "dump":
        if snapshot is None:
            raise ValueError("--source dump needs --snapshot DIR")
        return Sources(kind, DumpWikidata(snapshot), DumpOpenLibrary(snapshot, settings))
    raise ValueError(f"unknown source {kind!r}; expected one of {SOURCES}")
