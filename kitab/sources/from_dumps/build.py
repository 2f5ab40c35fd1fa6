"""``kitab snapshot from-dumps``: the published WikiData and Open Library dumps -> a snapshot folder.

One streaming pass per file (``scan.py``), then DuckDB joins the small filtered parts under a
memory limit: the humans with a listed occupation, born in or after ``min_birth_year``, that at
least one work names in P50, their works (every P50 of those works, their labels and P648),
and the Open Library records those can reach (P648 through the redirects, chains included, and
names). The result is an ordinary snapshot folder (``docs/snapshot.md``) that
``kitab refresh --source dump --snapshot DIR`` reads, with a manifest recording every input file
and the counts kept and skipped by reason.

Work files go to ``<out>.parts/`` (or ``work_dir``): a killed run resumes from the chunks already
finished there and writes the same bytes; they are removed after a successful run.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from kitab.core.errors import BadValue
from kitab.core.files import atomic_dir, sha256_file
from kitab.core.locking import refusing_lock
from kitab.core.outputs import write_manifest
from kitab.sources.from_dumps import inputs as dump_inputs
from kitab.sources.from_dumps.guard import COMMAND, as_of_date, check_out, memory_bytes
from kitab.sources.from_dumps.inputs import OL_ALL, DumpInput
from kitab.sources.from_dumps.scan import scan, worker_pool
from kitab.sources.from_dumps.wikidata import SKIP_REASONS
from kitab.sources.queries import WORKS_RULE
from kitab.sources.snapshot.format import (
    DATA_FILES,
    MANIFEST_FILE,
    OL_AUTHORS_FILE,
    OL_EDITIONS_FILE,
    OL_WORKS_FILE,
    RDFS_LABEL,
    WD,
    WDT,
    WIKIBASE_SITELINKS,
    WIKIDATA_FILE,
    deterministic_gzip,
    manifest_bytes,
)
from kitab.sources.snapshot.olindex import tokens

BUILDER_VERSION = "1"
MAX_REDIRECTS = 3  # as kitab.sources.openlibrary follows them
PREDICATE_IRIS = {
    "P31": f"<{WDT}P31>",
    "P106": f"<{WDT}P106>",
    "P569": f"<{WDT}P569>",
    "P648": f"<{WDT}P648>",
    "P50": f"<{WDT}P50>",
    "label": f"<{RDFS_LABEL}>",
    "sitelinks": f"<{WIKIBASE_SITELINKS}>",
}


class NoAuthorsError(BadValue):
    """The dumps gave no author the sampler could pick."""


@dataclass
class Settings:
    workers: int = 2
    memory_limit: str = "1GB"  # DuckDB's share; the scan itself holds ~ 2 * workers * chunk_bytes
    chunk_bytes: int = 32 << 20
    max_record: int = 32 << 20  # longer lines are skipped and counted (the longest real records are a few MB)
    min_birth_year: int = 1850
    min_works: int = 10
    max_works: int = 300
    as_of: str | None = None
    keep_parts: bool = False


def sample_occupations() -> list[int]:
    """The occupation item numbers of ``candidate_authors.rq``'s VALUES block (the one list the sampler uses)."""
    from kitab.sources.queries import SQL_DIR, occupations

    text = (Path(SQL_DIR) / "sparql" / "candidate_authors.rq").read_text(encoding="utf-8")
    return sorted(int(iri.rsplit("Q", 1)[1]) for iri in occupations(text) if iri.startswith(WD + "Q"))


def _sql_list(values) -> str:
    return ", ".join(str(int(v)) for v in values) or "NULL"


def from_dumps(
    wikidata: str | Path,
    openlibrary: str | Path,
    out: str | Path,
    settings: Settings | None = None,
    progress: Callable[[str], None] | None = None,
    stop_after: int | None = None,
    overwrite: bool = False,
) -> dict:
    """Build the snapshot folder ``out``; returns its manifest. See the module docstring.

    ``out`` must be new, empty, or (with ``overwrite``) an earlier snapshot of this builder
    (``guard.py``); one build per ``out`` at a time (a lock beside it)."""
    settings = settings or Settings()
    # every option and every input is checked before the first byte of a dump is scanned
    memory_bytes(settings.memory_limit)
    settings.as_of = as_of_date(settings.as_of)
    out = check_out(out, [wikidata, openlibrary], overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = out.parent / f".{out.name}.lock"
    work = out.with_name(out.name + ".parts")
    with refusing_lock(lock, f"--out {out}"):
        try:
            check_out(out, [wikidata, openlibrary], overwrite)  # again under the lock: another run may have written
            wd_input = dump_inputs.wikidata_input(wikidata)
            ol_inputs = dump_inputs.openlibrary_inputs(openlibrary)
            pool = worker_pool(settings.workers)  # one set of parsing processes for every file
            try:
                return _from_dumps(wd_input, ol_inputs, out, settings, progress, stop_after, pool)
            finally:
                if pool is not None:
                    pool.terminate()
                    pool.join()
        finally:
            _remove_empty(work)  # a failed run's finished chunks stay for the rerun; empty folders do not
            lock.unlink(missing_ok=True)  # (still held: a run that opened it now finds it taken, then gone)


def _remove_empty(folder: Path) -> None:
    """Remove ``folder`` and its subfolders when they hold no file."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir() and not p.is_symlink()), reverse=True):
        with contextlib.suppress(OSError):
            sub.rmdir()
    with contextlib.suppress(OSError):
        folder.rmdir()


def _from_dumps(wd_input, ol_inputs, out: Path, settings: Settings, progress, stop_after, pool) -> dict:
    started = time.monotonic()
    work = out.with_name(out.name + ".parts")
    work.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda text: None)
    max_year = int((settings.as_of or wd_input.dump_date or "9999")[:4])
    occupations = sample_occupations()
    report: dict[str, dict] = {}

    # 1. WikiData: one pass, rows to parts
    ctx = {
        "occupations": set(occupations),
        "min_birth_year": settings.min_birth_year,
        "max_year": max_year,
        "max_record": settings.max_record,
    }
    fn = "kitab.sources.from_dumps.wikidata:" + (
        "json_chunk" if wd_input.kind == dump_inputs.WIKIDATA_JSON else "nt_chunk"
    )
    say(f"scanning {wd_input.path.name} ({wd_input.kind})")
    counts = scan(
        wd_input,
        fn,
        ctx,
        work / "wikidata",
        pool=pool,
        workers=settings.workers,
        chunk_bytes=settings.chunk_bytes,
        max_record=settings.max_record,
        progress=progress,
        stop_after=stop_after,
    )
    report[wd_input.path.name] = dict(counts)
    if stop_after is not None:
        return {"stopped": True, "counts": report}

    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{settings.memory_limit}'")
    con.execute("SET temp_directory = " + _sql_text(str(work / "duckdb.tmp")))
    con.execute(f"SET threads = {max(1, settings.workers)}")
    con.execute("SET preserve_insertion_order = false")
    parts = sorted((work / "wikidata").glob("part-*.parquet"))
    if not parts:
        _no_authors(wd_input, "no human with a listed occupation and no P50 link was found")
    if not any(
        p
        for p in [con.execute(f"SELECT 1 FROM read_parquet({_paths(parts)}) WHERE p = 'sitelinks' LIMIT 1").fetchone()]
    ):
        raise dump_inputs.DumpInputError(
            f"{wd_input.path}: no sitelink counts anywhere in the file: authors "
            "cannot be ranked; use the full latest-all.json.gz"
        )
    # an item's N-Triples term is made here from its number (the parts store only the number)
    con.execute(
        f"CREATE VIEW t AS SELECT s, p::VARCHAR AS p, coalesce(o, '<{WD}Q' || oq || '>') AS o, oq, year, v "
        f"FROM read_parquet({_paths(parts)})"
    )
    con.execute(f"""
        CREATE TABLE humans AS
        SELECT s FROM t WHERE p = 'P31' AND oq = 5
        INTERSECT SELECT s FROM t WHERE p = 'P106' AND oq IN ({_sql_list(occupations)})
        INTERSECT SELECT s FROM t WHERE p = 'P569' GROUP BY s HAVING max(year) >= {settings.min_birth_year}""")
    # the works rule (kitab.sources.queries.WORKS_RULE): a scholarly article is no work, as on WDQS
    con.execute("CREATE TABLE scholarly AS SELECT DISTINCT s FROM t WHERE p = 'scholarly'")
    con.execute(
        "CREATE TABLE links AS SELECT DISTINCT s, oq FROM t WHERE p = 'P50' AND oq IN (SELECT s FROM humans) "
        "AND s NOT IN (SELECT s FROM scholarly)"
    )
    con.execute("CREATE TABLE authors AS SELECT DISTINCT oq AS s FROM links")
    con.execute("CREATE TABLE works AS SELECT DISTINCT s FROM links")
    eligible = con.execute(f"""
        SELECT count(*) FROM (SELECT oq, count(*) n FROM links GROUP BY oq)
        WHERE n BETWEEN {settings.min_works} AND {settings.max_works}""").fetchone()[0]
    if eligible == 0:
        _no_authors(
            wd_input,
            f"no human with a listed occupation, born {settings.min_birth_year} or later, has "
            f"{settings.min_works}-{settings.max_works} works naming them in P50",
        )
    wd_counts = dict(
        zip(
            ("humans", "authors", "works", "links"),
            con.execute(
                "SELECT (SELECT count(*) FROM humans), (SELECT count(*) FROM authors), (SELECT count(*) FROM works), "
                "(SELECT count(*) FROM links)"
            ).fetchone(),
        )
    )
    wd_counts["eligible_authors"] = eligible
    wd_counts["scholarly_works_left_out"] = con.execute(
        "SELECT count(DISTINCT s) FROM t WHERE p = 'P50' AND oq IN (SELECT s FROM humans) "
        "AND s IN (SELECT s FROM scholarly)"
    ).fetchone()[0]

    predicate = "CASE p " + " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in PREDICATE_IRIS.items()) + " END"
    with atomic_dir(out) as folder:
        n_triples = _write_triples(con, folder / WIKIDATA_FILE, predicate)
        wd_counts["triples"] = n_triples

        # 2. Open Library: redirects, authors, works, editions; each pass knows what the last kept
        wanted = {
            row[0]
            for row in con.execute(
                "SELECT DISTINCT v FROM t WHERE p = 'P648' AND s IN (SELECT s FROM authors)"
            ).fetchall()
        }
        wanted_keys = {f"/authors/{v}" for v in wanted if re.fullmatch(r"OL\d+A", v)}
        name_index: dict[str, list[frozenset]] = {}
        for (label,) in con.execute(
            "SELECT DISTINCT v FROM t WHERE p = 'label' AND s IN (SELECT s FROM authors)"
        ).fetchall():
            bag = frozenset(tokens(label))
            if bag:
                name_index.setdefault(max(bag, key=len), []).append(bag)
        by_kind = {item.kind: item for item in ol_inputs}
        base_ctx = {"max_record": settings.max_record}
        common = dict(
            pool=pool,
            workers=settings.workers,
            chunk_bytes=settings.chunk_bytes,
            max_record=settings.max_record,
            progress=progress,
        )

        def ol_scan(kind: str, fn: str, ctx: dict) -> tuple[Path, Counter]:
            item = by_kind.get(kind) or by_kind[OL_ALL]
            if kind not in by_kind:
                ctx = {
                    **ctx,
                    "type_prefix": {
                        "redirects": b"/type/redirect\t",
                        "authors": b"/type/author\t",
                        "works": b"/type/work\t",
                        "editions": b"/type/edition\t",
                    }[kind],
                }
            say(f"scanning {item.path.name} ({kind})")
            parts_dir = work / f"ol-{kind}"
            result = scan(item, "kitab.sources.from_dumps.openlibrary:" + fn, {**base_ctx, **ctx}, parts_dir, **common)
            report.setdefault(item.path.name, {})
            report[item.path.name][kind] = dict(result)
            return parts_dir, result

        chain_lines: list[str] = []
        if "redirects" in by_kind or OL_ALL in by_kind:
            redirect_dir, _ = ol_scan("redirects", "redirects_chunk", {})
            redirect_parts = sorted(redirect_dir.glob("part-*.parquet"))
            if redirect_parts:
                follow = {
                    src: (dst, line)
                    for src, dst, line in con.execute(
                        f"SELECT src, dst, line FROM read_parquet({_paths(redirect_parts)})"
                    ).fetchall()
                }
                resolved = set()
                for key in sorted(wanted_keys):
                    for _ in range(MAX_REDIRECTS):
                        if key not in follow:
                            break
                        target, line = follow[key]
                        chain_lines.append(line)
                        key = target
                    resolved.add(key)
                wanted_keys |= resolved
                del follow
        authors_dir, _ = ol_scan("authors", "authors_chunk", {"wanted_authors": wanted_keys, "name_index": name_index})
        kept_authors = _kept_keys(authors_dir, 1)
        works_dir, _ = ol_scan("works", "works_chunk", {"kept_authors": {k.encode() for k in kept_authors}})
        kept_works = _kept_keys(works_dir, 1)
        editions_dir, _ = ol_scan("editions", "editions_chunk", {"kept_works": {k.encode() for k in kept_works}})
        chain_lines = sorted(set(chain_lines))
        ol_counts = {
            "authors": _concat(authors_dir, folder / OL_AUTHORS_FILE, chain_lines),
            "author_redirects": len(chain_lines),
            "works": _concat(works_dir, folder / OL_WORKS_FILE),
            "editions": _concat(editions_dir, folder / OL_EDITIONS_FILE),
        }
        con.close()
        manifest = _manifest(folder, wd_input, ol_inputs, report, wd_counts, ol_counts, settings, occupations)
        (folder / MANIFEST_FILE).write_bytes(manifest_bytes(manifest))
        write_manifest(folder, COMMAND)  # the output-path rule's manifest: what --overwrite may replace
    if not settings.keep_parts:
        shutil.rmtree(work, ignore_errors=True)
    manifest["_seconds"] = round(time.monotonic() - started, 1)
    return manifest


def _no_authors(item: DumpInput, why: str) -> None:
    raise NoAuthorsError(f"{item.path}: 0 eligible authors: {why}; is this the full WikiData dump?")


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _paths(parts: list[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in parts) + "]"


def _write_triples(con: duckdb.DuckDBPyConnection, path: Path, predicate: str) -> int:
    """The snapshot's N-Triples: sorted, unique lines (as the contract says), streamed out of DuckDB."""
    cursor = con.execute(f"""
        SELECT DISTINCT line FROM (
            SELECT '<{WD}Q' || s || '> ' || {predicate} || ' ' || o || ' .' AS line FROM t
            WHERE s IN (SELECT s FROM authors) AND p IN ('P31', 'P106', 'P569', 'P648', 'label', 'sitelinks')
            UNION ALL
            SELECT '<{WD}Q' || s || '> ' || {predicate} || ' ' || o || ' .' FROM t
            WHERE s IN (SELECT s FROM works) AND p IN ('P50', 'label', 'P648'))
        ORDER BY line""")
    n = 0
    with deterministic_gzip(path) as text:
        while batch := cursor.fetchmany(100_000):
            text.write("".join(line + "\n" for (line,) in batch))
            n += len(batch)
    return n


def _kept_keys(parts_dir: Path, field: int) -> set[str]:
    keys = set()
    for part in sorted(parts_dir.glob("part-*.txt")):
        with open(part, "rb") as handle:
            for line in handle:
                keys.add(line.split(b"\t", 2)[field].decode())
    return keys


def _concat(parts_dir: Path, path: Path, extra: list[str] = ()) -> int:
    """The kept lines of every chunk, in file order, into one deterministic gzip."""
    n = 0
    with deterministic_gzip(path) as text:
        for part in sorted(parts_dir.glob("part-*.txt")):
            with open(part, encoding="utf-8", newline="\n") as handle:
                for line in handle:
                    text.write(line)
                    n += 1
        for line in extra:
            text.write(line + "\n")
    return n


def _manifest(
    folder: Path,
    wd_input: DumpInput,
    ol_inputs: list[DumpInput],
    report: dict,
    wd_counts: dict,
    ol_counts: dict,
    settings: Settings,
    occupations: list[int],
) -> dict:
    checksums = {name: sha256_file(folder / name) for name in DATA_FILES}
    digest = hashlib.sha256("".join(f"{name}:{checksums[name]}\n" for name in DATA_FILES).encode()).hexdigest()
    as_of = settings.as_of or wd_input.dump_date
    created = datetime.fromisoformat(as_of[:10]).replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    skipped: Counter = Counter()
    for counts in report.values():
        for key, value in counts.items():
            if isinstance(value, dict):
                for reason in SKIP_REASONS:
                    skipped[f"{key}:{reason}"] += value.get(reason, 0)
            elif key in SKIP_REASONS:
                skipped[f"wikidata:{key}"] += value
    return {
        "snapshot_id": f"dump-{digest[:12]}",
        "created_at": created,
        "generator": {"module": __name__, "version": BUILDER_VERSION},
        "sources": {
            "wikidata": {
                "what": f"WikiData dump {wd_input.path.name} ({wd_input.kind}), filtered by kitab snapshot from-dumps",
                "url": "https://dumps.wikimedia.org/wikidatawiki/entities/",
                "license": "CC0 1.0",
            },
            "openlibrary": {
                "what": "Open Library dumps "
                + ", ".join(i.path.name for i in ol_inputs)
                + ", filtered to what the sampled authors reach",
                "url": "https://openlibrary.org/developers/dumps",
                "license": "CC0 1.0",
            },
            "note": "public dumps, not generated: no id in this snapshot is synthetic",
        },
        "inputs": [wd_input.describe()] + [i.describe() for i in ol_inputs],
        "filter": {
            "min_birth_year": settings.min_birth_year,
            "occupations": [f"Q{q}" for q in occupations],
            "eligible_works": [settings.min_works, settings.max_works],
            "works_rule": WORKS_RULE,
            "max_record_bytes": settings.max_record,
        },
        "kept": {"wikidata": wd_counts, "openlibrary": ol_counts},
        "skipped": {k: v for k, v in sorted(skipped.items()) if v},
        # the counts of chunks resumed from a killed run come back in another key order:
        # manifest_bytes sorts every level, so the manifest is the same bytes either way
        "scan": report,
        "checksums": checksums,
        "counts": {
            **{name: (folder / name).stat().st_size for name in DATA_FILES},
            "bytes": sum((folder / name).stat().st_size for name in DATA_FILES),
        },
    }
