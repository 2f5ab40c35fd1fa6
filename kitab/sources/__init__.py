"""The two external services, each behind one small protocol (wikidata.py, openlibrary.py),
read by one of the source kinds (kinds/: live, the real endpoints; mirror, the same HTTP
clients pointed at a mirror; dump, the snapshot's files read directly). This face names what
the other layers use."""

from __future__ import annotations

from kitab.sources.kinds import SOURCE_KINDS, source_kind
from kitab.sources.services import Sources
from kitab.sources.spec import Origin, SourceSpec, close_sources, open_sources, sources_for

__all__ = [
    "SOURCE_KINDS",
    "Origin",
    "SourceSpec",
    "Sources",
    "close_sources",
    "open_sources",
    "source_kind",
    "sources_for",
]
