"""Where a command may write: the one output-path rule of every command that writes a path the
user names (export, report --out / --html, answer --out / --cache, review export, the snapshot
commands).

An output path is

- never inside a warehouse: neither the command's own nor any other it can detect, walking up
  from the path (a folder with ``tables/releases/`` or ``kitab.duckdb`` is one); one exception,
  named by its command: ``kitab site build`` may write ``<warehouse>/site`` of the warehouse it
  reads (:func:`check_warehouse_folder`), nothing else in it;
- never an input of the run: not the same path, not inside one, not holding one;
- a file output is a file (never a folder, never a device): it replaces only that file;
- a folder output is new, empty, or an earlier output of the same command whose manifest lists
  everything in it: only then is it replaced, whole (``--overwrite`` where the command asks for
  it). A folder holding anything the manifest does not list, or without a manifest, is refused.

A refusal is :class:`OutputRefused` (a BadValue: one ``kitab: error:`` line) raised before
anything is written, and it never suggests ``--overwrite`` unless ``--overwrite`` would be let
through. The manifest is :data:`MANIFEST` in the folder, written with the output (export's is
its ``provenance.json``, which names its files: the dataset folder stays what the Hub gets).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kitab.core.errors import BadValue

MANIFEST = ".kitab-output.json"  # {"command": "kitab report", "files": [relative POSIX paths]}
# what makes a folder a warehouse (kitab.core.ledger's layout; kitab.core.warehouse.CATALOG)
WAREHOUSE_MARKS = ("tables/releases", "kitab.duckdb")


class OutputRefused(BadValue):
    """An output path the rule forbids (one line, nothing written)."""


@dataclass(frozen=True)
class Folder:
    """A folder output that passed the rule: ``earlier`` is the manifest of the command's
    earlier output it holds (None: new or empty)."""

    path: Path
    earlier: dict | None = None


def warehouse_holding(path: Path) -> Path | None:
    """The warehouse ``path`` is or lies inside (walking up), or None."""
    for folder in (path, *path.parents):
        if any((folder / mark).exists() for mark in WAREHOUSE_MARKS):
            return folder
    return None


def _resolved(path: str | os.PathLike) -> Path:
    return Path(path).expanduser().resolve()


def _relation(path: Path, other: Path) -> str | None:
    if path == other:
        return "is"
    if other in path.parents:
        return "lies inside"
    if path in other.parents:
        return "holds"
    return None


def check_place(path: str | os.PathLike, option: str, inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """The resolved ``path`` if it is in no warehouse and is, holds and lies inside no input."""
    out = _resolved(path)
    warehouse = warehouse_holding(out)
    if warehouse is not None:
        how = "is" if warehouse == out else "lies inside"
        raise OutputRefused(
            f"{option} {out}: {how} the warehouse {warehouse}; nothing written: choose a path outside it"
        )
    for item in inputs:
        relation = _relation(out, _resolved(item))
        if relation:
            raise OutputRefused(
                f"{option} {out}: {relation} {_resolved(item)}, an input of this run; nothing written: choose another path"
            )
    return out


def check_file(path: str | os.PathLike, option: str, inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """A file output: :func:`check_place`, and the path is a regular file or nothing yet."""
    out = check_place(path, option, inputs)
    if out.exists():
        mode = out.stat().st_mode
        if stat.S_ISDIR(mode):
            raise OutputRefused(f"{option} {out}: is a folder; nothing written: give the path of a file to write")
        if not stat.S_ISREG(mode):
            raise OutputRefused(f"{option} {out}: is not a regular file; nothing written: choose another path")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputRefused(f"{option} {out}: {parent} is a file, not a folder; nothing written")
            break
    return out


def check_cache(path: str | os.PathLike, option: str, inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """A cache file: a file output, except that a warehouse's own ``.cache/`` may hold it."""
    out = _resolved(path)
    warehouse = warehouse_holding(out)
    if warehouse is not None and warehouse / ".cache" in out.parents:
        if out.is_dir():
            raise OutputRefused(f"{option} {out}: is a folder; nothing written: give the path of a file to write")
        for item in inputs:
            if _relation(out, _resolved(item)):
                raise OutputRefused(f"{option} {out}: is an input of this run; nothing written: choose another path")
        return out
    return check_file(path, option, inputs)


def read_manifest(folder: Path) -> dict | None:
    """The folder's :data:`MANIFEST` (None when missing or unreadable)."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        return None
    return data


def unlisted(folder: Path, listed: Iterable[str]) -> str | None:
    """The first thing in ``folder`` the list does not name (a file, a link, or a folder no
    listed file is in), or None: walked top-down, stopping at the first."""
    files = set(listed)
    folders = {p.rsplit("/", i)[0] for p in files for i in range(1, p.count("/") + 1)}
    for top, dirs, names in os.walk(folder, followlinks=False):
        rel = Path(top).relative_to(folder).as_posix()
        prefix = "" if rel == "." else rel + "/"
        for name in sorted(names):
            if prefix + name not in files:
                return prefix + name
        for name in sorted(dirs):
            if (Path(top) / name).is_symlink():
                if prefix + name not in files:
                    return prefix + name
            elif prefix + name not in folders:
                return prefix + name + "/"
        dirs[:] = [d for d in dirs if not (Path(top) / d).is_symlink()]
    return None


def check_folder(
    path: str | os.PathLike,
    option: str,
    command: str,
    inputs: Iterable[str | os.PathLike] = (),
    *,
    manifest: Callable[[Path], dict | None] | None = None,
    legacy: Callable[[Path], str | None] | None = None,
) -> Folder:
    """A folder output of ``command`` (e.g. "kitab report"): :func:`check_place`, then new,
    empty, or the command's earlier output with everything in it listed by its manifest
    (``manifest``: how this command's is read, default :func:`read_manifest`). ``legacy``
    names an earlier output written before manifests (the refusal then says what to do)."""
    return _earlier_output(check_place(path, option, inputs), option, command, manifest, legacy)


def check_warehouse_folder(
    path: str | os.PathLike, option: str, command: str, warehouse: str | os.PathLike, name: str
) -> Folder:
    """A folder output a warehouse may hold: exactly ``<warehouse>/<name>`` of the warehouse the
    command reads (``kitab site build``'s default, ``<warehouse>/site``), new, empty or the
    command's earlier output; any other path is :func:`check_folder`'s, the warehouse an input."""
    out, root = _resolved(path), _resolved(warehouse)
    if out == root / name and warehouse_holding(out) == root:
        return _earlier_output(out, option, command, None, None)
    return check_folder(path, option, command, [root])


def _earlier_output(out: Path, option: str, command: str, manifest, legacy) -> Folder:
    if not out.exists():
        return Folder(out)
    if not out.is_dir():
        raise OutputRefused(f"{option} {out}: exists and is not a folder; nothing written: choose another path")
    if not any(out.iterdir()):
        return Folder(out)
    found = (manifest or read_manifest)(out)
    if found is None or found.get("command") != command:
        old = legacy(out) if legacy else None
        if old:
            raise OutputRefused(f"{option} {out}: {old}; nothing changed: remove it yourself, or choose a new folder")
        raise OutputRefused(
            f"{option} {out}: a non-empty folder that is not an output of `{command}` (no manifest); "
            "nothing changed: choose a new or empty folder"
        )
    extra = unlisted(out, [*found["files"], MANIFEST])
    if extra is not None:
        raise OutputRefused(
            f"{option} {out}: holds {extra}, which the earlier `{command}` did not write; "
            "nothing changed: move it out, or choose a new folder"
        )
    return Folder(out, found)


def manifest_of(folder: Path, command: str) -> dict:
    """The manifest of a finished output folder: every file in it (the manifest aside)."""
    files = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if (p.is_file() or p.is_symlink()) and p.name != MANIFEST
    )
    return {"command": command, "files": files}


def write_manifest(folder: Path, command: str) -> dict:
    """Write :data:`MANIFEST` into a finished output folder (before it is swapped into place)."""
    data = manifest_of(folder, command)
    (folder / MANIFEST).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data
