"""The refresh, composed once: the Prefect flow (flows/refresh.py), the demo, the tests and
the benchmarks all call :func:`run_pipeline`, with a runner (flows/runners.py) that decides
where each step runs.

    sample ─► collect (per batch) ─► distinct titles ─► tag (per chunk) ─► tags to batches
           ─► constrain (per batch) ─► query top-ups ─► publish

Between steps travel Parquet refs (kitab/core/refs.py) in the release's work folder, never rows;
the global parts (distinct titles, tags to batches, query top-ups, publishing) are DuckDB over
those files, so memory is bounded by a batch, not by the release.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path

from flows.configure import recorded_config
from flows.rebuild import built_review_labels, check_rebuild
from flows.run_summary import rejected_author_reasons, run_summary
from kitab.core.child import InProcess, in_child
from kitab.core.config import Settings
from kitab.core.errors import BadValue, KitabError
from kitab.core.locking import refresh_lock
from kitab.core.params import RefreshParams, RunConfig
from kitab.core.progress import Progress, active, tracking
from kitab.core.refs import TableRef, duck, iter_rows, write_query, write_rows
from kitab.core.reviews import label_tuples
from kitab.core.stages import GENERATE_CONSTRAINTS, SAMPLE_AUTHORS, TAG_ENTITIES
from kitab.core.step_memory import trim_heap
from kitab.core.warehouse import Warehouse
from kitab.core.workdir import StepResult, WorkDir
from kitab.sources import Origin, SourceSpec, close_sources, source_kind, sources_for
from tasks.publish import (
    excluded_releases,
    other_releases,
    publish,
    rejected_authors,
    released_authors_rows,
    released_since,
)
from tasks.sample_queries import SamplingRates
from tasks.steps import (
    Batch,
    Collected,
    RunContext,
    claims_step,
    collect_step,
    constrain_step,
    sample_queries_step,
    sample_step,
    tag_step,
    unavailable_authors,
)
from tasks.tag_routing import route_tags

log = logging.getLogger("kitab.refresh")
TAG_CHUNK_MIN, TAG_CHUNK_MAX = 2_000, 20_000  # distinct titles per tagging task


def tag_chunk_size(titles: int, workers: int) -> int:
    """Enough chunks to keep every core busy, few enough that each pays off its start-up
    and the constrain steps look up their tags in tens of files, not thousands."""
    return max(TAG_CHUNK_MIN, min(TAG_CHUNK_MAX, -(-titles // (2 * workers))))


def check_failed_share(failed: int, sampled: int, max_share: float) -> None:
    """A release may do without a few authors a source did not answer for (each is a
    ``source_unavailable`` reject), not without more than ``max_share`` of them."""
    if sampled and failed / sampled > max_share:
        raise KitabError(
            f"{failed} of {sampled} authors ({_percent(failed / sampled)}) failed: source unavailable "
            f"(max {_percent(max_share)}); nothing published"
        )


def _percent(share: float) -> str:
    return f"{100 * share:.3g}%"


def check_inputs(params: RefreshParams) -> None:
    """What can be checked before a refresh starts, cheaply and without writing anything: the
    source kind's inputs (the snapshot a mirror serves or the dump reads, file by file; live: a
    contact and host names that resolve)."""
    source_kind(params.source).check_inputs(params)


@contextlib.contextmanager
def open_origin(
    source: str, settings: Settings, *, snapshot: Path | None, mirror_url: str | None, release: str
) -> Iterator[tuple[SourceSpec, Origin]]:
    """Where the data comes from: the snapshot's id, and the spec every step opens its clients
    from. ``snapshot``: the snapshot the source kind named ``source`` reads or serves, if known
    (``kind.snapshot(params)``); ``mirror_url``: the mirror a kind that reads one reads
    (kitab.app.runs starts one in-process for a snapshot; a deployment names a running
    ``kitab mirror serve``). The kind names the HTTP caches' scope (the snapshot, or the
    release for live: each release sees today's services)."""

    kind = source_kind(source)
    kind.check_origin(snapshot=snapshot, mirror_url=mirror_url)
    origin = Origin.of(source, settings, snapshot=snapshot, mirror_url=mirror_url)
    with contextlib.ExitStack() as stack:
        # the snapshot id also names a dump's content in the work folder's step keys
        scope = kind.cache_scope(snapshot_id=origin.snapshot_id, mirror_url=mirror_url, release=release)
        spec = SourceSpec.of(
            kind.name,
            settings,
            snapshot=snapshot if kind.reads_snapshot_files else None,
            mirror_url=mirror_url,
            cache_scope=scope,
        )
        if kind.opens_cheaply:  # fail here, clearly, on a bad source (no contact for live, ...)
            spec.open().close()
        stack.callback(close_sources)
        yield spec, origin


def watch_requests(progress: Progress, spec: SourceSpec) -> contextlib.AbstractContextManager:
    """The progress counts the requests of this process's clients for ``spec`` as they go
    (steps on threads share them), if its kind sends any."""
    if not source_kind(spec.kind).sends_requests:
        return contextlib.nullcontext()
    return progress.watching(sources_for(spec).services())


def ran_out(eligible: int, stats: dict) -> str:
    """The candidates ran out, in one clause with the counts."""
    before = [
        f"{n} {what}"
        for n, what in (
            (stats["excluded_released"], "released before"),
            (stats["excluded_rejected_before"], "rejected before (--redraw-rejected draws them again)"),
        )
        if n
    ]
    return (
        f"only {eligible} candidate authors are eligible"
        + (f" ({'; '.join(before)})" if before else "")
        + ("; ask for fewer, or pass --allow-fewer to publish those that pass")
    )


def run_pipeline(config: RunConfig, runner, *, progress: Progress) -> dict:
    """Draw authors not released (nor rejected) before until ``config.params.authors`` of them
    pass every stage or the candidates run out, collect their Open Library works and publish
    the tables as one release. ``config``: the whole run's configuration, resolved once
    (flows/configure.py); every step gets what it needs of it as an argument. ``progress``: the
    run's (:func:`running`), told of every stage and finished batch. Returns the run summary."""
    started = time.monotonic()
    today = datetime.now(UTC).date()
    # Held already when kitab.app.runs started this (re-entrant); taken here for a deployment's run.
    with refresh_lock(config.settings.warehouse, config.params.release):
        summary = _run_pipeline(config, runner, today, progress)
        progress.finish()
        return {**summary, "wall_seconds": round(time.monotonic() - started, 2)}


@contextlib.contextmanager
def running(config: RunConfig, progress: Progress | None = None, **info) -> Iterator[Progress]:
    """The progress of the run of ``config`` in this process: the one its entry point already
    registered (``kitab refresh`` around the Prefect flow), else ``progress`` (else a new one),
    registered and begun here, once per run (``info``: more for the views, e.g. ``starting``)."""
    params = config.params
    found = active(params.release)
    if found is not None:
        yield found
        return
    with tracking(params.release, progress) as progress:
        progress.begin(
            release=params.release, source=params.source, authors=params.authors, batch_size=params.batch_size, **info
        )
        yield progress


def _run_pipeline(config: RunConfig, runner, today: date, progress: Progress) -> dict:
    params, wh = config.params, Warehouse(config.settings.warehouse)
    progress.stage("start")
    with open_source(config, progress) as (spec, origin):
        because = check_rebuild(wh, config, origin.snapshot_id)  # refused here, before any work
        excluded = excluded_releases(wh, params.release)  # the row's own, never releases made since
        ledger, since = other_releases(wh, params.release, excluded), released_since(wh, params.release, excluded)
        ctx = run_context(config, wh, spec, today, ledger, since)
        sampled = sample(runner, ctx, config, today, ledger, since, rejected_before(wh, config, excluded), progress)
        collected = collect(runner, ctx, config, sampled, progress)
        titles, chunks, tags = tag(runner, ctx, config, collected, progress)
        constrained = constrain(runner, ctx, config, collected, tags, progress)
        progress.stage("sample_queries")
        runner.release_workers()  # the rest is this process and the claims draw's: free the workers' memory first
        with claims_draw(ctx, constrained) as claims:
            queries, query_stats = sample_queries_step(ctx, collected.results, constrained, sampling_rates(config))
            progress.end_stage(rows=queries.rows)
            progress.stage("publish")
            # the claims table awaited: publishing stages every other table while it is drawn
            tables = release_tables(ctx, sampled, collected.results, constrained, queries, claims_table(claims))
            rejected_reasons = rejected_author_reasons(tables["rejects"])
            requests_made = sampled.stats["requests_sent"] + sum(c.stats["requests_sent"] for c in collected.results)
            labels = built_review_labels(config, ctx.review_labels, tables["books"], tables["authors"])
            committed = publish_release(
                wh, config, origin, tables, requests_made, progress, excluded=excluded, labels=labels, because=because
            )
            progress.end_stage(rows=sum(committed["row_counts"].values()))
            claim_stats = claims.result().stats
    ctx.work.remove()
    return run_summary(
        config,
        wh,
        origin,
        excluded,
        sampled=sampled,
        collected=collected,
        constrained=constrained,
        titles=titles,
        chunks=chunks,
        stats={"sample_queries": query_stats, "claims": claim_stats},
        rejected_reasons=rejected_reasons,
        requests_made=requests_made,
        committed=committed,
        stages=progress.records(),
    )


@contextlib.contextmanager
def open_source(config: RunConfig, progress: Progress) -> Iterator[tuple[SourceSpec, Origin]]:
    """The run's source opened (:func:`open_origin`), its requests counted by ``progress``."""
    params = config.params
    kind = source_kind(params.source)
    with (
        open_origin(
            kind.name,
            config.settings,
            snapshot=kind.snapshot(params),
            mirror_url=params.mirror_url,
            release=params.release,
        ) as (spec, origin),
        watch_requests(progress, spec),
    ):
        yield spec, origin


def run_context(config: RunConfig, wh: Warehouse, spec: SourceSpec, today: date, ledger, since) -> RunContext:
    """What every step of the run shares, from the config (and the warehouse's ledger and reviews).
    ``ledger``: the authors of the releases the sample excludes; ``since``: of those made later
    (tasks/publish.released_since): matching rejects an Open Library author of either."""
    return RunContext(
        release=config.params.release,
        seed=config.params.seed,
        today_year=today.year,
        work=WorkDir(str(wh.root / ".work" / config.params.release)),
        sources=spec,
        released_ol_keys=tuple(sorted(ledger.ol_keys | since.ol_keys)),
        taggers=config.taggers,
        tagger_endpoint=config.tagger_endpoint,
        second_reader=config.second_reader,
        review_labels=label_tuples(wh.root),  # kitab review import: review evidence for every build
    )


def rejected_before(wh: Warehouse, config: RunConfig, excluded) -> tuple[str, ...]:
    """The authors earlier releases rejected, not drawn again (unless --redraw-rejected)."""
    return () if config.params.redraw_rejected else tuple(sorted(rejected_authors(wh, excluded)))


# The claims draw runs in a child process of its own (False: in this process, when awaited:
# the reference the tests compare it with).
CLAIMS_IN_CHILD = True


def claims_draw(ctx: RunContext, constrained: list[StepResult]) -> contextlib.AbstractContextManager:
    """The claims step (tasks/steps.claims_step: each batch's claim material, drawn once,
    seeded) started as soon as the constrain step ends, in a child process: it draws on the
    second core while this process samples the query top-ups and stages the other tables, and
    the memory it needs goes when it exits. Yields what :func:`claims_table` awaits; leaving
    ends a draw still running (a failure elsewhere: no orphan)."""
    if not CLAIMS_IN_CHILD:
        return contextlib.nullcontext(InProcess(claims_step, ctx, constrained))
    return in_child(claims_step, ctx, constrained, name="the claims draw")


def claims_table(claims) -> Callable[[], list[TableRef]]:
    """The ``claims`` table's parts, awaited: publishing asks for them once the others are staged."""
    return lambda: [claims.result().outputs["claims"]]


def publish_release(
    wh, config: RunConfig, origin: Origin, tables: dict, requests_made: int, progress, *, excluded, labels, because
) -> dict:
    """The release committed (tasks/publish.py), its ledger row keeping the recorded config, the
    releases its sample excluded, the review labels its books read and why a rebuild differs."""
    from kitab.release.key_quality import release_key_quality
    from kitab.release.validity.battery import battery, other_claims  # (loaded when a release is published)

    params = config.params
    return publish(
        wh,
        params.release,
        tables,
        seed=params.seed,
        source=params.source,
        snapshot_id=origin.snapshot_id,
        inputs=origin.inputs,
        n_authors_requested=params.authors,
        requests_made=requests_made,
        stages=[r for r in progress.records() if r["stage"] != "publish"],
        config=recorded_config(config),
        excluded=excluded,
        review_labels=labels,
        because=because,
        replace=params.replace,
        # the validity battery over the staged release; its classifier trains on the claims of
        # the releases this one excludes (fixed when it was first made, so a rebuild scores the same)
        # and the answer key's quality the summary states, read while the claims are still drawn
        # (read after the run, it was ~30 s on one core at 100,000 authors: docs/scale.md, seventh pass)
        derive=dataclasses.replace(
            battery(lambda: other_claims(wh, excluded)), facts=lambda con: {"key_quality": release_key_quality(con)}
        ),
    )


def sampling_rates(config: RunConfig) -> SamplingRates:
    """The run's sampling rates (RunConfig.sampling_rates): what the constrain and query steps use."""
    return SamplingRates.from_dict(json.loads(config.sampling_rates))


def sample(
    runner, ctx: RunContext, config: RunConfig, today: date, ledger, since, rejected: tuple, progress
) -> StepResult:
    """The seeded draw order of the eligible authors, by the config's settings (birth years,
    works): ``ledger``'s authors excluded, ``since``'s skipped (tasks/sample_authors.py); fails
    in one line when it is shorter than asked (unless allow_fewer)."""
    params, settings = config.params, config.settings
    progress.stage(SAMPLE_AUTHORS)
    kind = source_kind(params.source)
    # From a dump, sampling is a scan of its cache in a worker process (the first of the pool
    # collect then uses): what the scan loads and leaves (~0.2 GiB at 10,000 authors) stays out
    # of this process, which holds on through every later stage.
    sampled = runner.run(
        sample_step,
        ctx,
        params.authors,
        tuple(sorted(ledger.qids)),
        tuple(sorted(ledger.names)),
        settings.birth_year_min,
        today.year + 1,
        settings.birth_year_window,
        settings.min_works,
        settings.max_works,
        rejected,
        (tuple(sorted(since.qids)), tuple(sorted(since.names))),
        name=SAMPLE_AUTHORS,
        cpu=kind.collect_is_cpu_work,
        in_worker=True,
    )
    if not kind.sends_requests:
        # (where the step ran here: one worker, no pool) a dump's store (its DuckDB and mapped
        # tables, ~70 MB) is not read here again: the workers open their own, and a step run in
        # this process reopens it (cheaply, once built)
        close_sources()
        gc.collect()  # (the step ran with the cycle collector paused: its cyclic garbage goes now)
        trim_heap()
    order = sampled.outputs["order"]
    log.info(
        "%d eligible authors in the draw order (%d excluded as released, %d as rejected before)",
        order.rows,
        sampled.stats["excluded_released"],
        sampled.stats["excluded_rejected_before"],
    )
    if order.rows < params.authors and not params.allow_fewer:
        raise BadValue(f"--authors {params.authors}: {ran_out(order.rows, sampled.stats)}")
    progress.end_stage(rows=order.rows, requests=sampled.stats["requests_sent"])
    return sampled


def part_done(progress: Progress, parts: list[Batch], with_requests: bool = False):
    """A runner's on_done: the finished batch's items (and the requests it counted)."""
    return lambda n, r: progress.part_done(
        parts[n].index,
        parts[n].stop - parts[n].start,
        requests=r.stats["requests_sent"] if with_requests else 0,
    )


def collect(runner, ctx: RunContext, config: RunConfig, sampled: StepResult, progress: Progress) -> Collected:
    """Draw (in the seeded order) until --authors authors pass every stage or the order runs
    out: each round draws as many as are still missing, in batches."""
    params, order = config.params, sampled.outputs["order"]
    kind = source_kind(params.source)
    progress.stage("collect", total=params.authors, unit="authors", tasks=0)
    batches: list[Batch] = []
    results: list[StepResult] = []
    drawn = passed = 0
    while passed < params.authors and drawn < order.rows:
        stop = min(drawn + params.authors - passed, order.rows)
        new = [
            Batch(len(batches) + k, start, min(start + params.batch_size, stop))
            for k, start in enumerate(range(drawn, stop, params.batch_size))
        ]
        batches += new
        progress.plan(total=max(params.authors, stop), unit="authors", tasks=len(batches))
        # CPU work (e.g. the dump's DuckDB lookups): one process per core; waiting on a service
        # stays on threads: one client per process keeps the rate limits
        done = runner.map(
            collect_step,
            [(ctx, b, order) for b in new],
            cpu=kind.collect_is_cpu_work,
            names=[f"collect-{b.part}" for b in new],
            on_done=part_done(progress, new, True),
        )
        results += done
        passed += len(_column([r.outputs["books"] for r in done], "author_qid"))
        drawn = stop
    failed = sum(unavailable_authors(c) for c in results)
    if failed:
        log.warning("%d of %d authors rejected: source unavailable", failed, drawn)
    check_failed_share(failed, drawn, params.max_failed_share)
    if passed < params.authors and not params.allow_fewer:
        raise BadValue(
            f"--authors {params.authors}: the candidates ran out: {drawn} drawn, {passed} passed every stage; "
            "ask for fewer, or pass --allow-fewer to publish them"
        )
    progress.end_stage(rows=sum(c.stats["collect_authors"]["works_raw"] for c in results))
    return Collected(batches, results, drawn, passed, failed)


def tag(runner, ctx: RunContext, config: RunConfig, collected: Collected, progress: Progress):
    """The release's distinct titles, tagged in chunks: (titles, chunks, the tags routed to
    their batches: tasks/tag_routing.py)."""
    progress.stage(TAG_ENTITIES)
    runner.release_workers()  # fresh workers for tagging: the dump lookups' memory goes with these
    titles = distinct_titles(ctx, [c.outputs["title_variants"] for c in collected.results])
    size = tag_chunk_size(titles.rows, config.workers)
    chunks = [Batch(n, start, min(start + size, titles.rows)) for n, start in enumerate(range(0, titles.rows, size))]
    progress.plan(total=titles.rows, unit="titles", tasks=len(chunks))
    tagged = runner.map(
        tag_step,
        [(ctx, c, titles) for c in chunks],
        cpu=True,
        names=[f"tag-{c.part}" for c in chunks],
        on_done=part_done(progress, chunks),
    )
    variants = [(b.index, r.outputs["title_variants"]) for b, r in zip(collected.batches, collected.results)]
    routed = route_tags(
        ctx.work.root, variants, tuple(r.outputs["title_tags"] for r in tagged), ctx.work.path("tags", "all", "routed")
    )
    progress.end_stage(rows=titles.rows)
    return titles, chunks, routed


def constrain(runner, ctx: RunContext, config: RunConfig, collected: Collected, tags: TableRef, progress: Progress):
    """Every batch's entities, constraints and per-author query draws, at the config's rates."""
    batches = collected.batches
    progress.stage(GENERATE_CONSTRAINTS, total=collected.drawn, unit="authors", tasks=len(batches))
    runner.release_workers()  # fresh workers: spaCy's model and what tagging left go with the taggers'
    rates = sampling_rates(config)
    constrained = runner.map(
        constrain_step,
        [(ctx, b, c, tags, rates) for b, c in zip(batches, collected.results)],
        cpu=True,
        names=[f"constrain-{b.part}" for b in batches],
        on_done=part_done(progress, batches),
    )
    progress.end_stage(rows=sum(c.outputs["constraints"].rows for c in constrained))
    return constrained


def release_tables(
    ctx: RunContext, sampled, collected: list[StepResult], constrained: list[StepResult], queries, claims
):
    """Every table of the release as its parts (refs), for publishing; ``claims``: a function
    returning its parts once drawn (:func:`claims_table`)."""

    def parts(step_results: list[StepResult], name: str) -> list[TableRef]:
        return [r.outputs[name] for r in step_results]

    kept = {row["author_qid"] for row in _column(parts(collected, "books"), "author_qid")}
    # the authors streamed, three columns, row group by row group: only the released ones' rows are kept
    authors = iter_rows(parts(collected, "authors"), columns=["qid", "ol_author_key", "name"])
    released = write_rows(
        "released_authors",
        released_authors_rows(ctx.release, authors, kept),
        ctx.work.path("publish", "all", "released_authors"),
    )
    return {
        "authors": parts(collected, "authors"),
        "works_raw": parts(collected, "works_raw"),
        "book_records": parts(collected, "book_records"),
        "books": parts(collected, "books"),
        "title_variants": parts(collected, "title_variants"),
        "title_entities": parts(constrained, "title_entities"),
        "book_entities": parts(constrained, "book_entities"),
        "constraints": parts(constrained, "constraints"),
        "queries": [queries],
        "claims": claims,  # awaited (claims_table)
        # stage by stage, as the stages ran; the key order decides, this only breaks ties
        "rejects": [
            sampled.outputs["rejects.sample_authors"],
            *parts(collected, "rejects.collect_authors"),
            *parts(collected, "rejects.clean_books"),
            *parts(collected, "rejects.dedup_titles"),
            *parts(constrained, "rejects.generate_constraints"),
            *parts(constrained, "rejects.sample_queries"),
        ],
        "released_authors": [released],
    }


def _column(refs: list[TableRef], column: str) -> list[dict]:
    files = [r.path for r in refs if r.rows]
    if not files:
        return []
    with duck() as con:
        return con.sql(f"SELECT DISTINCT {column} FROM read_parquet(?)", params=[files]).to_arrow_table().to_pylist()


def distinct_titles(ctx: RunContext, variants: list[TableRef]) -> TableRef:
    """Every distinct title of the release's title variants (a book's canonical title is one
    of its variants), sorted: each is tagged once, whichever batches share it."""
    import pyarrow as pa

    files = [r.path for r in variants if r.rows]
    target = ctx.work.path("titles", "all", "titles")
    with duck(ctx.work.root) as con:
        if not files:
            return write_query(
                con,
                "SELECT NULL::VARCHAR AS title WHERE false",
                None,
                "titles",
                target,
                schema=pa.schema([("title", pa.string())]),
            )
        return write_query(
            con,
            "SELECT DISTINCT title FROM read_parquet(?) WHERE title <> '' ORDER BY title",
            [files],
            "titles",
            target,
            schema=pa.schema([("title", pa.string())]),
        )
