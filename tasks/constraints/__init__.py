"""Constraint specs for KITAB queries: one module per type in ``kinds/``, a registry, the
counting rules, candidate enumeration, the ``kitab constraints`` probe and Table 2.

See docs/constraints.md for the semantics (how letters, words and years are read).
"""

from tasks.constraints import kinds  # noqa: F401  (importing registers every type)
from tasks.constraints.book import Book
from tasks.constraints.candidates import Candidate, author_candidates
from tasks.constraints.kinds._entity import EntitySpec, entity_kinds, entity_types
from tasks.constraints.probe import constraints_probe
from tasks.constraints.registry import (
    SPEC_VERSION,
    Spec,
    constraint_id,
    parse_criteria,
    parse_criterion,
    register,
    render_criteria,
    spec_from_dict,
    spec_from_json,
    spec_to_json,
    spec_type,
    spec_types,
)

__all__ = [
    "SPEC_VERSION",
    "Book",
    "Candidate",
    "EntitySpec",
    "Spec",
    "author_candidates",
    "constraints_probe",
    "constraint_id",
    "entity_kinds",
    "entity_types",
    "parse_criteria",
    "parse_criterion",
    "register",
    "render_criteria",
    "spec_from_dict",
    "spec_from_json",
    "spec_to_json",
    "spec_type",
    "spec_types",
]
