"""``--source dump`` at dump scale: the snapshot scanned once by DuckDB into sorted Parquet, then
answered by SQL.

:class:`DumpStore` streams the four snapshot files through DuckDB (``read_csv`` over the gzip,
never a Python loop over the big files) and keeps only what the pipeline reads: seven WikiData
predicates, Open Library author records, per-author work search docs and name tokens. The
tables are written as Parquet sorted by their lookup key, into a temp dir that is renamed into
``cache_root/<snapshot_id>`` when complete. The tables a batch looks rows up in (authors, their
works and name tokens, work labels) also get a memory-mapped Arrow copy and a key index
(:class:`KeyedTable`), so a batch's lookups cost its keys, not the table.
Memory stays bounded: DuckDB runs under ``memory_limit`` and spills to a temp directory.

:class:`DumpWikidata` and :class:`DumpOpenLibrary` answer from those tables with the very answers
of the in-memory reference (pyoxigraph over the N-Triples for the two SPARQL queries of
``sql/sparql/``, :class:`kitab.sources.snapshot.olindex.OLIndex` for Open Library), the same
fingerprints and the same ``fetched_at``. Batch prefetch (``prefetch_authors``,
``prefetch_works``) turns the per-author calls of a batch into a few set-based queries.

Semantics that are easy to get wrong, and are reproduced on purpose:

* SPARQL: an author's birth dates are compared as ``xsd:dateTime`` values with time zones (a
  value without a zone is only "in" a window if it is more than 14 hours inside it); a P569
  whose ``YEAR()`` is an error (a plain string, an invalid date, an IRI) makes the author's
  ``MIN(YEAR(?birth))`` an error, so the author is dropped; ``xsd:integer`` values come back in
  canonical form (``"07"`` -> ``"7"``); language tags are lower case.
* Open Library: a work's ``edition_count`` counts every edition reference (an edition listing a
  work twice counts twice), an author's ``work_count`` counts every author reference (a work
  listing the author twice counts twice) while ``/search.json?author_key=`` lists the work once;
  names are resolved through at most 4 redirects; ``year_of`` takes the first run of exactly four
  Unicode digits.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from kitab.core.config import Settings
from kitab.core.errors import KitabError
from kitab.sources.http import Fetched, RequestCounter, fingerprint
from kitab.sources.openlibrary import MAX_REDIRECTS, _Shared, bare_key
from kitab.sources.queries import SQL_DIR, sparql, sparql_string
from kitab.sources.snapshot.format import (
    DATA_FILES,
    OL_AUTHOR,
    OL_AUTHORS_FILE,
    OL_EDITIONS_FILE,
    OL_REDIRECT,
    OL_WORK,
    OL_WORKS_FILE,
    RDFS_LABEL,
    WD,
    WDT,
    WIKIBASE_SITELINKS,
    WIKIDATA_FILE,
    XSD_DATETIME,
    XSD_INTEGER,
    SnapshotFormatError,
    read_manifest,
)
from kitab.sources.snapshot.olindex import SEARCH_DOCUMENTATION_URL, _project, tokens

log = logging.getLogger(__name__)

CACHE_VERSION = 3  # bump when a table changes: an older cache is then rebuilt, never misread
# 2: wd_work_labels, the labelled works with their P50 authors joined once at scan time
# 3: the looked-up tables also as <table>.arrow + <table>.index.npy (lookups by key, see KeyedTable)
READY_FILE = "READY.json"  # written last; a cache folder without it is not a cache
TABLES = ("wd_triples", "wd_labels", "wd_work_labels", "wd_births", "authors", "author_works", "author_tokens")
# The tables a batch looks rows up in, by their key column: each is sorted by that key.
KEYED = {"authors": "key", "author_works": "author_key", "author_tokens": "token", "wd_work_labels": "label"}
KEYED_BATCH_ROWS = 65536  # rows per record batch of a <table>.arrow file
SEARCH_AUTHORS_LIMIT = 100  # OLIndex.search_authors' default, what DumpOpenLibrary asks for
MAX_LINE_BYTES = 8 << 20  # the longest Open Library records are a few MB of JSON
CSV_OPTIONS = (
    f"quote='', escape='', header=false, auto_detect=false, compression='gzip', "
    f"max_line_size={MAX_LINE_BYTES}, buffer_size={2 * MAX_LINE_BYTES}"
)
ROW_GROUP_ROWS = 10240  # small row groups: a filter on the sort key decodes little beyond its rows

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
XSD_DATETIME_STAMP = XSD + "dateTimeStamp"
XSD_DATE, XSD_GYEAR, XSD_GYEARMONTH = XSD + "date", XSD + "gYear", XSD + "gYearMonth"
Q5 = WD + "Q5"

# The predicates kept from wikidata.nt.gz, by the short name the tables use.
PREDICATES = {
    WDT + "P31": "P31",
    WDT + "P106": "P106",
    WDT + "P569": "P569",
    WDT + "P648": "P648",
    WDT + "P50": "P50",
    RDFS_LABEL: "label",
    WIKIBASE_SITELINKS: "sitelinks",
}


# --- N-Triples ----------------------------------------------------------------------------
# One regular expression (RE2, run by DuckDB) checks a whole line and splits it into terms.

_HEX4, _HEX8 = "[0-9A-Fa-f]{4}", "[0-9A-Fa-f]{8}"
_IRI = rf'<(?:[^\x00-\x20<>"{{}}|^`\\]|\\u{_HEX4}|\\U{_HEX8})*>'
_PN = r"A-Za-z0-9_\x{80}-\x{10FFFF}"
_BNODE = rf"_:[{_PN}](?:[{_PN}.\-]*[{_PN}\-])?"
_LITERAL = (
    rf'"(?:[^"\\\n\r]|\\[tbnrf"\'\\]|\\u{_HEX4}|\\U{_HEX8})*"'
    rf"(?:@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*|\^\^{_IRI})?"
)
NT_LINE = (
    rf"^[ \t]*({_IRI}|{_BNODE})[ \t]+({_IRI})[ \t]+({_IRI}|{_BNODE}|{_LITERAL})"
    r"[ \t]*\.[ \t]*(?:#.*)?$"
)
NT_BLANK = r"[ \t]*(?:#.*)?"
NT_LITERAL_PARTS = r'^"(.*)"(?:@([^"]*)|\^\^<([^"]*)>)?$'

_NT_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def nt_unescape(text: str) -> str:
    """Undo N-Triples escapes (``\\"``, ``\\\\``, ``\\n``, ``\\uXXXX``, ``\\UXXXXXXXX``...)."""

    def one(match: re.Match) -> str:
        code = match.group(1) or match.group(2)
        if code:
            value = int(code, 16)
            if 0xD800 <= value <= 0xDFFF or value > 0x10FFFF:
                raise ValueError(f"\\u escape of a surrogate or beyond Unicode: {match.group(0)}")
            return chr(value)
        if match.group(3) not in _ECHAR:
            raise ValueError(f"unknown escape {match.group(0)!r}")
        return _ECHAR[match.group(3)]

    return _NT_ESCAPE.sub(one, text)


# --- xsd:dateTime, as pyoxigraph compares it -----------------------------------------------

_TZ = r"(Z|[+-]\d\d:\d\d)?"
_LEXICAL = {
    XSD_DATETIME: re.compile(rf"(-?\d{{4,}})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?{_TZ}", re.A),
    XSD_DATE: re.compile(rf"(-?\d{{4,}})-(\d\d)-(\d\d){_TZ}", re.A),
    XSD_GYEARMONTH: re.compile(rf"(-?\d{{4,}})-(\d\d){_TZ}", re.A),
    XSD_GYEAR: re.compile(rf"(-?\d{{4,}}){_TZ}", re.A),
}
_LEXICAL[XSD_DATETIME_STAMP] = _LEXICAL[XSD_DATETIME]  # pyoxigraph reads it as a dateTime, zone or not


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar, any year (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def _days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28
    return 30 if m in (4, 6, 9, 11) else 31


def _valid_year(text: str) -> int | None:
    digits = text.lstrip("-")
    return None if len(digits) > 4 and digits[0] == "0" else int(text)


def _tz_minutes(tz: str | None) -> int | None:
    """Offset in minutes, None for no zone; ValueError for an out-of-range zone."""
    if tz is None:
        return None
    if tz == "Z":
        return 0
    hours, minutes = int(tz[1:3]), int(tz[4:6])
    if minutes > 59 or hours * 60 + minutes > 14 * 60:
        raise ValueError(tz)
    return (hours * 60 + minutes) * (-1 if tz[0] == "-" else 1)


def xsd_year_bounds(datatype: str | None, lexical: str | None) -> list[int | None]:
    """``[year, cmp_lo, cmp_hi]`` of a P569 literal, as pyoxigraph evaluates the sampling query.

    ``year`` is ``YEAR(?birth)`` (None = an error, which makes the author's MIN an error).
    The value is ``>= "Y-01-01T00:00:00Z"^^xsd:dateTime`` for sure exactly when ``Y <= cmp_lo``
    and ``< "T-01-01T00:00:00Z"`` for sure exactly when ``cmp_hi < T`` (None = never: not a
    dateTime). A dateTime without a time zone may lie 14 hours either way of UTC, so it is only
    surely on one side of a bound more than 14 hours away (else the comparison is an error).
    """
    none = [None, None, None]
    pattern = _LEXICAL.get(datatype or "")
    match = pattern.fullmatch(lexical) if pattern and lexical is not None else None
    if not match:
        return none
    groups = match.groups()
    try:
        year = _valid_year(groups[0])
        zone = _tz_minutes(groups[-1])
    except ValueError:
        return none
    if year is None:
        return none
    if datatype not in (XSD_DATETIME, XSD_DATETIME_STAMP):
        month = int(groups[1]) if len(groups) > 2 else 1
        day = int(groups[2]) if len(groups) > 3 else 1
        valid = 1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)
        return [year, None, None] if valid else none  # YEAR() works, comparing with a dateTime does not
    month, day, hour, minute, second = map(int, groups[1:6])
    fraction = groups[6]
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month) and minute <= 59 and second <= 59):
        return none
    if hour > 23 and not (hour == 24 and minute == 0 and second == 0 and not (fraction or "").strip(".0")):
        return none
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second  # 24:00 rolls over
    local_year = _civil_from_days(seconds // 86400)[0]
    exact = not (fraction or "").strip(".0")

    def year_of_instant(instant: int) -> tuple[int, bool]:
        """The instant's year, and whether it is exactly that year's first moment."""
        y, m, d = _civil_from_days(instant // 86400)
        return y, (m, d, instant % 86400) == (1, 1, 0) and exact

    if zone is not None:
        utc_year = year_of_instant(seconds - zone * 60)[0]
        return [local_year, utc_year, utc_year]
    earliest_year, at_start = year_of_instant(seconds - 14 * 3600)
    latest_year = year_of_instant(seconds + 14 * 3600)[0]
    return [local_year, earliest_year - 1 if at_start else earliest_year, latest_year]


def _digits_value(digits: str) -> int:
    """int() of Unicode decimal digits ("١٩٨٧" -> 1987), for the rare non-ASCII year."""
    return int(digits)


def occupations(query_text: str) -> list[str]:
    """The occupation IRIs of ``VALUES ?occupation { ... }`` in candidate_authors.rq (one list, not two)."""
    block = re.search(r"VALUES\s+\?occupation\s*\{([^}]*)\}", query_text)
    if not block:
        raise ValueError("candidate_authors.rq has no VALUES ?occupation { ... } block")
    body = re.sub(r"#[^\n]*", "", block.group(1))
    found = [WD + q for q in re.findall(r"\bwd:(Q\d+)\b", body)] + re.findall(r"<([^>]+)>", body)
    if not found:
        raise ValueError("candidate_authors.rq: VALUES ?occupation is empty")
    return found


# --- SQL helpers --------------------------------------------------------------------------


def sql_string(value: str) -> str:
    """A SQL string literal (DuckDB's only escape is the doubled quote)."""
    if "\x00" in value:
        raise ValueError("NUL in a SQL string")
    return "'" + value.replace("'", "''") + "'"


def sql_list(values: Iterable[str]) -> str:
    """``('a', 'b')`` for ``IN``."""
    return "(" + ", ".join(map(sql_string, values)) + ")"


def _read_lines(path: Path) -> str:
    """Each line of a gzip text file as one VARCHAR column ``line`` (NUL never occurs in N-Triples)."""
    return f"read_csv({sql_string(str(path))}, columns={{'line': 'VARCHAR'}}, delim='\\0', {CSV_OPTIONS})"


def _read_ol(path: Path) -> str:
    """An Open Library dump: five tab-separated fields a line; a line with more or fewer is an error."""
    return (
        f"read_csv({sql_string(str(path))}, columns={{'type': 'VARCHAR', 'key': 'VARCHAR', "
        f"'revision': 'BIGINT', 'last_modified': 'VARCHAR', 'json': 'VARCHAR'}}, delim='\\t', {CSV_OPTIONS})"
    )


def _check_record(path: Path) -> str:
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


# --- the scan -----------------------------------------------------------------------------


def _scan_connection(folder: Path, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """A scratch database in the temp folder: tables past memory_limit spill to disk there."""
    con = duckdb.connect(str(folder / "scan.duckdb"))
    con.execute(f"SET memory_limit = {sql_string(memory_limit)}")
    con.execute(f"SET temp_directory = {sql_string(str(folder / 'spill'))}")
    con.execute("SET preserve_insertion_order = false")  # COPY ... ORDER BY still writes in order
    con.create_function("nt_unescape", nt_unescape, ["VARCHAR"], "VARCHAR")
    con.create_function("xsd_year_bounds", xsd_year_bounds, ["VARCHAR", "VARCHAR"], "BIGINT[]")
    con.create_function("py_int", _digits_value, ["VARCHAR"], "BIGINT")
    return con


def _copy(con: duckdb.DuckDBPyConnection, select: str, target: Path) -> None:
    con.execute(
        f"COPY ({select}) TO {sql_string(str(target))} "
        f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"
    )


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Any failure while DuckDB reads ``path`` becomes a SnapshotFormatError naming it."""
    if not path.is_file():
        raise SnapshotFormatError(f"{path}: missing; is {path.parent} a snapshot folder?")
    try:
        yield
    except SnapshotFormatError:
        raise
    except (duckdb.Error, ValueError, OSError) as exc:
        message = str(exc).replace("\n", " ")
        if "No space left on device" in message or getattr(exc, "errno", None) == errno.ENOSPC:
            # the machine's problem, not the snapshot's: say which
            raise KitabError(f"no space left on the device while reading {path.name}: {message[:300]}") from None
        raise SnapshotFormatError(f"{path}: {message[:600]}") from None


def _unescape(term: str) -> str:
    return f"CASE WHEN contains({term}, '\\') THEN nt_unescape({term}) ELSE {term} END"


def _scan_wikidata(con: duckdb.DuckDBPyConnection, path: Path, out: Path) -> None:
    """wikidata.nt.gz -> wd_triples (p, s, o, kinds) sorted by p, s; wd_labels (@en) sorted by label;
    wd_births (YEAR and comparison bounds of each P569) sorted by s. Every line is checked."""
    predicates = " ".join(
        f"WHEN {sql_string('<' + iri + '>')} THEN {sql_string(name)}" for iri, name in PREDICATES.items()
    )
    with _reading(path):
        con.execute(f"""
            CREATE TABLE kept AS
            WITH terms AS (
                SELECT line, regexp_extract(line, {sql_string(NT_LINE)}, ['s', 'p', 'o']) AS t
                FROM {_read_lines(path)}
                WHERE line IS NOT NULL AND NOT regexp_full_match(line, {sql_string(NT_BLANK)})
            ), checked AS (
                SELECT CASE WHEN t.s = '' THEN error({sql_string("not an N-Triples line: ")} || left(line, 300))
                            ELSE t END AS t
                FROM terms
            ), named AS (
                SELECT t.s AS s_term, t.o AS o_term,
                       CASE t.p {predicates} ELSE CASE WHEN contains(t.p, '\\')
                            THEN CASE nt_unescape(t.p) {predicates} END END END AS p
                FROM checked
            ), split AS (
                SELECT p, s_term, o_term,
                       CASE left(o_term, 1) WHEN '<' THEN 'uri' WHEN '_' THEN 'bnode' ELSE 'literal' END AS o_kind,
                       regexp_extract(o_term, {sql_string(NT_LITERAL_PARTS)}, ['v', 'lang', 'dt']) AS lit
                FROM named WHERE p IS NOT NULL
            ), terms_out AS (
                SELECT p,
                       CASE WHEN left(s_term, 1) = '<' THEN {_unescape("s_term[2:-2]")} ELSE s_term END AS s,
                       o_kind,
                       CASE o_kind WHEN 'uri' THEN {_unescape("o_term[2:-2]")} WHEN 'bnode' THEN o_term
                            ELSE {_unescape("lit.v")} END AS o,
                       CASE WHEN o_kind = 'literal' THEN nullif(lower(lit.lang), '') END AS o_lang,
                       CASE WHEN o_kind = 'literal' THEN nullif(nullif({_unescape("lit.dt")}, ''),
                                                               {sql_string(XSD_STRING)}) END AS o_dt
                FROM split
            )
            SELECT DISTINCT p, s, o_kind,
                   -- pyoxigraph stores xsd:integer in canonical form ("07" -> "7")
                   CASE WHEN o_dt = {sql_string(XSD_INTEGER)} AND regexp_full_match(o, '[+-]?[0-9]{{1,18}}')
                        THEN o::BIGINT::VARCHAR ELSE o END AS o,
                   o_lang, o_dt
            FROM terms_out
        """)
    _copy(
        con,
        "SELECT p, s, o, o_kind, o_lang, o_dt FROM kept WHERE p <> 'label' ORDER BY p, s, o",
        out / "wd_triples.parquet",
    )
    _copy(
        con,
        "SELECT DISTINCT o AS label, s FROM kept WHERE p = 'label' AND o_kind = 'literal' AND o_lang = 'en' "
        "ORDER BY label, s",
        out / "wd_labels.parquet",
    )
    # works_by_titles' join, once: a lookup per batch then reads one table instead of joining
    # the labels with every P50 triple again (seconds per call at 100,000 writers)
    _copy(
        con,
        "SELECT DISTINCT l.o AS label, l.s, t.o, t.o_kind FROM kept l JOIN kept t ON t.p = 'P50' AND t.s = l.s "
        "WHERE l.p = 'label' AND l.o_kind = 'literal' AND l.o_lang = 'en' ORDER BY label, l.s, t.o",
        out / "wd_work_labels.parquet",
    )
    # The common WikiData form (day precision or better, UTC midnight) in SQL; the rest in Python.
    fast = (
        f"o_kind = 'literal' AND o_dt = {sql_string(XSD_DATETIME)} "
        r"AND regexp_full_match(o, '[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T00:00:00Z') "
        "AND try_strptime(left(o, 10), '%Y-%m-%d') IS NOT NULL"
    )
    _copy(
        con,
        f"""
        SELECT s, b[1] AS year, b[2] AS cmp_lo, b[3] AS cmp_hi FROM (
            SELECT s, CASE WHEN {fast} THEN [left(o, 4)::BIGINT, left(o, 4)::BIGINT, left(o, 4)::BIGINT]
                           WHEN o_kind = 'literal' THEN xsd_year_bounds(o_dt, o)
                           ELSE [NULL, NULL, NULL]::BIGINT[] END AS b
            FROM kept WHERE p = 'P569')
        ORDER BY s""",
        out / "wd_births.parquet",
    )
    con.execute("DROP TABLE kept")


def _scan_authors(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """ol_authors: one row per key (the highest revision), with the fields search and redirects need."""
    with _reading(path):
        con.execute(f"""
            CREATE TABLE ol_authors AS
            SELECT key, {KEY_NUMBER.format("key")} AS key_num, {BARE.format("key")} AS bare,
                   json_extract_string(j[2], '$') AS type, {JSON_STRING.format("j[3]")} AS name,
                   list_transform(list_filter(json_extract(json, '$.alternate_names[*]'),
                                              lambda x: json_type(x) = 'VARCHAR'),
                                  lambda x: json_extract_string(x, '$')) AS alternate_names,
                   {JSON_STRING.format("j[5]")} AS birth_date, {JSON_STRING.format("j[6]")} AS death_date,
                   {JSON_STRING.format("j[4]")} AS location, json AS record
            FROM (SELECT *, json_extract(json, ['$.key', '$.type.key', '$.name', '$.location', '$.birth_date',
                                                '$.death_date']) AS j
                  FROM {_read_ol(path)})
            WHERE {_check_record(path)} IS NULL
            QUALIFY row_number() OVER (PARTITION BY key ORDER BY revision DESC, last_modified DESC) = 1
        """)


def _scan_editions(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """edition_facts: per work key, the edition count, the distinct years and language codes."""
    with _reading(path):
        con.execute(f"""
            CREATE TABLE edition_facts AS
            SELECT work_key, count(*) AS edition_count,
                   list_sort(list_distinct(list(year) FILTER (WHERE year IS NOT NULL))) AS years,
                   list_sort(list_distinct(flatten(list(languages)))) AS languages
            FROM (
                SELECT unnest(json_extract_string(j[2], '$[*].key')) AS work_key,
                       {YEAR_OF.format(JSON_STRING.format("j[3]"))} AS year,
                       list_transform(json_extract_string(j[4], '$[*].key'), lambda k: {BARE.format("k")}) AS languages
                FROM (SELECT key, json, json_extract(json, ['$.key', '$.works', '$.publish_date', '$.languages']) AS j
                      FROM {_read_ol(path)})
                WHERE {_check_record(path)} IS NULL)
            GROUP BY work_key
        """)


def _scan_works(con: duckdb.DuckDBPyConnection, path: Path, out: Path) -> None:
    """Work search docs exactly like OLIndex._work_doc, written per author as author_works, and
    the per-author work_count / top_work of OLIndex._author_doc."""
    with _reading(path):
        con.execute(f"""
            CREATE TABLE ol_works AS
            SELECT key, {KEY_NUMBER.format("key")} AS key_num,
                   coalesce(j[3]::VARCHAR, '""') AS title, j[4]::VARCHAR AS subtitle,
                   coalesce(json_extract_string(j[6], '$[*].author.key'), []) AS author_refs,
                   nullif({YEAR_OF.format(JSON_STRING.format("j[5]"))}, 0) AS first_publish_date_year
            FROM (SELECT *, json_extract(json, ['$.key', '$.type.key', '$.title', '$.subtitle',
                                                '$.first_publish_date', '$.authors']) AS j
                  FROM {_read_ol(path)})
            WHERE {_check_record(path)} IS NULL
            QUALIFY row_number() OVER (PARTITION BY key ORDER BY revision DESC, last_modified DESC) = 1
                AND json_extract_string(j[2], '$') = {sql_string(OL_WORK)}
        """)
    # author_name: each author reference resolved through at most 4 redirects (OLIndex._resolve_name).
    hops = range(5)
    joins = "\n".join(
        f"LEFT JOIN redirects r{i} ON r{i}.key = {'ref' if i == 0 else f'r{i - 1}.location'} "
        f"LEFT JOIN names n{i} ON n{i}.key = {'ref' if i == 0 else f'r{i - 1}.location'}"
        for i in hops
    )
    resolved = " ".join(f"WHEN r{i}.key IS NULL THEN n{i}.name" for i in hops)
    con.execute(f"""
        CREATE TABLE resolved AS
        WITH names AS (SELECT key, name FROM ol_authors WHERE type = {sql_string(OL_AUTHOR)}),
             redirects AS (SELECT key, location FROM ol_authors WHERE type = {sql_string(OL_REDIRECT)}),
             refs AS (SELECT DISTINCT unnest(author_refs) AS ref FROM ol_works)
        SELECT ref, nullif(CASE {resolved} END, '') AS name FROM refs {joins}
    """)
    con.execute(f"""
        CREATE TABLE work_docs AS
        WITH refs AS (SELECT key, unnest(author_refs) AS ref, generate_subscripts(author_refs, 1) AS i FROM ol_works),
             names AS (SELECT key, list(r.name ORDER BY i) FILTER (WHERE r.name IS NOT NULL) AS author_name
                       FROM refs JOIN resolved r USING (ref) GROUP BY key)
        SELECT w.key, w.key_num, w.title, w.subtitle,
               list_transform(w.author_refs, lambda k: {BARE.format("k")}) AS author_key,
               coalesce(n.author_name, []) AS author_name,
               coalesce(e.edition_count, 0) AS edition_count,
               least(e.years[1], w.first_publish_date_year) AS first_publish_year,
               e.years AS publish_year, e.languages AS language
        FROM ol_works w LEFT JOIN names n USING (key) LEFT JOIN edition_facts e ON e.work_key = w.key
    """)
    con.execute("DROP TABLE ol_works; DROP TABLE edition_facts; DROP TABLE resolved")
    # work_count counts every reference (OLIndex's works_by_author lists a work once per reference).
    con.execute("""
        CREATE TABLE author_stats AS
        SELECT author_key, count(*) AS work_count,
               first(title ORDER BY edition_count DESC, key_num, key) AS top_work
        FROM (SELECT unnest(author_key) AS author_key, key, key_num, title, edition_count FROM work_docs)
        GROUP BY author_key
    """)
    _copy(
        con,
        """
        SELECT a.author_key, w.key, w.key_num, w.title, w.subtitle, w.author_key AS author_keys,
               w.author_name, w.edition_count, w.first_publish_year, w.publish_year, w.language
        FROM (SELECT DISTINCT unnest(author_key) AS author_key, key FROM work_docs) a JOIN work_docs w USING (key)
        ORDER BY a.author_key, w.key_num, w.key""",
        out / "author_works.parquet",
    )
    con.execute("DROP TABLE work_docs")


def _write_authors(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    _copy(
        con,
        """
        SELECT a.key, a.key_num, a.type, a.name, a.alternate_names, a.birth_date, a.death_date, a.location,
               a.record, coalesce(s.work_count, 0) AS work_count, s.top_work
        FROM ol_authors a LEFT JOIN author_stats s ON s.author_key = a.bare
        ORDER BY a.key""",
        out / "authors.parquet",
    )


def _write_tokens(con: duckdb.DuckDBPyConnection, scratch: Path, out: Path, batch_rows: int = 50_000) -> None:
    """author_tokens (token, key, ranking columns) sorted by token: olindex.tokens() itself, in Python,
    over the authors table in batches (only names pass through Python, never the big dumps)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("token", pa.string()), ("key", pa.string())])
    unsorted = scratch / "tokens.parquet"
    reader = con.sql(
        f"SELECT key, name, alternate_names FROM ol_authors WHERE type = {sql_string(OL_AUTHOR)}"
    ).to_arrow_reader(batch_rows)
    with pq.ParquetWriter(unsorted, schema) as writer:
        for batch in reader:
            found_tokens, found_keys = [], []
            for key, name, alternates in zip(*(batch.column(i).to_pylist() for i in range(3))):
                # OLIndex._name_tokens: one bag of tokens over the name and the alternate names
                bag = {token for text in (name or "", *(alternates or [])) for token in tokens(text)}
                found_tokens += bag
                found_keys += [key] * len(bag)
            writer.write_table(pa.table({"token": found_tokens, "key": found_keys}, schema=schema))
    _copy(
        con,
        f"""
        SELECT t.token, t.key, a.key_num, coalesce(s.work_count, 0) AS work_count
        FROM read_parquet({sql_string(str(unsorted))}) t JOIN ol_authors a USING (key)
        LEFT JOIN author_stats s ON s.author_key = a.bare
        ORDER BY t.token, t.key""",
        out / "author_tokens.parquet",
    )
    unsorted.unlink()


# --- lookups by key -----------------------------------------------------------------------
# A batch asks for a few hundred authors' rows (or a few thousand titles) scattered over the whole
# key range. In Parquet that touches nearly every row group however small they are, so each batch
# cost a scan of the table and collecting grew with the square of the authors. Instead, each
# looked-up table also has an uncompressed Arrow IPC copy, read through a memory map (a row costs
# the pages it sits on, nothing is decoded), and an index from key hash to the key's run of rows:
# a batch costs its keys and its rows, whatever the table's size.


def key_hash(key: str) -> int:
    """The index's 64-bit hash of a key: DuckDB's ``md5_number_lower`` (the last 8 bytes of the MD5,
    little-endian), which builds the index; a standard hash, so no DuckDB version can change it."""
    import hashlib

    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[8:], "little")


def keyed_files(table: str) -> tuple[str, str]:
    return f"{table}.arrow", f"{table}.index.npy"


def _write_keyed(
    con: duckdb.DuckDBPyConnection,
    out: Path,
    table: str,
    key: str,
    arrow_batch_rows: int = KEYED_BATCH_ROWS,
    index_batch_rows: int = 100_000,
) -> None:
    """``<table>.arrow`` (the rows of ``<table>.parquet``, in its order) and ``<table>.index.npy``:
    a (3, keys) uint64 array of key hash, first row and row count per distinct key, sorted by
    hash. Memory stays bounded: the copy goes a record batch at a time, the index is sorted by
    DuckDB and written into a memory-mapped file."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = out / f"{table}.parquet"
    arrow_name, index_name = keyed_files(table)
    parquet = pq.ParquetFile(source)
    with pa.OSFile(str(out / arrow_name), "wb") as sink, pa.ipc.new_file(sink, parquet.schema_arrow) as writer:
        for batch in parquet.iter_batches(batch_size=arrow_batch_rows):
            writer.write_batch(batch)
    runs = (
        f"SELECT md5_number_lower({key}) AS hash, min(file_row_number) AS first, count(*) AS n, "
        f"max(file_row_number) AS last FROM read_parquet({sql_string(str(source))}, file_row_number = true) "
        f"WHERE {key} IS NOT NULL GROUP BY {key}"
    )
    keys = con.execute(f"SELECT count(*) FROM ({runs})").fetchall()[0][0]
    index = np.lib.format.open_memmap(out / index_name, mode="w+", dtype=np.uint64, shape=(3, keys))
    done = 0
    for batch in con.sql(f"{runs} ORDER BY hash, first").to_arrow_reader(index_batch_rows):
        first, n, last = (batch.column(c).to_numpy() for c in ("first", "n", "last"))
        if (last - first + 1 != n).any():  # the lookup reads a key's rows as one run
            raise RuntimeError(f"{source.name} is not sorted by {key}")
        size = len(first)
        index[0, done : done + size] = batch.column("hash").to_numpy()
        index[1, done : done + size] = first
        index[2, done : done + size] = n
        done += size
    index.flush()
    del index


def _write_keyed_tables(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    for table, key in KEYED.items():
        _write_keyed(con, out, table, key)


class KeyedTable:
    """One looked-up table's rows by key (see ``_write_keyed``), safe to share between threads.

    Each lookup maps the two files for its own duration only: what it takes is copied out, so
    the pages it touched do not stay in this process's memory (over a whole run, the batches of
    one worker touch most of a large table). ``rows_read`` and ``batches_read`` count the rows
    taken from the file and the record batches touched: what lookups cost."""

    def __init__(self, folder: Path, table: str, key: str | None = None):
        import numpy as np

        arrow_name, index_name = keyed_files(table)
        self.table, self.key = table, key or KEYED[table]
        self.data_path, self.index_path = folder / arrow_name, folder / index_name
        with self._mapped() as (_, reader):
            self.schema = reader.schema
            sizes = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
        self.offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])  # first row of each batch
        self._lock = threading.Lock()
        self.rows_read = self.batches_read = 0

    @contextlib.contextmanager
    def _mapped(self):
        import numpy as np
        import pyarrow as pa

        source = pa.memory_map(str(self.data_path), "r")
        try:
            yield np.load(self.index_path, mmap_mode="r"), pa.ipc.open_file(source)
        finally:
            source.close()  # unmapped once no zero-copy view of it is left

    def rows(self, keys: Iterable[str]):
        """A pyarrow Table: every row whose key is one of ``keys``, in file order (key order)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        # a key that is not valid UTF-8 (a lone surrogate from a JSON escape) is in no table
        wanted = sorted(k for k in set(keys) if _utf8(k))
        hashes = np.fromiter((key_hash(k) for k in wanted), dtype=np.uint64, count=len(wanted))
        hashes.sort()
        parts = []
        with self._mapped() as (index, reader):
            lo = np.searchsorted(index[0], hashes, "left")
            hi = np.searchsorted(index[0], hashes, "right")
            entries = _ranges(lo, hi - lo)  # index entries: a key, or another with the same hash
            rows = np.unique(_ranges(index[1][entries].astype(np.int64), index[2][entries].astype(np.int64)))
            if len(rows):
                batch_of = np.searchsorted(self.offsets, rows, "right") - 1
                starts = np.flatnonzero(np.r_[True, batch_of[1:] != batch_of[:-1]])
                for start, stop in zip(starts, np.r_[starts[1:], len(rows)]):
                    b = int(batch_of[start])
                    # take copies the rows out of the zero-copy batch
                    parts.append(reader.get_batch(b).take(pa.array(rows[start:stop] - self.offsets[b])))
            del index
        with self._lock:
            self.rows_read += len(rows)
            self.batches_read += len(parts)
        found = pa.Table.from_batches(parts, schema=self.schema)
        # a hash shared by two keys brings the other's rows too: the exact test drops them
        return found.filter(pc.is_in(found.column(self.key), value_set=pa.array(wanted, pa.string())))


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _ranges(starts, lengths):
    """The concatenated ``range(start, start + length)`` of each pair, as one int64 array."""
    import numpy as np

    starts, lengths = np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)


def build_cache(snapshot_dir: Path, out: Path, memory_limit: str = "1GB") -> dict[str, float]:
    """Scan the snapshot's four data files into the Parquet tables of ``out`` (an empty folder).
    Returns the seconds each step took."""
    timings: dict[str, float] = {}
    scratch = out / ".scan"
    scratch.mkdir()
    con = _scan_connection(scratch, memory_limit)
    try:
        steps = [
            ("wikidata", lambda: _scan_wikidata(con, snapshot_dir / WIKIDATA_FILE, out)),
            ("authors", lambda: _scan_authors(con, snapshot_dir / OL_AUTHORS_FILE)),
            ("editions", lambda: _scan_editions(con, snapshot_dir / OL_EDITIONS_FILE)),
            ("works", lambda: _scan_works(con, snapshot_dir / OL_WORKS_FILE, out)),
            ("tokens", lambda: _write_tokens(con, scratch, out)),
            ("authors_out", lambda: _write_authors(con, out)),
            ("keyed", lambda: _write_keyed_tables(con, out)),
        ]
        for name, step in steps:
            started = time.perf_counter()
            step()
            timings[name] = round(time.perf_counter() - started, 2)
            log.info("dump scan %s: %.1f s", name, timings[name])
    finally:
        con.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return timings


# --- the cache ----------------------------------------------------------------------------


def _ready_marker(manifest: dict) -> dict:
    return {"version": CACHE_VERSION, "snapshot_id": manifest["snapshot_id"], "checksums": manifest["checksums"]}


def _is_ready(folder: Path, marker: dict) -> bool:
    try:
        found = json.loads((folder / READY_FILE).read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        return False
    files = [f"{t}.parquet" for t in TABLES] + [name for t in KEYED for name in keyed_files(t)]
    return {k: found.get(k) for k in marker} == marker and all((folder / name).is_file() for name in files)


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """One scan at a time per snapshot across processes (others wait, then use its result)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _install(tmp: Path, folder: Path, marker: dict) -> None:
    """Rename the finished ``tmp`` to ``folder``. If another process got there first with a good
    cache, keep theirs; a stale or broken one is moved aside and replaced."""
    try:
        os.rename(tmp, folder)
        return
    except OSError:
        if _is_ready(folder, marker):
            shutil.rmtree(tmp, ignore_errors=True)
            return
    aside = folder.with_name(f".{folder.name}.old-{os.getpid()}-{time.monotonic_ns()}")
    os.rename(folder, aside)
    os.rename(tmp, folder)
    shutil.rmtree(aside, ignore_errors=True)


@dataclass
class DumpStore:
    """The scanned tables of one snapshot, queried through DuckDB (one connection per thread)."""

    snapshot_dir: Path
    folder: Path
    manifest: dict
    memory_limit: str = "1GB"
    scan_seconds: dict[str, float] | None = None  # None: the cache was already there

    @classmethod
    def open(cls, snapshot_dir: Path, cache_root: Path, memory_limit: str = "1GB") -> DumpStore:
        """The cache of ``snapshot_dir`` under ``cache_root/<snapshot_id>``, scanned first if missing."""
        snapshot_dir, cache_root = Path(snapshot_dir), Path(cache_root)
        manifest = read_manifest(snapshot_dir)
        for name in DATA_FILES:
            if not (snapshot_dir / name).is_file():
                raise SnapshotFormatError(f"{snapshot_dir / name}: missing; is {snapshot_dir} a snapshot folder?")
        marker = _ready_marker(manifest)
        folder = cache_root / manifest["snapshot_id"]
        timings = None
        if not _is_ready(folder, marker):
            cache_root.mkdir(parents=True, exist_ok=True)
            with _lock(cache_root / f".{manifest['snapshot_id']}.lock"):
                if not _is_ready(folder, marker):  # nobody built it while we waited
                    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=cache_root))
                    try:
                        timings = build_cache(snapshot_dir, tmp, memory_limit)
                        (tmp / READY_FILE).write_text(json.dumps({**marker, "scan_seconds": timings}, indent=2))
                        os.chmod(tmp, 0o755)
                        _install(tmp, folder, marker)
                    finally:
                        shutil.rmtree(tmp, ignore_errors=True)
        store = cls(snapshot_dir, folder, manifest, memory_limit, timings)
        store._connect()
        return store

    def _connect(self) -> None:
        # An in-memory database holding only views over the immutable Parquet files: nothing
        # is ever written; each thread queries through its own cursor of this one database.
        # Lookups are small: a low limit keeps DuckDB's buffer cache from growing with the
        # dump (the scan has its own, higher limit).
        self._db = duckdb.connect(":memory:")
        self._db.execute(f"SET memory_limit = {sql_string(QUERY_MEMORY_LIMIT)}")
        self._db.execute("SET parquet_metadata_cache = true")  # footers are read once, not per query
        for table in TABLES:
            path = sql_string(str(self.folder / f"{table}.parquet"))
            self._db.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet({path})")
        self._local = threading.local()
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._cursor_lock = threading.Lock()
        self.keyed = {table: KeyedTable(self.folder, table) for table in KEYED}

    @property
    def fetched_at(self) -> datetime:
        return datetime.fromisoformat(self.manifest["created_at"].replace("Z", "+00:00"))

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's connection (DuckDB connections are not shared between threads)."""
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            with self._cursor_lock:
                cursor = self._db.cursor()
                self._cursors.append(cursor)
            self._local.cursor = cursor
        return cursor

    def query(
        self, sql: str, params: list | None = None, rows_of: dict[str, Iterable[str]] | None = None
    ) -> list[tuple]:
        """``sql`` on this thread's connection. ``rows_of`` (table -> keys): in ``sql``, the name
        ``<table>_rows`` is the rows of that table whose key is one of the keys (a KEYED table's
        lookup: it costs the keys and their rows, never the whole table)."""
        cursor = self.cursor()
        names = []
        try:
            for table, keys in (rows_of or {}).items():
                cursor.register(f"{table}_rows", self.keyed[table].rows(keys))
                names.append(f"{table}_rows")
            return cursor.execute(sql, params or []).fetchall()
        finally:
            for name in names:
                cursor.unregister(name)

    users: int = 0
    closed: bool = False

    def close(self) -> None:
        """Close when the last source using this store closes."""
        with _STORES_LOCK:
            self.users = max(0, self.users - 1)
            if self.users:
                return
            self.closed = True
        with self._cursor_lock:
            for cursor in self._cursors:
                cursor.close()
            self._cursors.clear()
        self._db.close()


QUERY_MEMORY_LIMIT = "256MB"
_STORES: dict[tuple[Path, Path], DumpStore] = {}
_STORES_LOCK = threading.Lock()


def _open_store(snapshot_dir: Path, settings: Settings) -> DumpStore:
    """One store per snapshot and process, shared by the WikiData and Open Library sources."""
    key = (Path(snapshot_dir).resolve(), (settings.cache_dir / "dumps").resolve())
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None or store.closed:
            store = _STORES[key] = DumpStore.open(*key)
        store.users += 1
        return store


# --- WikiData -----------------------------------------------------------------------------


def _binding(kind: str, value: str, lang: str | None = None, datatype: str | None = None) -> dict:
    """One SPARQL JSON results value."""
    if kind == "bnode":
        return {"type": "bnode", "value": value.removeprefix("_:")}
    if kind == "uri":
        return {"type": "uri", "value": value}
    term = {"type": "literal", "value": value}
    if lang:
        term["xml:lang"] = lang
    elif datatype:
        term["datatype"] = datatype
    return term


def _integer(value: int) -> dict:
    return _binding("literal", str(value), datatype=XSD_INTEGER)


def _term_order(column: str) -> str:
    """SPARQL ORDER BY on terms: blank nodes before IRIs (all are one or the other here)."""
    return f"starts_with({column}, '_:') DESC, {column}"


class DumpWikidata:
    """The two SPARQL queries of ``sql/sparql/`` answered by SQL over the scanned triples."""

    source = "dump"
    authors_per_query = None  # a lookup costs its titles' rows, not the table: one per batch

    def __init__(self, snapshot_dir: Path, settings: Settings):
        self.store = _open_store(snapshot_dir, settings)
        self.counter = RequestCounter()
        self.fetched_at = self.store.fetched_at
        self.occupations = occupations((SQL_DIR / "sparql" / "candidate_authors.rq").read_text())

    def _fetched(self, query: str, data: dict) -> Fetched:
        self.counter.record(from_cache=True)  # no request leaves the process
        return Fetched(data, fingerprint("POST", "/sparql", body=query), self.fetched_at, True)

    def select(self, query: str) -> Fetched:
        raise NotImplementedError(
            "the DuckDB dump source answers candidate_authors() and works_by_titles(), not arbitrary SPARQL"
        )

    def candidate_authors(self, *, from_year: int, to_year: int, min_works: int, max_works: int) -> Fetched:
        """``sql/sparql/candidate_authors.rq`` as SQL; each CTE is one clause of the query."""
        from_year, to_year, min_works, max_works = map(int, (from_year, to_year, min_works, max_works))
        query = sparql(
            "candidate_authors", from_year=from_year, to_year=to_year, min_works=min_works, max_works=max_works
        )
        rows = self.store.query(f"""
            WITH
            -- ?author wdt:P106 ?occupation (VALUES) ; wdt:P31 wd:Q5
            author AS (
                SELECT s FROM wd_triples WHERE p = 'P106' AND o_kind = 'uri' AND o IN {sql_list(self.occupations)}
                INTERSECT
                SELECT s FROM wd_triples WHERE p = 'P31' AND o_kind = 'uri' AND o = {sql_string(Q5)}),
            -- wdt:P569 ?any_birth with FILTER(window) ; wdt:P569 ?birth, HAVING on MIN(YEAR(?birth)):
            -- one YEAR() error (unparseable date) makes the MIN an error, which HAVING rejects
            birth AS (
                SELECT s, min(year) AS birth_year FROM wd_births WHERE s IN (SELECT s FROM author) GROUP BY s
                HAVING bool_or(cmp_lo >= {from_year} AND cmp_hi < {to_year}) AND count(year) = count(*)
                   AND min(year) >= {from_year} AND min(year) < {to_year}),
            -- wikibase:sitelinks ?links, MAX(?links)
            links AS (
                SELECT s, arg_max(struct_pack(o, o_kind, o_lang, o_dt),
                                  struct_pack(n := coalesce(TRY_CAST(o AS DOUBLE), '-inf'::DOUBLE), o)) AS links
                FROM wd_triples WHERE p = 'sitelinks' AND s IN (SELECT s FROM birth) GROUP BY s),
            -- ?work wdt:P50 ?author, COUNT(DISTINCT ?work) in HAVING
            works AS (
                SELECT o AS s, count(DISTINCT s) AS works FROM wd_triples
                WHERE p = 'P50' AND o_kind <> 'literal' AND o IN (SELECT s FROM links) GROUP BY o
                HAVING count(DISTINCT s) >= {min_works} AND count(DISTINCT s) <= {max_works}),
            -- OPTIONAL rdfs:label (LANG = "en"), SAMPLE: the least
            label AS (SELECT s, min(label) AS name FROM wd_labels WHERE s IN (SELECT s FROM works) GROUP BY s),
            -- OPTIONAL wdt:P648, GROUP_CONCAT(DISTINCT; " ")
            ol AS (
                SELECT s, string_agg(DISTINCT o, ' ' ORDER BY o) AS ol_ids,
                       CASE WHEN count(o_lang) = count(*) AND count(DISTINCT o_lang) = 1 THEN min(o_lang) END AS lang
                FROM wd_triples WHERE p = 'P648' AND o_kind = 'literal' AND s IN (SELECT s FROM works) GROUP BY s)
            SELECT s, label.name, birth.birth_year, links.links, ol.ol_ids, ol.lang, works.works
            FROM works JOIN birth USING (s) JOIN links USING (s) LEFT JOIN label USING (s) LEFT JOIN ol USING (s)
            ORDER BY {_term_order("s")}
        """)
        bindings = []
        for author, name, birth_year, links, ol_ids, ol_lang, works in rows:
            row = {"author": _binding("bnode" if author.startswith("_:") else "uri", author)}
            if name is not None:
                row["name"] = _binding("literal", name, lang="en")
            row["birth_year"] = _integer(birth_year)
            row["sitelinks"] = _binding(links["o_kind"], links["o"], links["o_lang"], links["o_dt"])
            if ol_ids is not None:
                row["ol_ids"] = _binding("literal", ol_ids, lang=ol_lang)
            row["works"] = _integer(works)
            bindings.append(row)
        data = {
            "head": {"vars": ["author", "name", "birth_year", "sitelinks", "ol_ids", "works"]},
            "results": {"bindings": bindings},
        }
        return self._fetched(query, data)

    def works_by_titles(self, titles: list[str]) -> Fetched:
        """``sql/sparql/works_by_titles.rq``: works whose @en label is one of ``titles``, with their P50."""
        wanted = sorted(set(titles))
        query = sparql("works_by_titles", titles=" ".join(sparql_string(t) for t in wanted))
        rows = []
        if wanted:
            rows = self.store.query(
                f"""
                SELECT l.s, l.label, l.o, l.o_kind FROM wd_work_labels_rows l
                ORDER BY l.label, {_term_order("l.s")}, l.o_kind = 'literal', {_term_order("l.o")}
            """,
                rows_of={"wd_work_labels": wanted},
            )
        bindings = [
            {
                "work": _binding("bnode" if work.startswith("_:") else "uri", work),
                "title": _binding("literal", title, lang="en"),
                "author": _binding(kind, author),
            }
            for work, title, author, kind in rows
        ]
        return self._fetched(query, {"head": {"vars": ["work", "title", "author"]}, "results": {"bindings": bindings}})

    def close(self) -> None:
        self.store.close()


# --- Open Library -------------------------------------------------------------------------

WORK_COLUMNS = (
    "key, title, subtitle, author_keys, author_name, edition_count, first_publish_year, publish_year, language"
)
AUTHOR_COLUMNS = "key, record, work_count, top_work"


def work_doc(row: tuple) -> dict:
    """An author_works row -> the /search.json doc (OLIndex._work_doc; absent values left out)."""
    key, title, subtitle, author_keys, author_name, edition_count, first_publish_year, publish_year, language = row
    doc = {"key": key, "type": "work", "title": json.loads(title)}
    subtitle = json.loads(subtitle) if subtitle is not None else None
    if subtitle:
        doc["subtitle"] = subtitle
    doc["author_key"] = list(author_keys)
    doc["author_name"] = list(author_name)
    doc["edition_count"] = edition_count
    if first_publish_year is not None:
        doc["first_publish_year"] = first_publish_year
    if publish_year:
        doc["publish_year"] = list(publish_year)
    if language:
        doc["language"] = list(language)
    return doc


def author_doc(row: tuple) -> dict:
    """An authors row -> the /search/authors.json doc (OLIndex._author_doc)."""
    key, record, work_count, top_work = row
    record = json.loads(record)
    doc = {"key": key.rsplit("/", 1)[-1], "type": "author", "name": record.get("name", "")}
    for field in ("alternate_names", "birth_date", "death_date"):
        if record.get(field):
            doc[field] = record[field]
    if work_count:
        doc["top_work"] = json.loads(top_work)
    doc["work_count"] = work_count
    return doc


_NOT_PREFETCHED = object()


def _full_author_key(key: str) -> str:
    return key if key.startswith("/") else f"/authors/{key}"


def _search_authors_data(total: int, docs: list[dict]) -> dict:
    return {"numFound": total, "start": 0, "numFoundExact": True, "docs": docs}


class DumpOpenLibrary(_Shared):
    """The Open Library endpoints the pipeline reads, answered from the scanned tables.

    Answers equal ``OLIndex``'s; ``prefetch_*`` load a batch's answers with a few set-based
    queries, and later calls for those keys and names are served from memory until ``clear()``.
    """

    source = "dump"

    def __init__(self, snapshot_dir: Path, settings: Settings):
        self.store = _open_store(snapshot_dir, settings)
        self.page_size = settings.ol_page_size
        self.counter = RequestCounter()
        self.fetched_at = self.store.fetched_at
        # Prefetched answers are per thread: batches on several threads share this client, and
        # one batch's clear() must not drop another's prefetch.
        self._local = threading.local()

    @property
    def _authors(self) -> dict[str, str | None]:  # full key -> record JSON (None: no such record)
        return self._prefetched("authors")

    @property
    def _searches(self) -> dict[str, dict]:  # name -> search_authors data
        return self._prefetched("searches")

    @property
    def _works(self) -> dict[str, list[dict]]:  # bare author key -> every work doc, in result order
        return self._prefetched("works")

    def _prefetched(self, name: str) -> dict:
        if not hasattr(self._local, name):
            setattr(self._local, name, {})
        return getattr(self._local, name)

    # -- answers ---------------------------------------------------------------------------

    def _fetched(self, path: str, params: dict, data: Any) -> Fetched:
        self.counter.record(from_cache=True)  # no request leaves the process
        return Fetched(data, fingerprint("GET", path, params), self.fetched_at, True)

    def _author(self, key: str) -> Fetched:
        full = _full_author_key(key)
        record = self._authors.get(full, _NOT_PREFETCHED)
        if record is _NOT_PREFETCHED:
            found = self.store.query("SELECT record FROM authors_rows", rows_of={"authors": [full]})
            record = found[0][0] if found else None
        return self._fetched(f"/authors/{key}.json", {}, json.loads(record) if record is not None else None)

    def search_authors(self, name: str) -> Fetched:
        data = self._searches.get(name)
        if data is None:
            data = self._search_authors_batch([name])[name]
        else:
            data = json.loads(json.dumps(data))  # every answer is a fresh object
        return self._fetched("/search/authors.json", {"q": name}, data)

    def _search(self, params: dict) -> Fetched:
        limit, page = int(params["limit"]), int(params["page"])
        if limit < 0 or page < 1:
            raise ValueError("limit must be >= 0, page >= 1")
        author_key = str(params["author_key"]).rsplit("/", 1)[-1]
        start = (page - 1) * limit
        docs = self._works.get(author_key)
        if docs is not None:
            total, page_docs = len(docs), docs[start : start + limit]
        else:
            total, page_docs = self._works_page(author_key, start, limit)
        data = {
            "numFound": total,
            "start": start,
            "numFoundExact": True,
            "num_found": total,
            "documentation_url": SEARCH_DOCUMENTATION_URL,
            "q": "",
            "offset": None,
            "docs": [_project(doc, params["fields"]) for doc in page_docs],
        }
        return self._fetched("/search.json", params, data)

    # -- queries ---------------------------------------------------------------------------

    def _works_page(self, author_key: str, start: int, limit: int) -> tuple[int, list[dict]]:
        rows_of = {"author_works": [author_key]}
        rows = self.store.query(
            f"""
            SELECT {WORK_COLUMNS}, count(*) OVER () AS total FROM author_works_rows
            ORDER BY key_num, key LIMIT ? OFFSET ?""",
            [limit, start],
            rows_of=rows_of,
        )
        if rows:
            return rows[0][-1], [work_doc(row[:-1]) for row in rows]
        return self.store.query("SELECT count(*) FROM author_works_rows", rows_of=rows_of)[0][0], []

    def _search_authors_batch(self, names: list[str]) -> dict[str, dict]:
        """search_authors data for every name, in one query: every token of a name must be among
        the author's name tokens; ordered by work_count desc, key number, key; first 100."""
        names = list(dict.fromkeys(names))
        wanted = {name: sorted(set(tokens(name))) for name in names}
        queries = [(i, token) for i, name in enumerate(names) for token in wanted[name]]
        results = {name: _search_authors_data(0, []) for name in names}
        if not queries:
            return results  # a query with no tokens matches nothing
        ids, toks = zip(*queries)
        top = self.store.query(
            f"""
            WITH q AS (SELECT unnest(?::INTEGER[]) AS qid, unnest(?::VARCHAR[]) AS token),
                 need AS (SELECT qid, count(*) AS n FROM q GROUP BY qid),
                 hit AS (SELECT q.qid, t.key, any_value(t.key_num) AS key_num,
                                any_value(t.work_count) AS work_count, count(*) AS n
                         FROM q JOIN author_tokens_rows t ON t.token = q.token
                         GROUP BY q.qid, t.key)
            SELECT qid, key, count(*) OVER (PARTITION BY qid) AS total
            FROM hit JOIN need USING (qid, n)
            QUALIFY row_number() OVER (PARTITION BY qid ORDER BY work_count DESC, key_num, key) <= {SEARCH_AUTHORS_LIMIT}
            ORDER BY qid, work_count DESC, key_num, key
        """,
            [list(ids), list(toks)],
            rows_of={"author_tokens": toks},
        )
        keys = {key for _, key, _ in top}
        found = {
            row[0]: row
            for row in self.store.query(f"SELECT {AUTHOR_COLUMNS} FROM authors_rows", rows_of={"authors": keys})
        }
        for qid, key, total in top:
            data = results[names[qid]]
            data["numFound"] = total
            data["docs"].append(author_doc(found[key]))  # a fresh doc per answer
        return results

    # -- batch prefetch --------------------------------------------------------------------

    def prefetch_authors(self, keys: list[str], names: list[str]) -> None:
        """Load the author records of ``keys`` (with their redirect chains) and the search
        results of ``names`` with a few set-based queries."""
        pending = {_full_author_key(k) for k in keys} - self._authors.keys()
        found: dict[str, str | None] = {}
        for _ in range(MAX_REDIRECTS + 1):  # as many hops as _Shared.author follows
            if not pending:
                break
            rows = self.store.query(
                "SELECT key, record, type, location FROM authors_rows", rows_of={"authors": pending}
            )
            found.update(dict.fromkeys(pending))
            follow = set()
            for key, record, record_type, location in rows:
                found[key] = record
                if record_type == OL_REDIRECT and location:
                    follow.add(f"/authors/{bare_key(location)}")
            pending = follow - found.keys() - self._authors.keys()
        searches = self._search_authors_batch(sorted(set(names) - self._searches.keys())) if names else {}
        self._authors.update(found)
        self._searches.update(searches)

    def prefetch_works(self, author_keys: list[str]) -> None:
        """Load every work doc of ``author_keys`` (bare or full keys) in one query."""
        wanted = {str(k).rsplit("/", 1)[-1] for k in author_keys} - self._works.keys()
        if not wanted:
            return
        docs: dict[str, list[dict]] = {k: [] for k in wanted}
        rows = self.store.query(
            f"SELECT author_key, {WORK_COLUMNS} FROM author_works_rows ORDER BY author_key, key_num, key",
            rows_of={"author_works": wanted},
        )
        for author_key, *row in rows:
            docs[author_key].append(work_doc(tuple(row)))
        self._works.update(docs)

    def clear(self) -> None:
        """Forget this thread's prefetched answers (call between batches: memory stays bounded by
        one batch per thread)."""
        for name in ("authors", "searches", "works"):
            setattr(self._local, name, {})

    def close(self) -> None:
        self.clear()
        self.store.close()
