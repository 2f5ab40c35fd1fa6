"""The SQL the dump source writes, as templates: literals, the readers of the snapshot's
gzip files (DuckDB's ``read_csv``, never a Python loop over the big files), and the
expressions of Open Library's key and field rules. ``{0}`` in a template is the column."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

MAX_LINE_BYTES = 8 << 20  # the longest Open Library records are a few MB of JSON
CSV_OPTIONS = (
    f"quote='', escape='', header=false, auto_detect=false, compression='gzip', "
    f"max_line_size={MAX_LINE_BYTES}, buffer_size={2 * MAX_LINE_BYTES}"
)


def sql_string(value: str) -> str:
    """A SQL string literal (DuckDB's only escape is the doubled quote)."""
    if "\x00" in value:
        raise ValueError("NUL in a SQL string")
    return "'" + value.replace("'", "''") + "'"


def sql_list(values: Iterable[str]) -> str:
    """``('a', 'b')`` for ``IN``."""
    return "(" + ", ".join(map(sql_string, values)) + ")"


def read_lines(path: Path) -> str:
    """Each line of a gzip text file as one VARCHAR column ``line`` (NUL never occurs in N-Triples)."""
    return f"read_csv({sql_string(str(path))}, columns={{'line': 'VARCHAR'}}, delim='\\0', {CSV_OPTIONS})"


def read_ol(path: Path) -> str:
    """An Open Library dump: five tab-separated fields a line; a line with more or fewer is an error."""
    return (
        f"read_csv({sql_string(str(path))}, columns={{'type': 'VARCHAR', 'key': 'VARCHAR', "
        f"'revision': 'BIGINT', 'last_modified': 'VARCHAR', 'json': 'VARCHAR'}}, delim='\\t', {CSV_OPTIONS})"
    )


def check_record(path: Path) -> str:
    """SQL raising an error for a line whose JSON is not an object keyed like the line
    (``iter_ol_dump``'s rules; malformed JSON already fails in ``json_extract``)."""
    return (
        f"CASE WHEN NOT regexp_matches(json, '^\\s*\\{{') "
        f"OR NOT coalesce(j[1] IS NULL OR json_extract_string(j[1], '$') = key, false) "
        f"THEN error({sql_string('JSON record is not an object with key ')} || key) END"
    )


KEY_NUMBER = "coalesce(TRY_CAST(regexp_extract({0}, 'OL([0-9]+)[AWM]$', 1) AS BIGINT), -1)"
BARE = "regexp_extract({0}, '[^/]*$')"  # key.rsplit("/", 1)[-1]
JSON_STRING = "CASE WHEN json_type({0}) = 'VARCHAR' THEN json_extract_string({0}, '$') END"
# year_of(): the first run of exactly four digits (Python's \d is any Unicode digit; RE2's \p{Nd} too).
YEAR_OF = "(CASE WHEN regexp_full_match(y4, '[0-9]{{4}}') THEN y4::BIGINT WHEN y4 <> '' THEN py_int(y4) END)".replace(
    "y4", r"regexp_extract({0}, '(?:^|\P{{Nd}})(\p{{Nd}}{{4}})(?:\P{{Nd}}|$)', 1)"
)


def digits_value(digits: str) -> int:
    """int() of Unicode decimal digits ("١٩٨٧" -> 1987), for the rare non-ASCII year (YEAR_OF's ``py_int``)."""
    return int(digits)
