"""``--source mirror``: the same HTTP clients as live, pointed at a mirror's URL (the local
mirror of kitab.simulate serving a snapshot, or any server that answers like the services)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kitab.core.config import Settings
from kitab.core.errors import BadValue
from kitab.core.params import RefreshParams
from kitab.sources.kinds.base import SourceKind
from kitab.sources.openlibrary import HttpOpenLibrary
from kitab.sources.services import Sources
from kitab.sources.wikidata import HttpWikidata


def _url_scope(mirror_url: str) -> str:
    return "url-" + hashlib.sha256(mirror_url.encode()).hexdigest()[:12]


class Mirror(SourceKind):
    name = "mirror"
    reads_mirror_url = True

    def check_inputs(self, params: RefreshParams) -> None:
        """The snapshot a mirror of the refresh's own will serve, file by file."""
        if not params.mirror_url:
            from kitab.sources.snapshot.format import check_snapshot

            check_snapshot(params.snapshot_dir())

    def snapshot(self, params: RefreshParams) -> Path | None:
        """The snapshot named with the mirror (a mirror's URL alone: its contents are unknown)."""
        return Path(params.snapshot) if params.snapshot else None

    def starts_mirror(self, params: RefreshParams) -> bool:
        return not params.mirror_url

    def check_origin(self, *, snapshot: Path | None, mirror_url: str | None) -> None:
        if not mirror_url:
            raise BadValue("source mirror needs the mirror's URL (--mirror-url; `kitab mirror serve` runs one)")

    def cache_scope(self, *, snapshot_id: str | None, mirror_url: str | None, release: str) -> str | None:
        return snapshot_id or _url_scope(mirror_url)

    def open(
        self, settings: Settings, *, snapshot: Path | None, mirror_url: str | None, cache_scope: str | None
    ) -> Sources:
        if not mirror_url:
            raise BadValue("--source mirror needs the mirror's base URL")
        mirrored = settings.for_mirror(mirror_url)
        scope = cache_scope or _url_scope(mirror_url)
        return Sources(self.name, HttpWikidata(mirrored, "mirror", scope), HttpOpenLibrary(mirrored, "mirror", scope))
