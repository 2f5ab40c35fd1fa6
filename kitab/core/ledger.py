"""A warehouse's files and the ledger that commits them: the layout on disk, the ledger rows,
the table files they name, and the checks of those files against them.

Layout (contract): ``<root>/tables/<table>/release=<id>/`` (hive-style, so every view has a
``release`` column). A table's file in a release is named by its content,
``part-<first 16 hex of its sha256>.parquet``; the release's ledger row is
``tables/releases/release=<id>/part-0.parquet``, and writing it (temp file + rename) is the
commit (kitab.core.release_commit). The row's ``checksums`` name exactly the files that belong
to the release; any other file in its partitions is not part of it. Reading the files through
views is kitab.core.warehouse.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kitab.core.errors import KitabError
from kitab.core.files import sha256_file, write_named, write_via_temp
from kitab.core.row_digest import DIGESTS, digests_of, edited_fields
from kitab.core.schemas import STORED_RELEASE, arrow_schema, known_tables, table_spec, to_arrow

# The ledger row's file: its presence is what makes a release committed. Warehouses written
# before files were named by content used this name for every table (still read, see
# WarehouseFiles.committed_file).
LEDGER_FILE = "part-0.parquet"
STAMPS = ".stamps"

# Tables kept beside a release but not part of it: written after its commit by their own
# command (`kitab evaluate`: each evaluation task's result table, kitab/release/task.py), so
# its ledger row does not name them. The views read their file in every committed release,
# and a rebuild of the release keeps it (each evaluation row records the sha256 of what it
# scored). Marked "annex": true in their schema, so a new task adds its table there only.
ANNEX_TABLES = tuple(table for table in known_tables() if table_spec(table).get("annex"))


# A release id is a folder name, a hive partition value and a Hub tag: keep it plain.
_RELEASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def validate_release_id(release: str) -> str:
    if not _RELEASE_ID.match(release or ""):
        raise ValueError(
            f"release id {release!r}: use letters, digits, '.', '_' and '-' "
            "(starting with a letter or digit), e.g. 2026.11.21-s42"
        )
    return release


def table_file_name(sha256: str) -> str:
    """A table file's name in its partition: by content, so a rebuilt release's new files
    never overwrite the committed ones, and the same rows keep the same name and bytes."""
    return f"part-{sha256[:16]}.parquet"


@dataclass(frozen=True)
class WrittenTable:
    table: str
    path: Path
    rows: int
    sha256: str


@dataclass(frozen=True)
class FileCheck:
    """One committed file against the ledger; ``problem`` is None when it matches."""

    release: str
    table: str
    path: Path
    problem: str | None = None


def _sort_key(table: str):
    keys = table_spec(table).get("key", [])
    return lambda row: tuple((row.get(k) is None, row.get(k) if row.get(k) is not None else "") for k in keys)


def _stat(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


class LedgerRowEdited(KitabError):
    """A ledger row whose fields are not the ones its digests were written for (row_digest):
    ``fields`` names them; ``row`` is what the file holds now (never to be trusted)."""

    def __init__(self, release: str, fields: list[str], row: dict):
        super().__init__(f"the ledger row of release {release} {edited_problem(fields)}; run `kitab verify`")
        self.release, self.fields, self.row = release, fields, row


def edited_problem(fields: list[str]) -> str:
    return f"was edited ({', '.join(fields)}): it no longer matches the digests written at its commit"


UNSEALED = "is unsealed (written before ledger rows carried digests, so an edit cannot be told)"
SEAL_HINT = "`kitab verify --seal` checks its files and seals it"
_warned_unsealed: set[tuple[Path, str]] = set()


def sealed(row: dict) -> dict:
    """``row`` with its ``digests`` (kitab.core.row_digest) over every column of the ledger's
    schema: every write of a ledger row goes through this (release_commit.commit)."""
    fields = arrow_schema("releases").names
    return {**row, DIGESTS: digests_of({f: row.get(f) for f in fields}, fields)}


def row_check(check: FileCheck) -> bool:
    """Whether ``check`` is about a readable ledger row itself (edited, unsealed), not a file."""
    return check.table == "releases" and (check.problem == UNSEALED or (check.problem or "").startswith("was edited"))


def describe_problems(problems: list[FileCheck]) -> str:
    files = [c for c in problems if not row_check(c)]
    parts = [f"the ledger row of release {c.release} {c.problem}" for c in problems if row_check(c)][:3]
    if files:
        named = ", ".join(f"{c.release}/{c.table} ({c.problem})" for c in files[:3])
        more = f" and {len(files) - 3} more" if len(files) > 3 else ""
        parts.insert(0, f"{len(files)} committed file(s) no longer match the ledger: {named}{more}")
    only_unsealed = all(c.problem == UNSEALED for c in problems if row_check(c)) and not files
    return "; ".join(parts) + ("; " + SEAL_HINT if only_unsealed else "; run `kitab verify`")


class WarehouseFiles:
    """The files of a warehouse at ``root`` and its ledger (kitab.core.warehouse.Warehouse
    adds reading them)."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.tables_dir = self.root / "tables"

    # -- writing -----------------------------------------------------------------------
    def partition(self, table: str, release: str) -> Path:
        return self.tables_dir / table / f"release={validate_release_id(release)}"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """One author at a time: the ledger check and the commit must not interleave."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _write_named(self, table: str, release: str, write: Callable[[str], int]) -> WrittenTable:
        """``write(tmp)`` fills a temp file in the partition and returns its rows; the file is
        then renamed to its content name (a reader never sees half a file)."""
        shas = []

        def content_name(tmp: Path) -> str:
            shas.append(sha256_file(tmp))
            return table_file_name(shas[0])

        target, rows = write_named(self.partition(table, release), write, content_name)
        return WrittenTable(table, target, rows, shas[0])

    def write_table(self, table: str, release: str, rows: list[dict]) -> WrittenTable:
        """Rows in key order -> one Parquet file, atomically; same rows -> same bytes."""
        arrow = to_arrow(table, sorted(rows, key=_sort_key(table)))

        def write(tmp: str) -> int:
            pq.write_table(arrow, tmp, compression="zstd")
            return arrow.num_rows

        return self._write_named(table, release, write)

    def write_annex(
        self, table: str, release: str, rows_file: Path, replaced: dict[str, object], defaults: dict | None = None
    ) -> WrittenTable:
        """The annex ``table``'s new file in ``release`` (call it under :meth:`lock`): the rows of
        its current file except those whose columns equal ``replaced`` (an earlier run of the
        same evaluation), and in their place the rows of ``rows_file`` (:func:`write_rows`: key
        order, every one with ``replaced``'s values), streamed a row group at a time, so memory
        holds one batch, never the table. ``defaults``: values of columns an older file lacks.
        The current file is in key order (every writer sorts), so the new rows go where their
        key prefix falls."""
        schema = arrow_schema(table)
        prefix = [k for k in table_spec(table).get("key", []) if k in replaced]
        mine = tuple(replaced[k] for k in prefix)
        current = self.annex_file(table, release)

        def write(tmp: str) -> int:
            n = 0
            with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
                kept = _annex_batches(current, schema, defaults or {}) if current else iter(())
                later: list[pa.RecordBatch] = []  # the kept batch the new rows go inside, its second part
                for batch in kept:
                    keys = list(zip(*(batch.column(k).to_pylist() for k in prefix)))
                    before = [i for i, key in enumerate(keys) if key < mine]
                    after = [i for i, key in enumerate(keys) if key > mine]
                    if before:
                        writer.write_batch(batch.take(before))  # (never an empty row group)
                        n += len(before)
                    if after:
                        later.append(batch.take(after))
                        break
                for group in _row_groups(rows_file):  # as written: a few MB each
                    writer.write_table(group.cast(schema))  # (Parquet's units and list names back to the schema's)
                    n += group.num_rows
                for batch in itertools.chain(later, kept):
                    keys = list(zip(*(batch.column(k).to_pylist() for k in prefix)))
                    batch = batch.take([i for i, key in enumerate(keys) if key != mine])
                    if batch.num_rows:
                        writer.write_batch(batch)
                        n += batch.num_rows
            return n

        return self._write_named(table, release, write)

    def write_parts(self, table: str, release: str, parts: list) -> WrittenTable:
        """Parquet parts of one table (kitab.core.refs.TableRef, from the pipeline's batches) ->
        its file in this warehouse, in key order, in bounded memory (kitab.core.external_sort).
        Ties on the key keep the parts' order, so the bytes are those of :meth:`write_table`
        over the concatenated rows."""
        from kitab.core.external_sort import write_sorted

        def write(tmp: str) -> int:
            return write_sorted(
                parts,
                table_spec(table).get("key", []),
                table,
                tmp,
                arrow_schema(table),
                spill_dir=self.root / ".sort_tmp",
            ).rows

        return self._write_named(table, release, write)

    def stamp(self, release: str) -> None:
        """Record size, mtime and inode of the release's committed files, so reads can tell
        cheaply that a file was rewritten since (and hash only that one)."""
        stamps = {
            p.relative_to(self.root).as_posix(): _stat(p) for p in self.committed_files(release).values() if p.exists()
        }
        text = json.dumps(stamps, sort_keys=True) + "\n"

        def write(tmp: str) -> None:
            Path(tmp).write_text(text)

        write_via_temp(self.root / STAMPS / f"{release}.json", write)

    # -- the ledger --------------------------------------------------------------------
    def committed_releases(self) -> list[str]:
        base = self.tables_dir / "releases"
        if not base.exists():
            return []
        return sorted(p.name.split("=", 1)[1] for p in base.glob("release=*") if (p / LEDGER_FILE).exists())

    def ledger_row(self, release: str, *, unsealed: str = "warn") -> dict:
        """The release's row of the ``releases`` ledger (without the ``release`` column), checked
        against its digests: a row edited since its commit raises LedgerRowEdited (one line
        naming the fields). ``unsealed``, for a row without digests (an older warehouse):
        ``warn`` (one line on stderr, once per process), ``allow`` (the caller says it) or
        ``refuse`` (KitabError)."""
        row = self._read_ledger_row(release)
        edited = edited_fields(row)
        if edited:
            raise LedgerRowEdited(release, edited, row)
        if edited is None and unsealed != "allow":
            message = f"the ledger row of release {release} {UNSEALED}"
            if unsealed == "refuse":
                raise KitabError(f"{message}; {SEAL_HINT}")
            if (self.root, release) not in _warned_unsealed:
                _warned_unsealed.add((self.root, release))
                print(f"kitab: warning: {message}; {SEAL_HINT}", file=sys.stderr)
        return row

    def row_problem(self, release: str, row: dict | None = None) -> str | None:
        """What is wrong with the release's ledger row itself (edited, unsealed), or None."""
        row = self._read_ledger_row(release) if row is None else row
        edited = edited_fields(row)
        return UNSEALED if edited is None else edited_problem(edited) if edited else None

    def _read_ledger_row(self, release: str) -> dict:
        path = self.partition("releases", release) / LEDGER_FILE
        try:
            rows = pq.read_table(path).to_pylist()
        except (OSError, pa.ArrowException) as exc:
            raise KitabError(f"release {release}: ledger file {path} is unreadable ({exc})") from exc
        # a sealed row whose release_id was edited is an edit (its digests say which field)
        if len(rows) != 1 or (rows[0].get(STORED_RELEASE) != release and not edited_fields(rows[0])):
            raise KitabError(f"release {release}: ledger file {path} holds {len(rows)} rows, not this release's one")
        row = rows[0]
        if row.get("release") == release and "release" not in arrow_schema("releases").names:
            del row["release"]  # the partition's column, which DuckDB adds when it rewrites the file
        return row

    def committed_file(self, table: str, release: str, sha256: str) -> Path:
        path = self.partition(table, release) / table_file_name(sha256)
        legacy = self.partition(table, release) / LEDGER_FILE
        return legacy if not path.exists() and legacy.exists() else path

    def committed_files(self, release: str) -> dict[str, Path]:
        """Table -> the file of it that belongs to the committed ``release`` (per the ledger)."""
        checksums = json.loads(self.ledger_row(release)["checksums"])
        return {table: self.committed_file(table, release, sha) for table, sha in sorted(checksums.items())}

    def annex_file(self, table: str, release: str) -> Path | None:
        """The current file of an annex table (ANNEX_TABLES) in ``release``: the newest, if a
        crash between writing a new one and removing the old left two."""
        folder = self.partition(table, release)
        files = [p for p in folder.glob("part-*.parquet")] if folder.exists() else []
        return max(files, key=lambda p: (p.stat().st_mtime_ns, p.name)) if files else None

    def _files(self, table: str, release: str) -> Path | None:
        if table == "releases":
            return self.partition("releases", release) / LEDGER_FILE
        if table in ANNEX_TABLES:
            return self.annex_file(table, release)
        return self.committed_files(release).get(table)

    def check_files(
        self, releases: list[str] | None = None, *, full: bool = True, rows: dict[str, dict] | None = None
    ) -> list[FileCheck]:
        """Every committed file of ``releases`` (default: all) against the ledger: missing,
        or sha256 / row count different from the row's ``checksums`` / ``counts``. ``full``
        hashes every file; otherwise only files whose size, mtime or inode changed since the
        commit's stamp (or that have no stamp) are hashed: cheap enough for every read, and a
        file rewritten in place (e.g. by COPY) always gets a new mtime and inode. ``rows``:
        ledger rows already read (a reader's snapshot). Over all releases, table files of a
        release without a ledger row (a deleted ledger file, a publish that crashed before
        its commit) are a problem too."""
        checks = []
        for release in self.committed_releases() if releases is None else releases:
            ledger_path = self.partition("releases", release) / LEDGER_FILE
            try:
                row = rows[release] if rows and release in rows else self._read_ledger_row(release)
            except KitabError as exc:
                checks.append(FileCheck(release, "releases", ledger_path, str(exc)))
                continue
            checks.append(FileCheck(release, "releases", ledger_path, self.row_problem(release, row)))
            if set(edited_fields(row) or ()) & {"counts", "checksums", DIGESTS}:
                continue  # which files it commits is not known: that row's one line says it
            counts, checksums = json.loads(row["counts"]), json.loads(row["checksums"])
            stamps = {} if full else self._stamps(release)
            for table, sha in sorted(checksums.items()):
                path = self.committed_file(table, release, sha)
                problem = None
                if not path.exists():
                    problem = "missing"
                elif stamps.get(path.relative_to(self.root).as_posix()) != _stat(path):
                    actual = sha256_file(path)
                    if actual != sha:
                        problem = f"sha256 {actual[:16]}…, ledger {sha[:16]}…"
                        with contextlib.suppress(OSError, pa.ArrowException):
                            found = pq.ParquetFile(path).metadata.num_rows
                            if found != counts.get(table):
                                problem += f"; {found} rows, ledger {counts.get(table)}"
                checks.append(FileCheck(release, table, path, problem))
        if releases is None:
            committed = set(self.committed_releases())
            for folder in sorted(self.tables_dir.glob("*/release=*")) if self.tables_dir.exists() else []:
                release = folder.name.split("=", 1)[1]
                files = [p for p in folder.glob("*.parquet") if p.is_file()]
                if release not in committed and files:
                    checks.append(
                        FileCheck(
                            release,
                            folder.parent.name,
                            folder,
                            f"{len(files)} file(s) of a release with no ledger row (ledger "
                            "deleted, or a publish that crashed before its commit)",
                        )
                    )
        return checks

    def _stamps(self, release: str) -> dict:
        try:
            return json.loads((self.root / STAMPS / f"{release}.json").read_text())
        except (OSError, ValueError):
            return {}  # none recorded (older warehouse, or a crash right after the commit): hash

    def view_files(self, releases: list[str], rows: dict[str, dict] | None = None) -> dict[str, list[Path]]:
        """Table -> the committed files of ``releases`` (what the views read), per the ledger
        rows (``rows``: already read). A file that is missing is listed all the same: reading
        it fails, it is never an empty table (:meth:`connect` makes a damaged table's view an
        error)."""
        files: dict[str, list[Path]] = {table: [] for table in known_tables()}
        for release in releases:
            files.setdefault("releases", []).append(self.partition("releases", release) / LEDGER_FILE)
            checksums = json.loads(
                (rows[release] if rows and release in rows else self.ledger_row(release))["checksums"]
            )
            for table, sha in sorted(checksums.items()):
                files.setdefault(table, []).append(self.committed_file(table, release, sha))
            for table in ANNEX_TABLES:
                if (path := self.annex_file(table, release)) is not None:
                    files.setdefault(table, []).append(path)
        return files


# an annex file's row groups (kitab evaluate): at most this many rows, and a group ends once its
# text (answers, title lists) passes ANNEX_BATCH_CHARS, so a batch of long answers stays a few MB
ANNEX_BATCH = 4096
ANNEX_BATCH_CHARS = 8_000_000


def _chars(row: dict) -> int:
    """About how much text a row holds: its strings and lists of strings."""
    n = 0
    for value in row.values():
        if isinstance(value, str):
            n += len(value)
        elif isinstance(value, list):
            n += sum(len(v) + 8 for v in value if isinstance(v, str))
    return n


def write_rows(table: str, rows: Iterable[dict], path: str | Path) -> int:
    """``rows`` (dicts, in key order) -> a Parquet file of ``table``'s schema at ``path``, a
    batch (ANNEX_BATCH rows or ANNEX_BATCH_CHARS of text) at a time: the rows are never all in
    memory. Returns how many."""
    n = 0
    with pq.ParquetWriter(str(path), arrow_schema(table), compression="zstd") as writer:
        chunk: list[dict] = []
        size = 0
        for row in rows:
            chunk.append(row)
            size += _chars(row)
            if len(chunk) >= ANNEX_BATCH or size >= ANNEX_BATCH_CHARS:
                writer.write_table(to_arrow(table, chunk))
                n, chunk, size = n + len(chunk), [], 0
        if chunk:
            writer.write_table(to_arrow(table, chunk))
            n += len(chunk)
    return n


def _row_groups(path: Path) -> Iterator[pa.Table]:
    """A Parquet file's row groups in order, one in memory at a time."""
    file = pq.ParquetFile(path)
    for i in range(file.num_row_groups):
        yield file.read_row_group(i)


def _annex_batches(path: Path, schema: pa.Schema, defaults: dict) -> Iterator[pa.RecordBatch]:
    """The rows of an annex file in ``schema`` (a column an older file lacks: its default, else
    null), a row group at a time (a file written before kitab evaluate wrote in batches is one
    row group: read whole)."""
    for group in _row_groups(path):
        for batch in group.to_batches():
            columns = []
            for field in schema:
                if field.name in batch.schema.names:
                    columns.append(batch.column(field.name).cast(field.type))
                else:
                    columns.append(pa.array([defaults.get(field.name)] * batch.num_rows, field.type))
            yield pa.RecordBatch.from_arrays(columns, schema=schema)
