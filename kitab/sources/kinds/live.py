"""``--source live``: the real services (WikiData's query service, Open Library's API) over HTTP."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kitab.core.config import DEFAULT_CONTACT, LIVE_OPENLIBRARY, LIVE_WIKIDATA, Settings
from kitab.core.errors import BadValue
from kitab.core.params import RefreshParams
from kitab.sources.kinds.base import SourceKind
from kitab.sources.openlibrary import HttpOpenLibrary
from kitab.sources.services import Sources
from kitab.sources.wikidata import HttpWikidata


class Live(SourceKind):
    name = "live"
    reads_live_services = True

    def check_inputs(self, params: RefreshParams) -> None:
        """A contact for the User-Agent and host names that resolve (kitab.sources.preflight)."""
        from kitab.sources.preflight import check_live

        check_live(Settings(**({"warehouse": params.warehouse} if params.warehouse else {})))

    def cache_scope(self, *, snapshot_id: str | None, mirror_url: str | None, release: str) -> str | None:
        return release  # each release sees today's services

    def open(
        self, settings: Settings, *, snapshot: Path | None, mirror_url: str | None, cache_scope: str | None
    ) -> Sources:
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
        return Sources(self.name, HttpWikidata(live, "live", scope), HttpOpenLibrary(live, "live", scope))
