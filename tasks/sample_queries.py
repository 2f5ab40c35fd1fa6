"""Stage: a seeded sample of one- and two-constraint queries (table ``queries``).

Follows the paper (App. C.2); every rate is a field of ``SamplingRates``:
- one constraint: each satisfiable candidate is kept with its type's rate (15% starts-with
  and ends-with, 50% word-count, all others 100%); the entity types are asked for every
  author whatever S is (Table 2: 611 each); then unsatisfiable candidates are appended,
  round-robin over types, until they are ~7.99% of the one-constraint queries.
- two constraints: pairs of individually satisfiable constraints of different types;
  starts-with × year-range pairs mapping to > 1 book kept at 25%; of the rest, pairs mapping
  to 1 book at 5% and to > 2 books at 10%; jointly unsatisfiable pairs (S = 0) appended
  until they are ~0.76% of the two-constraint queries.

Every keep/drop draw is a hash of (seed, purpose, constraint ids), not a shared random
stream: the sample is the same for a seed whatever the input order, and adding an author
does not reshuffle the others' draws (only the unsatisfiable top-ups, which depend on
totals, can change).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from itertools import islice
from types import MappingProxyType

from kitab.core.params import DEFAULT_MAX_KEY_ERROR
from tasks.base import StageResult
from tasks.constraints import SPEC_VERSION, Spec, render_criteria, spec_from_json, spec_type
from tasks.key_bound import key_error_over, over_bound_counts, over_bound_reject
from tasks.query_pairs import first_draws, title_masks, uniform

ONE_ALWAYS = "one:always"
ONE_SATISFIABLE = "one:satisfiable"
ONE_UNSATISFIABLE = "one:unsatisfiable"
TWO_EASY = "two:easy"
TWO_ONE_BOOK = "two:one_book"
TWO_TWO_BOOKS = "two:two_books"
TWO_MORE_BOOKS = "two:more_books"
TWO_UNSATISFIABLE = "two:jointly_unsatisfiable"


def default_kinds() -> tuple[str, ...]:
    """The entity kinds a release tags when its run names no taggers."""
    from tasks.entities.registry import entity_kinds

    return tuple(k.name for k in entity_kinds() if k.in_default_release)


def entity_constraint_types(kinds: Iterable[str]) -> frozenset[str]:
    """The ``<kind>_name`` constraint types of the entity ``kinds``: asked for every author."""
    from tasks.entities.registry import entity_kind

    return frozenset(entity_kind(k).constraint_type for k in kinds)


@dataclass(frozen=True)
class SamplingRates:
    """Sampling configuration; the defaults are the paper's (App. C.2, §3.1)."""

    # keep-rate of satisfiable one-constraint candidates, per type; types not listed: 1.0
    one_constraint: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"starts_with": 0.15, "ends_with": 0.15, "word_count": 0.50})
    )
    # types asked for every author, satisfiable or not (paper Table 2: 611 queries each): the
    # entity types of the kinds the run tags (flows/configure.py); default: a default release's
    always_asked: frozenset[str] = field(default_factory=lambda: entity_constraint_types(default_kinds()))
    # target share of unsatisfiable queries among one-constraint queries (paper: 7.99%)
    one_unsatisfiable_share: float = 0.0799
    # the "more easily satisfiable" pair the paper isolates, kept when it maps to > 1 book
    two_easy_types: tuple[str, str] = ("starts_with", "year_range")
    two_easy: float = 0.25
    two_one_book: float = 0.05
    # pairs mapping to exactly 2 books: the paper samples "a single book" and "more than 2
    # books" and says nothing of 2; read literally, they are never sampled
    two_two_books: float = 0.0
    two_more_books: float = 0.10
    # target share of jointly unsatisfiable pairs among two-constraint queries (paper: 0.76%)
    two_unsatisfiable_share: float = 0.0076
    # issue 37: an entity query whose key's estimated chance of holding a wrong book (1 - prod(1 - e)
    # over its decided deciding books, tasks/entity_states.query_key_error) is above this is not
    # asked; None: no bound (a release recorded before the bound existed)
    max_key_error: float | None = DEFAULT_MAX_KEY_ERROR

    def __post_init__(self) -> None:
        for name in (*self.one_constraint, *self.always_asked, *self.two_easy_types):
            spec_type(name)  # raises on an unknown type: a typo must not silently mean 100%
        rates = [
            *self.one_constraint.values(),
            self.two_easy,
            self.two_one_book,
            self.two_two_books,
            self.two_more_books,
        ]
        if not all(0.0 <= rate <= 1.0 for rate in rates):
            raise ValueError(f"sampling rates must lie in [0, 1]: {self}")
        if not all(0.0 <= share < 1.0 for share in (self.one_unsatisfiable_share, self.two_unsatisfiable_share)):
            raise ValueError(f"unsatisfiable shares must lie in [0, 1): {self}")
        if self.max_key_error is not None and not 0.0 <= self.max_key_error <= 1.0:
            raise ValueError(f"max_key_error must lie in [0, 1] (or be None: no bound), got {self.max_key_error}")
        if len(set(self.two_easy_types)) != 2:
            raise ValueError(f"two_easy_types must name two different types: {self.two_easy_types}")

    def as_dict(self) -> dict:
        """JSON-ready, for the run report."""
        return {
            **{f.name: getattr(self, f.name) for f in fields(self)},
            "one_constraint": dict(self.one_constraint),
            "always_asked": sorted(self.always_asked),
            "two_easy_types": list(self.two_easy_types),
        }

    @classmethod
    def from_dict(cls, values: dict) -> SamplingRates:
        """What :meth:`as_dict` gave (a run's recorded ``sampling_rates``), as the rates again."""
        return cls(**_field_values(values))

    def __reduce__(self):
        # picklable (a mappingproxy is not): a step in another process gets the run's rates
        return _unpickled_rates, (self.as_dict(),)

    def one_rate(self, constraint_type: str) -> float:
        return self.one_constraint.get(constraint_type, 1.0)

    def two_rate(self, stratum: str) -> float:
        return {
            TWO_EASY: self.two_easy,
            TWO_ONE_BOOK: self.two_one_book,
            TWO_TWO_BOOKS: self.two_two_books,
            TWO_MORE_BOOKS: self.two_more_books,
        }[stratum]


def fill_count(n_queries: int, n_unsatisfiable: int, share: float) -> int:
    """How many unsatisfiable queries to append so they make ``share`` of the total."""
    return max(0, round((share * n_queries - n_unsatisfiable) / (1.0 - share)))


# A sampled query: its constraint rows (criterion order) and why it was sampled.
Sampled = tuple[list[dict], str]


def round_robin(pools: Mapping[str, list[dict]], draw: Callable[[dict], float]) -> Iterator[dict]:
    """Each type's pool in draw order, interleaved type by type: the paper appends
    unsatisfiable constraints "of each type", so no type crowds out the others."""
    ordered = [sorted(pools[kind], key=draw) for kind in sorted(pools, key=lambda k: spec_type(k).ORDER)]
    for position in range(max(map(len, ordered), default=0)):
        yield from (pool[position] for pool in ordered if position < len(pool))


def two_stratum(types: tuple[str, str], n_mapped: int, easy: frozenset[tuple[str, str]]) -> str:
    """The stratum of a pair of constraints of two different ``types`` mapping to ``n_mapped`` > 0
    books; ``easy``: ``SamplingRates.two_easy_types`` in both orders (asked once per pair)."""
    if n_mapped > 1 and types in easy:
        return TWO_EASY
    return TWO_ONE_BOOK if n_mapped == 1 else TWO_TWO_BOOKS if n_mapped == 2 else TWO_MORE_BOOKS


def render_query(author: Mapping, specs: Sequence[Spec]) -> str:
    """The paper's query form: "List all books written by Toni Morrison (born in 1931) that
    were first published between 1970-1974."."""
    clauses = " and ".join(spec.clause() for spec in specs)
    return f"List all books written by {author['name']} (born in {author['birth_year']}) {clauses}."


def joint_answers(members: Sequence[Mapping]) -> list[tuple[str, str]]:
    """(book id, title) of every book one of whose titles satisfies all ``members`` (constraint
    rows), with the first such title, in all_books order. One title for the whole query: a
    model names a book by one title, and KITAB's evaluator checks the title it wrote."""
    others = [dict(zip(row["mapped_book_ids"], row["satisfying_titles"])) for row in members[1:]]
    out = []
    for book_id, titles in zip(members[0]["mapped_book_ids"], members[0]["satisfying_titles"]):
        if all(book_id in other for other in others):
            common = [t for t in titles if all(t in other[book_id] for other in others)]
            if common:
                out.append((book_id, common[0]))
    return out


def query_row(
    members: Sequence[dict], stratum: str, author: Mapping, seed: int, parsed: dict[str, Spec] | None = None
) -> dict:
    """One row of the ``queries`` table (schema: schemas/queries.json); kitab_index
    is filled in once the author's queries are ordered. ``parsed``: spec JSON -> spec, filled
    as specs are read (every author has the same few hundred)."""
    parsed = {} if parsed is None else parsed
    specs = [parsed.get(row["spec"]) or parsed.setdefault(row["spec"], spec_from_json(row["spec"])) for row in members]
    answers = joint_answers(members)
    mapped = [book_id for book_id, _ in answers]
    n_books = members[0]["n_books"]
    # books a member leaves out as unsure that every other member maps or leaves out too:
    # the key neither requires nor forbids them (issue 28, "don't care")
    open_ = [set(r["mapped_book_ids"]) | set(r.get("unsure_book_ids") or ()) for r in members]
    unsure = [
        b
        for b in dict.fromkeys(b for r in members for b in r.get("unsure_book_ids") or ())
        if all(b in o for o in open_)
    ]
    kitab_types = [spec.KITAB_TYPE for spec in specs]
    return {
        "query_id": f"{author['qid']}:" + "+".join(f"{spec.TYPE}:{spec.value}" for spec in specs),
        "author_qid": author["qid"],
        "n_constraints": len(members),
        "constraint_ids": [row["constraint_id"] for row in members],
        "constraint_types": [spec.TYPE for spec in specs],
        "kitab_index": None,
        # KITAB: a plain string for one constraint, a stringified Python list for two
        "kitab_constraint_type": kitab_types[0] if len(specs) == 1 else repr(kitab_types),
        "constraints": render_criteria(specs),
        "query": render_query(author, specs),
        "mapped_book_ids": mapped,
        "mapped_titles": [title for _, title in answers],
        "unsure_book_ids": unsure,
        "n_mapped": len(mapped),
        "n_books": n_books,
        "constrainedness": (n_books - len(mapped)) / n_books,  # as Candidate.constrainedness
        "satisfiable": bool(mapped),
        "sample_stratum": stratum,
        "seed": seed,
        "spec_version": SPEC_VERSION,
    }


@dataclass
class AuthorQueries:
    """The per-author part of sampling, for any group of authors (a pipeline batch): the
    queries kept by their own draws, and the unsatisfiable candidates the top-ups choose
    from once the totals of every author are known (choose_top_ups)."""

    kept: list[Sampled] = field(default_factory=list)
    one_unsatisfiable: list[dict] = field(default_factory=list)  # constraint rows, with "draw"
    two_unsatisfiable: list[tuple[dict, dict, float]] = field(default_factory=list)  # (first, second, draw)
    # queries the draws kept whose key error is over the bound: rejects rows (never a silent drop)
    over_bound: list[dict] = field(default_factory=list)
    # entity candidates of the unsatisfiable pools left out by the bound, per stratum
    pool_over_bound: Counter = field(default_factory=Counter)


def sample_authors_queries(
    by_author: Mapping[str, Sequence[dict]], seed: int, rates: SamplingRates, books=None
) -> AuthorQueries:
    """One- and two-constraint queries of these authors by their own draws (paper App. C.2).
    ``books``: the authors' books with states and errors (tasks/entity_states.deciding_index);
    with them, an entity query over ``rates.max_key_error`` is dropped after its draw, as a
    rejects row, and left out of the unsatisfiable pools (the draws of the rest do not move)."""
    out = AuthorQueries()
    bound = rates.max_key_error
    checked = bound is not None and books is not None  # else key_error_over is always None
    pair_draws_of, unsatisfiable_draws_of = first_draws(seed, "two"), first_draws(seed, "two-unsatisfiable")
    a, b = rates.two_easy_types
    easy = frozenset({(a, b), (b, a)})
    two_rates = {
        stratum: rates.two_rate(stratum) for stratum in (TWO_EASY, TWO_ONE_BOOK, TWO_TWO_BOOKS, TWO_MORE_BOOKS)
    }

    def keep(members: list[dict], stratum: str) -> None:
        p = key_error_over(members, books, bound)
        if p is None:
            out.kept.append((members, stratum))
        else:
            out.over_bound.append(over_bound_reject(members, stratum, p, bound))

    for rows in by_author.values():
        for row in rows:  # one constraint
            kind = row["constraint_type"]
            if kind in rates.always_asked:
                keep([row], ONE_ALWAYS)
            elif not row["satisfiable"]:
                if key_error_over([row], books, bound) is not None:
                    out.pool_over_bound[ONE_UNSATISFIABLE] += 1
                    continue
                out.one_unsatisfiable.append({**row, "draw": uniform(seed, "one-unsatisfiable", row["constraint_id"])})
            elif uniform(seed, "one", row["constraint_id"]) < rates.one_rate(kind):
                keep([row], ONE_SATISFIABLE)
        satisfiable = [row for row in rows if row["satisfiable"]]
        masks, count_books = title_masks(satisfiable)
        types = [row["constraint_type"] for row in satisfiable]
        ids = [row["constraint_id"] for row in satisfiable]
        # key_error_over is None for a pair with no entity member: asked only where it can bite
        bounded = [checked and bool(row.get("entity_kind")) for row in satisfiable]
        encoded = [i.encode() for i in ids]  # the second id's part of each pair's hash
        for i, first in enumerate(satisfiable):
            first_type, first_id, first_mask, first_bounded = types[i], ids[i], masks[i], bounded[i]
            pair_draw = unsatisfiable_draw = None  # the first id's hash prefix, made when first drawn
            for j in range(i + 1, len(satisfiable)):
                if first_type == types[j]:
                    continue
                second = satisfiable[j]
                n_mapped = count_books(first_mask & masks[j])
                if n_mapped == 0:
                    if (first_bounded or bounded[j]) and key_error_over([first, second], books, bound) is not None:
                        out.pool_over_bound[TWO_UNSATISFIABLE] += 1
                        continue
                    unsatisfiable_draw = unsatisfiable_draw or unsatisfiable_draws_of(first_id)
                    out.two_unsatisfiable.append((first, second, unsatisfiable_draw(encoded[j])))
                    continue
                stratum = two_stratum((first_type, types[j]), n_mapped, easy)
                rate = two_rates[stratum]
                # a draw is never below 0: a rate of 0 (two books, the paper's) keeps nothing, no hash
                # needed (a draw can round to 1.0, so a rate of 1 is still drawn)
                if rate > 0.0:
                    pair_draw = pair_draw or pair_draws_of(first_id)
                    if pair_draw(encoded[j]) < rate:
                        keep([first, second], stratum)
    return out


def batch_tables(part: AuthorQueries, authors_by_qid: Mapping[str, Mapping], seed: int) -> dict[str, list[dict]]:
    """One batch's share of sampling as a refresh writes it (tasks/steps.py): the queries its
    authors' own draws keep (``query_rows``) and the unsatisfiable candidates, with their
    draws, that ``choose_top_ups_sql`` chooses from over every batch."""
    return {
        "queries_kept": query_rows(part.kept, authors_by_qid, seed),
        "one_unsatisfiable": [
            {
                "author_qid": r["author_qid"],
                "constraint_id": r["constraint_id"],
                "constraint_type": r["constraint_type"],
                "draw": r["draw"],
            }
            for r in part.one_unsatisfiable
        ],
        "two_unsatisfiable": [
            {
                "author_qid": a["author_qid"],
                "first_id": a["constraint_id"],
                "second_id": b["constraint_id"],
                "draw": draw,
            }
            for a, b, draw in part.two_unsatisfiable
        ],
    }


def batch_columns(part: AuthorQueries, authors_by_qid: Mapping[str, Mapping], seed: int) -> dict:
    """:func:`batch_tables` as the constrain step writes it, the same bytes: the unsatisfiable
    candidates (~360 pairs per author, its largest table) as columns, not a dict per row."""
    one, two = part.one_unsatisfiable, part.two_unsatisfiable
    return {
        "queries_kept": query_rows(part.kept, authors_by_qid, seed),
        "one_unsatisfiable": {
            k: [r[k] for r in one] for k in ("author_qid", "constraint_id", "constraint_type", "draw")
        },
        "two_unsatisfiable": {
            "author_qid": [a["author_qid"] for a, _, _ in two],
            "first_id": [a["constraint_id"] for a, _, _ in two],
            "second_id": [b["constraint_id"] for _, b, _ in two],
            "draw": [draw for _, _, draw in two],
        },
    }


def batch_counts(by_author: Mapping[str, Sequence[dict]], part: AuthorQueries) -> dict:
    """One batch's counts, merged over batches for the top-up counts and the summary."""
    candidates = [row for rows in by_author.values() for row in rows]
    return {
        "authors": len(by_author),
        "candidates": len(candidates),
        "candidates_satisfiable": sum(r["satisfiable"] for r in candidates),
        "kept_one": sum(1 for m, _ in part.kept if len(m) == 1),
        "kept_one_unsatisfiable": sum(1 for m, _ in part.kept if len(m) == 1 and not m[0]["satisfiable"]),
        "kept_two": sum(1 for m, _ in part.kept if len(m) == 2),
        # issue 37: what the key-error bound cost, per entity constraint type and query size
        "over_key_error_bound": over_bound_counts(part.over_bound),
        "unsatisfiable_pool_over_key_error_bound": dict(sorted(part.pool_over_bound.items())),
    }


def top_up_counts(kept: Sequence[Sampled], rates: SamplingRates) -> tuple[int, int]:
    """How many unsatisfiable one- and two-constraint queries to append, given every kept query."""
    one = [members for members, _ in kept if len(members) == 1]
    already = sum(1 for (row,) in one if not row["satisfiable"])
    return (
        fill_count(len(one), already, rates.one_unsatisfiable_share),
        fill_count(len(kept) - len(one), 0, rates.two_unsatisfiable_share),
    )


def choose_top_ups(
    one_unsatisfiable: Sequence[dict], two_unsatisfiable: Sequence[tuple[dict, dict, float]], n_one: int, n_two: int
) -> list[Sampled]:
    """The unsatisfiable queries appended: one-constraint ones round-robin over types, each
    type's pool in draw order; two-constraint pairs in draw order. (The pipeline runs the
    same rule in SQL over every batch's candidates: ``choose_top_ups_sql`` below.)"""
    pools: dict[str, list[dict]] = defaultdict(list)
    for row in one_unsatisfiable:
        pools[row["constraint_type"]].append(row)
    chosen: list[Sampled] = [
        ([row], ONE_UNSATISFIABLE) for row in islice(round_robin(pools, lambda row: row["draw"]), n_one)
    ]
    pairs = sorted(two_unsatisfiable, key=lambda pair: pair[2])[:n_two]
    chosen += [([first, second], TWO_UNSATISFIABLE) for first, second, _ in pairs]
    return chosen


def choose_top_ups_sql(
    con, one_unsatisfiable: list[str], two_unsatisfiable: list[str], n_one: int, n_two: int
) -> tuple[list[str], list[tuple[str, str]]]:
    """``choose_top_ups`` in DuckDB over Parquet files of every batch's unsatisfiable
    candidates (``sample_authors_queries``' pools, with their draws), so the release's
    candidates are never all in memory: the chosen one-constraint ids, round robin over
    types (each type's k-th draw, types in ORDER, k = 1, 2, ...), and the chosen pairs."""
    one_ids: list[str] = []
    if one_unsatisfiable and n_one:
        orders = [
            (t, spec_type(t).ORDER)
            for (t,) in con.sql(
                "SELECT DISTINCT constraint_type FROM read_parquet(?)", params=[one_unsatisfiable]
            ).fetchall()
        ]
        con.execute("CREATE OR REPLACE TEMP TABLE type_order (constraint_type VARCHAR, type_order INTEGER)")
        con.executemany("INSERT INTO type_order VALUES (?, ?)", orders)
        one_ids = [
            i
            for (i,) in con.sql(
                "SELECT constraint_id FROM (SELECT u.*, o.type_order, row_number() OVER "
                "(PARTITION BY u.constraint_type ORDER BY draw, constraint_id) AS k FROM read_parquet(?) u "
                "JOIN type_order o USING (constraint_type)) ORDER BY k, type_order LIMIT ?",
                params=[one_unsatisfiable, n_one],
            ).fetchall()
        ]
    pairs: list[tuple[str, str]] = []
    if two_unsatisfiable and n_two:
        pairs = con.sql(
            "SELECT first_id, second_id FROM read_parquet(?) ORDER BY draw, first_id, second_id LIMIT ?",
            params=[two_unsatisfiable, n_two],
        ).fetchall()
    return one_ids, pairs


def number_queries_sql(columns: Sequence[str]) -> str:
    """``number_queries``' numbering as a SELECT list over queries rows with ``order``: KITAB's
    integer id is the candidate's index for one constraint, the per-author position for two."""
    return ", ".join(
        f'"{c}"'
        if c != "kitab_index"
        else 'CASE WHEN n_constraints = 1 THEN "order"[1] ELSE row_number() OVER '
        '(PARTITION BY author_qid, n_constraints ORDER BY "order") - 1 END AS kitab_index'
        for c in columns
    )


def sampling_summary_sql(con, queries: str, counts: Mapping, seed: int, rates: SamplingRates) -> dict:
    """``sampling_stats`` over the release's queries file (``counts``: the batches' merged
    sample_authors_queries stats)."""
    ((one, two, one_unsat, two_unsat),) = con.sql(
        "SELECT count(*) FILTER (n_constraints = 1), count(*) FILTER (n_constraints = 2), "
        "count(*) FILTER (n_constraints = 1 AND NOT satisfiable), count(*) FILTER (n_constraints = 2 AND NOT satisfiable) "
        "FROM read_parquet(?)",
        params=[queries],
    ).fetchall()
    strata = dict(
        con.sql(
            "SELECT sample_stratum, count(*) FROM read_parquet(?) GROUP BY ALL ORDER BY 1", params=[queries]
        ).fetchall()
    )
    return {
        "seed": seed,
        "rates": rates.as_dict(),
        "authors": counts.get("authors", 0),
        "candidates": counts.get("candidates", 0),
        "candidates_satisfiable": counts.get("candidates_satisfiable", 0),
        "queries_one": one,
        "queries_two": two,
        "kept_by_stratum": strata,
        "one_unsatisfiable_share": one_unsat / one if one else None,
        "two_unsatisfiable_share": two_unsat / two if two else None,
    }


def group_constraints(
    constraints: Iterable[dict], authors: Iterable[Mapping], books: Iterable[Mapping]
) -> tuple[dict[str, list[dict]], dict[str, Mapping]]:
    """Constraints by author in candidate order (the rows, not copies) and authors by QID; raises
    if the constraints are stale (another spec version, or N differs from ``books``)."""
    by_author: dict[str, list[dict]] = defaultdict(list)
    for row in constraints:
        if row["spec_version"] != SPEC_VERSION:
            raise ValueError(
                f"constraint {row['constraint_id']} has spec version {row['spec_version']}, "
                f"this code is {SPEC_VERSION}: regenerate the constraints"
            )
        by_author[row["author_qid"]].append(row)  # the rows themselves: sampling reads them, never writes
    order = {t: spec_type(t).ORDER for t in {r["constraint_type"] for rs in by_author.values() for r in rs}}
    for rows in by_author.values():
        rows.sort(key=lambda row: (order[row["constraint_type"]], row["constraint_index"]))
    authors_by_qid = {author["qid"]: author for author in authors}
    n_books: Counter[str] = Counter(book["author_qid"] for book in books)
    for qid, rows in by_author.items():
        if qid not in authors_by_qid:
            raise ValueError(f"constraints of author {qid} but no such row in authors")
        if rows[0]["n_books"] != n_books[qid]:
            raise ValueError(
                f"author {qid}: constraints say N = {rows[0]['n_books']}, books has "
                f"{n_books[qid]}: the constraints are stale, regenerate them"
            )
    return by_author, authors_by_qid


def query_rows(sampled: Iterable[Sampled], authors_by_qid: Mapping[str, Mapping], seed: int) -> list[dict]:
    """``queries`` rows of sampled queries, each with ``order`` (its constraints' per-author
    indices), which orders an author's queries and numbers them (number_queries)."""
    parsed: dict[str, Spec] = {}
    return [
        {
            **query_row(members, stratum, authors_by_qid[members[0]["author_qid"]], seed, parsed),
            "order": [m["constraint_index"] for m in members],
        }
        for members, stratum in sampled
    ]


def number_queries(rows: list[dict]) -> list[dict]:
    """Order by author, one- before two-constraint, then candidate order, and fill in KITAB's
    integer constraint_id: the candidate's per-author index for one constraint (as in KITAB's
    files), the query's per-author position for two. Drops the ``order`` helper."""
    rows = sorted(rows, key=lambda row: (row["author_qid"], row["n_constraints"], row["order"]))
    next_two: Counter[str] = Counter()
    out = []
    for row in rows:
        order = row.pop("order")
        if row["n_constraints"] == 1:
            row["kitab_index"] = order[0]
        else:
            row["kitab_index"] = next_two[row["author_qid"]]
            next_two[row["author_qid"]] += 1
        out.append(row)
    return out


def sample_queries(
    constraints: Iterable[Mapping],
    authors: Iterable[Mapping],
    books: Iterable[Mapping],
    *,
    seed: int,
    rates: SamplingRates = SamplingRates(),
    states: Iterable[Mapping] | None = None,
) -> StageResult:
    """Seeded one- and two-constraint queries from the ``constraints`` table, all in memory
    (the pipeline runs the same three parts batch by batch: sample_authors_queries per batch,
    then the top-ups and numbering over every batch).

    ``books`` is a consistency check: every author's N in ``constraints`` must equal their
    books here (else the constraints are stale).
    Rows are ordered by author, then one- before two-constraint, then candidate order.
    ``states`` (book_entities rows): with them, the key-error bound applies (its drops: rejects).
    """
    from tasks.entity_states import deciding_index

    by_author, authors_by_qid = group_constraints(constraints, authors, books)
    part = sample_authors_queries(by_author, seed, rates, None if states is None else deciding_index(states))
    n_one, n_two = top_up_counts(part.kept, rates)
    sampled = part.kept + choose_top_ups(part.one_unsatisfiable, part.two_unsatisfiable, n_one, n_two)
    queries = number_queries(query_rows(sampled, authors_by_qid, seed))
    return StageResult(
        tables={"queries": queries}, rejects=part.over_bound, stats=sampling_stats(by_author, queries, seed, rates)
    )


def sampling_stats(
    by_author: Mapping[str, Sequence[dict]], queries: Sequence[dict], seed: int, rates: SamplingRates
) -> dict:
    one = [q for q in queries if q["n_constraints"] == 1]
    two = [q for q in queries if q["n_constraints"] == 2]
    candidates = [row for rows in by_author.values() for row in rows]
    return {
        "seed": seed,
        "rates": rates.as_dict(),
        "authors": len(by_author),
        "candidates": len(candidates),
        "candidates_satisfiable": sum(row["satisfiable"] for row in candidates),
        "queries_one": len(one),
        "queries_two": len(two),
        "kept_by_stratum": dict(sorted(Counter(q["sample_stratum"] for q in queries).items())),
        "one_unsatisfiable_share": sum(not q["satisfiable"] for q in one) / len(one) if one else None,
        "two_unsatisfiable_share": sum(not q["satisfiable"] for q in two) / len(two) if two else None,
    }


def _unpickled_rates(values: dict) -> SamplingRates:
    """Rates sent to a worker process, rebuilt without checking their type names again: they were
    checked where the run made them, and a kind a run selected by module (``module:version``) is
    registered in the worker only when its step reads the run's taggers, after the arguments
    arrive (checking here raised "unknown constraint type" in every worker for such a kind)."""
    rates = object.__new__(SamplingRates)
    for name, value in _field_values(values).items():
        object.__setattr__(rates, name, value)
    return rates


def _field_values(values: dict) -> dict:
    """:meth:`SamplingRates.as_dict`'s JSON values as the fields' types."""
    return {
        "max_key_error": None,  # recorded before issue 37: no bound
        **values,
        "one_constraint": MappingProxyType(dict(values["one_constraint"])),
        "always_asked": frozenset(values["always_asked"]),
        "two_easy_types": tuple(values["two_easy_types"]),
    }
