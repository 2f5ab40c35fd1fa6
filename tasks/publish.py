"""Last stage: write a release's tables, run the data tests on them, then write its ledger
row (the commit point) and the catalog. A failure at any step leaves the release as it was
committed before (invisible if it is new); rebuilding a release id swaps it whole, in one
rename (kitab.core.warehouse)."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from kitab.core.progress import stages_json
from kitab.core.refs import PUBLISH_MEMORY, TableRef, duck, read_rows
from kitab.core.schemas import view_name
from kitab.core.version import code_version
from kitab.core.warehouse import Warehouse, validate_release_id
from tasks.match_openlibrary import name_key


@dataclass(frozen=True)
class Ledger:
    """Who was released before: by WikiData id, Open Library key and normalised name."""

    qids: frozenset[str] = frozenset()
    ol_keys: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()

    def overlap(self, rows: list[dict]) -> dict[str, list[str]]:
        found = {
            "qid": sorted({r["qid"] for r in rows} & self.qids),
            "ol_author_key": sorted({r["ol_author_key"] for r in rows if r["ol_author_key"]} & self.ol_keys),
            "name_norm": sorted({r["name_norm"] for r in rows} & self.names),
        }
        return {k: v for k, v in found.items() if v}


def released_authors_rows(release: str, authors: list[dict], kept_qids: set[str]) -> list[dict]:
    return [
        {"release_id": release, "qid": a["qid"], "ol_author_key": a["ol_author_key"], "name_norm": name_key(a["name"])}
        for a in authors
        if a["qid"] in kept_qids
    ]


def other_releases(warehouse: Warehouse, release: str) -> Ledger:
    """The ledger, minus the release being (re)built: rebuilding a release is idempotent."""
    rows = [r for r in warehouse.read_table("released_authors").to_pylist() if r["release"] != release]
    return Ledger(
        frozenset(r["qid"] for r in rows),
        frozenset(r["ol_author_key"] for r in rows if r["ol_author_key"]),
        frozenset(r["name_norm"] for r in rows),
    )


def publish(
    warehouse: Warehouse,
    release: str,
    tables: dict[str, list],
    *,
    seed: int,
    source: str,
    snapshot_id: str | None,
    n_authors_requested: int,
    requests_made: int | None,
    stages: list[dict] | None = None,
) -> dict:
    """Write ``tables`` (per table: rows, or the Parquet parts the pipeline's batches wrote)
    as release ``release`` in a staging area, test them there, then move
    them into place beside the committed files and write the releases row last. A failure
    before that row leaves the committed warehouse as it was (a rebuilt release keeps its
    old version, readable, until the new one is committed); publishing again completes it.

    ``stages``: the refresh's stages before this one (kitab.core.progress records); the ledger's
    ``stages`` column keeps them and this one (seconds up to the commit, rows written)."""
    started = time.monotonic()
    validate_release_id(release)
    with warehouse.lock():
        overlap = other_releases(warehouse, release).overlap(_rows(tables.get("released_authors", [])))
        if overlap:
            raise RuntimeError(f"release {release}: authors already released elsewhere: {overlap}")
        staged = warehouse.staging(release)
        shutil.rmtree(staged.root, ignore_errors=True)
        written = {
            name: staged.write_parts(name, release, parts)
            if parts and isinstance(parts[0], TableRef)
            else staged.write_table(name, release, parts)
            for name, parts in sorted(tables.items())
        }
        with duck(warehouse.root / ".duckdb_tmp", PUBLISH_MEMORY) as con:
            staged.create_views(con, {name: [w.path] for name, w in written.items()})
            for name, w in written.items():  # the views see every row written, so no test passes vacuously
                seen = con.execute(f'SELECT count(*) FROM "{view_name(name)}"').fetchall()[0][0]
                if seen != w.rows:
                    raise RuntimeError(f"release {release}: view {name} shows {seen} of {w.rows} rows written")
            checked = staged.run_data_tests(con)  # raises: nothing committed was touched
        row = {
            "release_id": release,
            "seed": seed,
            "source": source,
            "snapshot_id": snapshot_id,
            "n_authors_requested": n_authors_requested,
            "created_at": datetime.now(UTC).replace(microsecond=0),
            "code_version": code_version(),
            "counts": json.dumps({n: w.rows for n, w in written.items()}, sort_keys=True),
            "checksums": json.dumps({n: w.sha256 for n, w in written.items()}, sort_keys=True),
            "requests_made": requests_made,
            "stages": None
            if stages is None
            else stages_json(
                [
                    *stages,
                    {
                        "stage": "publish",
                        "seconds": round(time.monotonic() - started, 2),
                        "rows": sum(w.rows for w in written.values()),
                    },
                ]
            ),
        }
        # The swap: new files go beside the committed ones (named by content), then one
        # rename of the ledger row switches readers to them; only then are the old ones
        # removed. A crash before the commit leaves the old version readable, after it the
        # new one; publishing again completes (and sweeps) either way.
        warehouse.adopt(staged, release, sorted(written))
        warehouse.commit(release, row)
        warehouse.stamp(release)
        warehouse.build_catalog()
        warehouse.sweep(release)
        shutil.rmtree(staged.root, ignore_errors=True)
    return {**row, "data_tests": checked, "row_counts": {n: w.rows for n, w in written.items()}}


def _rows(parts: list) -> list[dict]:
    return read_rows(parts) if parts and isinstance(parts[0], TableRef) else parts
