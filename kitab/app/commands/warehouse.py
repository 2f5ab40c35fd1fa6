"""Reading the warehouse: ``kitab sql``, ``kitab describe``, ``kitab test``."""

from __future__ import annotations

from pathlib import Path

import typer

from kitab.app.commands.common import (
    WarehouseOpt,
    check_output,
    existing_warehouse,
    own_process,
    print_result,
    user_errors,
    warn,
)

app = typer.Typer()


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
    from kitab.app import sql_sandbox
    from kitab.app.memory_bound import check_memory_limit, limit_memory
    from kitab.core.ledger import describe_problems
    from kitab.core.warehouse import Warehouse

    check_output(output)
    wh = Warehouse(existing_warehouse(warehouse, release))
    with user_errors():
        extra = dict(sql_sandbox.user_file(spec) for spec in files or [])
        check_memory_limit(memory_limit)  # too small for DuckDB's threads: one line, before it connects
        if own_process():  # the process limit only for the `kitab` command, never a host process (tests)
            limit_memory(memory_limit)
        with sql_sandbox.connect(wh, extra, release=release, memory_limit=memory_limit) as con:
            columns, rows = sql_sandbox.bounded_query(con, query, timeout)
            if con.problems:  # after the answer: a failed read says it in its one error line
                warn(describe_problems(con.problems))
    print_result(columns, rows, output)


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

    check_output(output)
    wh = Warehouse(existing_warehouse(warehouse, release))
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
    from kitab.core.views import data_test_results
    from kitab.core.warehouse import Warehouse

    wh = Warehouse(existing_warehouse(warehouse, release))
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
