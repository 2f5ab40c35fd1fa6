"""The committed releases: ``kitab releases``, ``kitab verify``."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from kitab.app.commands.common import WarehouseOpt, existing_warehouse, print_result, user_errors
from kitab.app.console import console, print_table

app = typer.Typer()
RELEASES_OUTPUTS = ("table", "json", "csv")


@app.command()
def releases(
    show: str | None = typer.Option(
        None,
        "--show",
        help="print this release's whole run configuration (its ledger row's config), the releases its sample "
        "excludes, the review labels its books read and what its last --replace changed, as JSON",
    ),
    history: bool = typer.Option(
        False, "--history", help="also list the earlier versions of each release replaced with --replace"
    ),
    output: str = typer.Option(
        "table",
        help="table (two tables: the releases, and time and rows per stage) | json | csv (one row per "
        "release, exact numbers, <stage>_seconds and <stage>_rows columns)",
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """List committed releases with their counts, and each one's time and rows per stage."""
    import json

    from kitab.app.summary import change_text, releases_records, releases_tables
    from kitab.core.warehouse import Warehouse

    if output not in RELEASES_OUTPUTS:
        raise typer.BadParameter(f"expected one of {', '.join(RELEASES_OUTPUTS)}", param_hint="--output")
    wh = Warehouse(existing_warehouse(warehouse, show))
    if show is not None:
        wh.require_release(show)
        row = wh.ledger_row(show)
        config = json.loads(row["config"]) if row.get("config") else None
        recorded = {k: json.loads(row[k]) if row.get(k) else None for k in ("excluded_releases", "review_labels")}
        changes = json.loads(row["changes"]) if row.get("changes") else None
        print(json.dumps({"release": show, "config": config, **recorded, "changes": changes}, indent=2, default=str))
        return
    if history:  # newest first; each replacing version says what it changed of the one before, and why
        for release in wh.committed_releases():
            row = wh.ledger_row(release)
            versions = json.loads(row.get("history") or "[]")
            for n, v in enumerate([row, *reversed(versions)]):
                when = "current" if n == 0 else f"replaced {v['replaced_at']}"
                queries = json.loads(v["checksums"]).get("queries", "")[:16]
                created = v["created_at"].isoformat() if hasattr(v["created_at"], "isoformat") else v["created_at"]
                line = f"{release}\t{when}\tcreated {created}\tqueries {queries}"
                changes = json.loads(v["changes"]) if v.get("changes") else None
                print(line + (f"\tchanged: {change_text(changes)}" if changes else ""))
        return
    with wh.connect() as con:
        ledger = con.sql("SELECT * FROM releases ORDER BY created_at, release").to_arrow_table().to_pylist()
        # the share of made-up authors per release (sql/staging/synthetic_ids.sql)
        synthetic = dict(
            con.sql(
                "SELECT r.release, count(a.qid) FILTER (WHERE kitab_synthetic_id(a.qid, r.source)) FROM releases r "
                "LEFT JOIN released_authors a ON a.release = r.release GROUP BY r.release"
            ).fetchall()
        )
    ledger = [{**row, "synthetic_authors": synthetic.get(row["release"], 0)} for row in ledger]
    if output != "table":
        print_result(*releases_records(ledger), output)
        return
    for table in releases_tables(ledger):
        print_table(table)


@app.command()
def verify(
    release: str | None = typer.Option(None, help="check only this release"),
    seal: bool = typer.Option(
        False,
        "--seal",
        help="write the digests of ledger rows from before rows carried them (unsealed), once every file "
        "they name matches its checksum and row count",
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Check each ledger row against its digests (a row edited since its commit fails, naming
    the field), recompute the sha256 of every committed table file and compare it with the
    ledger (releases.checksums, releases.counts); exit 1 if a row was edited or is unsealed,
    or any file differs or is missing."""
    from kitab.core.ledger import SEAL_HINT, UNSEALED, row_check
    from kitab.core.warehouse import Warehouse

    wh = Warehouse(existing_warehouse(warehouse, release))
    if seal:
        from kitab.core.release_commit import seal_rows

        with user_errors():
            sealed = seal_rows(wh, None if release is None else [release])
        console.print(f"sealed the ledger row(s) of {', '.join(sealed)}" if sealed else "no unsealed ledger row")
    checks = wh.check_files(None if release is None else [release])
    bad = [c for c in checks if c.problem]
    if not bad and not wh.catalog_path.exists():  # views come from the ledger: the catalog can be rebuilt
        wh.build_catalog()
        console.print(f"rebuilt {wh.catalog_path.name} from the ledger")
    if bad:  # plain lines, not a table: each names its file in full, whatever the terminal width
        for c in bad:
            print(f"{c.release}\t{c.table}\t{c.path.relative_to(wh.root)}\t{c.problem}")
        said = f"{len(bad)} of {len(checks)} committed files do not match the ledger"
        rows = [c for c in bad if row_check(c)]
        if rows:  # the row that says what a release is: named first, with the field that changed
            hint = SEAL_HINT if rows[0].problem == UNSEALED else "nothing is published from it"
            said = f"the ledger row of release {rows[0].release} {rows[0].problem}; {hint}"
            said += f" ({len(bad) - 1} more problem(s) above)" if len(bad) > 1 else ""
        print(f"kitab verify: {said}", file=sys.stderr)
        raise typer.Exit(1)
    releases = len({c.release for c in checks})
    console.print(f"{len(checks)} committed files of {releases} release(s) match the ledger")
