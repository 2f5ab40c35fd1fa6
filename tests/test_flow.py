"""The refresh flow under prefect_test_harness, twice on the bundled snapshot through the
mirror: the rerun sends no request and writes byte-identical Parquet."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.flow


@pytest.fixture(scope="module")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def test_refresh_twice_is_idempotent_and_free(harness, tmp_path, snapshot_dir, manifest):
    from kitab.app.runs import run_refresh
    from kitab.core.files import sha256_file
    from kitab.core.warehouse import Warehouse

    kwargs = dict(source="mirror", snapshot=snapshot_dir, authors=12, seed=3, release="t1", warehouse=tmp_path)
    first = run_refresh(**kwargs)
    second = run_refresh(**kwargs)
    assert first["requests_made"] > 0
    assert second["requests_made"] == 0
    assert first["checksums"] == second["checksums"]
    wh = Warehouse(tmp_path)
    with wh.connect() as con:
        recorded = json.loads(con.execute("select checksums from releases where release = 't1'").fetchone()[0])
        # --authors 12 means 12 released; the draw went on past the rejected ones
        assert con.execute("select count(*) from released_authors").fetchone()[0] == 12
        assert con.execute("select count(*) from sampled_authors").fetchone()[0] >= 12
    # the ledger's checksums are those of the files on disk, for every table of the release
    assert recorded == {t: sha256_file(path) for t, path in wh.committed_files("t1").items()}
    assert {
        "authors",
        "works_raw",
        "books",
        "title_variants",
        "title_entities",
        "constraints",
        "queries",
        "rejects",
        "released_authors",
    } <= set(recorded)


def test_refresh_from_dump_equals_refresh_through_mirror(harness, tmp_path, snapshot_dir):
    """`kitab refresh --source dump` and `--source mirror` give the same authors and
    works_raw rows, provenance columns aside (and so the same downstream tables)."""
    from kitab.app.runs import run_refresh
    from kitab.core.warehouse import Warehouse

    provenance = "source, request_fingerprint, fetched_at, release"
    rows = {}
    for source in ("dump", "mirror"):
        run_refresh(
            source=source, snapshot=snapshot_dir, authors=15, seed=9, release="same", warehouse=tmp_path / source
        )
        with Warehouse(tmp_path / source).connect() as con:
            rows[source] = {
                t: con.execute(f"select * exclude ({provenance}) from {t} order by all").fetchall()
                for t in ("sampled_authors", "works_raw")
            }
            rows[source]["books"] = con.execute("select * exclude (release) from books order by all").fetchall()
    assert rows["dump"] == rows["mirror"]
    assert len(rows["dump"]["works_raw"]) > 100
