"""What the composition asks a source kind (flows/pipeline.py, kitab/app/runs.py, the CLI),
with the answers most kinds give; each kind (live.py, mirror.py, dump.py beside this) answers
the rest. The composition never compares a source's name: it asks the kind."""

from __future__ import annotations

from pathlib import Path

from kitab.core.config import Settings
from kitab.core.params import RefreshParams
from kitab.sources.services import Sources


class SourceKind:
    """One way of reading the services (``--source NAME``), registered in kitab/sources/kinds/."""

    name: str
    # The progress counts its requests as they go (a kind that sends none has nothing to count).
    sends_requests: bool = True
    # Collecting from it is CPU work (one process per core) rather than waiting on a service
    # (threads: one client per process keeps the services' rate limits).
    collect_is_cpu_work: bool = False
    # Opening its clients is cheap, so the composition opens them once before anything else
    # to fail early and clearly (a kind whose opening scans files opens in its steps only).
    opens_cheaply: bool = True
    # Its clients read the snapshot's files themselves: the snapshot travels in the spec
    # every step reopens them from.
    reads_snapshot_files: bool = False
    # It reads the services through a mirror's URL (--mirror-url).
    reads_mirror_url: bool = False
    # It reads the live services themselves (a release's card says so instead of naming a snapshot).
    reads_live_services: bool = False

    def check_inputs(self, params: RefreshParams) -> None:
        """What can be checked before a refresh starts, cheaply and without writing anything
        (kitab.core.errors.BadValue, kitab.sources.snapshot.format.SnapshotFormatError)."""

    def snapshot(self, params: RefreshParams) -> Path | None:
        """The snapshot the data comes from, if this kind can vouch for it (its id is the
        release's origin); None for none."""
        return None

    def starts_mirror(self, params: RefreshParams) -> bool:
        """Whether a refresh must serve the snapshot on a mirror of its own for its duration
        (kitab.app.runs does, and gives the pipeline the mirror's URL)."""
        return False

    def check_origin(self, *, snapshot: Path | None, mirror_url: str | None) -> None:
        """BadValue if what opening the clients needs is missing."""

    def cache_scope(self, *, snapshot_id: str | None, mirror_url: str | None, release: str) -> str | None:
        """The name of the HTTP caches: the same scope replays earlier answers with no request."""
        return snapshot_id

    def open(
        self, settings: Settings, *, snapshot: Path | None, mirror_url: str | None, cache_scope: str | None
    ) -> Sources:
        """The clients of every service (kitab.sources.services.Sources)."""
        raise NotImplementedError
