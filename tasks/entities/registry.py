"""The entity-kind registry: an entity kind ("human": a title names a person) is one
:class:`EntityKind`, and everything that differs between kinds is asked of it.

- tagging: its tagger versions (tasks/taggers/registry.py lists the classes) and which one a
  default release selects;
- states (tasks/entity_states.py): its title rules' evidence classes, each with its measured
  error count (wrong, titles) and whether it may decide alone, and how a title's spans map to a
  class (``span_class``);
- second readers (tasks/book_evidence.py): which ``book_records`` fields speak for it and the
  rule that reads them (``record_rule``), and its clause in the model tagger's prompt;
- constraints (tasks/constraints/kinds/entity_name.py): the ``<name>_name`` type, present or
  absent, phrased with ``entity`` ("human name") as KITAB phrases it;
- the products: the export's columns (``has_<name>_name``, ``<name>_names``; KITAB's own kinds
  are always there, any other kind when a release tags it), the card, the report, the review
  file, ``kitab tag`` and ``kitab constraints``.

A kind is one module in tasks/entities/kinds/ that calls :func:`register_kind` (the package
imports every module in it). A kind from elsewhere (a plugin, a test) registers itself when
its module is imported; a run selects it by naming its tagger as ``module:version`` (see
tasks/taggers/registry.py), which imports the module in every process that runs a step.

Measured classes are required: a kind registers with the classes its tagger's titles fall into
(at least ``plain``, a title with no span and no doubt) and their counts on a labelled set. A
class the tagger produces that its kind does not list is an error in the constrain step, not a
silent "unsure": an unmeasured rule must not quietly empty every key of a release.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kitab.core.errors import BadValue

YES, NO = "yes", "no"
PLAIN = "plain"  # the class of a title with no span and no doubt row: every kind has it
# (verdict, detail) a kind's record rule gives for one book, or None: its records say nothing reliable
RecordRule = Callable[[Sequence[str], Sequence[str], Sequence[Mapping], object], "tuple[str, str] | None"]


@dataclass(frozen=True)
class EvidenceClass:
    """One of a kind's title-rule classes: what the rules said (``verdict``: "yes", a span was
    found; "no", none) and how, measured on a labelled set: ``errors`` of ``titles`` were wrong.
    ``risky``: the class may not decide alone (a second reader must agree). Chosen by reading the
    counts (a class whose error is several times the rest's), not computed from them: "population"
    (a smaller town or a given name, city_v7) is 0/7 on the sets yet risky, the guess behind the
    held-out false cities (issue 28)."""

    name: str
    verdict: str
    errors: int
    titles: int
    risky: bool
    note: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in (YES, NO):
            raise ValueError(f"evidence class {self.name!r}: verdict must be yes or no, got {self.verdict!r}")
        if not 0 <= self.errors <= self.titles:
            raise ValueError(f"evidence class {self.name!r}: errors {self.errors} of {self.titles} titles")


@dataclass(frozen=True)
class EntityKind:
    """What a title can name, as one object. ``name`` is ``title_entities.kind``,
    ``book_entities.kind`` and its taggers' ``name``."""

    name: str  # "human"
    entity: str  # "human name": KITAB's phrase (constraint text, card, report)
    order: int  # its constraint type's ORDER (candidate and criterion order)
    taggers: tuple[str, ...]  # its tagger versions, oldest first (tasks/taggers/registry.py)
    default_tagger: str  # the version a release tags with when it selects the kind
    classes: tuple[EvidenceClass, ...]
    span_class: Callable[[frozenset[str]], str]  # the detectors of a title's spans -> its class
    in_default_release: bool = False  # selected when the run names no taggers
    kitab: bool = False  # one of KITAB's own kinds: its export columns are always there
    record_fields: tuple[str, ...] = ()  # book_records.field values that speak for it
    record_rule: RecordRule | None = None  # (titles, the title rules' spans, the book's rows, gazetteer)
    prompt: str | None = None  # its clause in the model tagger's prompt ("every city name in it (...)")
    _by_class: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError(f"entity kind {self.name!r}: an evidence class is listed twice")
        if PLAIN not in names:
            raise ValueError(
                f"entity kind {self.name!r}: no measured {PLAIN!r} class (a title with nothing found); "
                "register a kind with its evidence classes and their counts on a labelled set"
            )
        if self.default_tagger not in self.taggers:
            raise ValueError(f"entity kind {self.name!r}: default tagger {self.default_tagger!r} not in its taggers")
        self._by_class.update({c.name: c for c in self.classes})

    # -- names derived from the kind (one rule, so no kind spells them out) ----------------------
    @property
    def constraint_type(self) -> str:
        return f"{self.name}_name"  # constraints.constraint_type, e.g. human_name

    @property
    def kitab_type(self) -> str:
        return f"{self.name}-name"  # KITAB's constraint_type, e.g. human-name

    @property
    def columns(self) -> tuple[str, str]:
        """Its export columns (book-metadata): the flag and the names found."""
        return export_columns(self.name)

    # -- evidence classes ---------------------------------------------------------------------
    def evidence_class(self, cls: str) -> EvidenceClass:
        try:
            return self._by_class[cls]
        except KeyError:
            raise ValueError(
                f"entity kind {self.name!r}: its tagger gave the evidence class {cls!r}, which the kind does "
                f"not list ({', '.join(self._by_class)}); measure it and add it to the kind's classes"
            ) from None

    def risky(self, cls: str) -> bool:
        return self.evidence_class(cls).risky

    def class_verdict(self, cls: str) -> str | None:
        """What a title of class ``cls`` said ("yes" / "no"), None for one the kind does not list."""
        found = self._by_class.get(cls)
        return found.verdict if found else None

    def class_errors(self, cls: str) -> tuple[int, int] | None:
        """(wrong, titles) of a class, None for one the kind does not list (key quality: no credit)."""
        found = self._by_class.get(cls)
        return (found.errors, found.titles) if found else None


def export_columns(kind: str) -> tuple[str, str]:
    """The export's columns for ``kind``: KITAB's ``has_human_name`` / ``human_names`` pattern."""
    return f"has_{kind}_name", f"{kind}_names"


_KINDS: dict[str, EntityKind] = {}
_LOADED = False
_GENERATION = [0]  # bumped on every change: what derives from the kinds can tell it is current


def register_kind(kind: EntityKind) -> EntityKind:
    """Make ``kind`` known to every stage (once per name)."""
    if kind.name in _KINDS and _KINDS[kind.name] != kind:
        raise ValueError(f"entity kind {kind.name!r} is registered twice")
    if any(k.order == kind.order and k.name != kind.name for k in _KINDS.values()):
        raise ValueError(f"entity kind {kind.name!r}: order {kind.order} already taken")
    _KINDS[kind.name] = kind
    _GENERATION[0] += 1
    return kind


def unregister_kind(name: str) -> None:
    """Forget a kind registered at run time (a test's, once it is done)."""
    _KINDS.pop(name, None)
    _GENERATION[0] += 1


def generation() -> int:
    """A number that changes whenever a kind is registered or forgotten."""
    _load_builtins()
    return _GENERATION[0]


def _load_builtins() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        importlib.import_module("tasks.entities.kinds")  # every module there registers its kind


def entity_kinds() -> tuple[EntityKind, ...]:
    """Every registered kind, by name (the order book_entities rows and columns take)."""
    _load_builtins()
    return tuple(sorted(_KINDS.values(), key=lambda k: k.name))


def find_kind(name: str) -> EntityKind | None:
    _load_builtins()
    return _KINDS.get(name)


def entity_kind(name: str) -> EntityKind:
    """The kind called ``name``; BadValue naming the registered ones if there is none."""
    found = find_kind(name)
    if found is None:
        known = ", ".join(k.name for k in entity_kinds())
        raise BadValue(f"unknown entity kind {name!r} (registered: {known}; a kind registers in tasks/entities/kinds/)")
    return found


def default_taggers() -> tuple[str, ...]:
    """The tagger versions a release selects when its run names none: each default kind's."""
    return tuple(k.default_tagger for k in sorted(entity_kinds(), key=lambda k: k.order) if k.in_default_release)


def kitab_kinds() -> tuple[EntityKind, ...]:
    """KITAB's own kinds (human, city): their export columns are in every release."""
    return tuple(k for k in sorted(entity_kinds(), key=lambda k: k.order) if k.kitab)


def release_kinds(tagged: Iterable[str]) -> tuple[str, ...]:
    """The kinds a release's products (export columns, card, report) show, given the kinds it
    tagged: KITAB's own (human, city: KITAB's evaluation code reads has_human_name and
    has_city_name, so they are always there) and every kind it tagged, in the kinds' order
    (an unregistered kind last, by name)."""
    order = {k.name: n for n, k in enumerate(sorted(entity_kinds(), key=lambda k: k.order))}
    wanted = {k.name for k in kitab_kinds()} | set(tagged)
    return tuple(sorted(wanted, key=lambda k: (order.get(k, len(order)), k)))


def entity_phrase(kind: str) -> str:
    """What a title names, in words ("human name"); an unregistered kind: "<kind> name"."""
    found = find_kind(kind)
    return found.entity if found else f"{kind} name"


def and_list(words: Sequence[str]) -> str:
    """("human", "city") -> "human and city"; ("human", "city", "country") -> "human, city and country"."""
    if len(words) < 2:
        return words[0] if words else "no entity"
    return f"{', '.join(words[:-1])} and {words[-1]}"
