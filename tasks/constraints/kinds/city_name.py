"""city-name: "Book contains a city name in its title." / "Book doesn't contain …"."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.constraints.kinds._entity import EntitySpec
from tasks.constraints.registry import register


@register
@dataclass(frozen=True)
class CityName(EntitySpec):
    TYPE = "city_name"
    KITAB_TYPE = "city-name"
    ORDER = 60
    ENTITY = "city name"
    KIND = "city"
