"""Printing results for people: one table style for every command.

A table is printed as a table when it fits the console's width (the terminal's; 80 columns, or
$COLUMNS, when stdout is a pipe or a file). When it does not, rich would squeeze its columns
into cells such as "s…"; it is printed instead as one block per row, one "column: value" line
per column, blocks separated by a blank line (as psql's expanded display), so that every value
is shown whole. Programs read ``--output json|jsonl|csv`` instead.
"""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

console = Console()


def print_json(data) -> None:
    """``data`` as indented JSON on stdout: highlighted on a terminal; elsewhere the same text
    written as is (rich's layout of a large summary cost 1.5 s at 10,000 authors for no change)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    if console.is_terminal:
        console.print_json(text)
    else:
        sys.stdout.write(text + "\n")


def print_rows(columns: list[str], rows: list[tuple], title: str | None = None) -> None:
    table = Table(*columns, title=title)
    for row in rows:
        table.add_row(*["NULL" if v is None else str(v) for v in row])
    print_table(table)


def _longest_words(table: Table) -> list[int]:
    """Per column: its longest word (its longest line if it does not wrap), header included."""
    out = []
    for column in table.columns:
        lines = [line for cell in (column.header, *column.cells) for line in _lines(cell)]
        out.append(max((len(x) for line in lines for x in ([line] if column.no_wrap else line.split())), default=0))
    return out


def fits(table: Table, width: int | None = None) -> bool:
    """Whether ``table`` prints at ``width`` (the console's) with every cell whole: each column
    as wide as its longest word, plus padding and rules. (rich's own measure is not this: it
    goes down to one character and "…" per column.)"""
    width = console.width if width is None else width
    left, right = table.padding[3], table.padding[1]
    n = len(table.columns)
    needed = (n - 1 + (2 if table.show_edge else 0)) if table.box else 0  # the box's vertical rules
    for i, longest in enumerate(_longest_words(table)):
        pad_left = left if i or table.pad_edge else 0
        pad_right = right if i < n - 1 or table.pad_edge else 0
        if table.collapse_padding and i:  # one gap of the wider padding between two columns
            pad_left = max(0, pad_left - right)
        needed += longest + pad_left + pad_right
    return needed <= width


def _lines(cell) -> list[str]:
    text = cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain
    return text.splitlines()


def _plain(cell) -> str:
    """A cell or header as plain text: markup dropped, its lines joined by " / "."""
    return " / ".join(line.strip() for line in _lines(cell))


def records(table: Table) -> list[list[tuple[str, str]]]:
    """``table``'s rows as (header, value) pairs, values as plain text."""
    headers = [_plain(column.header) for column in table.columns]
    cells = [list(column.cells) for column in table.columns]
    return [[(h, _plain(c[i])) for h, c in zip(headers, cells)] for i in range(table.row_count)]


def print_table(table: Table) -> None:
    """``table`` as a table when it fits the console, else one "column: value" block per row."""
    if fits(table):
        # rich shares the width out by its own measure and may still give a column less than
        # its longest word: that word folds onto the next line instead of ending in "…"
        for column in table.columns:
            column.overflow = "fold"
        console.print(table)
        return
    if table.title:
        print(f"{_plain(table.title)}:")
    width = max((len(_plain(column.header)) for column in table.columns), default=0)
    for n, record in enumerate(records(table)):
        if n or table.title:
            print()
        for header, value in record:
            print(f"{header + ':':<{width + 1}} {value}")
