"""Open Library chunk readers: keep only the lines the sampled authors can reach.

Lines are ``type<TAB>key<TAB>revision<TAB>last_modified<TAB>json`` and are copied verbatim into
the snapshot. A line is judged by a byte test on its key or on the keys it mentions first; its
JSON is parsed only when that test passes (or, for authors, to read the name). A line without
five fields, a non-integer revision or JSON that is not an object with that key is counted
(``malformed``) and left out, never fatal.

* redirects: ``/type/redirect`` lines of ``/authors/`` keys -> (from, to, line) parts;
* authors: kept when the key is wanted (an author's P648, after redirects) or the name or an
  alternate name holds every token of an author's label (what a name search would find);
* works: kept when an author key is a kept author;
* editions: kept when a work key is a kept work.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import msgspec
import orjson

from kitab.sources.snapshot.olindex import tokens

AUTHOR_KEY = re.compile(rb"/authors/OL\d+A")
WORK_KEY = re.compile(rb"/works/OL\d+W")


def _valid_utf8(line: bytes, counts: Counter) -> bool:
    """A kept line is copied verbatim into the snapshot, which is UTF-8: one that is not is skipped
    and counted here (``decode``), not found only when the parts are joined after every scan."""
    try:
        line.decode("utf-8")
        return True
    except UnicodeDecodeError:
        counts["decode"] += 1
        return False


def _fields(line: bytes, counts: Counter) -> tuple[bytes, bytes, dict] | None:
    if not _valid_utf8(line, counts):
        return None
    fields = line.split(b"\t")
    if len(fields) != 5 or not fields[2].strip().lstrip(b"-").isdigit():
        counts["malformed"] += 1
        return None
    try:
        record = orjson.loads(fields[4])
    except orjson.JSONDecodeError:
        counts["malformed"] += 1
        return None
    if not isinstance(record, dict) or record.get("key", fields[1].decode("utf-8", "replace")) != fields[1].decode(
        "utf-8", "replace"
    ):
        counts["malformed"] += 1
        return None
    return fields[0], fields[1], record


def _lines(data: bytes, ctx: dict, counts: Counter, type_prefix: bytes | None):
    max_record = ctx["max_record"]
    for line in data.split(b"\n"):
        if not line:
            continue
        if type_prefix is not None and not line.startswith(type_prefix):
            continue  # the all-types dump: another type, read in another pass
        if len(line) > max_record:
            counts["oversized"] += 1
            continue
        yield line


def _write_lines(lines: list[bytes], parts_dir: Path, index: int) -> None:
    from kitab.sources.from_dumps.scan import part_path, write_part

    if lines:
        blob = b"".join(line + b"\n" for line in lines)
        write_part(part_path(parts_dir, index, ".txt"), lambda tmp: Path(tmp).write_bytes(blob))


def redirects_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    """Author redirects (from key, to key, line) -> a Parquet part."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kitab.sources.from_dumps.scan import part_path, write_part

    counts: Counter = Counter()
    rows = []
    for line in _lines(data, ctx, counts, b"/type/redirect\t"):
        if b"\t/authors/" not in line:
            continue
        parsed = _fields(line, counts)
        if parsed is None:
            continue
        _, key, record = parsed
        location = record.get("location")
        if not isinstance(location, str) or not location.startswith("/authors/"):
            counts["redirect_without_author_location"] += 1
            continue
        rows.append((key.decode(), location, line.decode("utf-8")))
        counts["author_redirects"] += 1
    if rows:
        src, dst, text = zip(*rows)
        table = pa.table({"src": pa.array(src), "dst": pa.array(dst), "line": pa.array(text)})
        write_part(part_path(parts_dir, index, ".parquet"), lambda tmp: pq.write_table(table, tmp))
    return dict(counts)


def name_matches(record: dict, index: dict[str, list[frozenset]]) -> bool:
    """Does the author's name or an alternate name, as one token bag, hold all tokens of an author's label?"""
    names = [record.get("name")]
    alternates = record.get("alternate_names")
    if isinstance(alternates, list):
        names += alternates
    bag = set()
    for name in names:
        if isinstance(name, str):
            bag.update(tokens(name))
    for token in bag:
        for wanted in index.get(token, ()):
            if wanted <= bag:
                return True
    return False


def authors_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    """Author lines (and the wanted redirect lines of an all-types dump) -> kept lines."""
    counts: Counter = Counter()
    kept = []
    wanted: set[str] = ctx["wanted_authors"]
    names: dict[str, list[frozenset]] = ctx["name_index"]
    for line in _lines(data, ctx, counts, ctx.get("type_prefix")):
        if not line.startswith(b"/type/author\t"):
            continue
        parsed = _fields(line, counts)
        if parsed is None:
            continue
        key = parsed[1].decode()
        if key in wanted:
            counts["kept_by_p648"] += 1
            kept.append(line)
        elif name_matches(parsed[2], names):
            counts["kept_by_name"] += 1
            kept.append(line)
        else:
            counts["unreachable"] += 1
    _write_lines(kept, parts_dir, index)
    return dict(counts)


class _KeyRef(msgspec.Struct):
    key: str | None = None


class _Role(msgspec.Struct):
    author: _KeyRef | str | None = None


class _Work(msgspec.Struct):
    key: str | None = None
    authors: list[_Role] | None = None


class _Edition(msgspec.Struct):
    key: str | None = None
    works: list[_KeyRef] | None = None


_DECODE_WORK = msgspec.json.Decoder(_Work).decode
_DECODE_EDITION = msgspec.json.Decoder(_Edition).decode


def _hit_lines(data: bytes, pattern: re.Pattern, wanted: set[bytes], type_prefix: bytes):
    """The lines of ``data`` (start, end) holding a wanted key: the regex runs over the whole
    chunk in C, so a line without a wanted key costs no Python at all."""
    last = -1
    for match in pattern.finditer(data):
        if match.group(0) not in wanted:
            continue
        start = data.rfind(b"\n", 0, match.start()) + 1
        if start == last:
            continue  # another key of a line already taken
        end = data.find(b"\n", match.end())
        last = start
        if data.startswith(type_prefix, start):
            yield start, len(data) if end < 0 else end


def _checked(data: bytes, start: int, end: int, decode, counts: Counter, max_record: int):
    """(line, record) of a candidate line, or None (counted) if it is malformed or oversized."""
    if end - start > max_record:
        counts["oversized"] += 1
        return None
    line = data[start:end]
    if not _valid_utf8(line, counts):
        return None
    fields = line.split(b"\t", 4)
    if len(fields) != 5 or not fields[2].strip().lstrip(b"-").isdigit():
        counts["malformed"] += 1
        return None
    try:
        record = decode(fields[4])
    except msgspec.ValidationError:
        counts["type"] += 1
        return None
    except msgspec.DecodeError:
        counts["malformed"] += 1
        return None
    except RecursionError:
        counts["depth"] += 1
        return None
    if record.key is not None and record.key.encode() != fields[1]:
        counts["malformed"] += 1
        return None
    return line, record


def _kept_lines_chunk(
    data: bytes,
    ctx: dict,
    parts_dir: Path,
    index: int,
    *,
    pattern,
    wanted: set[bytes],
    type_prefix: bytes,
    decoder,
    keys_of,
) -> dict:
    """Records whose ``keys_of(record)`` names a ``wanted`` key -> kept lines. Only lines holding
    a wanted key anywhere (``pattern``) are decoded, with a typed decoder of just those fields."""
    counts: Counter = Counter()
    kept = []
    for start, end in _hit_lines(data, pattern, wanted, type_prefix):
        checked = _checked(data, start, end, decoder, counts, ctx["max_record"])
        if checked is None:
            continue
        line, record = checked
        if keys_of(record) & wanted:
            counts["kept"] += 1
            kept.append(line)
        else:
            counts["key_elsewhere"] += 1  # the key was in another field of the record
    counts["lines"] += data.count(b"\n")
    _write_lines(kept, parts_dir, index)
    return dict(counts)


def _work_authors(record) -> set[bytes]:
    listed = set()
    for role in record.authors or ():
        author = role.author
        key = author.key if isinstance(author, _KeyRef) else author
        if isinstance(key, str):
            listed.add(key.encode())
    return listed


def works_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    """Works naming a kept author -> kept lines."""
    return _kept_lines_chunk(
        data,
        ctx,
        parts_dir,
        index,
        pattern=AUTHOR_KEY,
        wanted=ctx["kept_authors"],
        type_prefix=b"/type/work\t",
        decoder=_DECODE_WORK,
        keys_of=_work_authors,
    )


def editions_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    """Editions of a kept work -> kept lines."""
    return _kept_lines_chunk(
        data,
        ctx,
        parts_dir,
        index,
        pattern=WORK_KEY,
        wanted=ctx["kept_works"],
        type_prefix=b"/type/edition\t",
        decoder=_DECODE_EDITION,
        keys_of=lambda record: {ref.key.encode() for ref in record.works or () if isinstance(ref.key, str)},
    )
