"""The tagger registry (dolma's pattern): every tagger is registered under its version id
(``human_v3``, ``city_v3``, ``human_v4``, ``city_v4``, ``human_v5``, ``city_v5``, ``human_v6``, ``city_v6``, ``human_model_v1``,
``city_model_v1``),
and a release tags with the versions configuration selects.

A tagger class has ``name`` (the kind of span it finds, ``title_entities.kind``: the entity
constraint types read spans by this kind), ``version`` (its registry id, stored in every
``title_entities`` row) and ``fingerprint()`` (what its output depends on besides its code:
the model and package versions), which the tag step's cache key includes. A better tagger is
a new version beside the old one; an old release keeps its tags.

Selection: ``$KITAB_TAGGERS`` (comma-separated version ids, one per kind), else DEFAULT.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from kitab.core.errors import BadValue

TAGGERS: dict[str, type] = {}
# issue 20: v4's lazy NER over grown lists; v6 (v5 grown from WordNet) beats v5 on the labelled
# sets (docs/tagging.md)
DEFAULT = ("human_v6", "city_v6")
ENV = "KITAB_TAGGERS"


def register_tagger(cls: type) -> type:
    """Class decorator: ``cls.version`` becomes selectable."""
    if cls.version in TAGGERS and TAGGERS[cls.version] is not cls:
        raise ValueError(f"tagger version {cls.version!r} is registered twice")
    TAGGERS[cls.version] = cls
    return cls


def selected_versions(configured: str | None = None) -> tuple[str, ...]:
    """The version ids a release tags with: ``configured`` or $KITAB_TAGGERS, else DEFAULT.
    One version per kind; an unknown id is a BadValue naming the registered ones."""
    text = configured if configured is not None else os.environ.get(ENV, "")
    versions = tuple(v.strip() for v in text.split(",") if v.strip()) or DEFAULT
    _register_builtins()
    unknown = [v for v in versions if v not in TAGGERS]
    if unknown:
        raise BadValue(f"unknown tagger {', '.join(unknown)} ({ENV}); registered: {', '.join(sorted(TAGGERS))}")
    kinds = [TAGGERS[v].name for v in versions]
    if len(set(kinds)) != len(kinds):
        raise BadValue(f"{ENV}={','.join(versions)}: one tagger per kind, got kinds {kinds}")
    return versions


def make_taggers(versions: Sequence[str] | None = None, **options: Any) -> list:
    """The selected taggers, constructed (``options``, e.g. ``model``, go to each)."""
    return [TAGGERS[v](**options) for v in (selected_versions() if versions is None else versions)]


def fingerprints(taggers: Sequence) -> list[dict]:
    """Name, version and model/package versions of each tagger: the tag step's cache key."""
    return [{"name": t.name, "version": t.version, **t.fingerprint()} for t in taggers]


def _register_builtins() -> None:
    import tasks.taggers  # noqa: F401  (importing the package registers the built-in taggers)
