"""Issue 39 item 3, through the real ``kitab`` command: a ledger row is checked, not trusted.
Each row carries the digests of its fields (kitab/core/row_digest.py), written at its commit;
a row edited since (its Parquet rewritten with DuckDB or pyarrow, as a person would) is
refused in one line naming the field by verify, report, releases --show, export and a rebuild,
and nothing is written from it; the other tables still answer ``kitab sql``. A row from before
digests (unsealed) is said, refused by export, and sealed by ``kitab verify --seal`` once its
files match."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kitab.core.ledger import LEDGER_FILE
from kitab.core.row_digest import digests_of, edited_fields, field_digest
from kitab.core.warehouse import Warehouse
from tests.releases import dump_release
from tests.test_cli_errors import assert_user_error, kitab

RELEASE = "demo"
AUTHORS, SEED = 4, 42


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    return dump_release(tmp_path_factory.mktemp("ledger") / "pristine", authors=AUTHORS, seed=SEED, release=RELEASE)


@pytest.fixture
def wh(released, tmp_path) -> Warehouse:
    shutil.copytree(released, tmp_path / "wh", ignore=shutil.ignore_patterns(".work", ".cache"))
    return Warehouse(tmp_path / "wh")


def ledger_path(wh: Warehouse) -> Path:
    return wh.partition("releases", RELEASE) / LEDGER_FILE


def edit_with_duckdb(wh: Warehouse, column: str, sql_value: str) -> None:
    """Rewrite one column of the ledger row as a person would with DuckDB (COPY over the file)."""
    path = ledger_path(wh).as_posix()
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * REPLACE ({sql_value} AS {column}) FROM read_parquet('{path}')) TO '{path}.new' (FORMAT parquet)"
    )
    Path(f"{path}.new").replace(path)


def edit_with_pyarrow(wh: Warehouse, change) -> None:
    """Rewrite the ledger row with pyarrow: ``change(row)`` edits the row's dict in place."""
    path = ledger_path(wh)
    table = pq.read_table(path)
    row = table.to_pylist()[0]
    change(row)
    pq.write_table(pa.Table.from_pylist([row], schema=table.schema), path)


def edit_config(key: str, value):
    def change(row):
        config = json.loads(row["config"])
        assert key in config, sorted(config)
        config[key] = value(config[key])
        row["config"] = json.dumps(config, sort_keys=True)

    return change


def stderr_lines(result) -> list[str]:
    return result.stderr.decode().strip().splitlines()


# -- the pure function: what a digest covers ---------------------------------------------------
def test_each_field_is_digested_under_its_name_and_timestamps_are_type_free():
    row = {"seed": 42, "config": '{"authors": 4}', "created_at": datetime(2026, 11, 27, 12, 0, tzinfo=UTC)}
    row["digests"] = digests_of(row, [*row, "digests"])
    assert edited_fields(row) == []
    assert sorted(json.loads(row["digests"])["fields"]) == ["config", "created_at", "seed"]  # not itself
    # the same instant as DuckDB or pyarrow may read it back: naive UTC, another zone
    assert edited_fields({**row, "created_at": datetime(2026, 11, 27, 12, 0)}) == []
    assert edited_fields({**row, "created_at": datetime(2026, 11, 27, 13, 0, tzinfo=UTC) + timedelta(hours=-1)}) == []
    assert edited_fields({**row, "created_at": datetime(2026, 11, 27, 12, 0, 1)}) == ["created_at"]
    assert edited_fields({**row, "config": '{"authors": 5}'}) == ["config"]
    assert edited_fields({**row, "config": row["seed"], "seed": row["config"]}) == ["config", "seed"]  # swapped
    assert edited_fields({k: v for k, v in row.items() if k != "seed"}) == ["seed"]  # a dropped column
    assert edited_fields({**row, "stages": None}) == []  # a column added after the row was sealed
    assert edited_fields({**row, "stages": "[]"}) == ["stages"]
    assert edited_fields({**row, "digests": "not json"}) == ["digests"]
    assert edited_fields({**row, "digests": "{}"}) == ["digests"]
    forged = json.loads(row["digests"])
    forged["fields"]["seed"] = field_digest("seed", 43)  # a field's digest rewritten, not the row's
    assert edited_fields({**row, "seed": 43, "digests": json.dumps(forged)}) == ["digests"]
    assert edited_fields({k: v for k, v in row.items() if k != "digests"}) is None  # unsealed
    assert field_digest("seed", 42) != field_digest("n_authors_requested", 42)


# -- an unedited warehouse passes ------------------------------------------------------------
def test_an_unedited_row_passes_even_rewritten_by_duckdb(wh, tmp_path):
    row = wh.ledger_row(RELEASE)
    assert set(json.loads(row["digests"])["fields"]) == set(row) - {"digests"}  # every stored field
    edit_with_duckdb(wh, "seed", "seed")  # the same values, DuckDB's types and layout
    for args in (["verify"], ["releases", "--show", RELEASE], ["report", "--release", RELEASE]):
        result = kitab(*args, "--warehouse", wh.root)
        assert result.returncode == 0 and result.stderr.decode().strip() == "", (args, result.stderr)
    assert (
        json.loads(kitab("releases", "--show", RELEASE, "--warehouse", wh.root).stdout)["config"]["authors"] == AUTHORS
    )
    export = kitab("export", "--release", RELEASE, "--out", tmp_path / "hf", "--warehouse", wh.root)
    assert export.returncode == 0, export.stderr
    provenance = json.loads((tmp_path / "hf" / "provenance.json").read_text())
    assert provenance["ledger"]["digests"] == json.loads(row["digests"])


# -- an edited row is refused in one line naming the field ------------------------------------
CONFIG_EDITS = {
    "authors": edit_config("authors", lambda n: n + 10),
    "sampling_rates": edit_config(
        "sampling_rates", lambda rates: {k: (v / 2 if isinstance(v, float) else v) for k, v in rates.items()}
    ),
    "language_rule": edit_config("language_rule", lambda rule: "any language"),
}


@pytest.mark.parametrize("key", sorted(CONFIG_EDITS))
def test_an_edited_config_is_refused_everywhere_and_nothing_is_written(wh, tmp_path, key):
    edit_with_pyarrow(wh, CONFIG_EDITS[key])
    line = f"the ledger row of release {RELEASE} was edited (config)"
    verify = kitab("verify", "--warehouse", wh.root)
    assert verify.returncode == 1 and "Traceback" not in verify.stderr.decode()
    assert stderr_lines(verify) == [
        f"kitab verify: {line}: it no longer matches the digests written at its commit; nothing is published from it"
    ]
    assert_user_error(kitab("releases", "--show", RELEASE, "--warehouse", wh.root), line)
    report = kitab("report", "--release", RELEASE, "--out", tmp_path / "report", "--warehouse", wh.root)
    assert_user_error(report, line)
    assert not (tmp_path / "report").exists()
    export = kitab(  # and so never pushed: the Hub here would refuse any connection
        "export", "--release", RELEASE, "--out", tmp_path / "hf", "--push", "org/kitab", "--warehouse", wh.root,
        env={"HF_TOKEN": "hf_neverusedtoken", "HF_ENDPOINT": "http://127.0.0.1:9"},
    )  # fmt: skip
    assert_user_error(export, line, "nothing exported")
    assert not (tmp_path / "hf").exists()
    # the rebuild with the true parameters: refused for the edit, before any work, not "as a change"
    rebuild = kitab(
        "refresh", "--runner", "local", "--source", "dump", "--authors", AUTHORS, "--seed", SEED,
        "--release", RELEASE, "--warehouse", wh.root,
    )  # fmt: skip
    err = assert_user_error(rebuild, line)
    assert "would change" not in err and len(stderr_lines(rebuild)) == 1


# every other kind of field, edited with DuckDB or pyarrow: verify and export name it
OTHER_EDITS = {
    "counts": lambda wh: edit_with_duckdb(wh, "counts", "replace(counts, '\"books\": ', '\"books\": 1')"),
    "checksums": lambda wh: edit_with_pyarrow(
        wh, lambda r: r.update(checksums=json.dumps({**json.loads(r["checksums"]), "queries": "0" * 64}))
    ),
    "inputs": lambda wh: edit_with_duckdb(wh, "inputs", "'[]'"),
    "seed": lambda wh: edit_with_duckdb(wh, "seed", "seed + 1"),
    "created_at": lambda wh: edit_with_duckdb(wh, "created_at", "created_at - INTERVAL 1 DAY"),
    "code_version": lambda wh: edit_with_pyarrow(wh, lambda r: r.update(code_version="0.0.0")),
    "excluded_releases": lambda wh: edit_with_duckdb(wh, "excluded_releases", "'[\"other\"]'"),
    "stages": lambda wh: pq.write_table(pq.read_table(ledger_path(wh)).drop_columns(["stages"]), ledger_path(wh)),
    "digests": lambda wh: edit_with_duckdb(wh, "digests", "'{}'"),
}


@pytest.mark.parametrize("field", sorted(OTHER_EDITS))
def test_every_field_kind_edited_is_named_by_verify_and_export(wh, tmp_path, field):
    OTHER_EDITS[field](wh)
    verify = kitab("verify", "--warehouse", wh.root)
    lines = stderr_lines(verify)
    assert verify.returncode == 1 and len(lines) == 1, verify.stderr
    named = f"the ledger row of release {RELEASE} was edited ({field})"
    assert lines[0].startswith(f"kitab verify: {named}"), lines
    export = kitab("export", "--release", RELEASE, "--out", tmp_path / "hf", "--warehouse", wh.root)
    assert_user_error(export, named)
    assert not (tmp_path / "hf").exists()


def test_kitab_sql_answers_the_other_tables_and_fails_on_the_row(wh):
    edit_with_pyarrow(wh, CONFIG_EDITS["authors"])
    books = kitab("sql", "select count(*) as n from books", "--output", "jsonl", "--warehouse", wh.root)
    assert books.returncode == 0 and json.loads(books.stdout)["n"] > 0, books.stderr
    assert stderr_lines(books) == [
        f"kitab: warning: the ledger row of release {RELEASE} was edited (config): it no longer matches the "
        "digests written at its commit; run `kitab verify`"
    ]
    row = kitab("sql", "select config from releases", "--warehouse", wh.root)
    assert_user_error(row, "was edited (config)")
    assert row.stdout == b""  # never the edited config
    assert_user_error(kitab("releases", "--warehouse", wh.root), "was edited (config)")
    assert_user_error(kitab("releases", "--history", "--warehouse", wh.root), "was edited (config)")


# -- rows from before digests ------------------------------------------------------------------
def test_an_unsealed_row_is_said_refused_by_export_and_sealed_by_verify_seal(wh, tmp_path):
    path = ledger_path(wh)
    pq.write_table(pq.read_table(path).drop_columns(["digests"]), path)  # as rows were written before
    unsealed = "the ledger row of release demo is unsealed"
    verify = kitab("verify", "--warehouse", wh.root)
    assert verify.returncode == 1 and unsealed in verify.stderr.decode() and "--seal" in verify.stderr.decode()
    show = kitab("releases", "--show", RELEASE, "--warehouse", wh.root)  # shown, with one warning line
    assert show.returncode == 0 and stderr_lines(show) == [
        f"kitab: warning: {unsealed} (written before ledger rows carried digests, so an edit cannot be told); "
        "`kitab verify --seal` checks its files and seals it"
    ]
    export = kitab("export", "--release", RELEASE, "--out", tmp_path / "hf", "--warehouse", wh.root)
    assert_user_error(export, unsealed, "nothing exported", "kitab verify --seal")
    assert not (tmp_path / "hf").exists()
    sealed = kitab("verify", "--seal", "--warehouse", wh.root)
    assert sealed.returncode == 0 and "sealed the ledger row(s) of demo" in sealed.stdout.decode(), sealed.stderr
    assert edited_fields(wh.ledger_row(RELEASE)) == []
    assert kitab("verify", "--warehouse", wh.root).returncode == 0
    again = kitab("verify", "--seal", "--warehouse", wh.root)
    assert again.returncode == 0 and "no unsealed ledger row" in again.stdout.decode()
    edit_with_pyarrow(wh, CONFIG_EDITS["authors"])  # sealed now: an edit is told
    assert_user_error(kitab("releases", "--show", RELEASE, "--warehouse", wh.root), "was edited (config)")


def test_verify_seal_refuses_a_row_whose_counts_or_files_do_not_match(wh):
    path = ledger_path(wh)
    table = pq.read_table(path).drop_columns(["digests"])
    row = table.to_pylist()[0]
    row["counts"] = json.dumps({**json.loads(row["counts"]), "books": 1})
    pq.write_table(pa.Table.from_pylist([row], schema=table.schema), path)
    result = kitab("verify", "--seal", "--warehouse", wh.root)
    assert_user_error(result, "release demo is not sealed: books", "ledger 1", "no ledger row was sealed")
    assert "digests" not in pq.read_schema(path).names


# -- legitimate writes still work, and seal their rows -----------------------------------------
def test_a_rebuild_and_a_new_release_still_work_and_are_sealed(wh):
    args = ["refresh", "--runner", "local", "--source", "dump", "--seed", SEED, "--warehouse", wh.root]
    same = kitab(*args, "--authors", AUTHORS, "--release", RELEASE, timeout=600)
    assert same.returncode == 0, same.stderr
    other = kitab(*args, "--authors", 3, "--release", "next", timeout=600)
    assert other.returncode == 0, other.stderr
    replaced = kitab(*args, "--authors", 3, "--release", RELEASE, "--replace", timeout=600)
    assert replaced.returncode == 0, replaced.stderr
    row = wh.ledger_row(RELEASE)
    assert row["changes"] and row["history"] and edited_fields(row) == []  # the --replace columns are sealed
    assert edited_fields(wh.ledger_row("next")) == []
    verify = kitab("verify", "--warehouse", wh.root)
    assert verify.returncode == 0 and verify.stderr.decode().strip() == "", verify.stderr
