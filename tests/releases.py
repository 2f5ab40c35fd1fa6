"""A release built from the bundled dump the way most test modules start: the pipeline the flow
runs, called directly (dump source: the snapshot's files, no HTTP, no Prefect)."""

from __future__ import annotations

from pathlib import Path

from kitab.core.env import BUNDLED_SNAPSHOT


def dump_release(root: Path, *, authors: int, seed: int, release: str) -> Path:
    """Publish ``release`` of ``authors`` authors drawn with ``seed`` into the warehouse ``root``."""
    from kitab.app.runs import run_refresh

    run_refresh(
        source="dump",
        snapshot=BUNDLED_SNAPSHOT,
        authors=authors,
        seed=seed,
        release=release,
        warehouse=root,
        direct=True,
    )
    return root
