"""Running the refresh flow from Python (the CLI, the demo and tests)."""
from __future__ import annotations

from pathlib import Path


def run_refresh(*, source: str, snapshot: Path, authors: int, seed: int | None, release: str | None,
                warehouse: Path, mirror_url: str | None = None) -> dict:
    from flows.refresh import refresh

    return refresh(source=source, snapshot=str(snapshot), authors=authors, seed=seed, release=release,
                   warehouse=str(warehouse), mirror_url=mirror_url)
