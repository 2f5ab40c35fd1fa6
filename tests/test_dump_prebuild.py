"""The dump cache built in a child process as a refresh starts (kitab/sources/dump/prebuild.py):
when it is wanted, built once between the child and the sample step's DumpStore.open, a failure
raised in one line, and no child or temp folder left behind however the refresh ends. Real
builds of the bundled (generated) snapshot and of damaged copies, real child processes."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from kitab.core.config import Settings
from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.params import RefreshParams
from kitab.sources.dump.prebuild import dump_cache_root, needs_prebuild, prebuilding, start_prebuild
from kitab.sources.dump.store import READY_FILE, DumpStore, cache_ready, open_store
from kitab.sources.snapshot.format import OL_AUTHORS_FILE, SnapshotFormatError, read_manifest
from tests.test_cli_errors import assert_user_error, kitab

SNAPSHOT_ID = read_manifest(BUNDLED_SNAPSHOT)["snapshot_id"]


def _temp_folders(root: Path) -> list[str]:
    return [p.name for p in root.iterdir() if p.name.endswith(".tmp") or ".old-" in p.name] if root.exists() else []


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie nobody reaped yet) within ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _wait_for_temp_folder(root: Path, within: float = 60.0) -> None:
    """Until a build's temp folder exists under ``root`` (the child is building)."""
    deadline = time.monotonic() + within
    while not _temp_folders(root):
        assert time.monotonic() < deadline, "no build started"
        time.sleep(0.01)


def test_a_refresh_prebuilds_only_a_dump_whose_cache_is_not_ready(tmp_path):
    settings = Settings(warehouse=tmp_path / "wh")
    dump = RefreshParams(source="dump", snapshot=str(BUNDLED_SNAPSHOT))
    assert needs_prebuild(dump, settings)
    # the other kinds read no dump cache (a mirror serves the same snapshot over HTTP)
    assert not needs_prebuild(RefreshParams(source="mirror", snapshot=str(BUNDLED_SNAPSHOT)), settings)
    assert not needs_prebuild(RefreshParams(source="live"), settings)
    DumpStore.open(BUNDLED_SNAPSHOT, dump_cache_root(settings)).close()
    assert not needs_prebuild(dump, settings)  # built: nothing to do
    ready = dump_cache_root(settings) / SNAPSHOT_ID / READY_FILE
    marker = json.loads(ready.read_text())
    ready.write_text(json.dumps({**marker, "version": marker["version"] - 1}))  # an older cache version
    assert needs_prebuild(dump, settings)


def test_the_child_builds_and_the_sample_steps_open_waits_and_reads_it(tmp_path):
    settings = Settings(warehouse=tmp_path / "wh")
    params = RefreshParams(source="dump", snapshot=str(BUNDLED_SNAPSHOT))
    with prebuilding(params, settings) as build:
        assert build is not None and build.process.poll() is None  # building, in a child
        assert not cache_ready(BUNDLED_SNAPSHOT, dump_cache_root(settings))
        store = open_store(BUNDLED_SNAPSHOT, settings)  # what the sample step opens: waits on the lock
        assert store.scan_seconds is None  # read the child's cache, never built it again
        assert store.query("SELECT count(*) FROM authors")[0][0] > 0
        store.close()
    assert build.process.returncode == 0
    scan = json.loads((dump_cache_root(settings) / SNAPSHOT_ID / READY_FILE).read_text())["scan_seconds"]
    assert {"wikidata", "authors", "works", "keyed"} <= set(scan)  # the build's steps, for the summary/benchmark
    assert _temp_folders(dump_cache_root(settings)) == []
    with prebuilding(params, settings) as again:
        assert again is None  # ready: no child


def test_a_second_prebuild_leaves_the_build_to_the_first(tmp_path):
    root = tmp_path / "cache"
    first = start_prebuild(BUNDLED_SNAPSHOT, root)
    assert first is not None and start_prebuild(BUNDLED_SNAPSHOT, root) is None  # the lock is the first's
    DumpStore.open(BUNDLED_SNAPSHOT, root).close()
    assert first.stop() == 0


def _damaged(tmp_path: Path) -> Path:
    """The bundled snapshot with a bad Open Library author line, its manifest's checksum updated
    (so the refresh's quick check passes and the build itself finds the damage)."""
    snapshot = tmp_path / "snapshot"
    shutil.copytree(BUNDLED_SNAPSHOT, snapshot)
    path = snapshot / OL_AUTHORS_FILE
    lines = gzip.decompress(path.read_bytes()).decode().split("\n")
    lines[3] = "\t".join(lines[3].split("\t")[:4])  # four fields
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    manifest = json.loads((snapshot / "MANIFEST.json").read_text())
    manifest["checksums"][OL_AUTHORS_FILE] = hashlib.sha256(path.read_bytes()).hexdigest()
    (snapshot / "MANIFEST.json").write_text(json.dumps(manifest, indent=2))
    return snapshot


def test_a_failed_prebuild_is_the_builds_own_error_and_leaves_no_cache(tmp_path):
    snapshot, root = _damaged(tmp_path), tmp_path / "cache"
    build = start_prebuild(snapshot, root)
    assert build is not None
    with pytest.raises(SnapshotFormatError, match=OL_AUTHORS_FILE.replace(".", r"\.")):
        DumpStore.open(snapshot, root)  # the child failed: the sample step's own build says why
    assert build.stop() == 1
    assert [p.name for p in root.iterdir()] == [f".{read_manifest(snapshot)['snapshot_id']}.lock"]


def test_a_refresh_whose_prebuild_fails_says_so_in_one_line(tmp_path):
    snapshot = _damaged(tmp_path)
    # --runner local: the same run_refresh, prebuild included, without Prefect's server
    result = kitab(
        "refresh",
        *("--source", "dump", "--snapshot", snapshot, "--authors", 5, "--release", "r"),
        *("--runner", "local", "--warehouse", tmp_path / "wh", "--quiet"),
    )
    assert_user_error(result, OL_AUTHORS_FILE)
    assert not (tmp_path / "wh" / "releases").exists() or not any((tmp_path / "wh" / "releases").iterdir())
    caches = tmp_path / "wh" / ".cache" / "dumps"
    assert _temp_folders(caches) == [] and not any(p.is_dir() for p in caches.iterdir())


def test_a_refresh_that_ends_during_the_build_stops_the_child_and_its_temp_folder(tmp_path):
    settings = Settings(warehouse=tmp_path / "wh")
    params = RefreshParams(source="dump", snapshot=str(BUNDLED_SNAPSHOT))
    with pytest.raises(KeyboardInterrupt), prebuilding(params, settings) as build:
        _wait_for_temp_folder(dump_cache_root(settings))
        raise KeyboardInterrupt  # e.g. Ctrl-C while Prefect's server starts
    assert build.process.returncode != 0 and _gone(build.process.pid, 0)
    assert _temp_folders(dump_cache_root(settings)) == []
    assert not cache_ready(BUNDLED_SNAPSHOT, dump_cache_root(settings))
    store = DumpStore.open(BUNDLED_SNAPSHOT, dump_cache_root(settings))  # the next refresh builds it
    assert store.scan_seconds is not None
    store.close()


PARENT = """
import sys, time
from pathlib import Path
from kitab.sources.dump.prebuild import start_prebuild
build = start_prebuild(Path(sys.argv[1]), Path(sys.argv[2]))
print(build.process.pid, flush=True)
time.sleep(600)
"""


def test_a_killed_refresh_takes_its_child_along_and_the_next_build_sweeps_its_temp_folder(tmp_path):
    root = tmp_path / "cache"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(BUNDLED_SNAPSHOT), str(root)], stdout=subprocess.PIPE, text=True
    )
    try:
        child = int(parent.stdout.readline())
        _wait_for_temp_folder(root)
        os.kill(parent.pid, signal.SIGKILL)  # no finally, no atexit: only the kernel acts
        parent.wait()
        assert _gone(child)  # PR_SET_PDEATHSIG
    finally:
        parent.kill()
        parent.wait()
    assert _temp_folders(root)  # a SIGKILLed build leaves its temp folder ...
    store = DumpStore.open(BUNDLED_SNAPSHOT, root)
    assert store.scan_seconds is not None
    store.close()
    assert _temp_folders(root) == []  # ... which the next builder removes
