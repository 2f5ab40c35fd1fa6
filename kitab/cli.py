"""The ``kitab`` command line. Every command that touches the warehouse takes
``--warehouse DIR``; heavy imports (prefect, spaCy) happen inside the commands that need them."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from kitab.console import console, print_rows
from kitab.env import BUNDLED_SNAPSHOT, quiet_prefect_env

app = typer.Typer(help="kitab: dynamic data collection for the KITAB benchmark.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)
mirror_app = typer.Typer(help="The local mirror of WikiData and Open Library.", no_args_is_help=True)
snapshot_app = typer.Typer(help="Snapshots in the services' own formats.", no_args_is_help=True)
app.add_typer(mirror_app, name="mirror")
app.add_typer(snapshot_app, name="snapshot")
WarehouseOpt = typer.Option(None, "--warehouse", help="warehouse root (default: warehouse/ or $KITAB_WAREHOUSE)")


def _warehouse(path: Optional[Path]) -> Path:
    """Resolve the warehouse and point Prefect's home inside it, before prefect is imported."""
    from kitab.config import Settings

    root = Path(path).resolve() if path else Settings().warehouse
    os.environ["KITAB_WAREHOUSE"] = str(root)
    (root / ".prefect").mkdir(parents=True, exist_ok=True)  # Prefect only creates the last level
    quiet_prefect_env(root / ".prefect")
    return root


@app.command()
def sql(query: str = typer.Argument(..., help="any DuckDB SQL over the warehouse views"),
        release: Optional[str] = typer.Option(None, help="scope every view to one release"),
        warehouse: Optional[Path] = WarehouseOpt,
        output: str = typer.Option("table", help="table | json | csv")) -> None:
    """Run SQL against the warehouse catalog and print the result."""
    from kitab.warehouse import Warehouse

    wh = Warehouse(_warehouse(warehouse))
    with wh.connect(release=release) as con:
        cursor = con.execute(query)
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchall()
    if output == "json":
        for row in rows:
            print(json.dumps(dict(zip(columns, row)), default=str, ensure_ascii=False))
    elif output == "csv":
        import csv

        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        print_rows(columns, rows)


@app.command()
def releases(warehouse: Optional[Path] = WarehouseOpt) -> None:
    """List committed releases with their counts."""
    sql("SELECT release_id, seed, source, snapshot_id, created_at, n_authors_requested, counts "
        "FROM releases ORDER BY created_at", release=None, warehouse=warehouse, output="table")


@app.command()
def refresh(source: str = typer.Option("mirror", help="live | mirror | dump"),
            snapshot: Path = typer.Option(BUNDLED_SNAPSHOT, help="snapshot folder (mirror / dump)"),
            authors: int = typer.Option(40, min=1, help="writers to sample"),
            seed: Optional[int] = typer.Option(None, help="sampling seed (default: the UTC date, YYYYMMDD)"),
            release: Optional[str] = typer.Option(None, help="release id (default YYYY.MM.DD-s<seed>)"),
            mirror_url: Optional[str] = typer.Option(None, help="use a running mirror instead of starting one"),
            batch_size: int = typer.Option(250, min=1, help="writers per batch (one task run per batch and step)"),
            task_runner: str = typer.Option("threads", help="threads (this machine, nothing to start) | dask "
                                            "(a LocalCluster, one worker per core, or --dask-address)"),
            dask_address: Optional[str] = typer.Option(None, help="a running Dask scheduler, e.g. tcp://host:8786"),
            warehouse: Optional[Path] = WarehouseOpt) -> None:
    """Run the refresh flow once and publish a release."""
    from flows.runners import TASK_RUNNERS
    from kitab.runs import run_refresh

    if task_runner not in TASK_RUNNERS:
        raise typer.BadParameter(f"expected one of {', '.join(TASK_RUNNERS)}", param_hint="--task-runner")
    if dask_address and task_runner != "dask":
        raise typer.BadParameter("--dask-address needs --task-runner dask", param_hint="--dask-address")
    summary = run_refresh(source=source, snapshot=snapshot, authors=authors, seed=seed, release=release,
                          warehouse=_warehouse(warehouse), mirror_url=mirror_url, batch_size=batch_size,
                          task_runner=task_runner, dask_address=dask_address)
    console.print_json(json.dumps(summary, default=str))


@app.command()
def demo(warehouse: Optional[Path] = WarehouseOpt,
         authors: int = typer.Option(40, min=1, help="writers to sample from the bundled snapshot"),
         seed: int = typer.Option(42)) -> None:
    """The whole refresh on the bundled snapshot, through the local mirror, then a summary."""
    from kitab.demo import run_demo

    run_demo(_warehouse(warehouse), authors=authors, seed=seed)


@app.command()
def export(release: str = typer.Option(..., help="release id to export"),
           out: Path = typer.Option(..., help="output folder (a Hugging Face dataset folder)"),
           push: Optional[str] = typer.Option(None, "--push", help="Hub repo id, e.g. org/kitab; token from "
                                              "HF_TOKEN or the Hugging Face login, never from the command line"),
           force: bool = typer.Option(False, help="replace an existing, different export at --out"),
           private: bool = typer.Option(False, help="create the Hub repo private"),
           warehouse: Optional[Path] = WarehouseOpt) -> None:
    """Write a release as a Hugging Face dataset folder (Parquet per config + card); optionally push and tag it."""
    from kitab.export import export_release

    summary = export_release(_warehouse(warehouse), release, out, force=force)
    print_rows(["config", "rows"], list(summary["rows"].items()), title=f"release {release} -> {summary['out']}")
    if push:
        from kitab.hub import push_release

        pushed = push_release(Path(summary["out"]), push, release=release, private=private)
        console.print(f"pushed {pushed['repo_url']} at commit {pushed['commit']}, tag {pushed['tag']}")


@app.command()
def report(release: str = typer.Option(..., help="release id"),
           out: Optional[Path] = typer.Option(None, help="also write report.md and plots/ here"),
           warehouse: Optional[Path] = WarehouseOpt) -> None:
    """The release's quality section (the same as the dataset card's), as markdown."""
    from kitab.report import render_report

    print(render_report(_warehouse(warehouse), release, out))  # plain print: rich would eat [..] as markup


@app.command()
def serve(cron: str = typer.Option("0 3 * * 1", help="cron schedule (UTC)"),
          source: str = typer.Option("mirror", help="live | mirror | dump"),
          authors: int = typer.Option(40, min=1),
          mirror_url: Optional[str] = typer.Option(None, help="a running mirror (source mirror)"),
          snapshot: Optional[Path] = typer.Option(None, help="snapshot folder (source dump, or mirror without URL)"),
          warehouse: Optional[Path] = WarehouseOpt) -> None:
    """Serve the scheduled refresh deployment (needs a Prefect server: PREFECT_API_URL)."""
    root = _warehouse(warehouse)
    from prefect import serve as prefect_serve

    from flows.deploy import refresh_deployment

    prefect_serve(refresh_deployment(cron=cron, source=source, authors=authors, mirror_url=mirror_url,
                                     snapshot=str(snapshot) if snapshot else None, warehouse=str(root)))


@mirror_app.command("serve")
def mirror_serve(snapshot: Path = typer.Option(BUNDLED_SNAPSHOT), port: int = typer.Option(8089),
                 host: str = typer.Option("127.0.0.1", help="bind address (0.0.0.0 only inside a container network)"),
                 ol_rate: float = typer.Option(25.0, help="Open Library requests/s per client before 429"),
                 wdqs_rate: Optional[float] = typer.Option(None, help="SPARQL queries/s per client before 429")) -> None:
    """Serve a snapshot on 127.0.0.1 with the real APIs' shapes (Ctrl-C to stop)."""
    from kitab.mirror.server import Mirror

    mirror = Mirror(snapshot, host=host, port=port, ol_rate=ol_rate, wdqs_rate=wdqs_rate)
    console.print(f"kitab mirror of {snapshot} on {mirror.url} (SPARQL: {mirror.url}/sparql)")
    try:
        mirror.serve_forever()
    except KeyboardInterrupt:
        mirror.stop()


@snapshot_app.command("generate")
def snapshot_generate(seed: int = typer.Option(42), authors: int = typer.Option(160, min=1),
                      out: Path = typer.Option(..., help="output folder")) -> None:
    """Generate a snapshot from the real seed rows plus seeded synthetic records."""
    from kitab.snapshot.generate import main

    main(seed, authors, out)


@snapshot_app.command("manifest")
def snapshot_manifest(folder: Path = typer.Argument(..., help="a folder holding the four dump files"),
                      as_of: Optional[str] = typer.Option(None, help="the dumps' date (default: newest file's mtime)")) -> None:
    """Write MANIFEST.json (checksums, snapshot id) for a folder of dump files, e.g. built
    from the real public dumps (docs/snapshot.md)."""
    from kitab.snapshot.manifest import write_manifest

    manifest = write_manifest(folder, as_of)
    console.print(f"snapshot {manifest['snapshot_id']} ({manifest['created_at']}) -> {folder / 'MANIFEST.json'}")


def _stdin_lines() -> list[str]:
    if sys.stdin.isatty():
        raise typer.BadParameter("expected lines on standard input (pipe a file or use <<EOF)")
    return sys.stdin.read().splitlines()


@app.command()
def dedup() -> None:
    """One author's titles on stdin (one per line, optional "(YYYY)") -> clusters as JSON lines."""
    from tasks.dedup_titles import dedup_probe

    for line in dedup_probe(_stdin_lines()):
        print(line)


@app.command()
def tag(titles: Optional[list[str]] = typer.Argument(None, help="titles; none: one per line on stdin")) -> None:
    """Titles -> JSON lines {"title", "human_names", "city_names"} from the human and city taggers."""
    from tasks.tag_entities import tag_probe

    for line in tag_probe(titles or _stdin_lines()):
        print(line)


@app.command()
def constraints(human: bool = typer.Option(False, "--human", help="add human-name constraints (the human tagger)"),
                city: bool = typer.Option(False, "--city", help="add city-name constraints (the city tagger)")) -> None:
    """One author's books on stdin ("Title (YYYY)" per line) -> every candidate constraint as JSON lines."""
    from tasks.constraints import constraints_probe
    from tasks.text import split_title_year

    lines = _stdin_lines()
    found: dict[str, dict[str, bool]] = {}
    if human or city:  # tag every title in one batch (one parse per title), then look up
        from tasks.tag_entities import default_taggers, tag_titles

        taggers = [t for t in default_taggers() if (t.name == "human" and human) or (t.name == "city" and city)]
        titles = sorted({split_title_year(line)[0] for line in lines if line.strip()})
        spans = tag_titles(titles, taggers)
        found = {t.name: {title: bool(spans[t.name][i]) for i, title in enumerate(titles)} for t in taggers}

    for line in constraints_probe(lines, human=found["human"].get if human else None,
                                  city=found["city"].get if city else None):
        print(line)


def _user_error(exc: Exception) -> typer.Exit:
    """A bad input or state the user can fix: one line on stderr, exit status 2."""
    print(f"kitab: error: {exc}", file=sys.stderr)
    return typer.Exit(2)


@app.command()
def evaluate(release: str = typer.Option(..., help="release id whose queries were answered"),
             answers: Path = typer.Option(..., help="JSON lines {query_id, response}, or a CSV with KITAB's "
                                          "columns and the model's text"),
             model: Optional[str] = typer.Option(None, help="the model's name (default: the answers file's name)"),
             response_column: Optional[str] = typer.Option(None, help="CSV: the column with the model's text "
                                                           "(default: the one column that is not KITAB's)"),
             warehouse: Optional[Path] = WarehouseOpt) -> None:
    """Score a model's answers with KITAB's metrics; store them in the table `evaluations`."""
    from kitab.errors import KitabError
    from kitab.evaluation.run import evaluate_release, format_aggregates

    try:
        result = evaluate_release(_warehouse(warehouse), release, answers, model=model,
                                  response_column=response_column)
    except KitabError as exc:
        raise _user_error(exc) from None
    print(f"{result['model']} on release {result['release']}: {result['answered']} of {result['queries']} queries "
          f"answered (answers sha256 {result['answers_sha256'][:16]}…), scores in table evaluations\n")
    print(format_aggregates(result["aggregates"]))


@app.command()
def prompts(release: str = typer.Option(..., help="release id"),
            template: str = typer.Option("no-context", help="no-context | with-context | self-context | cot "
                                         "(the paper's Templates 2a, 2b, 3; cot = 2a)"),
            warehouse: Optional[Path] = WarehouseOpt) -> None:
    """The paper's prompt for every query of a release, as JSON lines {query_id, template, prompt}."""
    from kitab.errors import KitabError
    from kitab.prompts import release_prompts

    try:
        for line in release_prompts(_warehouse(warehouse), release, template):
            print(line)
    except KitabError as exc:
        raise _user_error(exc) from None


def main() -> None:
    app()


if __name__ == "__main__":
    main()
