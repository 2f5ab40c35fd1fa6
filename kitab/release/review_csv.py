"""The review CSV's two guarantees (issue 39, item 4): what ``kitab review export`` writes is safe
to open in a spreadsheet, and what ``kitab review import`` reads is the file as written, or a
one-line refusal naming the line.

- Formula-leading cells are neutralised (OWASP, CSV injection): a cell that starts with ``=``,
  ``+``, ``-``, ``@``, a tab or a carriage return gets a leading apostrophe, so a spreadsheet
  shows it as text instead of running it. A cell that starts with an apostrophe gets one too,
  so the import can undo exactly that: it drops one leading apostrophe from every cell, and a
  title that really starts with "=", "-" or "'" comes back as it was (:func:`neutralise` /
  :func:`restore` are inverse on every string). A cell a spreadsheet saved without the
  apostrophe (retyped) is read as it stands.
- The import parses strictly: an unterminated quote (which a lenient parser lets swallow the
  rest of the file), a stray quote, a cell over :data:`CELL_CAP` characters, or a row with more
  or fewer cells than the header is refused with the line where its record starts.

Pure functions over text; the files are read and written by kitab/release/review.py.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence

from kitab.core.errors import BadValue

FORMULA_LEAD = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may read as a formula (OWASP)
ESCAPE = "'"
CELL_CAP = 10_000  # characters: a title, a name or an evidence string is far shorter


def neutralise(cell: str) -> str:
    """``cell`` as the CSV holds it: an apostrophe before a formula-leading (or apostrophe-leading) cell."""
    return ESCAPE + cell if cell[:1] in (*FORMULA_LEAD, ESCAPE) else cell


def restore(cell: str) -> str:
    """The inverse of :func:`neutralise`: one leading apostrophe dropped."""
    return cell[1:] if cell[:1] == ESCAPE else cell


def csv_bytes(rows: Sequence[dict], fields: Sequence[str]) -> bytes:
    """The review CSV: UTF-8 with a BOM, CRLF (what a spreadsheet opens as such), every cell
    neutralised."""
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow([neutralise(f) for f in fields])
    for r in rows:
        writer.writerow([neutralise(str(r.get(f, "") or "")) for f in fields])
    return buf.getvalue().encode("utf-8-sig")


def csv_records(text: str, name: str) -> Iterator[tuple[int, dict]]:
    """(line, row) per non-empty record of ``text`` (the BOM dropped), each cell restored;
    ``line`` is where the record starts (the header is line 1). The first item is (1, header)
    with the header's names as keys and values. Malformed input -> BadValue naming the line."""
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    header: list[str] | None = None
    while True:
        line = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise BadValue(_malformed(name, line, str(exc))) from None
        if not cells or (header is not None and not any(cells)):
            continue  # a blank line, or a row a spreadsheet left with empty cells
        long = next((c for c in cells if len(c) > CELL_CAP), None)
        if long is not None:
            raise BadValue(
                f"{name} line {line}: a cell of {len(long):,} characters (a review file's cells hold "
                f"at most {CELL_CAP:,}): export the file again with `kitab review export`"
            )
        cells = [restore(c) for c in cells]
        if header is None:
            header = [c.strip() for c in cells]
            yield line, dict(zip(header, header))
            continue
        if len(cells) > len(header) and not any(cells[len(header) :]):
            cells = cells[: len(header)]  # empty cells a spreadsheet added after the last column
        if len(cells) != len(header):
            raise BadValue(
                f"{name} line {line}: {len(cells)} cells where the header has {len(header)} "
                "(a comma in a cell that is not quoted?)"
            )
        yield line, dict(zip(header, cells))


def _malformed(name: str, line: int, why: str) -> str:
    if "end of data" in why:
        return f"{name} line {line}: a quote opened here is never closed (it would take in the rest of the file)"
    if "field limit" in why:
        return f"{name} line {line}: a cell over {CELL_CAP:,} characters (a review file's cells hold at most that)"
    return f"{name} line {line}: not valid CSV ({why})"
