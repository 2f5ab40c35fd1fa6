"""Parquet written atomically and deterministically; views over committed releases only;
data tests fail loudly."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import kitab.core.release_commit as release_commit
from kitab.core.views import DataTestFailure, data_tests
from kitab.core.warehouse import Warehouse
from tasks.base import reject
from tasks.publish import publish


def author(qid, ol="OL1A", method="p648"):
    return {
        "qid": qid,
        "name": f"Author {qid}",
        "birth_year": 1931,
        "sitelinks": 5,
        "wd_work_count": 12,
        "wd_ol_id": ol,
        "ol_author_key": ol,
        "ol_name": "W",
        "match_method": method,
        "source": "dump",
        "request_fingerprint": "f",
        "fetched_at": datetime(2026, 1, 1, tzinfo=UTC),
    }


def work(qid, key, ol="OL1A"):
    return {
        "author_qid": qid,
        "ol_author_key": ol,
        "work_key": key,
        "title": f"T {key}",
        "subtitle": None,
        "first_publish_year": 1990,
        "languages": ["eng"],
        "author_keys": [ol],
        "author_names": ["W"],
        "edition_count": 1,
        "source": "dump",
        "request_fingerprint": "f",
        "fetched_at": datetime(2026, 1, 1, tzinfo=UTC),
    }


def tables(qids):
    """A tiny consistent release: each author has one work, rejected by clean_books."""
    works = [work(q, f"/works/OL{i}W", ol=f"OL{q[1:]}A") for i, q in enumerate(qids)]
    return {
        "authors": [author(q, ol=f"OL{q[1:]}A") for q in qids],
        "works_raw": works,
        "rejects": [
            reject("clean_books", "not_english_tagged", "work", w["work_key"], author_qid=w["author_qid"])
            for w in works
        ],
        "released_authors": [
            {"release_id": "r", "qid": q, "ol_author_key": f"OL{q[1:]}A", "name_norm": q.lower()} for q in qids
        ],
    }


def test_same_rows_in_any_order_give_identical_bytes(tmp_path):
    wh = Warehouse(tmp_path)
    rows = [author("Q2"), author("Q1"), author("Q3")]
    a = wh.write_table("authors", "r1", rows)
    b = wh.write_table("authors", "r2", list(reversed(rows)))
    assert a.sha256 == b.sha256 and a.rows == 3
    assert not list(tmp_path.rglob("*.tmp"))


def test_bad_rows_are_a_clear_error_and_leave_no_file(tmp_path):
    wh = Warehouse(tmp_path)
    with pytest.raises(ValueError, match="authors"):
        wh.write_table("authors", "r1", [{**author("Q1"), "birth_year": "nineteen"}])
    with pytest.raises(ValueError, match="not in schemas"):
        wh.write_table("authors", "r1", [{**author("Q1"), "surprise": 1}])
    assert not list(tmp_path.rglob("*.parquet")) and not list(tmp_path.rglob("*.tmp"))


def test_publish_commits_and_views_answer(tmp_path):
    wh = Warehouse(tmp_path)
    publish(
        wh, "r", tables(["Q1", "Q2"]), seed=1, source="dump", snapshot_id="s", n_authors_requested=2, requests_made=0
    )
    with wh.connect() as con:
        assert con.execute("select count(*) from authors").fetchone() == (2,)
        assert con.execute("select release from works_raw limit 1").fetchone() == ("r",)


def test_uncommitted_release_is_invisible(tmp_path):
    wh = Warehouse(tmp_path)
    publish(wh, "r", tables(["Q1"]), seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    wh.write_table("authors", "half-written", [author("Q9")])  # a crashed refresh: no releases row
    wh.build_catalog()
    with wh.connect() as con:
        assert con.execute("select list(distinct release) from authors").fetchone() == (["r"],)


def test_failing_data_test_leaves_release_uncommitted(tmp_path):
    wh = Warehouse(tmp_path)
    broken = tables(["Q1"])
    broken["rejects"] = []  # a fetched work that is neither kept nor rejected
    with pytest.raises(DataTestFailure, match="works_raw_one_outcome"):
        publish(wh, "bad", broken, seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    assert wh.committed_releases() == []


def test_ledger_overlap_with_another_release_is_refused(tmp_path):
    wh = Warehouse(tmp_path)
    publish(wh, "r1", tables(["Q1"]), seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    with pytest.raises(RuntimeError, match="already released"):
        publish(
            wh, "r2", tables(["Q1"]), seed=2, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0
        )
    # rebuilding the same release is fine: the ledger only excludes *other* releases
    publish(wh, "r1", tables(["Q1"]), seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    assert wh.committed_releases() == ["r1"]


def test_release_scope(tmp_path):
    wh = Warehouse(tmp_path)
    publish(wh, "r1", tables(["Q1"]), seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    publish(
        wh, "r2", tables(["Q2", "Q3"]), seed=2, source="dump", snapshot_id="s", n_authors_requested=2, requests_made=0
    )
    with wh.connect(release="r2") as con:
        assert con.execute("select count(*) from authors").fetchone() == (2,)
    with wh.connect() as con:
        assert con.execute("select count(*) from authors").fetchone() == (3,)
    with pytest.raises(ValueError, match="no committed release"):
        wh.connect(release="nope")


def test_crash_while_writing_tables_leaves_no_release_and_rerun_completes(tmp_path, monkeypatch):
    wh = Warehouse(tmp_path)
    real_write = Warehouse.write_table

    def crash_on_works(self, table, release, rows):
        if table == "works_raw":
            raise KeyboardInterrupt("killed while writing works_raw")
        return real_write(self, table, release, rows)

    monkeypatch.setattr(Warehouse, "write_table", crash_on_works)
    with pytest.raises(KeyboardInterrupt):
        publish(wh, "r", tables(["Q1"]), seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    assert list(release_commit.staging(wh, "r").partition("authors", "r").glob("part-*.parquet"))  # half written ...
    assert wh.committed_releases() == [] and not wh.partition("authors", "r").exists()  # ... elsewhere
    monkeypatch.setattr(Warehouse, "write_table", real_write)
    publish(wh, "r", tables(["Q1"]), seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    assert wh.committed_releases() == ["r"] and not release_commit.staging(wh, "r").root.exists()


def test_crash_while_moving_a_release_into_place_leaves_it_uncommitted(tmp_path, monkeypatch):
    wh = Warehouse(tmp_path)
    publish(wh, "r", tables(["Q1"]), seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)

    def crash(warehouse, staged, release, names):
        raise KeyboardInterrupt("killed while moving")

    monkeypatch.setattr(release_commit, "adopt", crash)
    with pytest.raises(KeyboardInterrupt):
        publish(
            wh,
            "r",
            tables(["Q1", "Q2"]),
            seed=1,
            source="dump",
            snapshot_id="s",
            n_authors_requested=2,
            requests_made=0,
            replace=True,  # a rebuild that changes a committed release (issue 30)
        )
    monkeypatch.undo()
    publish(
        wh,
        "r",
        tables(["Q1", "Q2"]),
        seed=1,
        source="dump",
        snapshot_id="s",
        n_authors_requested=2,
        requests_made=0,
        replace=True,
    )
    with wh.connect() as con:
        assert con.execute("select count(*) from authors").fetchall() == [(2,)]


def test_failed_rebuild_keeps_the_committed_release(tmp_path):
    wh = Warehouse(tmp_path)
    publish(wh, "r", tables(["Q1"]), seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    broken = tables(["Q1", "Q2"])
    broken["rejects"] = []
    with pytest.raises(DataTestFailure):
        publish(wh, "r", broken, seed=1, source="dump", snapshot_id="s", n_authors_requested=2, requests_made=0)
    assert wh.committed_releases() == ["r"]
    with wh.connect() as con:
        assert con.execute("select count(*) from authors").fetchall() == [(1,)]


@pytest.mark.parametrize("bad", ["x/../../victim", "a%41b", "x=y", "", "-lead", "white space"])
def test_release_ids_are_plain_names(tmp_path, bad):
    with pytest.raises(ValueError, match="release id"):
        publish(
            Warehouse(tmp_path),
            bad,
            tables(["Q1"]),
            seed=1,
            source="dump",
            snapshot_id="s",
            n_authors_requested=1,
            requests_made=0,
        )
    assert not list(tmp_path.rglob("*.parquet"))


def test_a_moved_warehouse_rebuilds_its_catalog(tmp_path):
    wh = Warehouse(tmp_path / "a")
    publish(wh, "r", tables(["Q1"]), seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    (tmp_path / "a").rename(tmp_path / "b o'clock")
    with Warehouse(tmp_path / "b o'clock").connect() as con:
        assert con.execute("select count(*) from authors").fetchall() == [(1,)]


def test_data_tests_run_early_only_over_the_tables_they_read(tmp_path):
    """tests_ready runs a data test once every table it reads is written (the others' views fail
    when read), and then gives the rows the whole suite gives over all the tables."""
    from kitab.core.refs import duck
    from kitab.core.views import create_views, data_test_results, tests_ready

    wh = Warehouse(tmp_path)
    broken = tables(["Q1", "Q2"])
    broken["rejects"] = broken["rejects"][:1]  # Q2's work neither kept nor rejected: works_raw_one_outcome fails
    broken["title_variants"] = []
    files = {name: [wh.write_table(name, "r", rows).path] for name, rows in broken.items()}
    done: dict = {}
    with duck() as con:
        tests_ready(con, {n: f for n, f in files.items() if n != "rejects"}, "r", done)
    assert "authors_unique_qid" in done and "works_raw_unique" in done
    assert "works_raw_one_outcome" not in done  # reads rejects, not written yet: left for later
    with duck() as con:
        tests_ready(con, files, "r", done)
    with duck() as con:
        create_views(con, files)
        whole = dict(data_test_results(con))
    assert {n: whole[n] for n in done} == done and done["works_raw_one_outcome"]


def test_a_data_test_out_of_memory_waits_for_the_next_round_only_when_asked(tmp_path):
    """Publishing's first round of data tests runs under a lower memory limit beside the claims
    draw: a test that runs out of it is left for the second round; elsewhere it is an error."""
    import duckdb

    from kitab.core.refs import duck
    from kitab.core.views import create_views, data_test_results, tests_ready

    wh = Warehouse(tmp_path)
    files = {name: [wh.write_table(name, "r", rows).path] for name, rows in tables(["Q1", "Q2"]).items()}
    done: dict = {}
    with duck(None, "1MB") as con:
        tests_ready(con, files, "r", done, defer_out_of_memory=True)
    with duck() as con:
        create_views(con, files)
        whole = dict(data_test_results(con))
    assert 0 < len(done) < len(whole) - 2  # some ran in 1 MB, the others were left for later
    with duck(None, "1MB") as con, pytest.raises(duckdb.OutOfMemoryException):
        tests_ready(con, files, "r", {})
    with duck() as con:
        tests_ready(con, files, "r", done)
    at_once: dict = {}
    with duck() as con:
        tests_ready(con, files, "r", at_once)
    assert done == at_once == {n: whole[n] for n in at_once}  # two rounds: the tests and rows of one


def test_publish_with_a_first_round_short_of_memory_runs_every_test(tmp_path, monkeypatch):
    """With an awaited table and derived ones (a refresh's publish), the tests of the first
    round that run out of its memory run in the second: every test runs, and a failing one
    still fails the publish."""
    monkeypatch.setattr(release_commit, "EARLY_TESTS_MEMORY", "1MB")
    derive = release_commit.Derive(late=lambda con, early: {}, facts=lambda con: {"n": 1})
    run = {"seed": 1, "source": "dump", "snapshot_id": "s", "n_authors_requested": 1, "requests_made": 0}
    wh = Warehouse(tmp_path)
    good = tables(["Q1"])
    rejects = good.pop("rejects")
    good["rejects"] = lambda: rejects
    result = publish(wh, "ok", good, **run, derive=derive)
    assert set(result["data_tests"]) == {name for name, _ in data_tests()} and result["facts"] == {"n": 1}
    bad = tables(["Q2"])
    bad["works_raw"] = bad["works_raw"] * 2  # works_raw_unique fails: its table is at hand
    bad_rejects = bad.pop("rejects")
    bad["rejects"] = lambda: bad_rejects
    with pytest.raises(DataTestFailure, match="works_raw_unique"):
        publish(wh, "bad", bad, **run, derive=derive)
    assert wh.committed_releases() == ["ok"]


def test_a_failure_in_an_awaited_table_is_caught(tmp_path):
    """A data test that reads an awaited table waits for it, so it cannot pass over an empty view."""
    wh = Warehouse(tmp_path)
    broken = tables(["Q1"])
    rejects = broken.pop("rejects")
    broken["rejects"] = lambda: rejects[:0]  # awaited, and missing the work's outcome
    with pytest.raises(DataTestFailure, match="works_raw_one_outcome"):
        publish(wh, "bad", broken, seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    assert wh.committed_releases() == []
    fixed = tables(["Q1"])
    fixed["rejects"] = lambda: tables(["Q1"])["rejects"]
    publish(wh, "ok", fixed, seed=1, source="dump", snapshot_id="s", n_authors_requested=1, requests_made=0)
    assert wh.committed_releases() == ["ok"]
