"""Issue 39 item 1, through the real ``kitab`` command: one output-path rule for every command
that writes (kitab/core/outputs.py). Every command x every forbidden target (the ledger's
Parquet, a committed table file, the warehouse, its tables folder, another warehouse, an input
of the run, a user's non-empty folder without a manifest) is refused in one or two lines with
exit != 0, nothing written, the warehouse's bytes unchanged and ``kitab verify`` the same; a
command's own earlier output is replaced (``--overwrite`` where the command asks for it) only
when its manifest lists everything in it. And from-dumps ``--overwrite`` keeps a user's files
beside an old marker file, and leaves no lock file and no empty ``.parts/``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kitab.core.outputs import MANIFEST, OutputRefused, check_file, check_folder, unlisted, warehouse_holding
from kitab.core.warehouse import Warehouse
from kitab.simulate.chat import ChatServer
from kitab.simulate.generator.published import JSON_FILE
from tests import test_hostile, test_hostile_dumps
from tests.output_path_cases import TARGETS, case_folders, commands, target_of, tree_digest, user_folder
from tests.test_cli_errors import assert_user_error, kitab
from tests.test_hostile import RELEASE

# the fixtures of tests/test_hostile.py and tests/test_hostile_dumps.py: one small release (built
# once for this module, the pipeline without Prefect) and small dumps in the published formats
released = test_hostile.released
published = test_hostile_dumps.published
from_dumps, errors = test_hostile_dumps.from_dumps, test_hostile_dumps.errors


@pytest.fixture(scope="module")
def chat():
    with ChatServer() as server:
        yield server


COMMANDS = list(commands(RELEASE, Path("wh"), Path("scratch"), "url"))


def refused_case(name: str, label: str, released: Path, chat_url: str, folder: Path) -> dict | None:
    """One command at one target on private copies; None when the command has no such target."""
    wh, other, scratch = case_folders(released, folder)
    args, source = commands(RELEASE, wh, scratch, chat_url)[name]
    target = target_of(label, RELEASE, wh, other, scratch, source)
    if target is None:
        return None
    before = {p: tree_digest(p) for p in (wh, other, scratch)}
    result = kitab(*[target if a == "{T}" else a for a in args])
    changed = [str(p) for p, digest in before.items() if tree_digest(p) != digest]
    return {"result": result, "changed": changed, "verify": kitab("verify", "--warehouse", wh)}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_forbidden_target_is_refused_in_one_line_and_nothing_changes(name, released, chat, tmp_path):
    """Each target on its own copies, a few at a time (each case is two short `kitab` processes)."""
    from concurrent.futures import ThreadPoolExecutor

    counted = kitab("verify", "--warehouse", released)
    assert counted.returncode == 0, counted.stderr
    with ThreadPoolExecutor(4) as pool:
        cases = {
            label: pool.submit(refused_case, name, label, released, chat.url, tmp_path / str(n))
            for n, label in enumerate(TARGETS)
        }
        cases = {label: case.result() for label, case in cases.items()}
    for label, case in cases.items():
        if case is None:
            continue
        err = assert_user_error(case["result"])
        assert "--overwrite" not in err, (label, err)  # never suggested where it would not be let through
        assert case["changed"] == [], (label, case["changed"], err)  # nothing written anywhere
        verify = case["verify"]
        assert verify.returncode == 0 and verify.stdout == counted.stdout, (label, verify.stdout)
    assert not chat.seen  # refused before any request


def test_export_into_the_tables_folder_with_overwrite_keeps_every_table(released, tmp_path):
    """The issue's probe as a person ran it: afterwards `verify` still counts every file."""
    wh = Warehouse(shutil.copytree(released, tmp_path / "wh"))
    counted = kitab("verify", "--warehouse", wh.root).stdout
    for out in (wh.tables_dir, wh.root):
        result = kitab("export", "--release", RELEASE, "--out", out, "--overwrite", "--warehouse", wh.root)
        assert_user_error(result, "the warehouse", "choose a path outside it")
    verify = kitab("verify", "--warehouse", wh.root)
    assert verify.returncode == 0 and verify.stdout == counted and b" 0 committed" not in verify.stdout


def test_own_earlier_output_is_replaced_and_anything_unlisted_is_refused(released, tmp_path):
    wh = Warehouse(shutil.copytree(released, tmp_path / "wh"))
    hf, rep, page = tmp_path / "hf", tmp_path / "rep", tmp_path / "page.html"
    for _ in range(2):  # the second run: each command's own output, listed by its manifest
        assert kitab("export", "--release", RELEASE, "--out", hf, "--warehouse", wh.root).returncode == 0
        result = kitab("report", "--release", RELEASE, "--out", rep, "--html", page, "--warehouse", wh.root)
        assert result.returncode == 0, result.stderr
    assert not (hf / MANIFEST).exists()  # the dataset folder: provenance.json lists its files
    listed = json.loads((rep / MANIFEST).read_text())
    assert listed["command"] == "kitab report" and "report.md" in listed["files"]
    assert sorted(listed["files"]) == sorted(
        p.relative_to(rep).as_posix() for p in rep.rglob("*") if p.is_file() and p.name != MANIFEST
    )
    for folder in (hf, rep):
        user_folder(folder / "mine")
    refused = kitab("export", "--release", RELEASE, "--out", hf, "--overwrite", "--warehouse", wh.root)
    assert_user_error(refused, "mine/", "did not write")
    refused = kitab("report", "--release", RELEASE, "--out", rep, "--warehouse", wh.root)
    assert_user_error(refused, "mine/", "did not write")
    assert (hf / "mine" / "thesis.txt").exists() and (rep / "mine" / "sub" / "notes.txt").exists()
    assert kitab("verify", "--warehouse", wh.root).returncode == 0


def test_the_rule_as_functions(released, tmp_path):
    wh = Warehouse(released)
    assert warehouse_holding(wh.committed_files(RELEASE)["books"]) == wh.root
    assert warehouse_holding(tmp_path) is None
    with pytest.raises(OutputRefused, match="lies inside the warehouse"):
        check_file(wh.tables_dir / "x.csv", "--out")
    with pytest.raises(OutputRefused, match="is a folder"):
        check_file(tmp_path, "--out")
    with pytest.raises(OutputRefused, match="not a regular file"):
        check_file("/dev/null", "--out")
    with pytest.raises(OutputRefused, match="an input of this run"):
        check_file(tmp_path / "in" / "a.csv", "--out", [tmp_path / "in"])
    with pytest.raises(OutputRefused, match="holds"):
        check_folder(tmp_path, "--out", "kitab x", [tmp_path / "in" / "a.csv"])
    done = tmp_path / "done"
    (done / "plots").mkdir(parents=True)
    (done / "plots" / "a.png").write_bytes(b"png")
    (done / MANIFEST).write_text(json.dumps({"command": "kitab x", "files": ["plots/a.png"]}))
    assert check_folder(done, "--out", "kitab x").earlier["files"] == ["plots/a.png"]
    with pytest.raises(OutputRefused, match="not an output of `kitab y`"):
        check_folder(done, "--out", "kitab y")
    (done / "plots" / "empty").mkdir()
    assert unlisted(done, ["plots/a.png", MANIFEST]) == "plots/empty/"
    (done / "plots" / "empty").rmdir()
    (done / "link").symlink_to(wh.root)  # a link is listed or refused, never followed
    assert unlisted(done, ["plots/a.png", MANIFEST]) == "link"
    with pytest.raises(OutputRefused, match="holds link"):
        check_folder(done, "--out", "kitab x")


# -- from-dumps --------------------------------------------------------------------------------
def test_from_dumps_overwrite_keeps_a_users_files_beside_an_old_marker(published, tmp_path):
    claimed = user_folder(tmp_path / "claimed")
    (claimed / ".kitab-from-dumps").write_text("kitab snapshot from-dumps dump-0000\n")  # an older kitab's claim
    before = tree_digest(claimed, skip=())
    result = from_dumps(published / JSON_FILE, published / "openlibrary", claimed, "--overwrite")
    assert result.returncode != 0 and len(errors(result)) == 1, result.stderr
    assert "remove it yourself" in errors(result)[0] and "--overwrite" not in errors(result)[0].split(";")[-1]
    assert tree_digest(claimed, skip=()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claimed"]  # no lock file, no .parts/


def test_from_dumps_leaves_no_lock_and_no_empty_parts_and_lists_its_files(published, tmp_path):
    out = tmp_path / "snap"
    for extra in ((), ("--overwrite",)):
        result = from_dumps(published / JSON_FILE, published / "openlibrary", out, *extra)
        assert result.returncode == 0, result.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["snap"]  # nothing beside it
    listed = json.loads((out / MANIFEST).read_text())
    assert listed["command"] == "kitab snapshot from-dumps" and "MANIFEST.json" in listed["files"]
    (out / "thesis.txt").write_text("mine")
    result = from_dumps(published / JSON_FILE, published / "openlibrary", out, "--overwrite")
    assert result.returncode != 0 and "thesis.txt" in errors(result)[0] and len(errors(result)) == 1
    assert (out / "thesis.txt").read_text() == "mine"
    broken = shutil.copytree(published, tmp_path / "broken")
    next((broken / "openlibrary").glob("ol_dump_works_*")).write_bytes(b"")
    failed = tmp_path / "failed"
    result = from_dumps(broken / JSON_FILE, broken / "openlibrary", failed)
    assert result.returncode != 0 and len(errors(result)) <= 2, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "snap"]  # no lock, no .parts/


def test_from_dumps_into_a_warehouse_is_refused(published, released, tmp_path):
    wh = shutil.copytree(released, tmp_path / "wh")
    before = tree_digest(wh)
    for out in (wh, wh / "tables", wh / "snap"):
        result = from_dumps(published / JSON_FILE, published / "openlibrary", out, "--overwrite")
        assert result.returncode != 0 and len(errors(result)) == 1 and "the warehouse" in errors(result)[0]
    assert tree_digest(wh) == before
