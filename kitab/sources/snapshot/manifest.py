"""``MANIFEST.json`` for a folder of real public dump files (``kitab snapshot manifest DIR``).

A generated snapshot gets its manifest from the generator; a folder assembled by hand from the
real WikiData and Open Library dumps (see ``docs/snapshot.md``) gets one here. The manifest is
what every consumer keys on: ``snapshot_id`` names the DuckDB scan cache of ``--source dump``,
``created_at`` is the ``fetched_at`` of every answer, ``checksums`` let ``kitab snapshot verify``
catch a changed file.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from kitab.core.files import atomic_file, sha256_file
from kitab.sources.snapshot.format import DATA_FILES, MANIFEST_FILE, SnapshotFormatError, manifest_bytes

SOURCES = {
    "wikidata": {
        "what": "WikiData truthy N-Triples dump (latest-truthy.nt.gz), filtered to the predicates the pipeline "
        "reads (P31, P106, P569, P648, P50, rdfs:label@en, wikibase:sitelinks)",
        "url": "https://dumps.wikimedia.org/wikidatawiki/entities/",
        "license": "CC0 1.0",
    },
    "openlibrary": {
        "what": "Open Library monthly dumps (ol_dump_authors/works/editions_latest.txt.gz), unchanged or filtered "
        "by line",
        "url": "https://openlibrary.org/developers/dumps",
        "license": "CC0 1.0",
    },
    "note": "public dumps, not generated: no id in this snapshot is synthetic",
}


def normalise_as_of(as_of: str) -> str:
    """An ISO date or datetime -> ``YYYY-MM-DDTHH:MM:SSZ`` (UTC; a naive time is taken as UTC)."""
    text = as_of.strip()
    try:
        if len(text) == 10:  # a bare date: midnight UTC
            moment = datetime.combine(date.fromisoformat(text), datetime.min.time(), tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--as-of must be an ISO date or datetime (2024-06-01 or 2024-06-01T12:00:00Z), got {as_of!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def snapshot_digest(checksums: dict[str, str]) -> str:
    """The digest rule of ``kitab.simulate.generator.generate``: sha256 over ``name:checksum`` lines, in DATA_FILES order."""
    return hashlib.sha256("".join(f"{name}:{checksums[name]}\n" for name in DATA_FILES).encode()).hexdigest()


def write_manifest(folder: str | os.PathLike, as_of: str | None = None) -> dict[str, Any]:
    """Checksum the four data files of ``folder`` and write its ``MANIFEST.json`` (atomically).

    ``created_at`` is ``as_of`` when given (the dumps' date), else the newest data file's
    modification time. Returns the manifest. A missing data file is a :class:`SnapshotFormatError`.
    """
    folder = Path(folder)
    missing = [name for name in DATA_FILES if not (folder / name).is_file()]
    if missing:
        raise SnapshotFormatError(f"{folder / missing[0]}: missing; a snapshot folder needs {', '.join(DATA_FILES)}")
    checksums = {name: sha256_file(folder / name) for name in DATA_FILES}
    sizes = {name: (folder / name).stat().st_size for name in DATA_FILES}
    if as_of is None:
        newest = max((folder / name).stat().st_mtime for name in DATA_FILES)
        created_at = datetime.fromtimestamp(newest, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    else:
        created_at = normalise_as_of(as_of)
    manifest = {
        "snapshot_id": f"dump-{snapshot_digest(checksums)[:12]}",
        "created_at": created_at,
        "sources": SOURCES,
        "checksums": checksums,
        # bytes per data file, and their total under "bytes" as in a generated manifest
        "counts": {**sizes, "bytes": sum(sizes.values())},
    }
    with atomic_file(folder / MANIFEST_FILE) as tmp:
        tmp.write_bytes(manifest_bytes(manifest))
    return manifest
