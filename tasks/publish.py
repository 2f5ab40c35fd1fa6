"""Last stage: write a release's tables, run the data tests on them, then write its ledger
row (the commit point) and the catalog. A failure at any step leaves the release
uncommitted (invisible in every view); rebuilding a release id replaces it whole."""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone

import duckdb

from kitab import __version__
from kitab.env import PROJECT_ROOT
from kitab.warehouse import Warehouse
from tasks.match_openlibrary import name_key


def code_version() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                                text=True, timeout=5, check=True).stdout.strip()
        return f"{__version__}+g{commit}"
    except (OSError, subprocess.SubprocessError):
        return __version__


@dataclass(frozen=True)
class Ledger:
    """Who was released before: by WikiData id, Open Library key and normalised name."""

    qids: frozenset[str] = frozenset()
    ol_keys: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()

    def overlap(self, rows: list[dict]) -> dict[str, list[str]]:
        found = {"qid": sorted({r["qid"] for r in rows} & self.qids),
                 "ol_author_key": sorted({r["ol_author_key"] for r in rows if r["ol_author_key"]} & self.ol_keys),
                 "name_norm": sorted({r["name_norm"] for r in rows} & self.names)}
        return {k: v for k, v in found.items() if v}


def released_authors_rows(release: str, authors: list[dict], kept_qids: set[str]) -> list[dict]:
    return [{"release_id": release, "qid": a["qid"], "ol_author_key": a["ol_author_key"],
             "name_norm": name_key(a["name"])} for a in authors if a["qid"] in kept_qids]


def other_releases(warehouse: Warehouse, release: str) -> Ledger:
    """The ledger, minus the release being (re)built: rebuilding a release is idempotent."""
    rows = [r for r in warehouse.read_table("released_authors").to_pylist() if r["release"] != release]
    return Ledger(frozenset(r["qid"] for r in rows), frozenset(r["ol_author_key"] for r in rows if r["ol_author_key"]),
                  frozenset(r["name_norm"] for r in rows))


def publish(warehouse: Warehouse, release: str, tables: dict[str, list[dict]], *, seed: int, source: str,
            snapshot_id: str | None, n_authors_requested: int, requests_made: int | None) -> dict:
    overlap = other_releases(warehouse, release).overlap(tables.get("released_authors", []))
    if overlap:
        raise RuntimeError(f"release {release}: authors already released elsewhere: {overlap}")
    warehouse.drop_release(release)  # un-commit first: the ledger row goes before any table
    written = {name: warehouse.write_table(name, release, rows) for name, rows in sorted(tables.items())}
    with duckdb.connect() as con:
        warehouse.create_views(con, release=release, pending=release)
        checked = warehouse.run_data_tests(con)  # raises: the release stays uncommitted
    row = {
        "release_id": release, "seed": seed, "source": source, "snapshot_id": snapshot_id,
        "n_authors_requested": n_authors_requested, "created_at": datetime.now(timezone.utc).replace(microsecond=0),
        "code_version": code_version(),
        "counts": json.dumps({n: w.rows for n, w in written.items()}, sort_keys=True),
        "checksums": json.dumps({n: w.sha256 for n, w in written.items()}, sort_keys=True),
        "requests_made": requests_made,
    }
    warehouse.write_table("releases", release, [row])
    warehouse.build_catalog()
    return {**row, "data_tests": checked}
