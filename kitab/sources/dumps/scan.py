"""One streaming pass over a dump file: line-aligned chunks, parsed by worker processes, each
chunk's result written as its own part file, so a killed run resumes at the first unfinished chunk.

The main process only decompresses and cuts; the workers filter (a byte test before any JSON
parsing) and write. Chunk boundaries depend on the decompressed bytes alone (a chunk ends at
the first newline at or after ``chunk_bytes``), so a rerun cuts the same chunks and, since every
part is a pure function of its chunk, writes the same parts. At most ``2 * workers`` chunks are in
flight: memory is bounded by ``chunk_bytes``, not by the file.

A line longer than ``max_record`` is skipped and counted (``oversized``), never held whole.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import pickle
import sys
import time
from collections import Counter, deque
from pathlib import Path
from typing import Any, Callable

from kitab.core.files import write_bytes, write_via_temp
from kitab.sources.dumps.inputs import Decompressed, DumpInput

SCAN_VERSION = "1"  # bump when a part's content changes: older checkpoints are then discarded
DONE = ".done.json"

# worker state: the chunk function and its context, loaded once per scan and process
_WORKER: dict[str, Any] = {}


def _load(fn_path: str, ctx_file: str) -> tuple[Callable, dict]:
    if _WORKER.get("key") != (fn_path, ctx_file):
        module, name = fn_path.rsplit(":", 1)
        with open(ctx_file, "rb") as handle:
            ctx = pickle.load(handle)
        _WORKER.update(key=(fn_path, ctx_file), fn=getattr(__import__(module, fromlist=[name]), name), ctx=ctx)
    return _WORKER["fn"], _WORKER["ctx"]


def _run_chunk(fn_path: str, ctx_file: str, index: int, data: bytes, parts_dir: str) -> dict:
    """Process one chunk: the function writes its part(s); the done marker comes last."""
    fn, ctx = _load(fn_path, ctx_file)
    counts = fn(data, ctx, Path(parts_dir), index)
    write_bytes(Path(parts_dir) / f"part-{index:06d}{DONE}", json.dumps(counts, sort_keys=True).encode())
    return counts


def worker_pool(workers: int):
    """The parsing processes, shared by every scan of a run (starting one costs seconds: imports).
    spawn: the workers import only what the chunk functions need, not what the parent holds."""
    return multiprocessing.get_context("spawn").Pool(workers) if workers > 0 else None


def part_path(parts_dir: Path, index: int, suffix: str) -> Path:
    return parts_dir / f"part-{index:06d}{suffix}"


def write_part(path: Path, write: Callable[[str], None]) -> None:
    """Temp then rename, so a killed worker never leaves a half part that a resume would trust."""
    write_via_temp(path, write)


class Progress:
    """Bytes done / total, MB/s and ETA per file, every ``every`` seconds, on stderr (or a callback)."""

    def __init__(self, label: str, total: int, every: float = 5.0, emit: Callable[[str], None] | None = None):
        self.label, self.total, self.every = label, max(total, 1), every
        self.emit = emit or (lambda text: print(text, file=sys.stderr, flush=True))
        self.start = self.last = time.monotonic()

    def update(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < self.every:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-6)
        rate = done / elapsed
        eta = (self.total - done) / rate if rate > 0 else 0.0
        tail = f"done in {elapsed:.0f} s" if final else f"ETA {int(eta // 60)}m{int(eta % 60):02d}s"
        self.emit(f"  {self.label}: {done / 1e9:.2f}/{self.total / 1e9:.2f} GB, {rate / 1e6:.0f} MB/s, {tail}")


def chunks(stream: Decompressed, chunk_bytes: int, max_record: int, counts: Counter):
    """Yield line-aligned chunks (bytes). A line longer than ``max_record`` is dropped and counted."""
    buf = bytearray()
    eof = False
    skipping = False  # inside an oversized line: drop bytes until its newline
    while not eof or buf:
        if not eof and len(buf) < chunk_bytes + (1 << 20):
            block = stream.read(4 << 20)
            if not block:
                eof = True
            else:
                if skipping:
                    newline = block.find(b"\n")
                    if newline < 0:
                        continue
                    block = block[newline + 1:]
                    skipping = False
                buf += block
                continue
        if eof:
            if buf:
                yield bytes(buf)
            return
        cut = buf.find(b"\n", chunk_bytes - 1)
        if cut >= 0:
            yield bytes(buf[:cut + 1])
            del buf[:cut + 1]
            continue
        # No newline after chunk_bytes yet: the line that crosses the boundary is growing.
        line_start = buf.rfind(b"\n", 0, chunk_bytes) + 1
        if len(buf) - line_start > max_record:
            if line_start:
                yield bytes(buf[:line_start])
            counts["oversized"] += 1
            del buf[:]
            skipping = True
            continue
        block = stream.read(4 << 20)
        if not block:
            eof = True
        else:
            buf += block


def checkpoint_key(item: DumpInput, fn_path: str, ctx: dict, chunk_bytes: int, max_record: int) -> str:
    text = json.dumps([SCAN_VERSION, item.fingerprint, item.size, fn_path, chunk_bytes, max_record,
                       hashlib.sha256(json.dumps(ctx, sort_keys=True, default=sorted).encode()).hexdigest()])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


IN_PROCESS_BYTES = 4 << 20  # a smaller file is read in this process: sending it to a worker costs more


def scan(item: DumpInput, fn_path: str, ctx: dict, parts_dir: Path, *, workers: int = 2, pool=None,
         chunk_bytes: int = 32 << 20, max_record: int = 32 << 20,
         progress: Callable[[str], None] | None = None, stop_after: int | None = None) -> Counter:
    """Scan ``item`` with ``fn_path`` (``module:function(data, ctx, parts_dir, index) -> counts``).

    Chunks already done in ``parts_dir`` (same input fingerprint and settings) are not parsed again.
    Returns the summed counts of every chunk plus the cutter's own (``oversized``).
    ``pool``: a :func:`worker_pool` to use (else one of ``workers`` processes is started for
    this scan). ``stop_after`` (tests) stops after that many chunks, as a kill would.
    """
    parts_dir.mkdir(parents=True, exist_ok=True)
    key = checkpoint_key(item, fn_path, ctx, chunk_bytes, max_record)
    stamp = parts_dir / "SCAN.json"
    if not stamp.is_file() or json.loads(stamp.read_text()).get("key") != key:
        for old in parts_dir.iterdir():  # another input or other settings: nothing here is reusable
            old.unlink()
        stamp.write_text(json.dumps({"key": key, "input": item.describe()}))
    ctx_file = parts_dir / "ctx.pickle"
    write_bytes(ctx_file, pickle.dumps(ctx, protocol=pickle.HIGHEST_PROTOCOL))
    done = {int(p.name[5:11]) for p in parts_dir.glob(f"part-*{DONE}")}
    counts: Counter = Counter()
    cut_counts: Counter = Counter()
    meter = Progress(f"{item.kind} {item.path.name}", item.size, emit=progress)
    own_pool = None
    if item.size < IN_PROCESS_BYTES:
        pool = None
    elif pool is None and workers > 0:
        pool = own_pool = worker_pool(workers)
    stream = Decompressed(item.path, threads=max(1, workers))
    pending: deque = deque()
    in_flight = 2 * max(1, getattr(pool, "_processes", workers))
    try:
        for index, data in enumerate(chunks(stream, chunk_bytes, max_record, cut_counts)):
            if stop_after is not None and index >= stop_after:
                break
            meter.update(stream.compressed_pos())
            if index in done:
                continue
            args = (fn_path, str(ctx_file), index, data, str(parts_dir))
            if pool is None:
                counts.update(_run_chunk(*args))
                continue
            pending.append(pool.apply_async(_run_chunk, args))
            while len(pending) >= in_flight:
                counts.update(pending.popleft().get())
        while pending:
            counts.update(pending.popleft().get())
    finally:
        if own_pool is not None:
            own_pool.terminate()
            own_pool.join()
        stream.close()
    for index in done:
        counts.update(json.loads((parts_dir / f"part-{index:06d}{DONE}").read_text()))
    if stop_after is None:
        meter.update(item.size, final=True)
    counts.update(cut_counts)
    counts["chunks"] = len({int(p.name[5:11]) for p in parts_dir.glob(f"part-*{DONE}")})
    return counts
