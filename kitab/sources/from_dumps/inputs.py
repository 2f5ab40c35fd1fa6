"""The dump files as downloaded: find them, recognise them by content, open them fast.

* WikiData: ``latest-all.json.gz`` / ``.json.bz2`` (a JSON array, one entity a line) or the full
  N-Triples ``latest-all.nt.gz``. The flavour is read from the first decompressed bytes, not the
  name. A file without sitelink counts (``latest-truthy.nt.gz``, a filtered extract) is refused:
  the sitelink count is how authors are ranked, so without it nothing could be sampled.
* Open Library: a folder with ``ol_dump_{authors,works,editions,redirects}_<date>.txt.gz`` (or
  ``_latest``), or the one all-types ``ol_dump_<date>.txt.gz``.

gzip is read with ISA-L (``isal``, about 4x zlib on this machine's cores), bzip2 with
``indexed_bzip2`` (parallel blocks). A cut download is one error naming the file and the
compressed offset where it ends.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from kitab.core.errors import BadValue

SNIFF_BYTES = 16 << 20  # enough decompressed text to hold a few whole entities of the full N-Triples dump
FINGERPRINT_BYTES = 1 << 20

WIKIDATA_JSON, WIKIDATA_NT = "wikidata-json", "wikidata-nt"
OL_KINDS = ("authors", "works", "editions", "redirects")
OL_ALL = "all"

SITELINKS_NT = b"<http://wikiba.se/ontology#sitelinks>"


class DumpInputError(BadValue):
    """A dump file is missing, of the wrong kind, or cut short; the message names the file."""


@dataclass
class DumpInput:
    """One input file and its provenance (what the snapshot's manifest records)."""

    path: Path
    kind: str  # wikidata-json | wikidata-nt | authors | works | editions | redirects | all
    size: int = 0
    dump_date: str | None = None  # YYYY-MM-DD from the name or the file's own header
    date_from: str = ""  # where dump_date came from: name | header | mtime
    fingerprint: str = ""  # sha256 of size, first and last MiB: cheap at 130 GB, changes with any re-download
    extra: dict = field(default_factory=dict)

    def describe(self) -> dict:
        return {
            "name": self.path.name,
            "kind": self.kind,
            "size": self.size,
            "dump_date": self.dump_date,
            "dump_date_from": self.date_from,
            "fingerprint": self.fingerprint,
        }


class CountingReader(io.RawIOBase):
    """A raw file that counts the compressed bytes handed to the decompressor (progress, error offsets)."""

    def __init__(self, path: Path):
        self._file = open(path, "rb")
        self.pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._file.readinto(buffer)
        self.pos += n or 0
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


class Decompressed:
    """A decompressed byte stream of a ``.gz``, ``.bz2`` or plain file, with the compressed position."""

    def __init__(self, path: Path, threads: int = 2):
        self.path = path
        self.raw = CountingReader(path)
        with open(path, "rb") as handle:
            magic = handle.read(3)
        if magic[:2] == b"\x1f\x8b":
            from isal import igzip  # ISA-L: the fastest single-stream inflate available here

            self.stream: BinaryIO = igzip.IGzipFile(fileobj=io.BufferedReader(self.raw, 1 << 20), mode="rb")
            self.compression = "gzip"
        elif magic == b"BZh":
            import indexed_bzip2  # decodes bzip2 blocks on several threads

            self.stream = indexed_bzip2.open(str(path), parallelization=max(1, threads))
            self.raw.close()
            self.raw = None
            self.compression = "bzip2"
        else:
            self.stream = io.BufferedReader(self.raw, 1 << 20)
            self.compression = "none"

    def compressed_pos(self) -> int:
        if self.raw is not None:
            return self.raw.pos
        try:  # indexed_bzip2 knows its position in the compressed file (bits)
            return self.stream.tell_compressed() // 8
        except Exception:  # noqa: BLE001 - progress only
            return 0

    def read(self, n: int) -> bytes:
        try:
            return self.stream.read(n)
        except (EOFError, OSError, ValueError, RuntimeError) as exc:
            raise self._cut_short(exc) from None

    def readinto(self, buffer) -> int:
        """Decompress straight into ``buffer`` (a shared-memory slot): 0 at the end."""
        try:
            return self.stream.readinto(buffer) or 0
        except (EOFError, OSError, ValueError, RuntimeError) as exc:
            raise self._cut_short(exc) from None

    def _cut_short(self, exc: Exception) -> DumpInputError:
        return DumpInputError(
            f"{self.path}: truncated or corrupt {self.compression} data near compressed "
            f"byte {self.compressed_pos():,}: {exc}; download it again"
        )

    def close(self) -> None:
        self.stream.close()
        if self.raw is not None:
            self.raw.close()


def fingerprint(path: Path) -> str:
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(FINGERPRINT_BYTES))
        if size > FINGERPRINT_BYTES:
            handle.seek(max(FINGERPRINT_BYTES, size - FINGERPRINT_BYTES))
            digest.update(handle.read(FINGERPRINT_BYTES))
    return "sha256-ends:" + digest.hexdigest()


_DATE_IN_NAME = re.compile(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})(?!\d)")


def _date_from_name(name: str) -> str | None:
    match = _DATE_IN_NAME.search(name)
    return f"{match[1]}-{match[2]}-{match[3]}" if match else None


def _provenance(item: DumpInput, header_date: str | None = None) -> DumpInput:
    item.size = item.path.stat().st_size
    item.fingerprint = fingerprint(item.path)
    named = _date_from_name(item.path.name)
    if named:
        item.dump_date, item.date_from = named, "name"
    elif header_date:
        item.dump_date, item.date_from = header_date, "header"
    else:
        mtime = datetime.fromtimestamp(item.path.stat().st_mtime, UTC)
        item.dump_date, item.date_from = mtime.strftime("%Y-%m-%d"), "mtime"
    return item


def check_container(path: Path) -> None:
    """Refuse, in one line naming the file, one that is empty or whose bytes are not the compression
    its name says (an HTML error page saved as ``.gz``), before any scan reads it."""
    size = path.stat().st_size
    if size == 0:
        raise DumpInputError(f"{path}: empty file (0 bytes); download it again")
    with open(path, "rb") as handle:
        magic = handle.read(3)
    for suffix, expected, name in ((".gz", b"\x1f\x8b", "gzip"), (".bz2", b"BZh", "bzip2")):
        if path.name.endswith(suffix) and not magic.startswith(expected):
            raise DumpInputError(f"{path}: not {name} data (starts with {magic!r}); download it again")


def head(path: Path, n: int = SNIFF_BYTES) -> bytes:
    """The first ``n`` decompressed bytes (fewer if the file is shorter)."""
    stream = Decompressed(path, threads=1)
    try:
        parts, got = [], 0
        while got < n:
            block = stream.read(min(1 << 20, n - got))
            if not block:
                break
            parts.append(block)
            got += len(block)
        return b"".join(parts)
    finally:
        stream.close()


_NT_DATE = re.compile(rb'<http://schema\.org/dateModified> "(\d{4}-\d{2}-\d{2})')


def wikidata_input(path: str | os.PathLike) -> DumpInput:
    """Recognise a WikiData dump by its content; refuse one that has no sitelink counts."""
    path = Path(path)
    if not path.is_file():
        raise DumpInputError(f"{path}: no such file (expected latest-all.json.gz, .json.bz2 or latest-all.nt.gz)")
    check_container(path)
    text = head(path)
    if not text.strip():
        raise DumpInputError(f"{path}: no data after decompression; download it again")
    start = text.lstrip()[:1]
    if start == b"[":
        # Every entity of the JSON dump has a "sitelinks" map (maybe empty): its absence means a
        # filtered or foreign file that cannot rank authors.
        if b'"sitelinks"' not in text and b'"type":"item"' in text.replace(b" ", b""):
            raise DumpInputError(
                f'{path}: WikiData JSON without "sitelinks": authors cannot be ranked; use the full latest-all.json.gz'
            )
        return _provenance(DumpInput(path, WIKIDATA_JSON))
    if start == b"<" or start == b"_":
        if SITELINKS_NT not in text:
            raise DumpInputError(
                f"{path}: N-Triples without sitelinks (wikiba.se/ontology#sitelinks), e.g. the "
                "truthy dump: authors cannot be ranked; use latest-all.json.gz (or latest-all.nt.gz)"
            )
        match = _NT_DATE.search(text)
        return _provenance(DumpInput(path, WIKIDATA_NT), match[1].decode() if match else None)
    raise DumpInputError(f"{path}: not a WikiData dump (expected a JSON array or N-Triples, starts with {text[:40]!r})")


_OL_NAME = re.compile(r"^ol_dump_(?:(authors|works|editions|redirects)_)?(\d{4}-\d{2}-\d{2}|latest)\.txt(\.gz)?$")


def openlibrary_inputs(folder: str | os.PathLike) -> list[DumpInput]:
    """The Open Library files of a download folder: the four per-type files, or the all-types dump.

    Returns them in scan order (redirects, authors, works, editions; or the one all-types file).
    Several dates of one kind: the newest is used (``_latest`` counts as newest).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DumpInputError(f"{folder}: no such folder (expected the Open Library ol_dump_*.txt.gz files)")
    found: dict[str, list[tuple[str, Path]]] = {}
    for path in folder.iterdir():
        match = _OL_NAME.match(path.name)
        if match and path.is_file():
            kind = match[1] or OL_ALL
            found.setdefault(kind, []).append(("9999" if match[2] == "latest" else match[2], path))
    newest = {kind: max(paths)[1] for kind, paths in found.items()}
    per_type = [kind for kind in ("authors", "works", "editions") if kind in newest]
    if len(per_type) == 3:
        kinds = (["redirects"] if "redirects" in newest else []) + per_type
    elif OL_ALL in newest:
        kinds = [OL_ALL]
    else:
        missing = [kind for kind in ("authors", "works", "editions") if kind not in newest]
        raise DumpInputError(
            f"{folder}: no ol_dump_{missing[0]}_<date>.txt.gz (and no all-types "
            "ol_dump_<date>.txt.gz); download the authors, works, editions and redirects dumps"
        )
    for kind in kinds:
        _check_openlibrary(newest[kind])
    return [_provenance(DumpInput(newest[kind], kind)) for kind in kinds]


_OL_LINE = re.compile(rb"/type/[a-z_]+\t/[a-z]+/[^\t]*\t-?\d+\t[^\t]*\t\{")


def _check_openlibrary(path: Path) -> None:
    """An Open Library dump file is non-empty, of the compression its name says, and its first
    MiB holds a dump line (``type<TAB>key<TAB>revision<TAB>last_modified<TAB>{json``)."""
    check_container(path)
    text = head(path, 1 << 20)
    if not text.strip():
        raise DumpInputError(f"{path}: no data after decompression; download it again")
    # one bad line is a counted skip in the scan; a file with no dump line in its first MiB is the wrong file
    if not any(_OL_LINE.match(line) for line in text.split(b"\n")):
        raise DumpInputError(
            f"{path}: not an Open Library dump (no line of type, key, revision, date, JSON separated by "
            f"tabs in its first MiB; starts with {text[:40]!r})"
        )
