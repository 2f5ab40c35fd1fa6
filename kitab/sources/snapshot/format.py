"""The snapshot format: file names, N-Triples terms, Open Library dump lines, the manifest.

A snapshot is a folder in the services' own public formats (see ``docs/snapshot.md``):
``wikidata.nt.gz`` (N-Triples, WikiData IRIs), ``ol_dump_{authors,works,editions}.txt.gz``
(Open Library dump lines ``type<TAB>key<TAB>revision<TAB>last_modified<TAB>json``) and
``MANIFEST.json``. This module is the only place that knows how those bytes look; everything
else reads and writes through it.

Writes are atomic (temp file, then ``os.replace``) and gzip output is deterministic (mtime 0,
no file name in the header), so the same content always gives the same bytes.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from kitab.core.errors import BadValue
from kitab.core.files import sha256_file

# --- file names -------------------------------------------------------------------------

WIKIDATA_FILE = "wikidata.nt.gz"
OL_AUTHORS_FILE = "ol_dump_authors.txt.gz"
OL_WORKS_FILE = "ol_dump_works.txt.gz"
OL_EDITIONS_FILE = "ol_dump_editions.txt.gz"
MANIFEST_FILE = "MANIFEST.json"
DATA_FILES = (WIKIDATA_FILE, OL_AUTHORS_FILE, OL_WORKS_FILE, OL_EDITIONS_FILE)

# --- IRIs -------------------------------------------------------------------------------

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
WIKIBASE_SITELINKS = "http://wikiba.se/ontology#sitelinks"
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"

# The prefixes WDQS predeclares, so queries written for WDQS run here unchanged.
WDQS_PREFIXES = {
    "wd": WD,
    "wdt": WDT,
    "wikibase": "http://wikiba.se/ontology#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "schema": "http://schema.org/",
}

# --- Open Library record types ----------------------------------------------------------

OL_AUTHOR = "/type/author"
OL_WORK = "/type/work"
OL_EDITION = "/type/edition"
OL_REDIRECT = "/type/redirect"


class SnapshotFormatError(BadValue):
    """A snapshot file is missing, unreadable or does not follow the format; the message names
    the file (and the line where known)."""


# --- N-Triples terms --------------------------------------------------------------------

_NT_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})
_NOT_IN_IRI = re.compile(r'[<>"{}|^`\\\x00-\x20]')


def iri(value: str) -> str:
    """An IRI term: ``<value>``."""
    if _NOT_IN_IRI.search(value):
        raise ValueError(f"not a valid IRI for N-Triples: {value!r}")
    return f"<{value}>"


def wd(qid: str) -> str:
    """The IRI term of a WikiData item, e.g. ``wd("Q5")``."""
    return iri(WD + qid)


def wdt(pid: str) -> str:
    """The IRI term of a WikiData direct property, e.g. ``wdt("P31")``."""
    return iri(WDT + pid)


def literal(value: str, *, lang: str | None = None, datatype: str | None = None) -> str:
    """A literal term; non-ASCII stays as UTF-8 (N-Triples 1.1), quotes and newlines are escaped."""
    if lang and datatype:
        raise ValueError("a literal has a language tag or a datatype, not both")
    text = '"' + value.translate(_NT_ESCAPES) + '"'
    if lang:
        return f"{text}@{lang}"
    if datatype:
        return f"{text}^^{iri(datatype)}"
    return text


def date_literal(year: int, month: int = 1, day: int = 1) -> str:
    """A WikiData time value as WDQS returns it (year precision is written as January 1st)."""
    return literal(f"{year:04d}-{month:02d}-{day:02d}T00:00:00Z", datatype=XSD_DATETIME)


def integer_literal(value: int) -> str:
    return literal(str(value), datatype=XSD_INTEGER)


def triple(subject: str, predicate: str, obj: str) -> str:
    """One N-Triples line (without the newline) from three already-formatted terms."""
    return f"{subject} {predicate} {obj} ."


# --- Open Library dump lines ------------------------------------------------------------


def ol_dump_line(record_type: str, key: str, revision: int, last_modified: str, record: dict) -> str:
    """One dump line (without the newline); the JSON is compact-but-spaced like the real dumps."""
    return "\t".join((record_type, key, str(revision), last_modified, json.dumps(record, ensure_ascii=False)))


def iter_ol_dump(path: str | os.PathLike) -> Iterator[tuple[str, str, int, str, dict]]:
    """Yield ``(type, key, revision, last_modified, record)`` for each line of a dump file.

    Reads ``.gz`` or plain text. Raises :class:`SnapshotFormatError` naming file and line for a
    line without five tab-separated fields, a non-integer revision, bad JSON, or a record whose
    ``key`` disagrees with the line's key.
    """
    path = Path(path)
    number = 0
    try:
        with open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                line = line.rstrip("\n")
                if line:
                    yield _ol_dump_fields(path, number, line)
    except FileNotFoundError:
        raise SnapshotFormatError(f"{path}: missing; is {path.parent} a snapshot folder?") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # not gzip, cut short, not UTF-8
        raise SnapshotFormatError(f"{path}: unreadable after line {number}: {exc}") from None


def _ol_dump_fields(path: Path, number: int, line: str) -> tuple[str, str, int, str, dict]:
    fields = line.split("\t")
    if len(fields) != 5:
        raise SnapshotFormatError(f"{path}:{number}: expected 5 tab-separated fields, got {len(fields)}")
    record_type, key, revision, last_modified, payload = fields
    try:
        revision_number = int(revision)
    except ValueError:
        raise SnapshotFormatError(f"{path}:{number}: revision {revision!r} is not an integer") from None
    try:
        record = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise SnapshotFormatError(f"{path}:{number}: bad JSON: {exc}") from None
    if not isinstance(record, dict) or record.get("key", key) != key:
        raise SnapshotFormatError(f"{path}:{number}: JSON record is not an object with key {key!r}")
    return record_type, key, revision_number, last_modified, record


# --- files ------------------------------------------------------------------------------


def open_text(path: Path) -> IO[str]:
    """Open a snapshot text file for reading, gunzipping ``.gz`` transparently."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


@contextlib.contextmanager
def deterministic_gzip(path: Path, compresslevel: int = 6) -> Iterator[IO[str]]:
    """A text stream that gzips into ``path`` with a reproducible header (no name, mtime 0).

    The caller is expected to be writing inside a temp dir or via kitab.core.files.atomic_file.
    """
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=compresslevel, mtime=0) as gz:
            with io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as text:
                yield text


# Snapshots up to this size are hashed before a refresh starts (~1 s per 500 MB).
HASH_CHECK_BYTES = 512 * 2**20


def check_snapshot(snapshot_dir: str | os.PathLike) -> dict[str, Any]:
    """The snapshot's manifest, after a quick look at its files: each data file present,
    non-empty and (``.gz``) starting like a gzip stream. Cheap at any size, so a refresh
    checks it before it starts. A snapshot of at most HASH_CHECK_BYTES is also hashed against
    the manifest's checksums (a second or so), so a file cut short is found before a refresh
    starts; a bigger one is found when it is read (which names it)."""
    snapshot_dir = Path(snapshot_dir)
    if not snapshot_dir.is_dir():
        raise SnapshotFormatError(f"{snapshot_dir}: no such snapshot folder")
    manifest = read_manifest(snapshot_dir)
    for name in DATA_FILES:
        path = snapshot_dir / name
        if not path.is_file():
            raise SnapshotFormatError(f"{path}: missing; is {snapshot_dir} a snapshot folder?")
        with open(path, "rb") as handle:
            head = handle.read(2)
        if not head:
            raise SnapshotFormatError(f"{path}: empty file")
        if name.endswith(".gz") and head != b"\x1f\x8b":
            raise SnapshotFormatError(f"{path}: not a gzip file")
    checksums = manifest.get("checksums") or {}
    if (
        sum((snapshot_dir / name).stat().st_size for name in checksums if (snapshot_dir / name).is_file())
        <= HASH_CHECK_BYTES
    ):
        for name, expected in sorted(checksums.items()):
            path = snapshot_dir / name
            if path.is_file() and sha256_file(path) != expected:
                raise SnapshotFormatError(
                    f"{path}: its sha256 differs from MANIFEST.json's (a truncated or "
                    "changed file); copy the snapshot again"
                )
    return manifest


# --- manifest ---------------------------------------------------------------------------


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """The canonical bytes of a manifest: keys sorted at every level, 2-space indent, UTF-8, one
    final newline, no NaN. The same content is the same bytes however the dicts were built (a
    from-dumps run resumed after kill -9 gathers its per-chunk counts in another order)."""
    return (json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")


def read_manifest(snapshot_dir: str | os.PathLike) -> dict[str, Any]:
    path = Path(snapshot_dir) / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SnapshotFormatError(f"{path}: no manifest; is {snapshot_dir} a snapshot folder?") from None
    except json.JSONDecodeError as exc:
        raise SnapshotFormatError(f"{path}: bad JSON: {exc}") from None
    if not isinstance(manifest, dict) or "checksums" not in manifest:
        raise SnapshotFormatError(f"{path}: not a snapshot manifest (no 'checksums')")
    return manifest


def checksum_mismatches(snapshot_dir: str | os.PathLike) -> list[str]:
    """Names of the data files whose sha256 differs from the manifest (empty list = all good)."""
    snapshot_dir = Path(snapshot_dir)
    expected = read_manifest(snapshot_dir)["checksums"]
    return [
        name
        for name, digest in sorted(expected.items())
        if not (snapshot_dir / name).exists() or sha256_file(snapshot_dir / name) != digest
    ]


def snapshot_inputs(snapshot_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """What a snapshot was made from, as a release's ledger and card name it: the published
    dumps ``kitab snapshot from-dumps`` read (name, kind, size, dump date, fingerprint, from
    its manifest), else the snapshot's own data files (a generated snapshot has no other
    input: name, size, the manifest's date and sha256)."""
    folder = Path(snapshot_dir)
    manifest = read_manifest(folder)
    if manifest.get("inputs"):
        return [{"snapshot_id": manifest["snapshot_id"], **item} for item in manifest["inputs"]]
    return [
        {
            "snapshot_id": manifest["snapshot_id"],
            "name": name,
            "kind": "generated snapshot file",
            "size": (folder / name).stat().st_size if (folder / name).exists() else None,
            "dump_date": str(manifest.get("created_at", ""))[:10] or None,
            "fingerprint": f"sha256:{digest}",
        }
        for name, digest in sorted(manifest["checksums"].items())
    ]
