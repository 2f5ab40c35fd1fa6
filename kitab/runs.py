"""Starting a refresh from the command line: resolve the snapshot, start an in-process
mirror when the source is ``mirror`` and none is given, and run the flow."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def mirror_for(source: str, snapshot: Path, mirror_url: str | None) -> Iterator[tuple[str | None, object]]:
    """Yields (mirror_url, mirror or None): a fresh local mirror unless one is given."""
    if source != "mirror" or mirror_url:
        yield mirror_url, None
        return
    from kitab.mirror.server import Mirror

    with Mirror(snapshot) as mirror:
        yield mirror.url, mirror


def snapshot_id_of(source: str, snapshot: Path, mirror_url: str | None) -> str | None:
    if source == "live":
        return None
    if source == "mirror" and mirror_url:
        return None  # someone else's mirror: we cannot vouch for what it serves
    from kitab.snapshot.format import read_manifest

    return read_manifest(snapshot)["snapshot_id"]


def run_refresh(*, source: str, snapshot: Path, authors: int, seed: int | None, release: str | None,
                warehouse: Path, mirror_url: str | None = None) -> dict:
    from flows.refresh import refresh

    snapshot_id = snapshot_id_of(source, snapshot, mirror_url)
    with mirror_for(source, snapshot, mirror_url) as (url, mirror):
        summary = refresh(source=source, snapshot=str(snapshot), authors=authors, seed=seed, release=release,
                          warehouse=str(warehouse), mirror_url=url, snapshot_id=snapshot_id)
        if mirror is not None:
            summary["requests_made"] = mirror.request_count()
    return summary
