"""One refresh at a time per warehouse: the refresh lock.

A refresh takes ``<warehouse>/.refresh.lock`` before anything else (before Prefect starts its
server and database in the warehouse, before any source is asked) and holds it to the end, so
a second refresh on the same warehouse is refused at once, with a message naming the one
that runs, instead of failing at publish after all its work.

The lock is an ``flock`` on the warehouse folder itself, and one on that file; the kernel releases it when the holder dies, however
it dies (``kill -9`` included), so a lock left by a killed refresh is simply taken over by the
next one. The file's content is only a description of the holder (pid, host, release, start
time) for the refusal message. The folder's flock is what survives the file being deleted
(``rm .refresh.lock`` during a refresh): a second refresh still finds the folder locked and is
refused, instead of taking a new file's lock and colliding with the first at publish. (``Warehouse.lock()`` is another,
shorter lock: publishing's commit.)

:func:`waiting_lock` is the same kind of lock for work that others wait for rather than refuse
(one build of a cache at a time, across processes; the waiters then use its result).

Within one process the lock is re-entrant: ``kitab.app.runs.run_refresh`` takes it before the flow
starts and ``flows.pipeline.run_pipeline`` (which deployments run directly) takes it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from kitab.core.errors import KitabError

log = logging.getLogger(__name__)
LOCK_FILE = ".refresh.lock"


class WarehouseBusy(KitabError):
    """Another refresh holds the warehouse's refresh lock."""


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or held) a refresh lock: what the lock file says."""

    pid: int
    host: str
    release: str
    started_at: str  # ISO 8601, UTC

    def describe(self) -> str:
        return f"release {self.release!r}, pid {self.pid} on {self.host}, started {self.started_at}"

    @classmethod
    def parse(cls, text: str) -> LockHolder | None:
        """The holder a lock file describes; None if it is empty or not ours (a holder that
        is still writing it, or a file written by something else)."""
        try:
            data = json.loads(text)
            return cls(
                pid=int(data["pid"]),
                host=str(data["host"]),
                release=str(data["release"]),
                started_at=str(data["started_at"]),
            )
        except (ValueError, KeyError, TypeError):
            return None


@dataclass
class _Held:
    fd: int
    holder: LockHolder
    folder_fd: int = -1
    depth: int = 1


_HELD: dict[Path, _Held] = {}  # warehouse root -> the lock this process holds on it
_HELD_GUARD = threading.Lock()


def lock_path(root: Path) -> Path:
    return Path(root) / LOCK_FILE


def _read(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def _folder_busy(root: Path) -> WarehouseBusy:
    """The refusal when the folder is locked: the holder as its lock file says, if it is there."""
    try:
        fd = os.open(lock_path(root), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return WarehouseBusy(
            f"warehouse {root} is busy: another refresh is running (its {LOCK_FILE} was "
            "deleted, the lock holds all the same); wait for it to finish, or stop it"
        )
    try:
        return _busy(root, fd)
    finally:
        os.close(fd)


def _acquire(root: Path, release: str) -> _Held:
    root.mkdir(parents=True, exist_ok=True)
    # O_CLOEXEC: a child process (Prefect's server, a worker) must not inherit the lock and
    # keep it after this process is gone.
    folder_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(folder_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(folder_fd)
        raise _folder_busy(root) from None
    except BaseException:
        os.close(folder_fd)
        raise
    try:
        fd = os.open(lock_path(root), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except BaseException:
        os.close(folder_fd)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # a holder that locks only the file (kitab before the folder lock)
        busy = _busy(root, fd)
        os.close(fd)
        os.close(folder_fd)
        raise busy from None
    except BaseException:
        os.close(fd)
        os.close(folder_fd)
        raise
    stale = LockHolder.parse(_read(fd))
    if stale is not None:  # its holder died without releasing: the kernel dropped its flock
        log.warning("took over the refresh lock of %s, which is no longer running", stale.describe())
    holder = LockHolder(
        pid=os.getpid(),
        host=socket.gethostname(),
        release=release,
        started_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(asdict(holder)).encode(), 0)
    return _Held(fd, holder, folder_fd)


def refuse_if_busy(root: Path) -> None:
    """Raise :class:`WarehouseBusy` if a refresh holds the lock of ``root`` right now: a cheap
    check the CLI makes before its slow imports, so a second refresh is refused in about a
    second. :func:`refresh_lock` is the real lock; this takes nothing and creates nothing."""
    root = Path(root).resolve()
    if root in _HELD:
        return
    try:
        folder_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        fcntl.flock(folder_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _folder_busy(root) from None
    finally:
        os.close(folder_fd)
    try:
        fd = os.open(lock_path(root), os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # conflicts only with a holder's LOCK_EX
    except BlockingIOError:
        raise _busy(root, fd) from None
    finally:
        os.close(fd)  # (closing also drops the shared lock at once)


def _busy(root: Path, fd: int) -> WarehouseBusy:
    holder = LockHolder.parse(_read(fd))
    running = holder.describe() if holder else "details not written yet"
    return WarehouseBusy(
        f"warehouse {root} is busy: another refresh is running ({running}); wait for it to finish, or stop it"
    )


@contextlib.contextmanager
def refresh_lock(root: Path, release: str) -> Iterator[LockHolder]:
    """Hold the refresh lock of the warehouse at ``root`` (created if missing) for a refresh
    of ``release``; raise :class:`WarehouseBusy` at once if another process holds it."""
    root = Path(root).resolve()
    with _HELD_GUARD:
        held = _HELD.get(root)
        if held is not None:
            held.depth += 1
        else:
            held = _HELD[root] = _acquire(root, release)
    try:
        yield held.holder
    finally:
        with _HELD_GUARD:
            held.depth -= 1
            if held.depth == 0:
                del _HELD[root]
                os.ftruncate(held.fd, 0)  # an empty file: nobody holds it (content is only a description)
                os.close(held.fd)  # closing the last descriptor releases the flock
                os.close(held.folder_fd)


@contextlib.contextmanager
def waiting_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing), waiting while another
    process holds it; the kernel releases it when the holder dies, however it dies."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


class FolderBusy(KitabError):
    """Another process holds a folder's lock (e.g. a from-dumps build writing the same --out)."""


@contextlib.contextmanager
def refusing_lock(path: Path, what: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing); if another process holds it,
    raise :class:`FolderBusy` at once naming ``what``. Released by the kernel however the holder dies."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusy(f"{what} is busy: another process holds {path}; wait for it to finish") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        yield
    finally:
        os.close(fd)
