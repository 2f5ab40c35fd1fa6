"""The dump scan's cutter and its shared-memory path to the workers."""

from __future__ import annotations

import gzip
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.sources.from_dumps import scan as dump_scan
from kitab.sources.from_dumps.inputs import Decompressed, DumpInput, DumpInputError
from kitab.sources.from_dumps.scan import Cutter, chunks


class Trickle:
    """A decompressed stream that hands out a few bytes at a time, in sizes drawn by the test."""

    def __init__(self, data: bytes, sizes: list[int]):
        self.data, self.pos, self.sizes = data, 0, sizes or [1]

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.sizes[self.pos % len(self.sizes)], len(self.data) - self.pos)
        buffer[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def reference(data: bytes, chunk_bytes: int, max_record: int) -> tuple[list[bytes], int]:
    """The rule, on the whole text at once: cut at the first newline at or after chunk_bytes;
    the line that newline ends is dropped (and counted) if longer than max_record."""
    out, oversized, pos = [], 0, 0
    while pos < len(data):
        if len(data) - pos < chunk_bytes:
            out.append(data[pos:])
            break
        cut = data.find(b"\n", pos + chunk_bytes - 1)
        line_start = max(pos, data.rfind(b"\n", pos, pos + chunk_bytes - 1) + 1)
        end = cut if cut >= 0 else len(data)
        if end - line_start > max_record:
            oversized += 1
            if line_start > pos:
                out.append(data[pos:line_start])
            pos = end + 1
            continue
        if cut < 0:
            out.append(data[pos:])
            break
        out.append(data[pos : cut + 1])
        pos = cut + 1
    return out, oversized


lines = st.lists(
    st.one_of(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"x")), st.integers(0, 90).map(lambda n: b"y" * n)),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(lines, st.booleans(), st.integers(1, 40), st.integers(0, 60), st.lists(st.integers(1, 70), max_size=6))
def test_cutter_cuts_by_the_bytes_alone(parts, final_newline, chunk_bytes, max_record, sizes):
    data = b"\n".join(parts) + (b"\n" if final_newline and parts else b"")
    counts: Counter = Counter()
    got = list(chunks(Trickle(data, sizes), chunk_bytes, max_record, counts))
    want, oversized = reference(data, chunk_bytes, max_record)
    assert got == want
    assert counts["oversized"] == oversized


def test_cutter_fills_a_shared_slot(tmp_path):
    """Chunks cut into mapped slot files equal the in-memory chunks."""
    data = b"".join(b"line %d %s\n" % (i, b"z" * random.Random(i).randrange(300)) for i in range(2000))
    want = list(chunks(Trickle(data, [4096]), 10_000, 5_000, Counter()))
    slots = dump_scan.Slots(3, Cutter.capacity(10_000, 5_000), tmp_path)
    try:
        cutter, got = Cutter(Trickle(data, [4096]), 10_000, 5_000, Counter()), []
        while (length := cutter.next_into(slots.maps[len(got) % 3])) is not None:
            got.append(slots.maps[(len(got)) % 3][:length])
        assert got == want and b"".join(got) == data
    finally:
        slots.close()
    assert not slots.folder.exists()


def _lines_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    """A chunk function for the test: its part holds the chunk's line count."""
    (parts_dir / f"part-{index:06d}.lines").write_text(str(data.count(b"\n")))
    return {"lines": data.count(b"\n"), "bytes": len(data)}


def test_pooled_scan_through_slots_sees_every_byte(tmp_path, monkeypatch):
    """Worker processes read the chunks from shared slots: the counts equal the file's."""
    text = b"".join(b'{"id":"Q%d","x":"%s"},\n' % (i, b"w" * (i % 97)) for i in range(60_000))
    path = tmp_path / "lines.json.gz"
    path.write_bytes(gzip.compress(text, 1))
    item = DumpInput(path, "wikidata-json", size=path.stat().st_size, fingerprint="test")
    monkeypatch.setattr(dump_scan, "IN_PROCESS_BYTES", 0)  # small file: use the pool anyway
    shm_before = set(Path("/dev/shm").glob("kitab-scan-*"))
    counts = dump_scan.scan(
        item,
        "tests.test_dump_scan:_lines_chunk",
        {},
        tmp_path / "parts",
        workers=2,
        chunk_bytes=64 << 10,
        max_record=1 << 20,
    )
    assert counts["lines"] == 60_000 and counts["bytes"] == len(text)
    assert counts["chunks"] == len(list(chunks(Decompressed(path), 64 << 10, 1 << 20, Counter())))
    # the slots are gone afterwards, wherever they were made
    assert not list(tmp_path.glob("kitab-scan-*")) and set(Path("/dev/shm").glob("kitab-scan-*")) <= shm_before


def test_cut_download_in_a_pooled_scan_is_the_error_and_leaves_no_slots(tmp_path, monkeypatch):
    """The cut is found while a chunk is being decompressed into a slot: the error is the
    download's, and the slots are still removed."""
    text = b"".join(b'{"id":"Q%d","x":"%s"},\n' % (i, b"w" * (i % 97)) for i in range(60_000))
    whole = gzip.compress(text, 1)
    path = tmp_path / "cut.json.gz"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    item = DumpInput(path, "wikidata-json", size=path.stat().st_size, fingerprint="test")
    monkeypatch.setattr(dump_scan, "IN_PROCESS_BYTES", 0)
    shm_before = set(Path("/dev/shm").glob("kitab-scan-*"))
    with pytest.raises(DumpInputError, match="truncated or corrupt gzip data near compressed byte"):
        dump_scan.scan(
            item,
            "tests.test_dump_scan:_lines_chunk",
            {},
            tmp_path / "parts",
            workers=2,
            chunk_bytes=64 << 10,
            max_record=1 << 20,
        )
    assert not list(tmp_path.glob("kitab-scan-*")) and set(Path("/dev/shm").glob("kitab-scan-*")) <= shm_before
