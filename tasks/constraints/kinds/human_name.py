"""human-name: "Book contains a human name in its title." / "Book doesn't contain …"."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.constraints.kinds._entity import EntitySpec
from tasks.constraints.registry import register


@register
@dataclass(frozen=True)
class HumanName(EntitySpec):
    TYPE = "human_name"
    KITAB_TYPE = "human-name"
    ORDER = 50
    ENTITY = "human name"
    KIND = "human"
