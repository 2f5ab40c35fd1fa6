"""A refresh's sources as plain values any process can open (a step on a Dask worker opens its
own), the clients each process opened once, and where the data comes from."""

from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass, field
from pathlib import Path

from kitab.core.config import Settings
from kitab.sources.kinds import source_kind
from kitab.sources.services import Sources


def open_sources(
    kind: str,
    settings: Settings,
    *,
    snapshot: Path | None = None,
    mirror_url: str | None = None,
    cache_scope: str | None = None,
) -> Sources:
    """The clients of the source kind named ``kind`` (kitab.sources.kinds). ``cache_scope``
    names the HTTP cache: the same scope replays earlier answers with no request. Callers pass
    the snapshot id (mirror) or the release id (live, so each new release sees today's
    services); the defaults are the mirror's URL and the UTC date."""
    return source_kind(kind).open(settings, snapshot=snapshot, mirror_url=mirror_url, cache_scope=cache_scope)


@dataclass(frozen=True)
class SourceSpec:
    """How to open a refresh's sources in any process (a step on a Dask worker opens its own):
    plain, picklable values only; ``kind`` is the source kind's registered name."""

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
    # Each input the release is made from (the releases ledger's ``inputs``): the snapshot's
    # dump files (kitab.sources.snapshot.format.snapshot_inputs), or the services read, dated.
    inputs: list[dict] = field(default_factory=list)

    @classmethod
    def of(cls, source: str, settings: Settings, *, snapshot: Path | None, mirror_url: str | None) -> Origin:
        from datetime import UTC, datetime

        from kitab.sources.snapshot.format import read_manifest, snapshot_inputs

        if snapshot is not None:
            return cls(read_manifest(snapshot)["snapshot_id"], snapshot_inputs(snapshot))
        today = datetime.now(UTC).strftime("%Y-%m-%d")
        if source_kind(source).reads_live_services:
            services = [
                ("WikiData Query Service", settings.wikidata_endpoint),
                ("Open Library", settings.openlibrary_base),
            ]
        else:  # a mirror whose snapshot was not named: its URL is all we know
            services = [("kitab mirror (snapshot not named)", mirror_url)]
        return cls(None, [{"service": name, "url": url, "date": today} for name, url in services])
