"""``<kind>_name``: "Book contains a human name in its title." / "Book doesn't contain …", one
type per registered entity kind (tasks/entities/registry.py): human_name, city_name, and any
kind registered later, derived from the kind (its name, KITAB's phrase, its order) instead of
written out once per kind."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.constraints.kinds._entity import EntitySpec
from tasks.constraints.registry import Spec, add_types_from
from tasks.entities.registry import EntityKind, entity_kinds, generation

_MADE: dict[str, tuple[EntityKind, type[EntitySpec]]] = {}


def spec_class(kind: EntityKind) -> type[EntitySpec]:
    """The EntitySpec subclass of ``kind`` (one per kind object, made once): ``HumanName``."""
    if kind.name not in _MADE or _MADE[kind.name][0] is not kind:
        name = "".join(part.title() for part in kind.name.split("_")) + "Name"
        attrs = {
            "TYPE": kind.constraint_type,
            "KITAB_TYPE": kind.kitab_type,
            "ORDER": kind.order,
            "ENTITY": kind.entity,
            "KIND": kind.name,
            "__module__": __name__,
            "__qualname__": name,
            "__doc__": f"{kind.kitab_type}: whether a title of the book names a {kind.entity} (present / absent).",
        }
        _MADE[kind.name] = (kind, dataclass(frozen=True)(type(name, (EntitySpec,), attrs)))
    return _MADE[kind.name][1]


_CURRENT: list = [None, ()]  # [the kinds' generation, their types]


def entity_spec_types() -> tuple[type[Spec], ...]:
    """The entity kinds' constraint types, for the constraint registry (asked on every lookup,
    so a kind registered after this module was imported has its type too). The same tuple
    while no kind changes: the registry's lookup stays cheap."""
    if _CURRENT[0] != generation():
        _CURRENT[1] = tuple(spec_class(kind) for kind in entity_kinds())
        _CURRENT[0] = generation()
    return _CURRENT[1]


add_types_from(entity_spec_types)
