"""The dump source's one scan of a snapshot: its four files streamed through DuckDB into the
tables the lookups read, each written as Parquet sorted by its lookup key, and the looked-up
ones also in the keyed format (kitab/sources/dump/keyed.py). Only what the pipeline reads is
kept: seven WikiData predicates, Open Library author records, per-author work search docs and
name tokens. Memory stays bounded: DuckDB runs under ``memory_limit`` and spills to a scratch
folder."""

from __future__ import annotations

import contextlib
import errno
import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb

from kitab.core.errors import KitabError
from kitab.sources.dates import COMMON_DATETIME_SQL, COMMON_DATETIME_YEAR_SQL, XSD, xsd_year_bounds
from kitab.sources.dump.keyed import write_keyed
from kitab.sources.dump.sql import (
    BARE,
    JSON_STRING,
    KEY_NUMBER,
    YEAR_OF,
    check_record,
    digits_value,
    read_lines,
    read_ol,
    sql_list,
    sql_string,
)
from kitab.sources.ntriples import NT_BLANK, NT_LINE, NT_LINE_IRIS, NT_LITERAL_PARTS, nt_unescape
from kitab.sources.queries import SCHOLARLY_CLASSES, SCHOLARLY_PROPERTY
from kitab.sources.snapshot.format import (
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
)
from kitab.sources.snapshot.olindex import tokens

log = logging.getLogger(__name__)

TABLES = ("wd_triples", "wd_labels", "wd_work_labels", "wd_births", "authors", "author_works", "author_tokens")
TABLES += ("wd_work_records",)  # P674 / P840 of each work with its targets' en and mul labels
# The tables a batch looks rows up in, by their key column: each is sorted by that key.
KEYED = {"authors": "key", "author_works": "author_key", "author_tokens": "token", "wd_work_labels": "label"}
KEYED["wd_work_records"] = "s"
ROW_GROUP_ROWS = 10240  # small row groups: a filter on the sort key decodes little beyond its rows
XSD_STRING = XSD + "string"

# The predicates kept from wikidata.nt.gz, by the short name the tables use.
PREDICATES = {
    WDT + "P31": "P31",
    WDT + "P106": "P106",
    WDT + "P569": "P569",
    WDT + "P648": "P648",
    WDT + "P50": "P50",
    WDT + "P674": "P674",  # characters (book_records)
    WDT + "P840": "P840",  # narrative location (book_records)
    WDT + "P13046": "P13046",  # publication type of scholarly work: the works rule (queries.SCHOLARLY_CLASSES)
    RDFS_LABEL: "label",
    WIKIBASE_SITELINKS: "sitelinks",
}


def _scan_connection(folder: Path, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """A scratch database in the temp folder: tables past memory_limit spill to disk there."""
    con = duckdb.connect(str(folder / "scan.duckdb"))
    con.execute(f"SET memory_limit = {sql_string(memory_limit)}")
    con.execute(f"SET temp_directory = {sql_string(str(folder / 'spill'))}")
    con.execute("SET preserve_insertion_order = false")  # COPY ... ORDER BY still writes in order
    # a query past 2 s would draw DuckDB's progress bar on stdout: the refresh's, in a sample step's build
    con.execute("SET enable_progress_bar = false")
    con.create_function("nt_unescape", nt_unescape, ["VARCHAR"], "VARCHAR")
    con.create_function("xsd_year_bounds", xsd_year_bounds, ["VARCHAR", "VARCHAR"], "BIGINT[]")
    con.create_function("py_int", digits_value, ["VARCHAR"], "BIGINT")
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


def nt_terms(lines: str) -> str:
    """SELECT of ``line`` and ``t``, NT_LINE's groups of the line (struct s, p, o; each '' if it
    is not an N-Triples line), for each ``line`` of the query ``lines``. NT_LINE_IRIS answers
    the lines without a blank node, most of them, at a third of NT_LINE's cost."""
    return f"""
        SELECT line, CASE WHEN t.s <> '' THEN t
                          ELSE regexp_extract(line, {sql_string(NT_LINE)}, ['s', 'p', 'o']) END AS t
        FROM (SELECT line, regexp_extract(line, {sql_string(NT_LINE_IRIS)}, ['s', 'p', 'o']) AS t FROM ({lines}))"""


def _scan_wikidata(con: duckdb.DuckDBPyConnection, path: Path, out: Path) -> None:
    """wikidata.nt.gz -> wd_triples (p, s, o, kinds) sorted by p, s; wd_labels (@en, else @mul) sorted by label;
    wd_births (YEAR and comparison bounds of each P569) sorted by s. Every line is checked."""
    predicates = " ".join(
        f"WHEN {sql_string('<' + iri + '>')} THEN {sql_string(name)}" for iri, name in PREDICATES.items()
    )
    blank = sql_string(NT_BLANK)
    lines = f"SELECT line FROM {read_lines(path)} WHERE line IS NOT NULL AND NOT regexp_full_match(line, {blank})"
    with _reading(path):
        con.execute(f"""
            CREATE TABLE kept AS
            WITH terms AS ({nt_terms(lines)}), checked AS (
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
    # The works rule (kitab.sources.queries.SCHOLARLY_CLASSES): the store holds the main graph, as
    # WDQS serves it since the graph split; a scholarly article's P50 links are not kept, so it is
    # counted and listed as a work nowhere.
    scholarly = sql_list([WD + q for q in SCHOLARLY_CLASSES])
    con.execute(f"""
        CREATE TABLE scholarly AS SELECT DISTINCT s FROM kept
        WHERE (p = 'P31' AND o_kind = 'uri' AND o IN {scholarly}) OR p = {sql_string(SCHOLARLY_PROPERTY)}""")
    con.execute("DELETE FROM kept WHERE p = 'P50' AND s IN (SELECT s FROM scholarly)")
    _copy(
        con,
        "SELECT p, s, o, o_kind, o_lang, o_dt FROM kept WHERE p <> 'label' ORDER BY p, s, o",
        out / "wd_triples.parquet",
    )
    # the label of an item: English, else `mul` (what sql/sparql/*.rq select), with its language
    con.execute("""
        CREATE TABLE names AS
        WITH l AS (SELECT DISTINCT o AS label, s, o_lang AS lang FROM kept
                   WHERE p = 'label' AND o_kind = 'literal' AND o_lang IN ('en', 'mul'))
        SELECT * FROM l WHERE lang = 'en' OR s NOT IN (SELECT s FROM l WHERE lang = 'en')""")
    _copy(con, "SELECT label, s, lang FROM names ORDER BY label, s", out / "wd_labels.parquet")
    # works_by_titles' join, once: a lookup per batch then reads one table instead of joining
    # the labels with every P50 triple again (seconds per call at 100,000 writers)
    _copy(
        con,
        "SELECT DISTINCT l.label, l.s, t.o, t.o_kind, l.lang FROM names l JOIN kept t ON t.p = 'P50' AND t.s = l.s "
        "ORDER BY label, l.s, t.o",
        out / "wd_work_labels.parquet",
    )
    # work_records.rq's join, once: each work's P674 / P840 targets with their en and mul labels
    # (a target with two labels of one language gives a row per label, as SPARQL's join does)
    _copy(
        con,
        """
        SELECT t.s, t.p, t.o, t.o_kind, en.o AS label_en, mul.o AS label_mul
        FROM kept t
        LEFT JOIN kept en ON t.o_kind <> 'literal' AND en.p = 'label' AND en.s = t.o
                         AND en.o_kind = 'literal' AND en.o_lang = 'en'
        LEFT JOIN kept mul ON t.o_kind <> 'literal' AND mul.p = 'label' AND mul.s = t.o
                          AND mul.o_kind = 'literal' AND mul.o_lang = 'mul'
        WHERE t.p IN ('P674', 'P840')
        ORDER BY t.s, t.p, t.o, label_en, label_mul""",
        out / "wd_work_records.parquet",
    )
    # The common WikiData form (day precision or better, UTC midnight) in SQL; the rest in Python.
    fast = f"o_kind = 'literal' AND o_dt = {sql_string(XSD_DATETIME)} AND " + COMMON_DATETIME_SQL.format("o")
    year = COMMON_DATETIME_YEAR_SQL.format("o")
    _copy(
        con,
        f"""
        SELECT s, b[1] AS year, b[2] AS cmp_lo, b[3] AS cmp_hi FROM (
            SELECT s, CASE WHEN {fast} THEN [{year}, {year}, {year}]
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
                  FROM {read_ol(path)})
            WHERE {check_record(path)} IS NULL
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
                      FROM {read_ol(path)})
                WHERE {check_record(path)} IS NULL)
            GROUP BY work_key
        """)


def _scan_works(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """ol_works: one row per work key (the highest revision), with the fields of its search doc."""
    with _reading(path):
        con.execute(f"""
            CREATE TABLE ol_works AS
            SELECT key, {KEY_NUMBER.format("key")} AS key_num,
                   coalesce(j[3]::VARCHAR, '""') AS title, j[4]::VARCHAR AS subtitle,
                   coalesce(json_extract_string(j[6], '$[*].author.key'), []) AS author_refs,
                   nullif({YEAR_OF.format(JSON_STRING.format("j[5]"))}, 0) AS first_publish_date_year,
                   j[7]::VARCHAR AS person, j[8]::VARCHAR AS place
            FROM (SELECT *, json_extract(json, ['$.key', '$.type.key', '$.title', '$.subtitle',
                                                '$.first_publish_date', '$.authors',
                                                '$.subject_people', '$.subject_places']) AS j
                  FROM {read_ol(path)})
            WHERE {check_record(path)} IS NULL
            QUALIFY row_number() OVER (PARTITION BY key ORDER BY revision DESC, last_modified DESC) = 1
                AND json_extract_string(j[2], '$') = {sql_string(OL_WORK)}
        """)


def _join_works(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    """Work search docs exactly like OLIndex._work_doc (ol_works with its authors' names and its
    edition_facts), written per author as author_works, and the per-author work_count / top_work
    of OLIndex._author_doc."""
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
               e.years AS publish_year, e.languages AS language, w.person, w.place
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
               w.author_name, w.edition_count, w.first_publish_year, w.publish_year, w.language,
               w.person, w.place
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


def _write_keyed_tables(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    for table, key in KEYED.items():
        write_keyed(con, out, table, key)


class _Stopped(Exception):
    """Another chain of the build failed: this one stopped before its next query."""


class _StoppableCursor:
    """A chain's cursor that starts no query once the build is stopping. A chain whose sibling
    failed (a bad line) stops between its queries, not inside one: DuckDB's ``interrupt`` of a
    ``COPY`` with ``threads = 1`` once left the chain's thread waiting forever in
    ``TaskExecutor::DrainTasks`` (seen once in the test suite, in test_bad_input_names_the_file;
    the drain waits for tasks no thread runs: duckdb/duckdb#25564), and the build with it."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, stopping: threading.Event):
        self._cursor, self._stopping = cursor, stopping

    def _check(self) -> None:
        if self._stopping.is_set():
            raise _Stopped

    def execute(self, *args, **kwargs):
        self._check()
        return self._cursor.execute(*args, **kwargs)

    def sql(self, *args, **kwargs):
        self._check()
        return self._cursor.sql(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._cursor, name)


def build_cache(snapshot_dir: Path, out: Path, memory_limit: str = "1GB") -> dict[str, float]:
    """Scan the snapshot's four data files into the Parquet tables of ``out`` (an empty folder).
    Returns the seconds each step took. Each gzip file is read by one thread, so the scan runs as
    three chains on cursors of one scratch database: WikiData's file and Open Library's editions
    (the largest file) each beside the main chain (authors, works, then, once the editions are
    in, what joins them); the key indexes are written last. On two cores the chains share both
    cores to the end, where two chains (editions inside Open Library's) left one core idle once
    the shorter was done."""
    timings: dict[str, float] = {}
    scratch = out / ".scan"
    scratch.mkdir()
    con = _scan_connection(scratch, memory_limit)
    # The chains are the parallelism: one thread per query keeps each operator's memory to one
    # thread's share (three chains of two threads each ran out of the 1 GB limit at 100,000 writers)
    con.execute("SET threads = 1")

    def run(steps: list[tuple[str, Callable[[], None]]]) -> None:
        for name, step in steps:
            started = time.perf_counter()
            step()
            timings[name] = round(time.perf_counter() - started, 2)
            log.info("dump scan %s: %.1f s", name, timings[name])

    # the same scratch database; each chain's own tables (kept, scholarly, names; edition_facts)
    wikidata, editions = con.cursor(), con.cursor()
    stopping = threading.Event()
    try:
        with ThreadPoolExecutor(2, thread_name_prefix="kitab-scan") as pool:
            wd, ed = _StoppableCursor(wikidata, stopping), _StoppableCursor(editions, stopping)
            beside = {
                wikidata: pool.submit(
                    run, [("wikidata", lambda: _scan_wikidata(wd, snapshot_dir / WIKIDATA_FILE, out))]
                ),
                editions: pool.submit(run, [("editions", lambda: _scan_editions(ed, snapshot_dir / OL_EDITIONS_FILE))]),
            }
            try:
                run(
                    [
                        ("authors", lambda: _scan_authors(con, snapshot_dir / OL_AUTHORS_FILE)),
                        ("works", lambda: _scan_works(con, snapshot_dir / OL_WORKS_FILE)),
                    ]
                )
                beside[editions].result()  # (its error, if it failed)
                run(
                    [
                        ("works_join", lambda: _join_works(con, out)),
                        ("tokens", lambda: _write_tokens(con, scratch, out)),
                        ("authors_out", lambda: _write_authors(con, out)),
                    ]
                )
            except Exception:
                stopping.set()  # a failed build: its other chains stop before their next query
                raise
            except BaseException:
                stopping.set()  # a stopped build (Ctrl-C, SIGTERM): now, and a parent's SIGKILL
                for cursor in beside:  # follows 5 s later if a chain still hangs (prebuild.py)
                    cursor.interrupt()
                raise
            finally:
                # never leave a chain running on a closed connection; the main chain's error first
                errors = [future.exception() for future in beside.values()]
            for error in errors:
                if error is not None:
                    raise error
        run([("keyed", lambda: _write_keyed_tables(con, out))])  # (indexes WikiData's tables too)
    finally:
        wikidata.close()
        editions.close()
        con.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return timings
