"""Stage: every candidate constraint of every author, before any sampling (table ``constraints``).

Per author: the registered types' candidates (tasks/constraints/kinds/), each with the books
it maps to, S, N and κ = 1 − S/N. Sampling into queries is tasks/sample_queries.py.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache

from kitab.core.errors import BadValue
from kitab.core.stages import GENERATE_CONSTRAINTS
from tasks.base import StageResult, reject
from tasks.constraints import (
    SPEC_VERSION,
    Book,
    Candidate,
    constraint_id,
    entity_kinds,
    spec_to_json,
)
from tasks.constraints.indexed import author_candidates_indexed
from tasks.constraints.kinds._entity import EntitySpec
from tasks.constraints.matching import author_books
from tasks.taggers.registry import selected_versions, tagger_class

STAGE = GENERATE_CONSTRAINTS  # rejects.stage of what this stage drops (kitab/core/stages.py)
# An entity constraint whose deciding books (the author's books: each could go either way) are
# more than this share unsure makes no candidate, so no query samples it (docs/constraints.md).
MAX_UNSURE_SHARE = 0.5


def mostly_unsure(candidate: Candidate) -> bool:
    return len(candidate.unsure) > MAX_UNSURE_SHARE * candidate.n_books


def entity_flags(
    books: Iterable[Mapping], title_entities: Iterable[Mapping], kinds: Iterable[str] | None = None
) -> dict[str, dict[str, bool]]:
    """``title_entities`` rows -> each book's flags per entity kind (default: the kinds of the
    selected taggers that a registered constraint type reads; a kind no tagger looked for
    stays unknown, so it makes no constraints): a book has a human (city, ...) name if any
    of its titles carries such a span. Every book gets an entry (tagged, possibly with
    nothing found). Same rule as the SQL view ``book_entity_flags``; a data test checks
    they agree."""
    kinds = tuple(tagged_kinds() if kinds is None else kinds)
    flags = {b["book_id"]: dict.fromkeys(kinds, False) for b in books}
    for e in title_entities:
        if e["book_id"] in flags and e["kind"] in kinds:
            flags[e["book_id"]][e["kind"]] = True
    return flags


def state_flags(
    books: Iterable[Mapping], book_entities: Iterable[Mapping], kinds: Iterable[str] | None = None
) -> dict[str, dict[str, bool | None]]:
    """``book_entities`` rows (tasks/entity_states.py) -> each book's flags per kind: True
    (yes), False (no) or None (unsure: a "don't care" book, in no such query's key). A kind
    with no row for a book stays untagged (no entity constraints for its author)."""
    kinds = set(tagged_kinds() if kinds is None else kinds)
    flags: dict[str, dict[str, bool | None]] = {b["book_id"]: {} for b in books}
    value = {"yes": True, "no": False, "unsure": None}
    for e in book_entities:
        if e["book_id"] in flags and e["kind"] in kinds:
            flags[e["book_id"]][e["kind"]] = value[e["state"]]
    return flags


def kind_versions(versions: Sequence[str] | None = None) -> dict[str, str]:
    """kind -> the tagger version the run (``versions``; default: the registry's default) tags it
    with: what a book's stated error is calibrated for (tasks/entities/calibration.py)."""
    chosen = selected_versions() if versions is None else selected_versions(",".join(versions))
    return {tagger_class(v).name: v for v in chosen}


def tagged_kinds(versions: Sequence[str] | None = None) -> tuple[str, ...]:
    """The entity kinds the taggers ``versions`` (the run's; default: the registry's default)
    tag (tasks/taggers/registry.py), sorted. A tagger whose kind no entity kind registers is a
    BadValue: its spans would decide nothing (tasks/entities/registry.py)."""
    selected = set(kind_versions(versions))
    unknown = sorted(selected - set(entity_kinds()))
    if unknown:
        raise BadValue(
            f"tagger kind {', '.join(unknown)}: no entity kind of that name is registered "
            f"(registered: {', '.join(entity_kinds())}; a kind is a module in tasks/entities/kinds/)"
        )
    return tuple(sorted(selected))


def book_view(row: Mapping, flags: Mapping[str, bool | None] | None) -> Book:
    """A ``books`` row (+ its tagger flags) -> a Book with every title: canonical title
    first, then each distinct variant (``author_books`` keeps the answer titles)."""
    titles = tuple(dict.fromkeys([row["canonical_title"], *(row.get("variant_titles") or [])]))
    flags = flags or {}
    return Book(
        book_id=row["book_id"],
        titles=titles,
        first_year=row.get("first_year"),
        entities=tuple(sorted(flags.items())),
        canonical=row["canonical_title"],
    )


@lru_cache(maxsize=4096)
def _spec_texts(spec) -> tuple[str, str]:
    """(JSON, rendered text) of a spec: the same few hundred specs recur across every author."""
    return spec_to_json(spec), spec.render()


def constraint_row(author_qid: str, index: int, candidate: Candidate) -> dict:
    """One row of the ``constraints`` table (schema: schemas/constraints.json)."""
    spec = candidate.spec
    spec_json, text = _spec_texts(spec)
    return {
        "constraint_id": constraint_id(author_qid, spec),
        "author_qid": author_qid,
        "constraint_index": index,
        "constraint_type": spec.TYPE,
        "kitab_constraint_type": spec.KITAB_TYPE,
        "spec": spec_json,
        "text": text,
        "mapped_book_ids": [book.book_id for book in candidate.mapped],
        "mapped_titles": candidate.answers,
        "entity_kind": spec.KIND if isinstance(spec, EntitySpec) else None,
        "unsure_book_ids": candidate.unsure,
        "satisfying_titles": [list(titles) for titles in candidate.satisfying],
        "n_mapped": candidate.n_mapped,
        "n_books": candidate.n_books,
        "constrainedness": candidate.constrainedness,
        "satisfiable": candidate.satisfiable,
        "spec_version": SPEC_VERSION,
    }


def generate_constraints(
    authors: Iterable[Mapping],
    books: Iterable[Mapping],
    flags: Mapping[str, Mapping[str, bool]],
    kinds: Sequence[str] | None = None,
    candidates_of: Callable[[Sequence[Book]], list[Candidate]] = author_candidates_indexed,
) -> StageResult:
    """All candidate constraints per author, ordered by author qid then candidate order.

    An author's books are ordered by (canonical title, book id), the order of KITAB's
    ``all_books``, so mapped lists read the same way everywhere; a book satisfies a
    constraint through the titles KITAB's evaluator credits to it (``author_books``), and
    ``mapped_titles`` names it by a title that satisfies the constraint. Entity constraints
    exist only for authors whose books are all tagged (an untagged book could go either way).
    ``candidates_of``: one author's candidates; the indexed form by default, the verifier
    form (``author_candidates``) is its reference in tests.
    """
    qids = sorted({author["qid"] for author in authors})
    known = set(qids)
    by_author: dict[str, list[Book]] = defaultdict(list)
    rejects = []
    for row in books:
        if row["author_qid"] not in known:
            rejects.append(
                reject(
                    STAGE,
                    "author_not_in_authors",
                    "book",
                    row["book_id"],
                    author_qid=row["author_qid"],
                    title=row["canonical_title"],
                )
            )
            continue
        by_author[row["author_qid"]].append(book_view(row, flags.get(row["book_id"])))

    kinds = tuple(tagged_kinds() if kinds is None else kinds)  # the run's tagged kinds (entity_flags)
    rows: list[dict] = []
    not_credited = 0  # variant titles KITAB's evaluator would not map back to their book
    for qid in qids:
        books_of_author = author_books(sorted(by_author.get(qid, []), key=lambda book: (book.title, book.book_id)))
        not_credited += sum(len(b.titles) for b in by_author.get(qid, [])) - sum(len(b.titles) for b in books_of_author)
        for index, candidate in enumerate(candidates_of(books_of_author)):
            if mostly_unsure(candidate):
                # issue 28: its key would rest on too few decided books; said, not silently dropped
                rejects.append(
                    reject(
                        STAGE,
                        "entity_books_mostly_unsure",
                        "constraint",
                        constraint_id(qid, candidate.spec),
                        author_qid=qid,
                        evidence={"unsure": len(candidate.unsure), "books": candidate.n_books},
                    )
                )
                continue
            rows.append(constraint_row(qid, index, candidate))

    by_type = Counter(row["constraint_type"] for row in rows)
    unsatisfiable = Counter(row["constraint_type"] for row in rows if not row["satisfiable"])
    stats = {
        "authors": len(qids),
        "authors_without_books": sum(1 for qid in qids if not by_author.get(qid)),
        "authors_without_entity_flags": sum(
            1
            for qid in qids
            if by_author.get(qid) and any(not b.tagged(kind) for b in by_author[qid] for kind in kinds)
        ),
        "books": sum(len(v) for v in by_author.values()),
        "titles_not_credited_by_evaluator": not_credited,
        "constraints": len(rows),
        "constraints_by_type": dict(sorted(by_type.items())),
        "unsatisfiable_by_type": dict(sorted(unsatisfiable.items())),
        "spec_version": SPEC_VERSION,
    }
    return StageResult(tables={"constraints": rows}, rejects=rejects, stats=stats)
