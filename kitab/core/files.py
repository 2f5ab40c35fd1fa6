"""Files written whole, and their hashes: the one place that knows how.

Every file kitab writes goes through a temp path beside its target and one rename, so a
reader sees the old file or the whole new one, never half a file (a killed run leaves a
``.*.tmp`` at worst, which nothing reads). Folders are swapped the same way.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on success it replaces ``path`` in one rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o644)  # mkstemp makes 0600; what kitab writes is shared read-only data
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):  # no file operation after the rename: it was the last step
            os.unlink(tmp)


def write_via_temp(path: str | os.PathLike, write: Callable[[str], object]) -> None:
    """``write(tmp)`` fills a temporary file beside ``path``, which is then renamed to it."""
    with atomic_file(path) as tmp:
        write(str(tmp))


def write_named(folder: Path, write: Callable[[str], T], name: Callable[[Path], str]) -> tuple[Path, T]:
    """``write(tmp)`` fills a temp file in ``folder``, which is then renamed to ``name(tmp)``
    (e.g. its content's hash): the name is known only once the file is whole."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".part.", suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o644)
    try:
        result = write(tmp)
        target = folder / name(Path(tmp))
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target, result


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_file(path) as tmp:
        tmp.write_bytes(data)


def swap_dir(new: Path, path: Path) -> None:
    """Put the finished folder ``new`` in ``path``'s place. An existing ``path`` is moved aside
    first and removed only once the new one is in (put back if that fails), so a reader never
    sees a half-written folder (at worst, briefly, none)."""
    if not (path.exists() or path.is_symlink()):
        os.rename(new, path)
        return
    old = path.with_name(f".{path.name}.old-{os.getpid()}")
    os.rename(path, old)
    try:
        os.rename(new, path)
    except BaseException:
        os.rename(old, path)
        raise
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old)
    else:
        old.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp dir beside ``path``; on success it takes ``path``'s place (:func:`swap_dir`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes 0700
    try:
        yield tmp
        swap_dir(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
