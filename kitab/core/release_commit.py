"""The release commit, in one place: how a refresh's tables become a committed release.

:func:`commit_release` runs the steps in this order, under the warehouse's lock (the ledger
check and the commit must not interleave):

1. validate: a plain release id; no author already released by another release;
2. stage: each table written, in key order and named by its content, into a private staging
   warehouse (``<root>/.staging/<id>``);
3. test: views over exactly the staged files, each showing every row written (so no data test
   passes vacuously), then the data tests (sql/tests) on them;
4. adopt: the tested files moved beside the committed ones, which no reader sees yet;
5. commit: the ledger row written (one rename swaps the whole release in), then its stamps;
6. catalog: kitab.duckdb rebuilt for other tools;
7. sweep: the files the ledger row no longer names removed (once no reader holds them), and
   the staging area.

A failure before step 5 leaves the committed warehouse as it was: a new release stays
invisible, a rebuilt one keeps its old version, readable. A crash after it leaves the new
version committed. Committing again completes (and sweeps) either way.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq

from kitab.core.files import write_via_temp
from kitab.core.ledger import LEDGER_FILE, WrittenTable, validate_release_id
from kitab.core.progress import stages_json
from kitab.core.refs import PUBLISH_MEMORY, TableRef, duck, read_rows
from kitab.core.schemas import to_arrow, view_name
from kitab.core.version import code_version
from kitab.core.views import create_views, run_data_tests
from kitab.core.warehouse import Warehouse


@dataclass(frozen=True)
class ReleasedAuthors:
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


def other_releases(warehouse: Warehouse, release: str) -> ReleasedAuthors:
    """The authors of every committed release but ``release``: rebuilding a release is idempotent."""
    rows = [r for r in warehouse.read_table("released_authors").to_pylist() if r["release"] != release]
    return ReleasedAuthors(
        frozenset(r["qid"] for r in rows),
        frozenset(r["ol_author_key"] for r in rows if r["ol_author_key"]),
        frozenset(r["name_norm"] for r in rows),
    )


def commit_release(
    warehouse: Warehouse,
    release: str,
    tables: dict[str, list],
    run: dict,
    stages: list[dict] | None = None,
) -> dict:
    """Commit ``tables`` (per table: rows, or the Parquet parts (TableRef) the pipeline's
    batches wrote) as release ``release`` of ``warehouse``, by the steps above. ``run``: the
    run's own columns of the ledger row (seed, source, snapshot_id, n_authors_requested,
    requests_made); ``stages``: the refresh's stages before this one (kitab.core.progress
    records), which the row's ``stages`` column keeps with this one (seconds up to the commit,
    rows written). Returns the ledger row, the data tests run and the rows per table."""
    started = time.monotonic()
    validate_release_id(release)
    with warehouse.lock():
        refuse_released_authors(warehouse, release, tables.get("released_authors", []))
        staged = staging(warehouse, release)
        shutil.rmtree(staged.root, ignore_errors=True)
        written = write_staged(staged, release, tables)
        checked = check_staged(warehouse, release, written)
        row = ledger_row(release, run, written, stages, round(time.monotonic() - started, 2))
        # The swap: new files go beside the committed ones (named by content), then one
        # rename of the ledger row switches readers to them; only then are the old ones
        # removed. A crash before the commit leaves the old version readable, after it the
        # new one; committing again completes (and sweeps) either way.
        adopt(warehouse, staged, release, sorted(written))
        commit(warehouse, release, row)
        warehouse.stamp(release)
        warehouse.build_catalog()
        warehouse.sweep(release)
        shutil.rmtree(staged.root, ignore_errors=True)
    return {**row, "data_tests": checked, "row_counts": {n: w.rows for n, w in written.items()}}


def refuse_released_authors(warehouse: Warehouse, release: str, parts: list) -> None:
    """Step 1: no author of ``release`` was released by another release."""
    rows = read_rows(parts) if parts and isinstance(parts[0], TableRef) else parts
    overlap = other_releases(warehouse, release).overlap(rows)
    if overlap:
        raise RuntimeError(f"release {release}: authors already released elsewhere: {overlap}")


def staging(warehouse: Warehouse, release: str) -> Warehouse:
    """A private warehouse where a release is written and tested before it replaces the
    committed one: a failed rebuild leaves the old release as it was."""
    return Warehouse(warehouse.root / ".staging" / validate_release_id(release))


def write_staged(staged: Warehouse, release: str, tables: dict[str, list]) -> dict[str, WrittenTable]:
    """Step 2: every table's file in ``staged``, from its rows or its Parquet parts."""
    return {
        name: staged.write_parts(name, release, parts)
        if parts and isinstance(parts[0], TableRef)
        else staged.write_table(name, release, parts)
        for name, parts in sorted(tables.items())
    }


def check_staged(warehouse: Warehouse, release: str, written: dict[str, WrittenTable]) -> dict[str, int]:
    """Step 3: the views over exactly the staged files, then the data tests; raises (nothing
    committed was touched) or returns the offending rows per test (all 0)."""
    with duck(warehouse.root / ".duckdb_tmp", PUBLISH_MEMORY) as con:
        create_views(con, {name: [w.path] for name, w in written.items()})
        for name, w in written.items():  # the views see every row written, so no test passes vacuously
            seen = con.execute(f'SELECT count(*) FROM "{view_name(name)}"').fetchall()[0][0]
            if seen != w.rows:
                raise RuntimeError(f"release {release}: view {name} shows {seen} of {w.rows} rows written")
        return run_data_tests(con)


def ledger_row(
    release: str, run: dict, written: dict[str, WrittenTable], stages: list[dict] | None, seconds: float
) -> dict:
    """The release's row of the ``releases`` ledger: the run's columns, the code version, and
    per table its rows and sha256 (which name the files that belong to the release)."""
    return {
        "release_id": release,
        "seed": run["seed"],
        "source": run["source"],
        "snapshot_id": run["snapshot_id"],
        "n_authors_requested": run["n_authors_requested"],
        "created_at": datetime.now(UTC).replace(microsecond=0),
        "code_version": code_version(),
        "counts": json.dumps({n: w.rows for n, w in written.items()}, sort_keys=True),
        "checksums": json.dumps({n: w.sha256 for n, w in written.items()}, sort_keys=True),
        "requests_made": run["requests_made"],
        "inputs": None if run.get("inputs") is None else json.dumps(run["inputs"], sort_keys=True),
        "stages": None
        if stages is None
        else stages_json(
            [*stages, {"stage": "publish", "seconds": seconds, "rows": sum(w.rows for w in written.values())}]
        ),
    }


def adopt(warehouse: Warehouse, staged: Warehouse, release: str, tables: list[str]) -> None:
    """Step 4: move a tested release's files from ``staged`` into their partitions, beside the
    committed version's: until the ledger row names them (:func:`commit`) no reader sees
    them, and the committed files stay as they were."""
    for table in tables:
        target = warehouse.partition(table, release)
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted(staged.partition(table, release).glob("part-*.parquet")):
            os.replace(source, target / source.name)


def commit(warehouse: Warehouse, release: str, row: dict) -> Path:
    """Step 5: write the release's ledger row: one rename swaps the whole release in."""
    arrow = to_arrow("releases", [row])
    target = warehouse.partition("releases", release) / LEDGER_FILE
    write_via_temp(target, lambda tmp: pq.write_table(arrow, tmp, compression="zstd"))
    return target
