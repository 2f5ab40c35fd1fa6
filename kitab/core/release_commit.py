"""The release commit, in one place: how a refresh's tables become a committed release.

:func:`commit_release` runs the steps in this order, under the warehouse's lock (the ledger
check and the commit must not interleave):

1. validate: a plain release id; no author already released by another release;
2. stage: each table written, in key order and named by its content, into a private staging
   warehouse (``<root>/.staging/<id>``): the tables at hand first, then, while a table still
   being computed elsewhere (the claims draw, in a child process) is awaited, the derived
   tables' part that reads none of those (:class:`Derive`), then the awaited tables, then the
   rest of the derived ones; one table at a time;
3. test: the data tests (sql/tests) over exactly the staged files, each as soon as the tables it
   reads are staged, in a thread beside step 2 (a first round while the awaited tables are
   computed, a second beside the late derived tables); then views over all of them, each showing
   every row written (so no data test passes vacuously), and the tests left;
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

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq

from kitab.core.errors import BadValue
from kitab.core.files import write_via_temp
from kitab.core.ledger import LEDGER_FILE, UNSEALED, FileCheck, WrittenTable, sealed, validate_release_id
from kitab.core.progress import stages_json
from kitab.core.refs import PUBLISH_MEMORY, TableRef, duck, read_rows
from kitab.core.row_digest import DIGESTS
from kitab.core.schemas import to_arrow, view_name
from kitab.core.version import code_version
from kitab.core.views import create_views, run_data_tests, tests_ready
from kitab.core.warehouse import Warehouse


@dataclass(frozen=True)
class Derive:
    """Tables computed from the staged release (the validity battery's ``baselines``,
    kitab/release/validity), in two parts so the first overlaps a table still being computed:
    ``early(con)`` reads none of the awaited tables (their views are empty then) and returns
    anything; ``late(con, early's value)`` reads every table and returns the derived tables
    (name -> rows). ``con``: a DuckDB connection with the views over exactly the staged files."""

    late: Callable[[duckdb.DuckDBPyConnection, Any], dict[str, list[dict]]]
    early: Callable[[duckdb.DuckDBPyConnection], Any] | None = None
    # what the caller reports of the release (not a table, not in the ledger; commit_release
    # returns it as ``facts``), read after ``early`` from the tables at hand, like it
    facts: Callable[[duckdb.DuckDBPyConnection], dict] | None = None


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


def other_releases(warehouse: Warehouse, release: str, among: list[str] | None = None) -> ReleasedAuthors:
    """The authors of the committed releases ``among`` (default: all) but ``release``. A
    refresh passes the releases committed before its release was first made (the ledger's
    ``excluded_releases``), so a rebuild does not depend on what was published since."""
    committed = warehouse.committed_releases()
    releases = [r for r in (committed if among is None else among) if r != release and r in committed]
    if not releases:
        return ReleasedAuthors(frozenset(), frozenset(), frozenset())
    # column by column (a release of 100,000 authors is three lists of strings, not 100,000 dicts)
    table = warehouse.read_table("released_authors", releases)
    return ReleasedAuthors(
        frozenset(table.column("qid").to_pylist()),
        frozenset(k for k in table.column("ol_author_key").to_pylist() if k),
        frozenset(table.column("name_norm").to_pylist()),
    )


def commit_release(
    warehouse: Warehouse,
    release: str,
    tables: dict[str, list],
    run: dict,
    stages: list[dict] | None = None,
    *,
    replace: bool = False,
    derive: Derive | None = None,
) -> dict:
    """Commit ``tables`` (per table: rows, or the Parquet parts (TableRef) the pipeline's
    batches wrote, or a function returning either once it is ready: an awaited table, staged
    after the others) as release ``release`` of ``warehouse``, by the steps above. An awaited
    table that fails raises here, before anything is committed. ``run``: the
    run's own columns of the ledger row (seed, source, snapshot_id, n_authors_requested,
    requests_made); ``stages``: the refresh's stages before this one (kitab.core.progress
    records), which the row's ``stages`` column keeps with this one (seconds up to the commit,
    rows written). Returns the ledger row, the data tests run and the rows per table.

    A release committed before is a fixed thing: if the rebuilt tables equal the committed
    ones (PROVENANCE_TABLES aside: their fetch times), the committed version stands untouched
    (``unchanged`` in the result); if they differ, the rebuild is refused (BadValue naming the
    tables) unless ``replace``, and the replaced version's row is kept in the new row's
    ``history``.

    ``derive``: tables computed from the staged release (:class:`Derive`), staged and tested
    with it."""
    started = time.monotonic()
    validate_release_id(release)
    with warehouse.lock():
        refuse_released_authors(warehouse, release, tables.get("released_authors", []))
        staged = staging(warehouse, release)
        shutil.rmtree(staged.root, ignore_errors=True)
        written, done, facts = stage_and_test(warehouse, staged, release, tables, derive)
        checked = check_staged(warehouse, release, written, done)
        existing = warehouse.ledger_row(release) if release in warehouse.committed_releases() else None
        if existing is not None:
            changed = changed_tables(existing, written)
            if not changed:
                shutil.rmtree(staged.root, ignore_errors=True)
                # the committed version stands; an earlier publish that crashed after its commit
                # may have left the old version's files: sweep them, as that publish would have
                warehouse.sweep(release)
                counts = json.loads(existing["counts"])
                return {**existing, "unchanged": True, "data_tests": checked, "row_counts": counts, "facts": facts}
            if not replace:
                shutil.rmtree(staged.root, ignore_errors=True)
                raise BadValue(
                    f"release {release} is committed and this rebuild would change its {', '.join(changed)} "
                    "(other inputs or code); nothing changed. Pass --replace to replace it (the old "
                    "version stays in `kitab releases --history`), or choose another --release"
                )
        row = ledger_row(release, run, written, stages, round(time.monotonic() - started, 2))
        row["history"] = history_with(existing)
        if existing is not None:  # what this version changes of the one it replaces, and why
            row["changes"] = json.dumps(rebuild_changes(warehouse, release, existing, written, run), sort_keys=True)
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
    return {**row, "data_tests": checked, "row_counts": {n: w.rows for n, w in written.items()}, "facts": facts}


# Tables whose rows carry when they were fetched (``fetched_at``): a rebuild that differs only
# in them is the same release (docs/releases.md).
PROVENANCE_TABLES = ("authors", "works_raw", "book_records")


def changed_tables(existing: dict, written: dict[str, WrittenTable]) -> list[str]:
    """The tables (PROVENANCE_TABLES aside) whose rebuilt file differs from the committed one."""
    old = json.loads(existing["checksums"])
    names = sorted(set(old) | set(written))
    return [
        n for n in names if n not in PROVENANCE_TABLES and old.get(n) != (written[n].sha256 if n in written else None)
    ]


def rebuild_changes(
    warehouse: Warehouse, release: str, existing: dict, written: dict[str, WrittenTable], run: dict
) -> dict:
    """A replacing version against the one it replaces (the ledger's ``changes``): ``because``,
    the causes the rebuild check named (``run["because"]``; else the code version, else "other
    inputs"), and per changed table the rows ``removed`` and ``added`` (whole rows compared)."""
    because = list(run.get("because") or [])
    if not because:
        before, now = existing.get("code_version"), code_version()
        because = [f"code {before} -> {now}" if before != now else "other inputs"]
    sums, tables = json.loads(existing["checksums"]), {}
    for name in changed_tables(existing, written):
        old = warehouse.committed_file(name, release, sums[name]) if name in sums else None
        tables[name] = row_changes(old, written[name].path if name in written else None)
    return {"because": because, "tables": tables}


def row_changes(old: Path | None, new: Path | None) -> dict[str, int]:
    """Rows of the Parquet file ``old`` not in ``new`` (``removed``) and the reverse (``added``),
    as multisets of whole rows (None: no such file)."""
    with duck() as con:
        if old is None or new is None:
            only = old or new
            n = con.execute("SELECT count(*) FROM read_parquet(?)", [str(only)]).fetchall()[0][0] if only else 0
            return {"removed": n if new is None else 0, "added": n if old is None else 0}
        count = "SELECT count(*) FROM (SELECT * FROM read_parquet(?) EXCEPT ALL SELECT * FROM read_parquet(?))"
        return {
            "removed": con.execute(count, [str(old), str(new)]).fetchall()[0][0],
            "added": con.execute(count, [str(new), str(old)]).fetchall()[0][0],
        }


def history_with(existing: dict | None) -> str | None:
    """The ledger's ``history`` of a release replacing ``existing`` (None: a new release):
    every earlier version, oldest first, each without its own history."""
    if existing is None:
        return None
    earlier = json.loads(existing.get("history") or "[]")
    version = {
        k: (v.isoformat() if isinstance(v, datetime) else v)
        for k, v in existing.items()
        if k not in ("history", "stages", "release_id", DIGESTS)  # (the new row's digests cover it)
    }
    version["replaced_at"] = datetime.now(UTC).replace(microsecond=0).isoformat()
    return json.dumps([*earlier, version], sort_keys=True, default=str)


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


# Tables are staged one at a time: two at once (threads; the sort and Parquet writing are
# Arrow's C++) made publish no faster at 10,000 authors (24.0 s either way) and put two sorts'
# memory beside the claims draw's child (the tree 1.44 -> 1.56 GiB; docs/scale.md). The data
# tests run in two rounds: those that read only the tables at hand while the draw runs (at
# 100,000 authors ~50 CPU-s that otherwise came after it, the child's end to the commit), under a
# lower memory limit beside the child's memory (a test that needs more waits for the second
# round); the rest beside the late derived tables' Python (the claim baselines).
EARLY_TESTS_MEMORY = "1GB"


def stage_and_test(
    warehouse: Warehouse, staged: Warehouse, release: str, tables: dict[str, list], derive: Derive | None
) -> tuple[dict[str, WrittenTable], dict[str, list[tuple]], dict]:
    """Steps 2 and 3 as far as they go before every table is staged: the tables at hand staged,
    the derived part that reads only them (``early``, then ``facts``: while the awaited tables are
    still being computed) with the data tests that read only those tables beside it, the awaited
    ones waited for and staged, then, while the late derived ones are computed here, the data
    tests left that read only the tables staged so far; the tests in a thread of their own (each
    test run once, over the same files the final check's views read: kitab.core.views.tests_ready).
    Returns the staged tables (name order), the tests run with their offending rows and the facts
    (``Derive.facts``; {} without)."""
    awaited = {name: parts for name, parts in tables.items() if callable(parts)}
    written = write_staged(staged, release, {n: p for n, p in tables.items() if n not in awaited})
    done: dict[str, list[tuple]] = {}
    facts: dict = {}
    with ThreadPoolExecutor(1, thread_name_prefix="data-tests") as beside:
        first = None
        if awaited and derive is not None:  # the first round, while the awaited tables are computed
            first = beside.submit(_tests_ready, warehouse, release, dict(written), done, EARLY_TESTS_MEMORY, True)
        early = None
        if derive is not None and (derive.early is not None or derive.facts is not None):
            with staged_views(warehouse, written) as con:
                early = derive.early(con) if derive.early is not None else None
                facts = derive.facts(con) if derive.facts is not None else {}
        written.update(write_staged(staged, release, {name: wait() for name, wait in awaited.items()}))
        if derive is not None:
            tests = beside.submit(_tests_ready, warehouse, release, dict(written), done, PUBLISH_MEMORY)
            with staged_views(warehouse, written) as con:
                derived = derive.late(con, early)
            for round_ in (first, tests):
                if round_ is not None:
                    round_.result()  # (a test's error raises here)
            written.update(write_staged(staged, release, derived))
    return dict(sorted(written.items())), done, facts


def _tests_ready(
    warehouse: Warehouse, release: str, written: dict[str, WrittenTable], done: dict, memory: str, defer: bool = False
) -> None:
    with duck(warehouse.root / ".duckdb_tmp", memory) as con:
        tests_ready(con, {name: [w.path] for name, w in written.items()}, release, done, defer_out_of_memory=defer)


def write_staged(staged: Warehouse, release: str, tables: dict[str, list]) -> dict[str, WrittenTable]:
    """Step 2: every table's file in ``staged``, from its rows or its Parquet parts, one table
    at a time (two at once were tried: see the note above stage_and_test)."""
    return {
        name: staged.write_parts(name, release, parts)
        if parts and isinstance(parts[0], TableRef)
        else staged.write_table(name, release, parts)
        for name, parts in sorted(tables.items())
    }


@contextlib.contextmanager
def staged_views(warehouse: Warehouse, written: dict[str, WrittenTable]) -> Iterator[duckdb.DuckDBPyConnection]:
    """A DuckDB connection with the views over exactly the staged files."""
    with duck(warehouse.root / ".duckdb_tmp", PUBLISH_MEMORY) as con:
        create_views(con, {name: [w.path] for name, w in written.items()})
        yield con


def check_staged(
    warehouse: Warehouse, release: str, written: dict[str, WrittenTable], done: dict[str, list[tuple]] | None = None
) -> dict[str, int]:
    """Step 3: the views over exactly the staged files, then the data tests (those not in
    ``done``, the ones already run over the same files); raises (nothing committed was
    touched) or returns the offending rows per test (all 0)."""
    with staged_views(warehouse, written) as con:
        for name, w in written.items():  # the views see every row written, so no test passes vacuously
            seen = con.execute(f'SELECT count(*) FROM "{view_name(name)}"').fetchall()[0][0]
            if seen != w.rows:
                raise RuntimeError(f"release {release}: view {name} shows {seen} of {w.rows} rows written")
        return run_data_tests(con, done)


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
        "config": run.get("config"),
        "excluded_releases": run.get("excluded_releases"),
        "review_labels": run.get("review_labels"),
        "history": None,
        "changes": None,
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
    """Step 5: write the release's ledger row, with its digests (ledger.sealed: every write of a
    row seals it, so a later edit of any field is told): one rename swaps the whole release in."""
    arrow = to_arrow("releases", [sealed(row)])
    target = warehouse.partition("releases", release) / LEDGER_FILE
    write_via_temp(target, lambda tmp: pq.write_table(arrow, tmp, compression="zstd"))
    return target


def seal_rows(warehouse: Warehouse, releases: list[str] | None = None) -> list[str]:
    """``kitab verify --seal``: write the digests of the unsealed ledger rows of ``releases``
    (default: every committed release), rows written before rows carried them. Each only once
    every file it names matches its sha256 (hashed in full) and its row count, so its
    ``checksums`` and ``counts`` are checked; its other fields (config, inputs, ...) cannot be
    told from an edit, and are sealed as they are. A problem refuses (KitabError) before any
    row is sealed. Returns the releases sealed."""
    with warehouse.lock():
        chosen = warehouse.committed_releases() if releases is None else releases
        for release in chosen:
            warehouse.require_release(release)
        todo = [r for r in chosen if warehouse.row_problem(r) == UNSEALED]
        for release in todo:
            bad = [c for c in warehouse.check_files([release]) if c.problem and c.problem != UNSEALED]
            row = warehouse.ledger_row(release, unsealed="allow")
            counts = json.loads(row["counts"])
            for table, sha in sorted(json.loads(row["checksums"]).items()):
                path = warehouse.committed_file(table, release, sha)
                if not bad and (found := pq.ParquetFile(path).metadata.num_rows) != counts.get(table):
                    bad.append(FileCheck(release, table, path, f"{found} rows, ledger {counts.get(table)}"))
            if bad:
                raise BadValue(
                    f"release {release} is not sealed: {bad[0].table}: {bad[0].problem}; no ledger row was "
                    "sealed (run `kitab verify`)"
                )
        for release in todo:
            commit(warehouse, release, warehouse.ledger_row(release, unsealed="allow"))
    return todo
