"""The ``kitab`` command line. Every command that touches the warehouse takes
``--warehouse DIR``; heavy imports (prefect, spaCy) happen inside the commands that need them."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

import typer

from kitab.app.console import console, print_rows
from kitab.core.env import BUNDLED_SNAPSHOT, quiet_prefect_env
from kitab.core.errors import KitabError
from kitab.core.params import DEFAULTS

app = typer.Typer(
    help="kitab: dynamic data collection for the KITAB benchmark.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
mirror_app = typer.Typer(help="The local mirror of WikiData and Open Library.", no_args_is_help=True)
snapshot_app = typer.Typer(help="Snapshots in the services' own formats.", no_args_is_help=True)
app.add_typer(mirror_app, name="mirror")
app.add_typer(snapshot_app, name="snapshot")
WarehouseOpt = typer.Option(None, "--warehouse", help="warehouse root (default: warehouse/ or $KITAB_WAREHOUSE)")
# json: one JSON array (what a JSON reader expects); jsonl: one object per line (for streams)
OUTPUTS = ("table", "json", "jsonl", "csv")


def _print_version(value: bool) -> None:
    if value:
        from kitab.core.version import __version__

        print(f"kitab {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    debug: bool = typer.Option(
        False, "--debug", envvar="KITAB_DEBUG", help="show the traceback of an error (also KITAB_DEBUG=1)"
    ),
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="print kitab's version and exit"
    ),
) -> None:
    if debug:
        os.environ["KITAB_DEBUG"] = "1"


def _warehouse(path: Path | None, *, create: bool = True) -> Path:
    """Resolve the warehouse and point Prefect's home inside it, before prefect is imported.
    ``create=False``: nothing is created yet (a refresh checks its inputs first; its lock then
    creates the folder)."""
    from kitab.core.config import Settings

    root = Path(path).resolve() if path else Settings().warehouse
    os.environ["KITAB_WAREHOUSE"] = str(root)
    if create:
        (root / ".prefect").mkdir(parents=True, exist_ok=True)  # Prefect only creates the last level
    quiet_prefect_env(root / ".prefect")
    return root


def _existing_warehouse(path: Path | None, release: str | None = None) -> Path:
    """The warehouse a read command reads (never created by it), with ``release`` committed in it."""
    from kitab.core.warehouse import CATALOG, Warehouse

    root = _warehouse(path, create=False)
    # the ledger alone makes a warehouse (reads build their views from it; the catalog is a copy)
    if not (root / CATALOG).is_file() and not Warehouse(root).committed_releases():
        raise KitabError(
            f"no warehouse at {root} (no committed release): run `kitab refresh` or `kitab demo` first, "
            "or point --warehouse / $KITAB_WAREHOUSE at one"
        )
    if release is not None:
        Warehouse(root).require_release(release)
    return root


def _showing(progress, quiet: bool):
    """The refresh's progress on stderr while it runs: live on a terminal, plain lines when
    stdout is not one, nothing with --quiet (kitab/app/progress_display.py)."""
    from kitab.app.progress_display import progress_mode, showing

    return showing(progress, progress_mode(quiet, sys.stdout.isatty(), sys.stderr.isatty()))


def _warn(message: str) -> None:
    print(f"kitab: warning: {message}", file=sys.stderr)


@contextlib.contextmanager
def user_errors():
    """A KitabError inside: printed as main() prints it, exit 1, also where the app runs
    without main() (typer's CliRunner, `kitab releases` calling sql)."""
    try:
        yield
    except KitabError as exc:
        _print_error(exc)
        raise typer.Exit(1) from None


@app.command()
def sql(
    query: str = typer.Argument(..., help="any DuckDB SQL over the warehouse views"),
    release: str | None = typer.Option(None, help="scope every view to one release"),
    warehouse: Path | None = WarehouseOpt,
    output: str = typer.Option("table", help="table | json (one array) | jsonl (JSON Lines) | csv"),
    files: list[str] | None = typer.Option(
        None,
        "--file",
        help="NAME=PATH: a local CSV, TSV, Parquet or "
        "JSON(L) file readable as the view NAME (repeatable); no other "
        "file is readable",
    ),
    timeout: float = typer.Option(300.0, min=0.1, help="stop the query after this many seconds"),
    memory_limit: str = typer.Option("2GB", help="DuckDB's memory limit (and this process's, plus 1 GiB)"),
) -> None:
    """Run read-only SQL over the warehouse views and print the result (anything that would
    write a file, attach a database or change a setting is refused; Ctrl-C stops a query)."""
    from kitab.app.guard import limit_memory
    from kitab.core.warehouse import Warehouse, bounded_query, describe_problems, user_file

    if output not in OUTPUTS:
        raise KitabError(f"--output {output!r}: expected one of {', '.join(OUTPUTS)}")
    wh = Warehouse(_existing_warehouse(warehouse, release))
    with user_errors():
        extra = dict(user_file(spec) for spec in files or [])
        if _OWN_PROCESS:  # the process limit only for the `kitab` command, never a host process (tests)
            limit_memory(memory_limit)
        with wh.connect(release=release, extra_files=extra, warn=False, memory_limit=memory_limit) as con:
            columns, rows = bounded_query(con, query, timeout)
            if con.problems:  # after the answer: a failed read says it in its one error line
                _warn(describe_problems(con.problems))
    print_result(columns, rows, output)


def print_result(columns: list[str], rows: list[tuple], output: str) -> None:
    """Rows on stdout as ``output`` (OUTPUTS)."""
    if output in ("json", "jsonl"):
        lines = [json.dumps(dict(zip(columns, row)), default=str, ensure_ascii=False) for row in rows]
        if output == "json":  # an array, still one row per line
            print("[" + ",\n ".join(lines) + "]")
        else:
            for line in lines:
                print(line)
    elif output == "csv":
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")  # LF: the csv module's default is CRLF
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        print_rows(columns, rows)


@app.command()
def describe(
    table: str | None = typer.Argument(None, help="a table or view; none: list them all"),
    release: str | None = typer.Option(None, help="scope the views to one release"),
    output: str = typer.Option("table", help="table | json | jsonl | csv"),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """The warehouse's tables and views with their descriptions, or one's columns with their
    types and descriptions (from schemas/ and schemas/views/)."""
    from kitab.core.describe import describe_view, list_views
    from kitab.core.warehouse import Warehouse

    if output not in OUTPUTS:
        raise KitabError(f"--output {output!r}: expected one of {', '.join(OUTPUTS)}")
    wh = Warehouse(_existing_warehouse(warehouse, release))
    with user_errors():
        with wh.connect(release=release) as con:
            if table is None:
                columns, rows = ["name", "kind", "description"], list_views(con)
            else:
                columns, rows = ["column", "type", "description"], describe_view(con, table)
    print_result(columns, rows, output)


@app.command("test")
def data_test(
    release: str | None = typer.Option(None, help="test only this release"), warehouse: Path | None = WarehouseOpt
) -> None:
    """Run the data tests (sql/tests/*.sql: each returns the rows that break a rule) over the
    committed releases; exit 1 if any returns a row."""
    from kitab.core.warehouse import Warehouse, data_test_results

    wh = Warehouse(_existing_warehouse(warehouse, release))
    with user_errors():
        with wh.connect(release=release) as con:
            results = data_test_results(con)
    width = max(len(name) for name, _ in results)
    for name, rows in results:
        shown = "; ".join(str(r) for r in rows[:3]) + (" …" if len(rows) > 3 else "")
        print(
            f"{name:<{width}}  "
            + (
                "pass"
                if not rows
                else f"fail: {len(rows)}{'+' if len(rows) >= 5 else ''} offending row(s), e.g. {shown}"
            )
        )
    passed = sum(not rows for _, rows in results)
    scope = f"release {release}" if release else "every committed release"
    print(f"{passed} of {len(results)} data tests pass on {scope} (sql/tests/)")
    if passed < len(results):
        raise typer.Exit(1)


@app.command()
def releases(warehouse: Path | None = WarehouseOpt) -> None:
    """List committed releases with their counts, and each one's time and rows per stage."""
    from kitab.app.summary import releases_tables
    from kitab.core.warehouse import Warehouse

    with Warehouse(_existing_warehouse(warehouse)).connect() as con:
        ledger = con.sql("SELECT * FROM releases ORDER BY created_at, release").to_arrow_table().to_pylist()
    for table in releases_tables(ledger):
        console.print(table)


@app.command()
def verify(
    release: str | None = typer.Option(None, help="check only this release"),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Recompute the sha256 of every committed table file and compare it with the ledger
    (releases.checksums, releases.counts); exit 1 if any file differs or is missing."""
    from kitab.core.warehouse import Warehouse

    wh = Warehouse(_existing_warehouse(warehouse, release))
    checks = wh.check_files(None if release is None else [release])
    bad = [c for c in checks if c.problem]
    if not bad and not wh.catalog_path.exists():  # views come from the ledger: the catalog can be rebuilt
        wh.build_catalog()
        console.print(f"rebuilt {wh.catalog_path.name} from the ledger")
    if bad:  # plain lines, not a table: each names its file in full, whatever the terminal width
        for c in bad:
            print(f"{c.release}\t{c.table}\t{c.path.relative_to(wh.root)}\t{c.problem}")
        print(f"kitab verify: {len(bad)} of {len(checks)} committed files do not match the ledger", file=sys.stderr)
        raise typer.Exit(1)
    releases = len({c.release for c in checks})
    console.print(f"{len(checks)} committed files of {releases} release(s) match the ledger")


@app.command()
def refresh(
    source: str = typer.Option(DEFAULTS.source, help="live | mirror | dump"),
    snapshot: Path = typer.Option(BUNDLED_SNAPSHOT, help="snapshot folder (mirror / dump)"),
    authors: int = typer.Option(DEFAULTS.authors, min=1, help="authors to sample"),
    seed: int | None = typer.Option(None, help="sampling seed (default: the UTC date, YYYYMMDD)"),
    release: str | None = typer.Option(None, help="release id (default YYYY.MM.DD-s<seed>)"),
    mirror_url: str | None = typer.Option(None, help="use a running mirror instead of starting one"),
    batch_size: int = typer.Option(
        DEFAULTS.batch_size, min=1, help="authors per batch (one task run per batch and step)"
    ),
    task_runner: str = typer.Option(
        "threads",
        help="threads (this machine, nothing to start) | dask (a LocalCluster, one worker per core, or --dask-address)",
    ),
    dask_address: str | None = typer.Option(None, help="a running Dask scheduler, e.g. tcp://host:8786"),
    allow_fewer: bool = typer.Option(
        False,
        "--allow-fewer",
        help="fewer eligible authors than --authors: publish those (the summary says the shortfall) instead of failing",
    ),
    max_failed_share: float = typer.Option(
        DEFAULTS.max_failed_share,
        min=0.0,
        max=1.0,
        help="fail, publishing nothing, if more "
        "than this share of the authors is lost to a source that does "
        "not answer (each is a source_unavailable reject)",
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet",
        "-q",
        help="no progress while it runs: only the summary (or --json) on stdout, and warnings and errors on stderr",
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="print the run summary as JSON (the machine-readable document) instead of the human summary",
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Run the refresh flow once and publish a release. While it runs: a live display on a
    terminal, plain progress lines on stderr otherwise (none with --quiet); then a summary."""
    from kitab.core.locking import refuse_if_busy

    root = _warehouse(warehouse, create=False)
    refuse_if_busy(root)  # before the slow imports: a second refresh is told at once
    from kitab.app.guard import check_free_space

    check_free_space(root)  # a full disk is told now, not after Prefect has started on it
    from flows.runners import TASK_RUNNERS
    from kitab.app.runs import run_refresh

    if task_runner not in TASK_RUNNERS:
        raise typer.BadParameter(f"expected one of {', '.join(TASK_RUNNERS)}", param_hint="--task-runner")
    if dask_address and task_runner != "dask":
        raise typer.BadParameter("--dask-address needs --task-runner dask", param_hint="--dask-address")
    from kitab.core.progress import Progress

    progress, started = Progress(), time.monotonic()
    with _showing(progress, quiet):
        # run_refresh checks the inputs and takes the warehouse's lock before it creates anything
        summary = run_refresh(
            source=source,
            snapshot=snapshot,
            authors=authors,
            seed=seed,
            release=release,
            warehouse=root,
            mirror_url=mirror_url,
            batch_size=batch_size,
            task_runner=task_runner,
            dask_address=dask_address,
            allow_fewer=allow_fewer,
            max_failed_share=max_failed_share,
            progress=progress,
        )
    if as_json:
        console.print_json(json.dumps(summary, default=str))
    else:
        from kitab.app.summary import print_summary

        print_summary(summary, wall=time.monotonic() - started, command="kitab refresh")
    wanted = summary["authors"]
    if wanted["shortfall"]:
        _warn(
            f"{wanted['sampled']} authors sampled of {wanted['requested']} requested: only {wanted['eligible']} "
            f"were eligible ({wanted['shortfall']} short)"
        )


@app.command()
def demo(
    warehouse: Path | None = WarehouseOpt,
    authors: int = typer.Option(DEFAULTS.authors, min=1, help="authors to sample from the bundled snapshot"),
    seed: int = typer.Option(42),
) -> None:
    """The whole refresh on the bundled snapshot, through the local mirror, then a summary
    (in this process, on the local runner: no Prefect server to start)."""
    from kitab.app.demo import run_demo
    from kitab.core.progress import Progress

    progress = Progress()
    with _showing(progress, quiet=False):
        run_demo(_warehouse(warehouse), authors=authors, seed=seed, progress=progress)


@app.command()
def export(
    release: str = typer.Option(..., help="release id to export"),
    out: Path = typer.Option(..., help="output folder (a Hugging Face dataset folder)"),
    push: str | None = typer.Option(
        None,
        "--push",
        help="Hub repo id, e.g. org/kitab; token from HF_TOKEN or the Hugging Face login, never from the command line",
    ),
    force: bool = typer.Option(
        False, "--overwrite", "--force", help="replace what --out holds (another export, or any other files)"
    ),
    private: bool = typer.Option(False, help="create the Hub repo private"),
    layout: str = typer.Option(
        "hf",
        help="hf (Parquet per config) | kitab (also KITAB's JSON-lines files "
        "data/KITAB-*.json, which the card's configs then name)",
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Write a release as a Hugging Face dataset folder (Parquet per config + card); optionally push and tag it."""
    from kitab.core.warehouse import Warehouse
    from kitab.release.export import LAYOUTS, ExportExists, export_release

    if layout not in LAYOUTS:
        raise typer.BadParameter(f"expected one of {', '.join(LAYOUTS)}", param_hint="--layout")
    root = _existing_warehouse(warehouse, release)
    bad = [c for c in Warehouse(root).check_files([release]) if c.problem]
    if bad:  # damage is never exported, so never pushed
        raise KitabError(
            f"release {release} fails verification ({bad[0].table}: "
            f"{bad[0].path.relative_to(root)}: {bad[0].problem}); nothing exported; run `kitab verify`"
        )
    try:
        summary = export_release(root, release, out, force=force, layout=layout)
    except ExportExists as exc:
        raise KitabError(str(exc)) from exc
    print_rows(["config", "rows"], list(summary["rows"].items()), title=f"release {release} -> {summary['out']}")
    if push:
        from kitab.release.hub import push_release

        with user_errors():
            pushed = push_release(Path(summary["out"]), push, release=release, private=private)
        console.print(f"pushed {pushed['repo_url']} at commit {pushed['commit']}, tag {pushed['tag']}")


@app.command()
def report(
    release: str = typer.Option(..., help="release id"),
    out: Path | None = typer.Option(None, help="also write report.md and plots/ here"),
    output: str = typer.Option(
        "markdown", help="markdown (the whole report) | json (the leaderboard of every model evaluated on the release)"
    ),
    snapshot: Path | None = typer.Option(
        None,
        help="also show this snapshot's provenance (input dump "
        "files, kept and skipped counts: kitab snapshot from-dumps)",
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """The release's quality section (the same as the dataset card's), its refresh's stages and
    the leaderboard of the models evaluated on it, as markdown; or the leaderboard as JSON."""
    from kitab.release.report import render_report

    _report_output(output)
    root = _existing_warehouse(warehouse, release)
    text = render_report(root, release, out, snapshot)
    if output == "json":
        from kitab.core.warehouse import Warehouse
        from kitab.release.leaderboard import leaderboard

        with Warehouse(root).connect(release=release) as con:
            print(json.dumps(leaderboard(con, release), ensure_ascii=False, indent=2, default=str))
    else:
        print(text)  # plain print: rich would eat [..] as markup


@app.command()
def serve(
    cron: str = typer.Option("0 3 * * 1", help="cron schedule (UTC)"),
    source: str = typer.Option(DEFAULTS.source, help="live | mirror | dump"),
    authors: int = typer.Option(DEFAULTS.authors, min=1),
    mirror_url: str | None = typer.Option(None, help="a running mirror (source mirror)"),
    snapshot: Path | None = typer.Option(None, help="snapshot folder (source dump, or mirror without URL)"),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Serve the scheduled refresh deployment (needs a Prefect server: PREFECT_API_URL)."""
    from kitab.app.prefect_guard import check_prefect_server

    check_prefect_server(os.environ.get("PREFECT_API_URL", ""))  # before anything: a missing server is one line
    root = _warehouse(warehouse)
    from prefect import serve as prefect_serve

    from flows.deploy import refresh_deployment
    from kitab.sources import source_kind

    # prefect.yaml's mirror_url names compose's mirror host; a served source that reads no mirror drops it
    prefect_serve(
        refresh_deployment(
            cron=cron,
            source=source,
            authors=authors,
            mirror_url=mirror_url or (None if source_kind(source).reads_mirror_url else ""),
            snapshot=str(snapshot) if snapshot else None,
            warehouse=str(root),
        )
    )


@mirror_app.command("serve")
def mirror_serve(
    snapshot: Path = typer.Option(BUNDLED_SNAPSHOT),
    port: int = typer.Option(8089),
    host: str = typer.Option("127.0.0.1", help="bind address (0.0.0.0 only inside a container network)"),
    ol_rate: float = typer.Option(25.0, help="Open Library requests/s per client before 429"),
    wdqs_rate: float | None = typer.Option(None, help="SPARQL queries/s per client before 429"),
    faults: str | None = typer.Option(
        None, help="seeded random faults, e.g. 'rate=0.2,seed=7,kinds=429+503+cut+slow' (docs/reliability.md)"
    ),
    wdqs_timeout_rows: int | None = typer.Option(
        None, min=0, help="answer a SPARQL query with more result rows than this as WDQS answers a timeout"
    ),
) -> None:
    """Serve a snapshot on 127.0.0.1 with the real APIs' shapes (Ctrl-C to stop)."""
    from kitab.simulate.mirror.faults import RandomFaults
    from kitab.simulate.mirror.server import Mirror

    try:
        plan = RandomFaults.parse(faults) if faults is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--faults") from None
    mirror = Mirror(
        snapshot,
        host=host,
        port=port,
        ol_rate=ol_rate,
        wdqs_rate=wdqs_rate,
        faults=plan,
        wdqs_timeout_rows=wdqs_timeout_rows,
    )
    console.print(f"kitab mirror of {snapshot} on {mirror.url} (SPARQL: {mirror.url}/sparql)")
    if plan is not None:
        console.print(f"faults: {plan.spec}", markup=False)
    if wdqs_timeout_rows is not None:
        console.print(f"SPARQL results over {wdqs_timeout_rows} rows answer as a WDQS timeout")
    try:
        mirror.serve_forever()
    except KeyboardInterrupt:
        mirror.stop()


@snapshot_app.command("generate")
def snapshot_generate(
    seed: int = typer.Option(42),
    authors: int = typer.Option(160, min=1),
    out: Path = typer.Option(..., help="output folder"),
    format: str = typer.Option(
        "snapshot", help="snapshot | published (the dumps as WikiData and Open Library publish them, with their noise)"
    ),
    truthy: bool = typer.Option(False, help="published: also write latest-truthy.nt.gz"),
) -> None:
    """Generate a snapshot from the real seed rows plus seeded synthetic records."""
    from kitab.simulate.generator.generate import main

    if format not in ("snapshot", "published"):
        raise KitabError(f"--format {format!r}: expected snapshot or published")
    if format == "snapshot":
        main(seed, authors, out)
        return
    import tempfile

    from kitab.simulate.generator.generate import generate_snapshot
    from kitab.simulate.generator.published import write_published

    with tempfile.TemporaryDirectory(dir=out.parent if out.parent.exists() else None) as tmp:
        world = Path(tmp) / "world"
        generate_snapshot(world, seed, authors)
        counts = write_published(world, out, seed=seed, truthy=truthy)
    console.print(
        f"published-format dumps of {authors} candidate authors -> {out}: "
        f"{counts['entities']:,} WikiData items (+{counts['noise_entities']:,} noise), Open Library "
        f"files in {out / 'openlibrary'}"
    )


@snapshot_app.command("from-dumps")
def snapshot_from_dumps(
    wikidata: Path = typer.Option(..., help="latest-all.json.gz (or .json.bz2, or latest-all.nt.gz) as downloaded"),
    openlibrary: Path = typer.Option(..., help="the folder of ol_dump_*_<date>.txt.gz files as downloaded"),
    out: Path = typer.Option(..., help="the snapshot folder to write (kitab refresh --source dump --snapshot OUT)"),
    workers: int = typer.Option(2, min=0, help="parsing processes (0: in this process)"),
    memory_limit: str = typer.Option("1GB", help="DuckDB's memory for the joins (it spills to disk beyond)"),
    chunk_mb: int = typer.Option(32, min=1, help="decompressed MB per chunk (memory ~ 2 x workers x chunk)"),
    max_record_mb: int = typer.Option(32, min=1, help="longer lines are skipped and counted"),
    as_of: str | None = typer.Option(None, help="the snapshot's date (default: the WikiData dump's date)"),
    keep_parts: bool = typer.Option(False, help="keep OUT.parts/ (the per-chunk results) after success"),
) -> None:
    """Build a snapshot from the public WikiData and Open Library dumps (docs/dumps.md).

    One streaming pass per file, filtered before any join; a killed run resumes from its last
    finished chunk (OUT.parts/)."""
    from kitab.sources.dumps.build import Settings, from_dumps

    settings = Settings(
        workers=workers,
        memory_limit=memory_limit,
        chunk_bytes=chunk_mb << 20,
        max_record=max_record_mb << 20,
        as_of=as_of,
        keep_parts=keep_parts,
    )
    manifest = from_dumps(wikidata, openlibrary, out, settings, progress=lambda text: console.print(text, markup=False))
    kept = manifest["kept"]
    console.print(
        f"snapshot {manifest['snapshot_id']} ({manifest['created_at']}) -> {out} in {manifest['_seconds']} s: "
        f"{kept['wikidata']['eligible_authors']:,} eligible authors, {kept['wikidata']['works']:,} works; "
        f"Open Library {kept['openlibrary']['authors']:,} authors, {kept['openlibrary']['works']:,} works, "
        f"{kept['openlibrary']['editions']:,} editions",
        markup=False,
    )
    if manifest["skipped"]:
        console.print("skipped: " + ", ".join(f"{k} {v:,}" for k, v in manifest["skipped"].items()), markup=False)


@snapshot_app.command("manifest")
def snapshot_manifest(
    folder: Path = typer.Argument(..., help="a folder holding the four dump files"),
    as_of: str | None = typer.Option(None, help="the dumps' date (default: newest file's mtime)"),
) -> None:
    """Write MANIFEST.json (checksums, snapshot id) for a folder of dump files, e.g. built
    from the real public dumps (docs/snapshot.md)."""
    from kitab.sources.snapshot.manifest import write_manifest

    manifest = write_manifest(folder, as_of)
    console.print(f"snapshot {manifest['snapshot_id']} ({manifest['created_at']}) -> {folder / 'MANIFEST.json'}")


def _stdin_lines(with_year: bool) -> list[str]:
    """The probe's input lines: any bytes decoded (invalid UTF-8 replaced), titles over the
    bound skipped; a warning line on stderr for each."""
    from kitab.app.probe_input import decode_lines

    if sys.stdin.isatty():
        raise typer.BadParameter("expected lines on standard input (pipe a file or use <<EOF)")
    lines, invalid = decode_lines(sys.stdin.buffer.read())
    if invalid:
        _warn(
            f"{invalid} input line{'s' if invalid > 1 else ''} had invalid UTF-8, read with U+FFFD in place "
            "of the bad bytes"
        )
    return _short_titles(lines, with_year)


def _short_titles(lines: list[str], with_year: bool, noun: str = "line") -> list[str]:
    from kitab.app.probe_input import line_list, without_long_titles
    from tasks.text import MAX_TITLE_CHARS, split_title_year

    kept, skipped = without_long_titles(lines, (lambda line: split_title_year(line)[0]) if with_year else str.strip)
    if skipped:
        _warn(f"skipped {line_list(skipped, noun)}: a title longer than {MAX_TITLE_CHARS:,} characters is not a title")
    return kept


@app.command()
def dedup() -> None:
    """One author's titles on stdin (one per line, optional "(YYYY)") -> clusters as JSON lines."""
    from tasks.dedup_titles import dedup_probe

    for line in dedup_probe(_stdin_lines(with_year=True)):
        print(line)


@app.command()
def tag(titles: list[str] | None = typer.Argument(None, help="titles; none: one per line on stdin")) -> None:
    """Titles -> JSON lines {"title", "human_names", "city_names"} from the human and city taggers."""
    from kitab.app.probe_input import valid_text
    from tasks.tag_entities import tag_probe

    if titles:
        checked = [valid_text(t) for t in titles]
        invalid = sum(bad for _, bad in checked)
        if invalid:
            _warn(
                f"{invalid} argument{'s' if invalid > 1 else ''} had invalid UTF-8, read with U+FFFD in place "
                "of the bad bytes"
            )
        lines = _short_titles([t for t, _ in checked], with_year=False, noun="argument")
    else:  # a blank line is no title: no output line for it (as dedup and constraints skip it)
        lines = [line for line in _stdin_lines(with_year=False) if line.strip()]
    for line in tag_probe(lines):
        print(line)


@app.command()
def constraints(
    human: bool = typer.Option(False, "--human", help="add human-name constraints (the human tagger)"),
    city: bool = typer.Option(False, "--city", help="add city-name constraints (the city tagger)"),
) -> None:
    """One author's books on stdin ("Title (YYYY)" per line) -> every candidate constraint as JSON lines."""
    from tasks.constraints import constraints_probe
    from tasks.text import split_title_year

    lines = _stdin_lines(with_year=True)
    found: dict[str, dict[str, bool]] = {}
    if human or city:  # tag every title in one batch (one parse per title), then look up
        from tasks.tag_entities import default_taggers, tag_titles

        taggers = [t for t in default_taggers() if (t.name == "human" and human) or (t.name == "city" and city)]
        titles = sorted({split_title_year(line)[0] for line in lines if line.strip()})
        spans = tag_titles(titles, taggers)
        found = {t.name: {title: bool(spans[t.name][i]) for i, title in enumerate(titles)} for t in taggers}

    for line in constraints_probe(lines, taggers={kind: flags.get for kind, flags in found.items()}):
        print(line)


REPORT_OUTPUTS = ("markdown", "json")


def _report_output(output: str) -> None:
    if output not in REPORT_OUTPUTS:
        raise typer.BadParameter(f"expected one of {', '.join(REPORT_OUTPUTS)}", param_hint="--output")


def _print_evaluation(result: dict, output: str) -> None:
    """``kitab evaluate``'s result: the leaderboard entry of this evaluation (markdown), or
    the whole result as JSON. Coverage comes first: an unanswered query is scored wrong."""
    if output == "json":
        print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
        return
    from kitab.release.leaderboard import format_leaderboard

    coverage = result["coverage"]
    print(
        f"{result['model']} on release {result['release']}: {result['answered']} of {result['queries']} queries "
        f"answered (coverage {coverage:.3f}; an unanswered query is scored wrong), answers sha256 "
        f"{result['answers_sha256'][:16]}…, scores in table evaluations\n"
    )
    print(format_leaderboard(result["leaderboard"]))
    print(f"every model on this release: kitab report --release {result['release']} (--output json)")


@app.command()
def evaluate(
    release: str = typer.Option(..., help="release id whose queries were answered"),
    answers: Path = typer.Option(
        ..., help="JSON lines {query_id, response}, or a CSV with KITAB's columns and the model's text"
    ),
    model: str | None = typer.Option(None, help="the model's name (default: the answers file's name)"),
    response_column: str | None = typer.Option(
        None, help="CSV: the column with the model's text (default: the one column that is not KITAB's)"
    ),
    output: str = typer.Option(
        "markdown", help="markdown | json (the leaderboard entry, coverage and every aggregate)"
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Score a model's answers with KITAB's metrics (a query without an answer is scored wrong);
    store them in the table `evaluations` and print this evaluation's leaderboard."""
    from kitab.release.evaluation.run import evaluate_release

    _report_output(output)
    with user_errors():
        result = evaluate_release(
            _existing_warehouse(warehouse, release), release, answers, model=model, response_column=response_column
        )
    _print_evaluation(result, output)


class _AnswerProgress:
    """``kitab answer``'s one progress display on stderr: a line rewritten in place on a
    terminal, else a line every few seconds; the last state always ends with a newline."""

    def __init__(self, quiet: bool, every: float = 5.0):
        self.quiet, self.tty, self.every = quiet, sys.stderr.isatty(), every if not sys.stderr.isatty() else 0.25
        self._last = 0.0
        self._text = ""

    def __call__(self, stats) -> None:
        now = time.monotonic()
        if self.quiet or now - self._last < self.every:
            return
        self._last = now
        self._show(stats.line())

    def _show(self, text: str) -> None:
        self._text = text
        if self.tty:
            print(f"\r\x1b[2Kkitab answer: {text}", end="", file=sys.stderr, flush=True)
        else:
            print(f"kitab answer: {text}", file=sys.stderr, flush=True)

    def end(self, stats) -> None:
        if not self.quiet and stats is not None:
            self._show(stats.line())
            if self.tty:
                print(file=sys.stderr)


@app.command()
def answer(
    release: str = typer.Option(..., help="release id whose queries to ask"),
    model: str = typer.Option(..., help='the model name the endpoint serves (sent as "model")'),
    base_url: str = typer.Option(
        ...,
        envvar="OPENAI_BASE_URL",
        help="the OpenAI-compatible API root, e.g. https://api.openai.com/v1, "
        "http://127.0.0.1:8000/v1 (vLLM), http://127.0.0.1:11434/v1 (Ollama)",
    ),
    out: Path = typer.Option(..., help="the answers file to write (JSON lines, what kitab evaluate reads)"),
    template: str = typer.Option("no-context", help="no-context | with-context | self-context | cot"),
    concurrency: int = typer.Option(4, min=1, max=256, help="requests in flight at most"),
    rate: float | None = typer.Option(None, help="requests started per second at most (default: no cap)"),
    max_tokens: int | None = typer.Option(
        None, min=0, help="default: the paper's for the template (400 / 1000 / 3000); 0: not sent"
    ),
    temperature: float = typer.Option(0.0, help="the paper's is 0"),
    seed: int | None = typer.Option(None, help="sent as the request's seed, where the server takes one"),
    timeout: float = typer.Option(600.0, min=1.0, help="seconds to wait for one answer"),
    max_attempts: int = typer.Option(6, min=1, max=20, help="tries per query (429, 5xx, timeouts)"),
    max_retry_after: float = typer.Option(
        300.0, min=0.0, help="a Retry-After longer than this fails the query instead of waiting"
    ),
    cache: Path | None = typer.Option(None, help="the response cache (default: <warehouse>/.cache/answers.sqlite)"),
    limit: int | None = typer.Option(None, min=1, help="only the first N queries (a trial run)"),
    allow_missing: bool = typer.Option(
        False,
        "--allow-missing",
        help="write the answers there are even if some queries failed (kitab evaluate scores those wrong)",
    ),
    evaluate_after: bool = typer.Option(False, "--evaluate", help="score the answers file right after"),
    output: str = typer.Option("markdown", help="with --evaluate: markdown | json"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress display"),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Ask a model every query of a release through an OpenAI-compatible chat endpoint (key from
    OPENAI_API_KEY, never logged or written) and write the answers file; cached, resumable."""
    from kitab.release.answer import MAX_TOKENS, Params, Retry, answer_release

    _report_output(output)
    root = _existing_warehouse(warehouse, release)
    if max_tokens is None:
        max_tokens = MAX_TOKENS.get(template)
    params = Params(temperature=temperature, max_tokens=max_tokens or None, seed=seed)
    retry = Retry(max_attempts=max_attempts, max_retry_after=max_retry_after)
    progress = _AnswerProgress(quiet)
    seen: list = [None]

    def on_progress(stats) -> None:
        seen[0] = stats
        progress(stats)

    with user_errors():
        try:
            summary = answer_release(
                root,
                release,
                model=model,
                base_url=base_url,
                out=out,
                template=template,
                api_key=os.environ.get("OPENAI_API_KEY") or None,
                concurrency=concurrency,
                rate=rate,
                params=params,
                retry=retry,
                cache_path=cache,
                timeout=timeout,
                allow_missing=allow_missing,
                limit=limit,
                on_progress=on_progress,
            )
        finally:
            progress.end(seen[0])
    failed = f", {len(summary['failed'])} failed (left out)" if summary["failed"] else ""
    print(
        f"{summary['answered']} of {summary['queries']} queries answered by {model} ({summary['from_cache']} from "
        f"the cache, {summary['requests']} requests, {summary['retries']} retries{failed}), "
        f"{summary['prompt_tokens']:,} prompt + {summary['completion_tokens']:,} completion tokens, "
        f"{summary['seconds']:.1f} s -> {out}",
        file=sys.stderr if output == "json" else sys.stdout,
    )
    if evaluate_after:
        from kitab.release.evaluation.run import evaluate_release

        with user_errors():
            result = evaluate_release(root, release, out, model=model)
        result["answer_run"] = summary
        _print_evaluation(result, output)


@app.command()
def prompts(
    release: str = typer.Option(..., help="release id"),
    template: str = typer.Option(
        "no-context", help="no-context | with-context | self-context | cot (the paper's Templates 2a, 2b, 3; cot = 2a)"
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """The paper's prompt for every query of a release, as JSON lines {query_id, template, prompt}."""
    from kitab.release.prompts import release_prompts

    with user_errors():
        for line in release_prompts(_existing_warehouse(warehouse, release), release, template):
            print(line)


def _debug() -> bool:
    return os.environ.get("KITAB_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")


# True once main() runs: this process is the `kitab` command (process-wide limits are ours to set)
_OWN_PROCESS = False


def main() -> None:
    """The ``kitab`` command: a KitabError (a user's mistake, a busy warehouse, a broken
    snapshot) is one or two lines on stderr and exit 1; its traceback only with --debug.
    Usage errors are click's (exit 2); any other exception is a bug and keeps its traceback."""
    from kitab.app.guard import environment_error, terminate_as_interrupt

    global _OWN_PROCESS
    _OWN_PROCESS = True
    terminate_as_interrupt()
    try:
        app()  # (click prints "Aborted!" for Ctrl-C and SIGTERM, and exits 1)
    except KitabError as exc:
        if _debug():
            raise
        _print_error(exc)
        sys.exit(1)
    except BaseException as exc:
        line = environment_error(exc)
        if line is None or _debug():
            raise
        _print_error(KitabError(line), exc)
        sys.exit(130 if isinstance(exc, KeyboardInterrupt) else 1)


def _print_error(exc: KitabError, cause: BaseException | None = None) -> None:
    """A KitabError as at most two lines on stderr, and its frames (or ``cause``'s) released."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    print(f"kitab: error: {lines[0]}" + ("\n" + " ".join(lines[1:]) if len(lines) > 1 else ""), file=sys.stderr)
    _release_frames(cause or exc)


def _release_frames(exc: BaseException) -> None:
    """Drop the failed code's frames and what they hold (a DuckDB connection left alive at
    interpreter exit makes its bindings print dozens of "leaked" lines after the error)."""
    import gc

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = None  # (3.11 frames keep their function, so clearing locals is not enough)
        exc = exc.__cause__ or exc.__context__
    gc.collect()


if __name__ == "__main__":
    main()
