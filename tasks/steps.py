"""The pipeline's steps: thin wrappers that read Parquet refs, call the pure stage functions
and write Parquet refs. A step takes and returns only small picklable values (a
``RunContext``, refs, numbers), so a runner can send it to a thread, a process or a Dask
worker; each opens its own sources from ``ctx.sources`` and checkpoints in ``ctx.work``.

=================  =========================================  ====================
step               stage functions                            runs
=================  =========================================  ====================
sample_step        sample_authors                             once
collect_step       match_openlibrary, fetch_works,            per batch of authors
                   clean_books, dedup_titles
tag_step           tag_entities.title_tags                    per chunk of titles
constrain_step     tag_entities.entity_rows,                  per batch of authors
                   generate_constraints, sample_queries
                   (the per-author draws), claims.claim_material
sample_queries_    sample_queries (top-ups, numbering)        once, over every batch
step
claims_step        claims.claims_from_material (the draws)    once, over every batch
=================  =========================================  ====================

The global parts (distinct titles, publishing) are DuckDB over the refs, in flows/pipeline.py;
the tags' routing to their batches is tasks/tag_routing.py.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kitab.core.params import ModelEndpoint
from kitab.core.progress import step_progress
from kitab.core.refs import (
    WORK_COMPRESSION,
    TableRef,
    duck,
    iter_rows,
    read_rows,
    read_slice,
    write_arrow,
    write_columns,
    write_query,
    write_rows,
)
from kitab.core.schemas import arrow_schema, columns_to_arrow
from kitab.core.stages import GENERATE_CONSTRAINTS, SAMPLE_AUTHORS, TAG_ENTITIES
from kitab.core.workdir import StepResult, WorkDir
from kitab.sources import SourceSpec, sources_for
from kitab.sources.wikidata import works_with_labels
from tasks.book_evidence import review_labels
from tasks.claim_draw import shared_keys
from tasks.claims import claim_material, claims_from_batches
from tasks.clean_books import CROWD, clean_books
from tasks.dedup_titles import dedup_titles
from tasks.entity_states import book_states, decided_by, deciding_index, second_reader_evidence
from tasks.fetch_works import SOURCE_UNAVAILABLE, collect_authors, wikidata_records
from tasks.generate_constraints import generate_constraints, kind_versions, state_flags, tagged_kinds
from tasks.sample_authors import fetch_candidates, sample_authors
from tasks.sample_queries import (
    ONE_UNSATISFIABLE,
    TWO_UNSATISFIABLE,
    SamplingRates,
    batch_columns,
    batch_counts,
    choose_top_ups_sql,
    fill_count,
    group_constraints,
    number_queries_sql,
    query_rows,
    sample_authors_queries,
    sampling_summary_sql,
)
from tasks.tag_entities import DEFAULT_MODEL, entity_rows, title_tags
from tasks.tag_routing import tags_for
from tasks.taggers.model import book_spans, second_reader_session, second_reader_version
from tasks.taggers.registry import fingerprints, make_taggers


@dataclass(frozen=True)
class RunContext:
    """What every step of one refresh shares."""

    release: str
    seed: int
    today_year: int
    work: WorkDir
    sources: SourceSpec
    released_ol_keys: tuple[str, ...] = ()
    # the run's tagger versions (kitab.core.params.RunConfig.taggers), carried to every worker:
    # a step never asks its own environment which taggers to use
    taggers: tuple[str, ...] = ()
    # the run's model endpoint and second reader (RunConfig.tagger_endpoint, .second_reader),
    # carried likewise: the model taggers and the model second reader ask this endpoint
    tagger_endpoint: ModelEndpoint | None = None
    second_reader: str = ""  # "" | "model"
    # the warehouse's review labels (kitab/release/review.py): (title, author, kind, label) rows
    review_labels: tuple[tuple[str, str, str, str], ...] = ()


@dataclass(frozen=True)
class Batch:
    """Authors ``start:stop`` of the sampled authors (in sample order)."""

    index: int
    start: int
    stop: int

    @property
    def part(self) -> str:
        return f"{self.index:05d}"


@dataclass
class Collected:
    """The collect stage of a run (flows/pipeline.py): its batches, in draw order, and their
    collect steps' results."""

    batches: list[Batch]
    results: list[StepResult]
    drawn: int  # authors drawn from the order
    passed: int  # of them, with books after every stage (the release's authors)
    failed: int  # of them, lost to an unavailable source


def _write(
    ctx: RunContext, step: str, part: str, tables: dict[str, list[dict] | dict[str, list]], compression: str = "zstd"
) -> dict[str, TableRef]:
    """Each output table, given as rows or as columns (name -> values), to its Parquet file."""
    return {
        name: (write_columns if isinstance(table, dict) else write_rows)(
            _table_of(name), table, ctx.work.path(step, part, name), compression
        )
        for name, table in tables.items()
    }


def _table_of(name: str) -> str:
    """Output name -> table name: ``rejects.clean_books`` is a part of ``rejects``."""
    return name.split(".", 1)[0]


def merge_stats(stats: list[dict]) -> dict:
    """Per-batch stats as one: numbers and counters add up, anything else keeps the first value."""
    out: dict[str, Any] = {}
    for part in stats:
        for key, value in part.items():
            if isinstance(value, bool) or not isinstance(value, (int, float, dict)):
                out.setdefault(key, value)
            elif isinstance(value, dict):
                out[key] = (
                    merge_stats([out.get(key, {}), value])
                    if all(isinstance(v, (int, float, dict)) and not isinstance(v, bool) for v in value.values())
                    else out.get(key, value)
                )
            else:
                out[key] = round(out.get(key, 0) + value, 6)
    return out


# -- sample -------------------------------------------------------------------------------


def sample_step(
    ctx: RunContext,
    n: int,
    exclude_qids: tuple[str, ...],
    exclude_names: tuple[str, ...],
    first_year: int,
    last_year_exclusive: int,
    window: int,
    min_works: int,
    max_works: int,
    exclude_rejected: tuple[str, ...] = (),
    skip: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
) -> StepResult:
    """The seeded draw order of the eligible authors (``order``): the pipeline draws its
    batches from the front of it. ``n`` only sizes the stats' first draw; ``skip``: the QIDs
    and normalised names of authors released since this release was first made
    (tasks/sample_authors.sample_authors)."""
    params = dict(
        n=n,
        exclude_rejected=exclude_rejected,
        skip=skip,
        seed=ctx.seed,
        exclude_qids=exclude_qids,
        exclude_names=exclude_names,
        first_year=first_year,
        last_year_exclusive=last_year_exclusive,
        window=window,
        min_works=min_works,
        max_works=max_works,
    )

    def compute() -> StepResult:
        sources = sources_for(ctx.sources)
        before = sources.requests_sent_by_this_thread()
        candidates, fingerprints = fetch_candidates(
            sources.wikidata,
            first_year=first_year,
            last_year_exclusive=last_year_exclusive,
            window=window,
            min_works=min_works,
            max_works=max_works,
        )
        result = sample_authors(
            candidates,
            n=n,
            seed=ctx.seed,
            exclude_qids=set(exclude_qids),
            exclude_names=frozenset(exclude_names),
            exclude_rejected=frozenset(exclude_rejected),
            skip_qids=frozenset(skip[0]),
            skip_names=frozenset(skip[1]),
        )
        outputs = _write(
            ctx, SAMPLE_AUTHORS, "all", {"order": result.tables["order"], "rejects.sample_authors": result.rejects}
        )
        return StepResult(
            outputs,
            {
                **result.stats,
                "sparql_fingerprints": fingerprints,
                "requests_sent": sources.requests_sent_by_this_thread() - before,
            },
        )

    return ctx.work.run(
        SAMPLE_AUTHORS,
        "all",
        compute,
        source=ctx.sources.kind,
        cache_scope=ctx.sources.cache_scope,
        snapshot=ctx.sources.snapshot,
        **params,
    )


# -- collect: match, fetch, clean, dedup --------------------------------------------------

COLLECT_OUTPUTS = (
    "authors",
    "works_raw",
    "book_records",
    "books",
    "title_variants",
    "rejects.collect_authors",
    "rejects.clean_books",
    "rejects.dedup_titles",
)


def unavailable_authors(collected: StepResult) -> int:
    """Authors of a collect step rejected because Open Library did not answer."""
    return collected.stats["collect_authors"].get(SOURCE_UNAVAILABLE, 0)


def collect_step(ctx: RunContext, batch: Batch, sampled: TableRef) -> StepResult:
    """Authors of one batch: their Open Library match and works, cleaned and deduplicated. A
    author Open Library did not answer for is a ``source_unavailable`` reject, not an error:
    the composition decides whether the release can do without it (flows/pipeline.py)."""

    def compute() -> StepResult:
        sources = sources_for(ctx.sources)
        before = sources.requests_sent_by_this_thread()
        batch_authors = read_slice(sampled, batch.start, batch.stop)  # not the whole sample per batch
        collected = collect_authors(
            batch_authors,
            sources.openlibrary,
            frozenset(ctx.released_ol_keys),
            on_author=step_progress(ctx.release, "collect", batch.index),
        )
        authors = collected.tables.get("authors", [])
        works_raw = collected.tables.get("works_raw", [])
        # authors already rejected (no match, no works, released before) are not rejected again
        rejected = {r["record_id"] for r in collected.rejects if r["record_kind"] == "author"}
        kept = [a for a in authors if a["qid"] not in rejected]
        wd_works: list[dict] = []  # the cross-check's WikiData works: which of ours have an item

        ours = {a["qid"] for a in kept}

        def wikidata_titles(titles: list[str]) -> list[dict]:
            wd_works.extend(found := works_with_labels(sources.wikidata, titles, ours, CROWD))
            return found

        cleaned = clean_books(
            works_raw,
            kept,
            wikidata_titles,
            today_year=ctx.today_year,
            batch_size=sources.wikidata.authors_per_query or max(1, len(kept)),
        )
        wd_records = wikidata_records(cleaned.tables["works_clean"], wd_works, sources.wikidata)
        deduped = dedup_titles(cleaned.tables["works_clean"], kept)
        outputs = _write(
            ctx,
            "collect",
            batch.part,
            {
                "authors": authors,
                "works_raw": works_raw,
                "book_records": collected.tables.get("book_records", []) + wd_records.tables["book_records"],
                "books": deduped.tables["books"],
                "title_variants": deduped.tables["title_variants"],
                "rejects.collect_authors": collected.rejects,
                "rejects.clean_books": cleaned.rejects,
                "rejects.dedup_titles": deduped.rejects,
            },
        )
        methods = Counter(a["match_method"] for a in authors)
        return StepResult(
            outputs,
            {
                "authors": len(batch_authors),
                "collect_authors": {
                    "match_method": dict(methods),
                    "works_raw": len(works_raw),
                    SOURCE_UNAVAILABLE: collected.stats[SOURCE_UNAVAILABLE],
                    "wikidata_records": wd_records.stats,  # book_records from P674 / P840
                },
                "clean_books": cleaned.stats,
                "dedup_titles": deduped.stats,
                "requests_sent": sources.requests_sent_by_this_thread() - before,
            },
        )

    # a batch that lost authors to an unavailable source is not checkpointed: a rerun asks again
    # (its other authors' answers come from the HTTP cache)
    return ctx.work.run(
        "collect",
        batch.part,
        compute,
        final=lambda r: not unavailable_authors(r),
        sampled=sampled,
        batch=batch,
        source=ctx.sources.kind,
        cache_scope=ctx.sources.cache_scope,
        snapshot=ctx.sources.snapshot,
        released_ol_keys=ctx.released_ol_keys,
        today_year=ctx.today_year,
    )


# -- tag ----------------------------------------------------------------------------------


def tag_step(ctx: RunContext, chunk: Batch, titles: TableRef) -> StepResult:
    """Titles ``start:stop`` of the release's distinct titles -> their spans (title_tags)."""
    # the run's taggers (and endpoint, for the model taggers): they name the key and tag
    taggers = make_taggers(ctx.taggers or None, model=DEFAULT_MODEL, endpoint=ctx.tagger_endpoint)

    def compute() -> StepResult:
        with duck() as con:  # only this chunk's titles (the file is sorted), not the whole list
            chunk_titles = [
                t
                for (t,) in con.sql(
                    "SELECT title FROM read_parquet(?, file_row_number = true) "
                    "WHERE file_row_number >= ? AND file_row_number < ? ORDER BY file_row_number",
                    params=[titles.path, chunk.start, chunk.stop],
                ).fetchall()
            ]
        tags = title_tags(chunk_titles, taggers)
        outputs = _write(ctx, TAG_ENTITIES, chunk.part, {"title_tags": tags})
        return StepResult(
            outputs, {"titles_tagged": len(chunk_titles), "taggers": {t.name: t.version for t in taggers}}
        )

    # the selected taggers' names, versions and model versions are part of the key: another
    # tagger, or another spaCy model, never reuses these tags
    return ctx.work.run(TAG_ENTITIES, chunk.part, compute, titles=titles, chunk=chunk, taggers=fingerprints(taggers))


# -- constrain: entities, constraints, per-author query draws ------------------------------


def constrain_step(
    ctx: RunContext,
    batch: Batch,
    collected: StepResult,
    tags: TableRef,
    rates: SamplingRates,
) -> StepResult:
    """One batch's ``title_entities``, ``constraints`` and the queries its authors' own
    draws keep, with the unsatisfiable candidates the global top-ups choose from. ``tags``: the
    run's routed title tags (tasks/tag_routing.py); ``rates``: the run's
    (RunConfig.sampling_rates), never a default of the step's."""
    inputs = {k: collected.outputs[k] for k in ("authors", "books", "title_variants", "book_records")}
    model = second_reader_session(ctx.second_reader, ctx.tagger_endpoint, ctx.taggers)  # None: no second reader
    model_version = second_reader_version(model) if model else ""

    def compute() -> StepResult:
        books, variants = read_rows(inputs["books"]), read_rows(inputs["title_variants"])
        authors_all = read_rows(inputs["authors"])
        titles = sorted({v["title"] for v in variants} | {b["canonical_title"] for b in books})
        tag_rows = tags_for(titles, tags, batch.index)
        entities, entity_stats = entity_rows(books, variants, tag_rows)
        kinds = tagged_kinds(ctx.taggers or None)
        # yes / no / unsure per book and kind: the title rules' classes, and the second readers'
        # verdicts where the release has them (tasks/entity_states.py): the books' own records,
        # the review labels in the warehouse, the model when configured
        model_spans = None
        if model is not None:
            titles_of: dict[str, list[str]] = {b["book_id"]: [b["canonical_title"]] for b in books}
            for v in variants:
                titles_of.setdefault(v["book_id"], []).append(v["title"])
            model_spans = book_spans(model, titles_of, kinds)
        others = second_reader_evidence(
            books,
            variants,
            authors_all,
            read_rows(inputs["book_records"]),
            review_labels(dict(zip(("title", "author", "kind", "label"), r)) for r in ctx.review_labels),
            model_spans,
            model_version,
            tag_rows,
        )
        before: dict[tuple[str, str], str] = {}  # the title rules' states alone, where a second reader spoke
        states = book_states(books, variants, tag_rows, kinds, others, kind_versions(ctx.taggers or None), before)
        entity_stats["decided_by"] = decided_by(states, before, others)
        entity_stats["states"] = dict(sorted(Counter(f"{r['kind']}:{r['state']}" for r in states).items()))
        kept_qids = {b["author_qid"] for b in books}
        authors = [a for a in authors_all if a["qid"] in kept_qids]
        constraints = generate_constraints(authors, books, state_flags(books, states, kinds), kinds)
        by_author, authors_by_qid = group_constraints(constraints.tables["constraints"], authors, books)
        part = sample_authors_queries(by_author, ctx.seed, rates, deciding_index(states))
        # this batch's share of the claim pairs, before the claims step's seeded draws
        claims = claim_material(authors_all, books, variants, states, constraints.tables["constraints"])
        outputs = _write(
            ctx,
            GENERATE_CONSTRAINTS,
            batch.part,
            {
                "title_entities": entities,
                "book_entities": states,
                "constraints": constraints.tables["constraints"],
                "rejects.generate_constraints": constraints.rejects,
                "rejects.sample_queries": part.over_bound,
                **batch_columns(part, authors_by_qid, ctx.seed),
                **claims,
            },
            WORK_COMPRESSION,  # read by the top-ups, the claims draw and publishing, never released as is
        )
        return StepResult(
            outputs,
            {
                "tag_entities": entity_stats,
                "generate_constraints": constraints.stats,
                "sample_queries": batch_counts(by_author, part),
            },
        )

    return ctx.work.run(
        GENERATE_CONSTRAINTS,
        batch.part,
        compute,
        tags=tags,
        rates=rates.as_dict(),
        seed=ctx.seed,
        taggers=ctx.taggers,
        reviews=ctx.review_labels,
        second_reader=model_version,
        **inputs,
    )


# -- sample_queries (global part) -----------------------------------------------------------


def sample_queries_step(
    ctx: RunContext, collected: list[StepResult], constrained: list[StepResult], rates: SamplingRates
) -> tuple[TableRef, dict]:
    """The global part of query sampling over every batch (tasks/sample_queries.py): the
    unsatisfiable top-ups (``choose_top_ups_sql``), then every author's queries numbered
    (``number_queries_sql``) into the release's queries file, and its stats."""
    counts = merge_stats([c.stats["sample_queries"] for c in constrained])
    n_one = fill_count(
        counts.get("kept_one", 0), counts.get("kept_one_unsatisfiable", 0), rates.one_unsatisfiable_share
    )
    n_two = fill_count(counts.get("kept_two", 0), 0, rates.two_unsatisfiable_share)

    def files(name: str) -> list[str]:
        return [c.outputs[name].path for c in constrained if c.outputs[name].rows]

    with duck(ctx.work.root) as con:
        one_ids, pairs = choose_top_ups_sql(con, files("one_unsatisfiable"), files("two_unsatisfiable"), n_one, n_two)
        wanted = sorted(set(one_ids) | {i for pair in pairs for i in pair})
        rows: dict[str, dict] = {}
        if wanted:
            rows = {
                r["constraint_id"]: r
                for r in con.sql(
                    "SELECT * FROM read_parquet(?) WHERE constraint_id IN (SELECT unnest(?::VARCHAR[]))",
                    params=[files("constraints"), wanted],
                )
                .to_arrow_table()
                .to_pylist()
            }
        qids = {r["author_qid"] for r in rows.values()}
        # streamed row group by row group: only the top-ups' authors are kept
        authors = {a["qid"]: a for a in iter_rows([c.outputs["authors"] for c in collected]) if a["qid"] in qids}
        sampled = [([rows[i]], ONE_UNSATISFIABLE) for i in one_ids]
        sampled += [([rows[a], rows[b]], TWO_UNSATISFIABLE) for a, b in pairs]
        top_ups = write_rows(
            "queries_kept", query_rows(sampled, authors, ctx.seed), ctx.work.path("queries", "all", "top_ups")
        )
        parts = [*files("queries_kept"), *([top_ups.path] if top_ups.rows else [])]
        if parts:
            ref = write_query(
                con,
                f"SELECT {number_queries_sql(arrow_schema('queries').names)} "
                "FROM read_parquet(?, union_by_name = true)",
                [parts],
                "queries",
                ctx.work.path("queries", "all", "queries"),
            )
        else:
            ref = write_rows("queries", [], ctx.work.path("queries", "all", "queries"))
        summary = sampling_summary_sql(con, ref.path, counts, ctx.seed, rates)
    return ref, summary


# -- claims (global) ------------------------------------------------------------------------

CLAIMS_INPUTS = ("claim_attributes", "claim_authors", "claim_books")  # each constrain batch's (claim_material)


def claims_step(ctx: RunContext, constrained: list[StepResult]) -> StepResult:
    """The release's claim pairs (tasks/claims.py, the ``claims`` table), checkpointed in the work
    folder (a rerun with the same inputs resumes it). Each constrain batch wrote its share before
    any random choice (``claim_material``: the claims its constraints make, its authors' and
    books' keys and years); this global step draws the pairs over every batch's, as
    sample_queries_step does for queries: a pair's false side comes from one seeded stream in
    author order across the release, an authorship pair's other author from every author of
    the release, a false year up to the release's latest year (docs/claims.md)."""
    inputs = {name: tuple(r.outputs[name] for r in constrained) for name in CLAIMS_INPUTS}

    def compute() -> StepResult:
        # read one batch's files at a time, row group by row group (tasks/claim_draw.py): the
        # draw holds one batch's material, not the release's
        def reader(batch: int):
            return lambda name, columns=None: iter_rows(inputs[name][batch], columns)

        batches = [reader(i) for i in range(len(constrained))]
        Path(ctx.work.root).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="claims-spill-", dir=ctx.work.root) as spill:
            paths = {name: [ref.path for ref in inputs[name] if ref.rows] for name in CLAIMS_INPUTS}
            shared = shared_keys(paths["claim_authors"], paths["claim_books"])
            columns, stats = claims_from_batches(
                iter_rows(inputs["claim_authors"]), batches, seed=ctx.seed, spill=Path(spill), shared=shared
            )
        ref = write_arrow("claims", columns_to_arrow("claims", columns), ctx.work.path("claims", "all", "claims"))
        return StepResult({"claims": ref}, stats)

    return ctx.work.run("claims", "all", compute, seed=ctx.seed, **inputs)
