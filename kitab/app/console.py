"""Printing results for people: one table style for every command."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

console = Console()


def print_rows(columns: list[str], rows: list[tuple], title: str | None = None) -> None:
    table = Table(*columns, title=title)
    for row in rows:
        table.add_row(*["NULL" if v is None else str(v) for v in row])
    console.print(table)
