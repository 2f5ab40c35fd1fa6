"""``--source dump``: the snapshot's dump files read directly, through DuckDB (kitab/sources/dump/)."""

from __future__ import annotations

from pathlib import Path

from kitab.core.config import Settings
from kitab.core.errors import BadValue
from kitab.core.params import RefreshParams
from kitab.sources.kinds.base import SourceKind
from kitab.sources.services import Sources


class Dump(SourceKind):
    name = "dump"
    sends_requests = False  # no request leaves the process
    # DuckDB lookups, cleaning, dedup: one process per core
    collect_is_cpu_work = True
    opens_cheaply = False  # opening scans the snapshot once (minutes at dump scale): in the steps
    reads_snapshot_files = True

    def check_inputs(self, params: RefreshParams) -> None:
        from kitab.sources.snapshot.format import check_snapshot

        check_snapshot(params.snapshot_dir())

    def snapshot(self, params: RefreshParams) -> Path | None:
        return params.snapshot_dir()

    def check_origin(self, *, snapshot: Path | None, mirror_url: str | None) -> None:
        if snapshot is None:
            raise BadValue("--source dump needs --snapshot DIR")

    def open(
        self, settings: Settings, *, snapshot: Path | None, mirror_url: str | None, cache_scope: str | None
    ) -> Sources:
        self.check_origin(snapshot=snapshot, mirror_url=mirror_url)
        from kitab.sources.dump.openlibrary import DumpOpenLibrary  # duckdb, numpy: only when read
        from kitab.sources.dump.wikidata import DumpWikidata

        return Sources(self.name, DumpWikidata(snapshot, settings), DumpOpenLibrary(snapshot, settings))
