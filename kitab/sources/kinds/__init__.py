"""The source kinds by name (``--source live|mirror|dump``), as the taggers have their registry:
each kind is one object (kinds/base.py says what it answers) in a module of its own. A new
kind is a module beside these and a line in BUILTIN (and its name in kitab.core.params.SOURCES,
which validates ``--source`` without importing this layer; a test keeps the two equal)."""

from __future__ import annotations

from kitab.core.errors import BadValue
from kitab.sources.kinds.base import SourceKind
from kitab.sources.kinds.dump import Dump
from kitab.sources.kinds.live import Live
from kitab.sources.kinds.mirror import Mirror

BUILTIN: tuple[SourceKind, ...] = (Live(), Mirror(), Dump())
SOURCE_KINDS: dict[str, SourceKind] = {kind.name: kind for kind in BUILTIN}


def register_source_kind(kind: SourceKind) -> SourceKind:
    """Make ``kind`` selectable by its name (a kind of another package, or a test's)."""
    if SOURCE_KINDS.get(kind.name, kind) is not kind:
        raise ValueError(f"source kind {kind.name!r} is registered twice")
    SOURCE_KINDS[kind.name] = kind
    return kind


def source_kind(name: str) -> SourceKind:
    """The kind registered as ``name``; BadValue naming the registered ones otherwise."""
    try:
        return SOURCE_KINDS[name]
    except KeyError:
        raise BadValue(f"unknown source {name!r}; expected one of {', '.join(SOURCE_KINDS)}") from None


def source_names() -> tuple[str, ...]:
    return tuple(SOURCE_KINDS)
