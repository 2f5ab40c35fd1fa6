"""The warehouse can't be damaged through `kitab sql` and never disappears: SQL is read-only
(DuckDB's own settings plus a statement check), `kitab verify` checks every committed file
against the ledger, reads warn on a changed file, and rebuilding a release swaps it
atomically (a crash at any point of the swap leaves the old or the new version readable)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

import kitab.core.ledger as ledger_module
import kitab.core.release_commit as release_commit
from kitab.app.cli import app
from kitab.core.files import sha256_file
from kitab.core.warehouse import LEDGER_FILE, Warehouse
from tasks.publish import publish
from tests.test_warehouse import tables

runner = CliRunner()


def put(wh: Warehouse, release: str, qids: list[str], replace: bool = True) -> dict:
    """Commit ``qids`` as ``release``; a rebuild that changes it replaces it (issue 30: these tests
    are about the swap itself, which only an allowed replacement reaches)."""
    return publish(
        wh,
        release,
        tables(qids),
        seed=1,
        source="dump",
        snapshot_id="s",
        n_authors_requested=len(qids),
        requests_made=0,
        replace=replace,
    )


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its sha256 (the lock file aside: it is opened, never written)."""
    return {
        p.relative_to(root).as_posix(): sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def authors(wh: Warehouse, release: str | None = None) -> int:
    with wh.connect(release=release) as con:
        return con.execute("select count(*) from authors").fetchone()[0]


@pytest.fixture
def wh(tmp_path) -> Warehouse:
    wh = Warehouse(tmp_path / "wh")
    put(wh, "k1", ["Q1", "Q2"])
    put(wh, "k2", ["Q3"])
    return wh


# -- kitab sql is read-only --------------------------------------------------------------
def refused_statements(wh: Warehouse, outside: Path) -> list[str]:
    committed = wh.committed_files("k1")["authors"].as_posix()
    ledger = (wh.partition("releases", "k1") / LEDGER_FILE).as_posix()
    return [
        f"copy (select * from authors where false) to '{committed}' (format parquet)",  # the damage
        f"copy (select * from authors where false) to '{committed}' (format parquet, use_tmp_file false)",
        f"copy (select * from releases where false) to '{ledger}' (format parquet)",
        f"copy authors to '{wh.root.as_posix()}/tables/authors/release=k1/extra.parquet' (format parquet)",
        f"copy authors to '{outside.as_posix()}/out.csv'",
        f"export database '{outside.as_posix()}/dump'",
        f"explain analyze copy authors to '{outside.as_posix()}/explained.csv'",
        f"select 1; copy authors to '{outside.as_posix()}/second.csv'",
        f"select * from query('copy authors to ''{committed}'' (format csv, use_tmp_file false)')",
        "set memory_limit = '1GB'",
        "reset threads",
        "pragma memory_limit = '1GB'",
        "set enable_external_access = true",
        "set variable x = 1",
        "checkpoint",
        "force checkpoint",
        f"attach '{outside.as_posix()}/other.duckdb' as other",
        f"attach '{wh.catalog_path.as_posix()}' as cat",
        "install httpfs",
        "load httpfs",
        "create table t as select * from authors",
    ]


def test_sql_refuses_every_write_and_setting_change_and_touches_nothing(wh, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    before = tree(wh.root)
    for statement in refused_statements(wh, outside):
        result = runner.invoke(app, ["sql", "--warehouse", str(wh.root), statement])
        assert result.exit_code != 0, statement
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kitab: error: "), (statement, result.stderr)
        assert "Traceback" not in result.output + result.stderr, statement
        assert tree(wh.root) == before, statement  # every warehouse file untouched, nothing added
    assert list(outside.iterdir()) == []


def test_sql_refusal_through_the_installed_command(wh):
    """The issue's exact statement, through the real `kitab` executable: one line, exit 1."""
    before = tree(wh.root)
    target = wh.committed_files("k1")["authors"].as_posix()
    kitab = Path(sys.executable).with_name("kitab")
    done = subprocess.run(
        [
            str(kitab),
            "sql",
            "--warehouse",
            str(wh.root),
            f"copy (select * from authors where false) to '{target}' (format parquet)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [done.stderr.strip()] and "COPY" in done.stderr, done.stderr
    assert tree(wh.root) == before
    assert authors(wh) == 3


def test_sql_reads_keep_working_with_and_without_release(wh):
    def sql(*args):
        result = runner.invoke(app, ["sql", "--warehouse", str(wh.root), "--output", "jsonl", *args])
        assert result.exit_code == 0 and result.stderr == "", result.output + result.stderr
        return [json.loads(line) for line in result.stdout.splitlines()]

    assert sql("select release, count(*) as n from authors group by all order by 1") == [
        {"release": "k1", "n": 2},
        {"release": "k2", "n": 1},
    ]
    assert sql("--release", "k1", "select release, count(*) as n from authors group by all") == [
        {"release": "k1", "n": 2}
    ]
    assert sql("--release", "k2", "from rejects_by_reason select sum(n)::int as n") == [{"n": 1}]
    assert {"column_name": "qid"} in [{"column_name": r["column_name"]} for r in sql("describe authors")]
    assert sql(
        "with a as (select qid from authors) select count(*) as n from a, released_authors r where r.qid = a.qid"
    ) == [{"n": 3}]
    assert len(sql("explain select count(*) from works_raw")) >= 1
    assert sql("select count(*) as n from releases") == [{"n": 2}]


def test_the_connection_itself_is_locked_down_by_duckdb(wh, tmp_path):
    """Without the statement check, DuckDB's own settings still refuse files outside the
    committed ones, attaching, extensions and every setting change."""
    con = wh.connect()
    try:
        for statement, error in [
            (f"copy authors to '{tmp_path.as_posix()}/x.csv'", duckdb.PermissionException),
            (f"copy authors to '{wh.root.as_posix()}/tables/authors/release=k1/x.parquet'", duckdb.PermissionException),
            (f"select * from read_csv('{(wh.root / '.stamps' / 'k1.json').as_posix()}')", duckdb.PermissionException),
            (f"attach '{tmp_path.as_posix()}/x.duckdb'", duckdb.PermissionException),
            ("load httpfs", duckdb.PermissionException),
            ("set memory_limit = '1GB'", duckdb.InvalidInputException),
            ("set lock_configuration = false", duckdb.InvalidInputException),
            ("set allowed_directories = ['/']", duckdb.InvalidInputException),
        ]:
            with pytest.raises(error):
                con.execute(statement)
        # the committed files themselves stay readable, by name too
        committed = wh.committed_files("k2")["authors"].as_posix()
        assert con.execute(f"select count(*) from read_parquet('{committed}')").fetchone() == (1,)
    finally:
        con.close()
    assert not list(tmp_path.glob("x.*")) and not (wh.partition("authors", "k1") / "x.parquet").exists()


# -- kitab verify and the read-time warning ------------------------------------------------
def test_verify_passes_on_an_intact_warehouse_and_names_a_tampered_file(wh):
    ok = runner.invoke(app, ["verify", "--warehouse", str(wh.root)])
    assert ok.exit_code == 0 and "10 committed files of 2 release(s) match" in ok.stdout, ok.output

    # the damage, done outside kitab: the file rewritten in place with no rows
    target = wh.committed_files("k1")["authors"]
    duckdb.sql(f"copy (select * from '{target}' where false) to '{target}' (format parquet)")
    bad = runner.invoke(app, ["verify", "--warehouse", str(wh.root)])
    assert bad.exit_code == 1
    lines = bad.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"k1\tauthors\t{target.relative_to(wh.root)}\tsha256 "), lines
    assert "0 rows, ledger 2" in bad.stdout and "1 of 10" in bad.stderr
    assert runner.invoke(app, ["verify", "--warehouse", str(wh.root), "--release", "k2"]).exit_code == 0
    assert runner.invoke(app, ["verify", "--warehouse", str(wh.root), "--release", "k1"]).exit_code == 1

    missing = wh.committed_files("k2")["works_raw"]
    missing.unlink()
    gone = runner.invoke(app, ["verify", "--warehouse", str(wh.root), "--release", "k2"])
    assert gone.exit_code == 1 and gone.stdout.split("\t")[2:] == [str(missing.relative_to(wh.root)), "missing\n"]


def test_a_changed_file_fails_its_table_in_one_line_and_the_others_answer_with_a_warning(wh):
    target = wh.committed_files("k1")["authors"]
    duckdb.sql(f"copy (select * from '{target}' limit 1) to '{target}' (format parquet)")  # fewer rows, same path
    damaged = runner.invoke(app, ["sql", "--warehouse", str(wh.root), "select count(*) as n from authors"])
    assert damaged.exit_code == 1 and damaged.stdout == ""  # never an answer from a damaged table
    error = damaged.stderr.strip().splitlines()
    assert len(error) == 1 and "authors of release k1 is damaged" in error[0] and "kitab verify" in error[0], error
    result = runner.invoke(
        app, ["sql", "--warehouse", str(wh.root), "--output", "jsonl", "select count(*) as n from works_raw"]
    )
    assert result.exit_code == 0 and result.stdout.strip() == '{"n": 3}', result.stdout  # the others answer
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1 and "k1/authors" in warning[0] and "kitab verify" in warning[0], result.stderr
    # scoped to the other release: nothing to warn about
    other = runner.invoke(app, ["sql", "--warehouse", str(wh.root), "--release", "k2", "select 1"])
    assert other.exit_code == 0 and other.stderr == ""


def test_reads_hash_only_files_whose_stamp_changed(wh, monkeypatch, capsys):
    hashed = []

    def counting(path):
        hashed.append(Path(path).name)
        return sha256_file(path)

    monkeypatch.setattr(ledger_module, "sha256_file", counting)
    authors(wh)
    assert hashed == []  # stamps match: nothing hashed
    target = wh.committed_files("k1")["authors"]
    shutil.copyfile(target, target.with_suffix(".copy"))
    os.replace(target.with_suffix(".copy"), target)  # same bytes, new inode and mtime
    assert authors(wh) == 3
    assert hashed == [target.name] and capsys.readouterr().err == ""  # hashed, matched: no warning


# -- the atomic swap -----------------------------------------------------------------------
class Crash(BaseException):
    """A kill: not an OSError, so nothing on the way up swallows it."""


def test_a_crash_at_every_point_of_the_swap_leaves_the_only_release_readable(tmp_path, monkeypatch):
    """Rebuild the only release (1 author -> 2) and crash at the n-th file operation after the
    swap began, for every n: the views answer the old version (before the commit) or the new
    one (after it), every committed file matches the ledger, the catalog kitab.duckdb answers
    too, and publishing again completes the new version with no file of the old one left."""
    real = {name: getattr(os, name) for name in ("replace", "unlink", "rmdir")}
    pristine = Warehouse(tmp_path / "pristine")
    put(pristine, "r", ["Q1"])
    old = json.loads(pristine.ledger_row("r")["checksums"])
    outcomes = set()
    for n in range(100):
        wh = Warehouse(tmp_path / f"crash-{n}")
        shutil.copytree(pristine.root, wh.root)
        wh.build_catalog()  # the copy's catalog must name the copy's files
        state = {"calls": -1, "committed": False, "crashed": False}

        def counted(name):
            def op(*args, **kwargs):
                if state["calls"] >= 0 and not state["crashed"]:
                    state["calls"] += 1
                    if state["calls"] > n:
                        state["crashed"] = True
                        raise Crash(f"killed at {name} #{n}")
                return real[name](*args, **kwargs)

            return op

        real_adopt, real_commit, real_sweep = release_commit.adopt, release_commit.commit, Warehouse.sweep

        def adopt(*args):
            state["calls"] = 0  # the swap begins: count from here
            return real_adopt(*args)

        def commit(*args):
            path = real_commit(*args)
            state["committed"] = True
            return path

        def sweep(self, *args):
            removed = real_sweep(self, *args)
            state["calls"] = -1  # the old version is gone: the swap is over (staging cleanup left)
            return removed

        with monkeypatch.context() as m:
            for name in real:
                m.setattr(os, name, counted(name))
            m.setattr(release_commit, "adopt", adopt)
            m.setattr(release_commit, "commit", commit)
            m.setattr(Warehouse, "sweep", sweep)
            try:
                put(wh, "r", ["Q1", "Q2"])
            except Crash:
                pass
        if not state["crashed"]:
            break  # n is past the last file operation: every point was covered

        expected = 2 if state["committed"] else 1
        outcomes.add(expected)
        assert wh.committed_releases() == ["r"], n
        assert authors(wh) == expected, n
        assert [c for c in wh.check_files() if c.problem] == [], n
        if not state["committed"]:
            assert json.loads(wh.ledger_row("r")["checksums"]) == old, n
        with duckdb.connect(str(wh.catalog_path), read_only=True) as con:  # for tools other than kitab
            assert con.execute("select count(*) from authors").fetchone()[0] in (1, 2), n

        put(wh, "r", ["Q1", "Q2"])  # publishing again completes it
        assert authors(wh) == 2 and [c for c in wh.check_files() if c.problem] == [], n
        on_disk = {p for p in wh.tables_dir.rglob("*") if p.is_file()}
        assert on_disk == {*wh.committed_files("r").values(), wh.partition("releases", "r") / LEDGER_FILE}, n
        assert not release_commit.staging(wh, "r").root.exists(), n
    else:
        pytest.fail("the publish never ran to the end")
    assert n >= 8 and outcomes == {1, 2}  # crashes both before and after the commit were injected


def test_rebuilding_keeps_the_bytes_of_the_same_data_and_removes_the_old_version(tmp_path):
    wh = Warehouse(tmp_path)
    first = put(wh, "r", ["Q1"])
    files = wh.committed_files("r")
    again = put(wh, "r", ["Q1"])
    assert again["checksums"] == first["checksums"] and wh.committed_files("r") == files
    assert all(
        p.name == f"part-{sha[:16]}.parquet" for p, sha in zip(files.values(), json.loads(first["checksums"]).values())
    )
    put(wh, "r", ["Q1", "Q2"])
    assert not any(p.exists() for p in files.values())  # the old version's files are gone
    assert sorted(p.name for p in wh.partition("authors", "r").iterdir()) == [wh.committed_files("r")["authors"].name]


def test_a_warehouse_from_before_content_names_still_reads_verifies_and_migrates(tmp_path):
    """Older warehouses named every table file part-0.parquet: still the committed file."""
    wh = Warehouse(tmp_path)
    put(wh, "r", ["Q1"])
    for path in wh.committed_files("r").values():
        path.rename(path.with_name(LEDGER_FILE))
    (wh.root / ".stamps").rename(wh.root / "no-stamps")
    assert authors(wh) == 1 and [c for c in wh.check_files() if c.problem] == []
    put(wh, "r", ["Q1", "Q2"])
    assert authors(wh) == 2 and not (wh.partition("authors", "r") / LEDGER_FILE).exists()
