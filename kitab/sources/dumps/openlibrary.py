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

import orjson

from kitab.sources.snapshot.olindex import tokens

AUTHOR_KEY = re.compile(rb"/authors/OL\d+A")
WORK_KEY = re.compile(rb"/works/OL\d+W")


def _fields(line: bytes, counts: Counter) -> tuple[bytes, bytes, dict] | None:
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
            "utf-8", "replace"):
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
    from kitab.sources.dumps.scan import part_path, write_part

    if lines:
        blob = b"".join(line + b"\n" for line in lines)
        write_part(part_path(parts_dir, index, ".txt"), lambda tmp: Path(tmp).write_bytes(blob))


def redirects_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    """Author redirects (from key, to key, line) -> a Parquet part."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kitab.sources.dumps.scan import part_path, write_part

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


def works_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    counts: Counter = Counter()
    kept = []
    authors: set[bytes] = ctx["kept_authors"]
    for line in _lines(data, ctx, counts, ctx.get("type_prefix")):
        if not line.startswith(b"/type/work\t"):
            continue
        if not any(key in authors for key in AUTHOR_KEY.findall(line)):
            counts["unreachable"] += 1
            continue
        parsed = _fields(line, counts)
        if parsed is None:
            continue
        listed = set()
        for entry in parsed[2].get("authors") or []:
            author = entry.get("author") if isinstance(entry, dict) else None
            key = author.get("key") if isinstance(author, dict) else author
            if isinstance(key, str):
                listed.add(key.encode())
        if listed & authors:
            counts["kept"] += 1
            kept.append(line)
        else:
            counts["unreachable"] += 1  # the key was elsewhere in the record
    _write_lines(kept, parts_dir, index)
    return dict(counts)


def editions_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    counts: Counter = Counter()
    kept = []
    works: set[bytes] = ctx["kept_works"]
    for line in _lines(data, ctx, counts, ctx.get("type_prefix")):
        if not line.startswith(b"/type/edition\t"):
            continue
        if not any(key in works for key in WORK_KEY.findall(line)):
            counts["unreachable"] += 1
            continue
        parsed = _fields(line, counts)
        if parsed is None:
            continue
        listed = {entry.get("key").encode() for entry in parsed[2].get("works") or []
                  if isinstance(entry, dict) and isinstance(entry.get("key"), str)}
        if listed & works:
            counts["kept"] += 1
            kept.append(line)
        else:
            counts["unreachable"] += 1
    _write_lines(kept, parts_dir, index)
    return dict(counts)
