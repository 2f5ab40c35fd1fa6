"""The tagger registry (dolma's pattern): every tagger is listed under its version id, and a
release tags with the versions configuration selects.

A tagger class has ``name`` (the kind of span it finds, ``title_entities.kind``: the entity
constraint types read spans by this kind), ``version`` (its registry id, stored in every
``title_entities`` row) and ``fingerprint()`` (what its output depends on besides its code:
the model and package versions), which the tag step's cache key includes. A better tagger is
a new version beside the old one; an old release keeps its tags.

The built-in versions are listed here by module path and imported by name when first asked
for: the registry imports no tagger and no tagger imports the registry, so there is no import
circle between them. :func:`register_tagger` adds a version at run time (a new kind's tagger).

Selection: the version ids a run's configuration names (kitab.core.params.RunConfig.taggers,
which the app layer resolves once from ``--taggers`` or ``$KITAB_TAGGERS``), else DEFAULT (the
default tagger of each entity kind in the default release: tasks/entities/registry.py).
Nothing here reads the environment: a step on a remote worker tags with the run's taggers,
not with what that worker's environment says.

A tagger from outside this list (a plugin's, a test's) is selected as ``module:version``: the
module is imported wherever the selection is read (so in every worker process a step runs in),
and importing it registers the tagger (:func:`register_tagger`) and its entity kind.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from kitab.core.errors import BadValue
from tasks.entities.registry import default_taggers

# version id -> "module:class"
BUILTIN = {
    "human_v3": "tasks.taggers.human:HumanTagger",
    "city_v3": "tasks.taggers.city:CityTagger",
    "human_v4": "tasks.taggers.lazy:HumanTaggerV4",
    "city_v4": "tasks.taggers.lazy:CityTaggerV4",
    "human_v5": "tasks.taggers.v5:HumanTaggerV5",
    "city_v5": "tasks.taggers.v5:CityTaggerV5",
    "human_v6": "tasks.taggers.v6:HumanTaggerV6",
    "city_v6": "tasks.taggers.v6:CityTaggerV6",
    "human_v7": "tasks.taggers.v7:HumanTaggerV7",
    "city_v7": "tasks.taggers.v7:CityTaggerV7",
    "human_model_v1": "tasks.taggers.model:HumanModelTagger",
    "city_model_v1": "tasks.taggers.model:CityModelTagger",
    "country_v1": "tasks.taggers.country:CountryTagger",
}
TAGGERS: dict[str, type] = {}  # version id -> class: the built-ins once loaded, and any registered
# issue 20: v4's lazy NER over grown lists; v6 (v5 grown from WordNet) beats v5 on the labelled
# sets; issue 37: v7 decides big cities and doubts fewer non-names (docs/tagging.md): each
# default kind's default_tagger, ("human_v7", "city_v7")
DEFAULT = default_taggers()
ENV = "KITAB_TAGGERS"  # read by the app layer only (kitab.app.runs), never here


def register_tagger(cls: type) -> type:
    """Class decorator: ``cls.version`` becomes selectable."""
    if cls.version in TAGGERS and TAGGERS[cls.version] is not cls:
        raise ValueError(f"tagger version {cls.version!r} is registered twice")
    TAGGERS[cls.version] = cls
    return cls


def selected_versions(configured: str | None = None) -> tuple[str, ...]:
    """The version ids a release tags with: ``configured`` (comma-separated), else DEFAULT.
    One version per kind; an unknown id is a BadValue naming the registered ones."""
    text = configured or ""
    versions = tuple(v.strip() for v in text.split(",") if v.strip()) or DEFAULT
    _load_builtins()
    unknown = [v for v in versions if _find(v) is None]
    if unknown:
        raise BadValue(f"unknown tagger {', '.join(unknown)} ({ENV}); registered: {', '.join(sorted(TAGGERS))}")
    kinds = [tagger_class(v).name for v in versions]
    if len(set(kinds)) != len(kinds):
        raise BadValue(f"{ENV}={','.join(versions)}: one tagger per kind, got kinds {kinds}")
    return versions


def make_taggers(versions: Sequence[str] | None = None, *, endpoint: Any = None, **options: Any) -> list:
    """The selected taggers, constructed (``options``, e.g. ``model``, go to each; ``endpoint``,
    the run's model endpoint (kitab.core.params.ModelEndpoint), only to the model taggers)."""
    _load_builtins()
    from tasks.taggers.model import ModelTagger  # loaded with the built-ins just now

    classes = [tagger_class(v) for v in (selected_versions() if versions is None else versions)]
    taggers = [cls(**options, endpoint=endpoint) if issubclass(cls, ModelTagger) else cls(**options) for cls in classes]
    return taggers


def tagger_class(version: str) -> type:
    """The class of a selected version id (``module:version`` imports ``module`` first)."""
    _load_builtins()
    found = _find(version)
    if found is None:
        raise BadValue(f"unknown tagger {version} ({ENV}); registered: {', '.join(sorted(TAGGERS))}")
    return found


def _find(version: str) -> type | None:
    """``version``'s class, importing its module for ``module:version`` (None: not registered;
    a module that cannot be imported is a BadValue)."""
    if ":" in version:
        module, version = version.rsplit(":", 1)
        try:
            importlib.import_module(module)  # registers its tagger and entity kind
        except ImportError as exc:
            raise BadValue(f"tagger {module}:{version} ({ENV}): cannot import {module} ({exc})") from None
    return TAGGERS.get(version)


def fingerprints(taggers: Sequence) -> list[dict]:
    """Name, version and model/package versions of each tagger: the tag step's cache key."""
    return [{"name": t.name, "version": t.version, **t.fingerprint()} for t in taggers]


def _load_builtins() -> None:
    for version, where in BUILTIN.items():
        if version not in TAGGERS:
            module, name = where.split(":")
            cls = getattr(importlib.import_module(module), name)
            if cls.version != version:  # the list and the class must agree on the id
                raise ValueError(f"{where} has version {cls.version!r}, listed as {version!r}")
            register_tagger(cls)
