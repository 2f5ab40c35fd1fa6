"""The real ``kitab`` command (a subprocess, as a person runs it) on bad input: each user error
is one or two lines on stderr, a non-zero exit, no traceback, and nothing written; ``--debug``
or ``KITAB_DEBUG=1`` bring the traceback back. The probes answer any bytes on stdin."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.sources.snapshot.format import DATA_FILES, OL_WORKS_FILE


def kitab_cmd() -> list[str]:
    """The installed ``kitab`` script (its entry point is kitab.app.cli:main, the error handler)."""
    script = Path(sys.executable).with_name("kitab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kitab.app.cli"]


def kitab(*args, env: dict | None = None, stdin: bytes | None = None, timeout: float = 300):
    full = {**os.environ, **(env or {})}
    if "KITAB_DEBUG" not in (env or {}):
        full.pop("KITAB_DEBUG", None)
    return subprocess.run([*kitab_cmd(), *map(str, args)], input=stdin, capture_output=True, env=full, timeout=timeout)


def assert_user_error(result: subprocess.CompletedProcess, *needles: str) -> str:
    err = result.stderr.decode("utf-8", "replace")
    lines = err.strip().splitlines()
    assert result.returncode != 0, err
    assert "Traceback" not in err, err
    assert 1 <= len(lines) <= 2 and lines[0].startswith("kitab: error: "), err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def broken_snapshot(tmp_path: Path, damage: str) -> Path:
    folder = tmp_path / "snapshot"
    if damage == "empty folder":
        folder.mkdir()
        return folder
    shutil.copytree(BUNDLED_SNAPSHOT, folder)
    works = folder / OL_WORKS_FILE
    if damage == "missing file":
        works.unlink()
    elif damage == "empty file":
        works.write_bytes(b"")
    elif damage == "not gzip":
        works.write_bytes(b"type\tkey\t1\t2024\t{}\n")
    elif damage == "truncated":
        works.write_bytes(works.read_bytes()[: works.stat().st_size // 2])
    return folder


# --- refresh: every input checked before anything starts or is written ------------------------


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--release", "../../etc"], "release id '../../etc'"),
        (["--release", ""], "release id ''"),  # not the dated default
        (["--source", "ftp"], "source 'ftp'"),
    ],
)
def test_bad_refresh_values_are_one_line_and_create_nothing(tmp_path, args, needle):
    result = kitab("refresh", "--warehouse", tmp_path / "wh", *args, timeout=60)
    assert_user_error(result, needle)
    assert not (tmp_path / "wh").exists()


@pytest.mark.parametrize(
    "damage,source",
    [
        ("empty folder", "mirror"),
        ("missing file", "mirror"),
        ("empty file", "mirror"),
        ("not gzip", "mirror"),
        ("not gzip", "dump"),
    ],
)
def test_a_broken_snapshot_is_named_before_the_refresh_starts(tmp_path, damage, source):
    snapshot = broken_snapshot(tmp_path, damage)
    result = kitab("refresh", "--source", source, "--snapshot", snapshot, "--warehouse", tmp_path / "wh", timeout=60)
    assert_user_error(result, "MANIFEST.json" if damage == "empty folder" else OL_WORKS_FILE)
    assert not (tmp_path / "wh").exists()


@pytest.mark.parametrize("name", DATA_FILES)
def test_a_truncated_file_is_named_by_the_mirror(tmp_path, name):
    """A file cut short passes the quick check and fails when read: the mirror (which the
    refresh starts) names it; the dump path does too (tests/test_dump_source.py)."""
    from kitab.core.errors import KitabError
    from kitab.simulate.mirror.server import Mirror
    from kitab.sources.snapshot.format import SnapshotFormatError

    snapshot = broken_snapshot(tmp_path, "none")
    path = snapshot / name
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(SnapshotFormatError, match=name.replace(".", r"\.")) as failed:
        Mirror(snapshot)
    assert isinstance(failed.value, KitabError) and "\n" not in str(failed.value)


@pytest.fixture(scope="module")
def small_snapshot(tmp_path_factory) -> Path:
    """26 candidate authors (the generator's minimum): a whole refresh is quick."""
    from kitab.simulate.generator.generate import generate_snapshot

    folder = tmp_path_factory.mktemp("small") / "snapshot"
    generate_snapshot(folder, seed=3, n_authors=26)
    return folder


@pytest.mark.flow
def test_an_error_inside_the_flow_is_one_line_and_publishes_nothing(tmp_path, small_snapshot):
    """More authors asked for than are eligible: found after sampling, inside the Prefect flow,
    and still one line (no Prefect traceback); no release."""
    from kitab.core.warehouse import Warehouse

    env = {"PREFECT_HOME": str(tmp_path / "prefect-child")}
    # --quiet: the progress lines that precede an error found this late are left out
    result = kitab(
        "refresh",
        "--source",
        "dump",
        "--snapshot",
        small_snapshot,
        "--authors",
        1000,
        "--release",
        "r",
        "--warehouse",
        tmp_path / "wh",
        "--quiet",
        env=env,
    )
    assert_user_error(result, "--authors 1000: only ", "authors are eligible", "--allow-fewer")
    assert Warehouse(tmp_path / "wh").committed_releases() == []


def test_allow_fewer_publishes_the_eligible_authors_and_says_the_shortfall(tmp_path, small_snapshot):
    from kitab.app.runs import run_refresh
    from kitab.core.errors import BadValue
    from kitab.core.warehouse import Warehouse

    kwargs = dict(
        source="dump",
        snapshot=small_snapshot,
        authors=1000,
        seed=3,
        release="r",
        warehouse=tmp_path / "wh",
        direct=True,
    )
    with pytest.raises(BadValue, match="only .* authors are eligible"):
        run_refresh(**kwargs)
    summary = run_refresh(**kwargs, allow_fewer=True)
    wanted = summary["authors"]
    assert wanted["requested"] == 1000 and 0 < wanted["sampled"] == wanted["eligible"] <= 26
    assert wanted["shortfall"] == 1000 - wanted["released"] and wanted["drawn"] == wanted["sampled"]
    assert summary["stage_counts"]["drawn (authors)"] == wanted["drawn"]
    assert Warehouse(tmp_path / "wh").committed_releases() == ["r"]


# --- read commands: a missing warehouse is not created, an unknown release is named -------------


@pytest.mark.parametrize(
    "args",
    [["releases"], ["sql", "select 1"], ["export", "--release", "r", "--out", "OUT"], ["report", "--release", "r"]],
)
def test_read_commands_on_a_missing_warehouse_create_nothing(tmp_path, args):
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    result = kitab(*args, "--warehouse", tmp_path / "nowhere", timeout=60)
    assert_user_error(result, f"no warehouse at {tmp_path / 'nowhere'}")
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    from kitab.core.warehouse import Warehouse
    from tasks.publish import publish
    from tests.test_warehouse import tables

    root = tmp_path_factory.mktemp("wh")
    publish(
        Warehouse(root),
        "r",
        tables(["Q1", "Q2"]),
        seed=1,
        source="dump",
        snapshot_id="s",
        n_authors_requested=2,
        requests_made=0,
    )
    return root


@pytest.mark.parametrize(
    "args,needle",
    [
        (["export", "--release", "nope", "--out", "OUT"], "no committed release 'nope'"),
        (["report", "--release", "nope"], "no committed release 'nope'"),
        (["sql", "--release", "nope", "select 1"], "no committed release 'nope'"),
        (["sql", "--output", "xml", "select 1"], "--output 'xml': expected one of table, json, jsonl, csv"),
    ],
)
def test_unknown_release_or_output_is_named(tmp_path, warehouse, args, needle):
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    assert_user_error(kitab(*args, "--warehouse", warehouse, timeout=60), needle)
    assert not (tmp_path / "out").exists()


def test_known_release_and_output_still_answer(warehouse):
    ok = kitab(
        "sql", "--warehouse", warehouse, "--release", "r", "--output", "csv", "select count(*) as n from authors"
    )
    assert ok.returncode == 0 and ok.stdout.decode().split() == ["n", "2"] and not ok.stderr


@pytest.mark.parametrize("how", [["--debug"], "KITAB_DEBUG"])
def test_debug_shows_the_traceback(tmp_path, how):
    args = how if isinstance(how, list) else []
    env = {"KITAB_DEBUG": "1"} if how == "KITAB_DEBUG" else None
    result = kitab(*args, "releases", "--warehouse", tmp_path / "nowhere", env=env, timeout=60)
    err = result.stderr.decode()
    assert result.returncode != 0 and "Traceback" in err and "KitabError: no warehouse at" in err
    assert not (tmp_path / "nowhere").exists()


# --- probes on hostile stdin --------------------------------------------------------------

HOSTILE = (
    random.Random(0).randbytes(20_000)  # invalid UTF-8 on most lines
    + b"\nBeloved (1987)\n"
    + b"Love in Paris " * 75_000
    + b"(1990)\nJazz (1992)\n"
)  # a 1 MB line


@pytest.mark.parametrize("probe", [["dedup"], ["tag"], ["constraints", "--human", "--city"]])
def test_probes_answer_random_bytes_and_a_1mb_line_with_warnings(probe):
    """Before: tag and constraints crashed on the bytes (UnicodeEncodeError); on the 1 MB line
    dedup took minutes, tag crashed (spaCy E088), constraints did not finish in 300 s."""
    result = kitab(*probe, stdin=HOSTILE, timeout=240)
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert "Traceback" not in err
    invalid, skipped = err.strip().splitlines()  # exactly one warning line each
    assert invalid.startswith("kitab: warning: ") and "had invalid UTF-8" in invalid
    long_line = HOSTILE.splitlines().index(b"Love in Paris " * 75_000 + b"(1990)") + 1
    assert skipped.startswith("kitab: warning: skipped ") and str(long_line) in skipped
    rows = [json.loads(line) for line in result.stdout.decode().splitlines()]
    text = json.dumps(rows, ensure_ascii=False)
    assert "\ufffd" in text and "Love in Paris" not in text and "Jazz" in text
