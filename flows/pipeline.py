"""The refresh, composed once: the Prefect flow (flows/refresh.py), the demo, the tests and
the benchmarks all call :func:`run_pipeline`, with a runner (flows/runners.py) that decides
where each step runs.

    sample ─► collect (per batch) ─► distinct titles ─► tag (per chunk) ─► constrain (per batch)
           ─► query top-ups ─► publish

Between steps travel Parquet refs (kitab/core/refs.py) in the release's work folder, never rows;
the global parts (distinct titles, query top-ups, publishing) are DuckDB over those files,
so memory is bounded by a batch, not by the release.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

from kitab.core.config import Settings
from kitab.core.errors import BadValue, KitabError
from kitab.core.locking import refresh_lock
from kitab.core.params import ModelEndpoint, RefreshParams, RunConfig, identity_of
from kitab.core.progress import Progress, tracking
from kitab.core.refs import TableRef, duck, read_rows, write_query, write_rows
from kitab.core.reviews import label_tuples
from kitab.core.stages import GENERATE_CONSTRAINTS, SAMPLE_AUTHORS, TAG_ENTITIES
from kitab.core.warehouse import Warehouse
from kitab.core.workdir import StepResult, WorkDir
from kitab.sources import Origin, SourceSpec, close_sources, source_kind, sources_for
from tasks.claims import claims_from_rows
from tasks.publish import excluded_releases, other_releases, publish, rejected_authors, released_authors_rows
from tasks.steps import (
    Batch,
    RunContext,
    collect_step,
    constrain_step,
    merge_stats,
    sample_queries_step,
    sample_step,
    tag_step,
    unavailable_authors,
)

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


def build_config(
    params: RefreshParams,
    *,
    settings: Settings | None = None,
    taggers: str | None = None,
    runner: str = "local",
    workers: int | None = None,
    tagger_endpoint: ModelEndpoint | None = None,
    second_reader: str | None = None,
) -> RunConfig:
    """The run's whole configuration from values already resolved (the app layer reads the
    environment and passes them: kitab.app.runs); what is not given takes the defaults, never
    the environment. ``params`` must be resolved (seed and release set)."""
    import os

    from tasks.clean_books import LANG_DETECTOR
    from tasks.sample_queries import SamplingRates
    from tasks.taggers.model import endpoint_in_use
    from tasks.taggers.registry import selected_versions

    if settings is None:
        settings = Settings.from_values({"warehouse": params.warehouse} if params.warehouse else {})
    versions = selected_versions(params.taggers or taggers)
    reader = (params.second_reader if params.second_reader is not None else second_reader or "").strip()
    return RunConfig(
        params=params,
        settings=settings,
        taggers=versions,
        # checked here, before the run starts: a second reader that is not "model", or a model
        # asked without an endpoint, is one line (ModelTaggerError)
        tagger_endpoint=endpoint_in_use(versions, reader, tagger_endpoint),
        second_reader=reader,
        sampling_rates=json.dumps(SamplingRates().as_dict(), sort_keys=True),
        language_rule=LANG_DETECTOR,
        runner=runner,
        workers=max(1, workers or os.cpu_count() or 1),
    )


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


def check_rebuild(wh: Warehouse, config: RunConfig, snapshot_id: str | None) -> None:
    """A committed release is a fixed thing: a rebuild that asks other parameters or reads
    other inputs (IDENTITY) is refused in one line naming what differs, unless --replace."""
    release = config.params.release
    if config.params.replace or release not in wh.committed_releases():
        return
    row = wh.ledger_row(release)
    recorded = json.loads(row["config"]) if row.get("config") else None
    if recorded is not None:
        before = identity_of(recorded, row["snapshot_id"])
    else:  # a release made before the config was recorded: what its columns say
        before = {
            "source": row["source"],
            "snapshot_id": row["snapshot_id"],
            "seed": row["seed"],
            "authors": row["n_authors_requested"],
        }
    now = config.identity(snapshot_id)
    differs = [k for k in before if before[k] != now[k]]
    if differs:
        said = ", ".join(f"{k} {before[k]} -> {now[k]}" for k in differs)
        raise BadValue(
            f"release {release} is committed and this run would change it ({said}): refused; pass --replace "
            "to replace it (the old version stays in `kitab releases --history`), or choose another --release"
        )


def run_pipeline(config: RunConfig, runner, *, progress: Progress | None = None) -> dict:
    """Draw authors not released (nor rejected) before until ``config.params.authors`` of them
    pass every stage or the candidates run out, collect their Open Library works and publish
    the tables as one release. ``config``: the whole run's configuration, resolved once by the
    app layer; every step gets what it needs of it as an argument. Returns the run summary.
    ``progress`` (else the one registered for the release in this process, else a new one)
    hears of every stage and finished batch (kitab/core/progress.py)."""
    started = time.monotonic()
    settings, params = config.settings, config.params
    today = datetime.now(UTC).date()
    # Held already when kitab.app.runs started this (re-entrant); taken here for a deployment's run.
    with refresh_lock(settings.warehouse, params.release), tracking(params.release, progress) as progress:
        summary = _run_pipeline(config, runner, today, started, progress)
        progress.finish()
        return summary


def _run_pipeline(config: RunConfig, runner, today: date, started: float, progress: Progress) -> dict:
    params, settings = config.params, config.settings
    seed, release = params.seed, params.release
    wh = Warehouse(settings.warehouse)
    kind = source_kind(params.source)
    progress.begin(release=release, source=params.source, authors=params.authors, batch_size=params.batch_size)
    progress.stage("start")
    with (
        open_origin(
            kind.name,
            settings,
            snapshot=kind.snapshot(params),
            mirror_url=params.mirror_url,
            release=release,
        ) as (spec, origin),
        watch_requests(progress, spec),
    ):
        check_rebuild(wh, config, origin.snapshot_id)
        excluded = excluded_releases(wh, release, replace=params.replace)
        ledger = other_releases(wh, release, excluded)
        rejected_before = () if params.redraw_rejected else tuple(sorted(rejected_authors(wh, excluded)))
        ctx = RunContext(
            release=release,
            seed=seed,
            today_year=today.year,
            work=WorkDir(str(wh.root / ".work" / release)),
            sources=spec,
            released_ol_keys=tuple(sorted(ledger.ol_keys)),
            taggers=config.taggers,
            tagger_endpoint=config.tagger_endpoint,
            second_reader=config.second_reader,
            review_labels=label_tuples(wh.root),  # kitab review import: review evidence for every build
        )
        progress.stage(SAMPLE_AUTHORS)
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
            rejected_before,
            name=SAMPLE_AUTHORS,
        )
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

        def part_done(parts: list[Batch], with_requests: bool = False):
            """A runner's on_done: the finished batch's items (and the requests it counted)."""
            return lambda n, r: progress.part_done(
                parts[n].index,
                parts[n].stop - parts[n].start,
                requests=r.stats["requests_sent"] if with_requests else 0,
            )

        # Draw (in the seeded order) until --authors authors pass every stage or the order runs
        # out: each round draws as many as are still missing, in batches.
        progress.stage("collect", total=params.authors, unit="authors", tasks=0)
        batches: list[Batch] = []
        collected: list[StepResult] = []
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
            results = runner.map(
                collect_step,
                [(ctx, b, order) for b in new],
                cpu=kind.collect_is_cpu_work,
                names=[f"collect-{b.part}" for b in new],
                on_done=part_done(new, True),
            )
            collected += results
            passed += len(_column([r.outputs["books"] for r in results], "author_qid"))
            drawn = stop
        failed = sum(unavailable_authors(c) for c in collected)
        if failed:
            log.warning("%d of %d authors rejected: source unavailable", failed, drawn)
        check_failed_share(failed, drawn, params.max_failed_share)
        if passed < params.authors and not params.allow_fewer:
            raise BadValue(
                f"--authors {params.authors}: the candidates ran out: {drawn} drawn, {passed} passed every stage; "
                "ask for fewer, or pass --allow-fewer to publish them"
            )
        progress.end_stage(rows=sum(c.stats["collect_authors"]["works_raw"] for c in collected))

        progress.stage(TAG_ENTITIES)
        runner.release_workers()  # fresh workers for tagging: the dump lookups' memory goes with these
        titles = distinct_titles(ctx, [c.outputs["title_variants"] for c in collected])
        size = tag_chunk_size(titles.rows, config.workers)
        chunks = [
            Batch(n, start, min(start + size, titles.rows)) for n, start in enumerate(range(0, titles.rows, size))
        ]
        progress.plan(total=titles.rows, unit="titles", tasks=len(chunks))
        tagged = runner.map(
            tag_step,
            [(ctx, c, titles) for c in chunks],
            cpu=True,
            names=[f"tag-{c.part}" for c in chunks],
            on_done=part_done(chunks),
        )
        tags = tuple(r.outputs["title_tags"] for r in tagged)
        progress.end_stage(rows=titles.rows)

        progress.stage(GENERATE_CONSTRAINTS, total=drawn, unit="authors", tasks=len(batches))
        constrained = runner.map(
            constrain_step,
            [(ctx, b, c, tags) for b, c in zip(batches, collected)],
            cpu=True,
            names=[f"constrain-{b.part}" for b in batches],
            on_done=part_done(batches),
        )
        progress.end_stage(rows=sum(c.outputs["constraints"].rows for c in constrained))
        progress.stage("sample_queries")
        runner.release_workers()  # the rest is DuckDB in this process: free the workers' memory first
        queries, query_stats = sample_queries_step(ctx, collected, constrained)
        progress.end_stage(rows=queries.rows)
        progress.stage("publish")

        def parts(step_results: list[StepResult], name: str) -> list[TableRef]:
            return [r.outputs[name] for r in step_results]

        authors = read_rows(parts(collected, "authors"))
        kept = {row["author_qid"] for row in _column(parts(collected, "books"), "author_qid")}
        released = write_rows(
            "released_authors",
            released_authors_rows(release, authors, kept),
            ctx.work.path("publish", "all", "released_authors"),
        )
        # the claim pairs (tasks/claims.py): a second task from the same tables, seeded
        claim_rows, claim_stats = claims_from_rows(
            {
                "authors": authors,
                **{
                    name: read_rows(parts(step, name))
                    for step, name in (
                        (collected, "books"),
                        (collected, "title_variants"),
                        (constrained, "book_entities"),
                        (constrained, "constraints"),
                    )
                },
            },
            seed,
        )
        claims = write_rows("claims", claim_rows, ctx.work.path("publish", "all", "claims"))
        tables = {
            "authors": parts(collected, "authors"),
            "works_raw": parts(collected, "works_raw"),
            "book_records": parts(collected, "book_records"),
            "books": parts(collected, "books"),
            "title_variants": parts(collected, "title_variants"),
            "title_entities": parts(constrained, "title_entities"),
            "book_entities": parts(constrained, "book_entities"),
            "constraints": parts(constrained, "constraints"),
            "queries": [queries],
            "claims": [claims],
            # stage by stage, as the stages ran; the key order decides, this only breaks ties
            "rejects": [
                sampled.outputs["rejects.sample_authors"],
                *parts(collected, "rejects.collect_authors"),
                *parts(collected, "rejects.clean_books"),
                *parts(collected, "rejects.dedup_titles"),
                *parts(constrained, "rejects.generate_constraints"),
            ],
            "released_authors": [released],
        }
        rejected_reasons = rejected_author_reasons(tables["rejects"])
        requests_made = sampled.stats["requests_sent"] + sum(c.stats["requests_sent"] for c in collected)
        committed = publish(
            wh,
            release,
            tables,
            seed=seed,
            source=params.source,
            snapshot_id=origin.snapshot_id,
            inputs=origin.inputs,
            n_authors_requested=params.authors,
            requests_made=requests_made,
            stages=[r for r in progress.records() if r["stage"] != "publish"],
            config=config.to_dict(),
            excluded=excluded,
            replace=params.replace,
        )
        progress.end_stage(rows=sum(committed["row_counts"].values()))
    ctx.work.remove()
    stages = progress.records()

    collect_stats = merge_stats([c.stats for c in collected])
    constrain_stats = merge_stats([c.stats for c in constrained])
    counts = committed["row_counts"]
    methods = collect_stats["collect_authors"]["match_method"]
    return {
        "release": release,
        "seed": seed,
        "source": params.source,
        "snapshot_id": origin.snapshot_id,
        "warehouse": str(wh.root),
        "authors": author_counts(params.authors, sampled.stats, drawn, len(kept)),
        "rejected_authors": rejected_reasons,
        "excluded_releases": excluded,
        "unchanged": bool(committed.get("unchanged")),
        "stage_counts": {
            "candidate authors": sampled.stats["candidates"],
            "drawn (authors)": drawn,
            "source unavailable": failed,
            "matched on Open Library": methods.get("p648", 0) + methods.get("name_birth_year", 0),
            "works_raw": counts["works_raw"],
            "works kept by clean_books": collect_stats["clean_books"]["works_clean"],
            "title_variants": counts["title_variants"],
            "books": counts["books"],
            "authors with >= 5 books": len(kept),
            "title_entities": counts["title_entities"],
            "constraints": counts["constraints"],
            "queries": counts["queries"],
            "claims": counts["claims"],
        },
        "match_methods": {m: methods.get(m, 0) for m in ("p648", "name_birth_year", "unmatched")},
        "rejects": counts["rejects"],
        "stage_stats": {
            "sample_authors": sampled.stats,
            "collect_authors": collect_stats["collect_authors"],
            "clean_books": collect_stats["clean_books"],
            "dedup_titles": collect_stats["dedup_titles"],
            "tag_entities": {**constrain_stats["tag_entities"], "titles_tagged": titles.rows},
            "generate_constraints": constrain_stats["generate_constraints"],
            "sample_queries": query_stats,
            "claims": claim_stats,
        },
        "batches": {
            "authors_per_batch": params.batch_size,
            "collect": len(batches),
            TAG_ENTITIES: len(chunks),
            GENERATE_CONSTRAINTS: len(batches),
        },
        "stages": stages,
        "stage_seconds": {r["stage"]: r["seconds"] for r in stages},
        "requests_made": requests_made,
        "checksums": committed["checksums"],
        "data_tests": committed["data_tests"],
        "wall_seconds": round(time.monotonic() - started, 2),
    }


def author_counts(requested: int, sample_stats: dict, drawn: int, released: int) -> dict:
    """Authors requested, eligible (not released nor rejected before, with a label), drawn
    (in the seeded order) and released (passed every stage), and how many short of the
    request the release is (the candidates ran out)."""
    return {
        "requested": requested,
        "eligible": sample_stats["eligible"],
        "excluded_released": sample_stats["excluded_released"],
        "excluded_rejected_before": sample_stats["excluded_rejected_before"],
        "drawn": drawn,
        "sampled": drawn,
        "released": released,
        "shortfall": max(0, requested - released),
    }


def rejected_author_reasons(parts: list[TableRef]) -> dict[str, int]:
    """Drawn authors rejected, per reason (the rejects rows of kind ``author``)."""
    files = [r.path for r in parts if r.rows]
    if not files:
        return {}
    with duck() as con:
        rows = con.sql(
            "SELECT reason, count(DISTINCT record_id) FROM read_parquet(?, union_by_name = true) "
            "WHERE record_kind = 'author' GROUP BY reason ORDER BY 2 DESC, 1",
            params=[files],
        ).fetchall()
    return {reason: n for reason, n in rows}


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
