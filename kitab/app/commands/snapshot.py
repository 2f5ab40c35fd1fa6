"""The inputs: ``kitab mirror serve`` (a snapshot behind the real APIs' shapes) and
``kitab snapshot generate | from-dumps | manifest`` (snapshots in the services' own formats)."""

from __future__ import annotations

from pathlib import Path

import typer

from kitab.app.console import console
from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.errors import KitabError

app = typer.Typer()
mirror_app = typer.Typer(help="The local mirror of WikiData and Open Library.", no_args_is_help=True)
snapshot_app = typer.Typer(help="Snapshots in the services' own formats.", no_args_is_help=True)
app.add_typer(mirror_app, name="mirror")
app.add_typer(snapshot_app, name="snapshot")


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
    import tempfile

    from kitab.core.files import swap_dir
    from kitab.core.outputs import check_folder, write_manifest
    from kitab.simulate.generator.generate import main

    if format not in ("snapshot", "published"):
        raise KitabError(f"--format {format!r}: expected snapshot or published")
    command = f"kitab snapshot generate --format {format}"
    # the output-path rule (kitab/core/outputs.py): new, empty, or an earlier output it lists whole
    out = check_folder(out, "--out", command).path
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as tmp:
        built = Path(tmp) / "out"
        if format == "snapshot":
            main(seed, authors, built, shown=out)
        else:
            from kitab.simulate.generator.generate import generate_snapshot
            from kitab.simulate.generator.published import write_published

            generate_snapshot(Path(tmp) / "world", seed, authors)
            counts = write_published(Path(tmp) / "world", built, seed=seed, truthy=truthy)
        write_manifest(built, command)
        swap_dir(built, out)
    if format == "snapshot":
        return
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
    overwrite: bool = typer.Option(False, help="replace OUT if it holds an earlier snapshot of from-dumps (only then)"),
) -> None:
    """Build a snapshot from the public WikiData and Open Library dumps (docs/dumps.md).

    One streaming pass per file, filtered before any join; a killed run resumes from its last
    finished chunk (OUT.parts/)."""
    from kitab.sources.from_dumps.build import Settings, from_dumps

    settings = Settings(
        workers=workers,
        memory_limit=memory_limit,
        chunk_bytes=chunk_mb << 20,
        max_record=max_record_mb << 20,
        as_of=as_of,
        keep_parts=keep_parts,
    )
    manifest = from_dumps(
        wikidata,
        openlibrary,
        out,
        settings,
        progress=lambda text: console.print(text, markup=False),
        overwrite=overwrite,
    )
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
    from kitab.core.outputs import check_file
    from kitab.sources.snapshot.manifest import write_manifest

    check_file(folder / "MANIFEST.json", "FOLDER")  # the output-path rule: never into a warehouse
    manifest = write_manifest(folder, as_of)
    console.print(f"snapshot {manifest['snapshot_id']} ({manifest['created_at']}) -> {folder / 'MANIFEST.json'}")
