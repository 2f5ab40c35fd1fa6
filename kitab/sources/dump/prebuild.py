"""The dump cache built in a child process while a refresh starts. A refresh from a dump snapshot
whose cache (kitab/sources/dump/store.py) is not ready would build it in its sample step, after
Prefect's server has started, one after the other on one core, and keep the build's memory to
the end. :func:`prebuilding` starts the build as the refresh starts instead, in a child process
(spawned, not forked: the refresh has threads): it overlaps the server's start on the other core,
and its memory goes back to the system when the child exits.

The snapshot's builder lock (store.cache_lock) is taken here and handed to the child (the same
open file, so the same ``flock``): from before the child exists to its end, the sample step's
DumpStore.open waits on it, then finds READY.json; the cache is never built twice nor read half
built. A child that fails writes no cache: the sample step then builds it itself and raises the
build's own one-line error. When the refresh ends, fails or is stopped before the build is done,
the child is stopped (SIGTERM, then SIGKILL) and its temp folder removed; if the refresh's
process dies outright, the child gets SIGKILL (PR_SET_PDEATHSIG) and the next builder sweeps its
temp folder (store._sweep_orphans)."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from kitab.core.config import Settings
from kitab.core.params import RefreshParams

STOP_GRACE_SECONDS = 5.0
DUMP = "dump"  # the source kind whose steps read the cache (kitab/sources/kinds/dump.py)


def needs_prebuild(params: RefreshParams, settings: Settings) -> bool:
    """Whether a refresh with ``params`` should build its dump cache in a child as it starts: its
    source is the dump and the snapshot's cache under ``settings.cache_dir`` is not ready."""
    if params.source != DUMP:
        return False
    from kitab.sources.dump.store import cache_ready

    return not cache_ready(params.snapshot_dir(), dump_cache_root(settings))


def dump_cache_root(settings: Settings) -> Path:
    """Where the dump caches are (store.open_store's root)."""
    return settings.cache_dir / "dumps"


class Prebuild:
    """The child building one snapshot's cache (``process``: its Popen)."""

    def __init__(self, process: subprocess.Popen, cache_root: Path, manifest: dict):
        self.process, self.cache_root, self.manifest = process, cache_root, manifest

    def stop(self) -> int:
        """The child ended (stopped if still building, its temp folder removed); its exit status."""
        from kitab.sources.dump.store import _sweep_orphans, cache_lock

        fd = os.open(cache_lock(self.cache_root, self.manifest), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True  # the child let go of the lock: it has ended, or is ending
            except BlockingIOError:
                held = False  # the child is building (or has just ended and another builder waited)
            if not held and self.process.poll() is None:
                self.process.terminate()  # its handler unwinds the build: atomic_dir removes the temp folder
                try:
                    self.process.wait(STOP_GRACE_SECONDS)
                except subprocess.TimeoutExpired:
                    self.process.kill()
            self.process.wait()
            if not held:
                with contextlib.suppress(BlockingIOError):
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    held = True
            if held:  # no builder alive: a killed child's temp folder goes now
                _sweep_orphans(self.cache_root, self.manifest["snapshot_id"])
        finally:
            os.close(fd)
        return self.process.returncode


def start_prebuild(snapshot_dir: Path, cache_root: Path) -> Prebuild | None:
    """The child building the cache of ``snapshot_dir`` under ``cache_root``, holding the
    snapshot's builder lock from now on; None if another process holds it (building: the
    sample step will wait for that one) or the cache is ready."""
    from kitab.sources.dump.store import cache_lock, cache_ready, snapshot_manifest

    snapshot_dir, cache_root = Path(snapshot_dir).resolve(), Path(cache_root).resolve()
    manifest = snapshot_manifest(snapshot_dir)
    cache_root.mkdir(parents=True, exist_ok=True)
    fd = os.open(cache_lock(cache_root, manifest), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        if cache_ready(snapshot_dir, cache_root):  # built since the caller looked
            return None
        # the child inherits this open file, so the lock: it is released when the child ends
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(snapshot_dir), str(cache_root)]
                + ["--lock-fd", str(fd), "--parent", str(os.getpid())],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                # a failure is raised again, in one line, by the sample step's own build
                stderr=subprocess.DEVNULL,
            )
        except OSError:  # no child (e.g. out of processes): the sample step builds it, as before
            return None
        return Prebuild(process, cache_root, manifest)
    finally:
        os.close(fd)  # this process's copy; the child's keeps the lock


@contextlib.contextmanager
def prebuilding(params: RefreshParams, settings: Settings) -> Iterator[Prebuild | None]:
    """The dump cache of a refresh with ``params`` built in a child while the body runs (if
    :func:`needs_prebuild`); the child does not outlive the body."""
    build = (
        start_prebuild(params.snapshot_dir(), dump_cache_root(settings)) if needs_prebuild(params, settings) else None
    )
    try:
        yield build
    finally:
        if build is not None:
            build.stop()


# -- the child ------------------------------------------------------------------------------


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the parent dies (Linux), even by kill -9; an orphan at start exits now."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:
        sys.exit(1)


def _stop(signum, frame) -> None:
    raise SystemExit(1)  # unwinds the build (atomic_dir removes its temp folder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="build a dump snapshot's cache, holding its lock (--lock-fd)")
    parser.add_argument("snapshot", type=Path)
    parser.add_argument("cache_root", type=Path)
    parser.add_argument("--lock-fd", type=int, required=True, help="an open file holding the lock (inherited)")
    parser.add_argument("--parent", type=int, required=True)
    args = parser.parse_args(argv)
    _die_with_parent(args.parent)
    signal.signal(signal.SIGTERM, _stop)
    from kitab.core.errors import KitabError
    from kitab.sources.dump.store import build_locked, snapshot_manifest

    # the lock (--lock-fd) is held until this process ends: whoever waits on it finds it gone
    try:
        build_locked(args.snapshot, args.cache_root, snapshot_manifest(args.snapshot))
    except KitabError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
