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

import atexit
import hashlib
import json
import mmap
import multiprocessing
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kitab.core.errors import KitabError
from kitab.core.files import write_bytes, write_via_temp
from kitab.sources.from_dumps.inputs import Decompressed, DumpInput

SCAN_VERSION = "2"  # bump when a part's content changes: older checkpoints are then discarded
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


def _run_slot(fn_path: str, ctx_file: str, index: int, slot: tuple[str, int], parts_dir: str) -> dict:
    """A worker: the chunk is the first ``length`` bytes of a shared slot file. Read, not mapped:
    the worker's copy is private and freed with the chunk, and no slot page stays in its RSS."""
    path, length = slot
    parts = []
    with open(path, "rb", buffering=0) as handle:
        while length > 0 and (block := handle.read(length)):
            parts.append(block)
            length -= len(block)
    return _run_chunk(fn_path, ctx_file, index, parts[0] if len(parts) == 1 else b"".join(parts), parts_dir)


SHM = Path("/dev/shm")
SLOTS_PREFIX = "kitab-scan-"  # + the owning process's pid + "-": a folder of a dead pid is stale


class BufferSpaceError(KitabError):
    """No room for the scan's buffers: said in one line before a byte is scanned (never SIGBUS)."""


def free_bytes(folder: Path) -> int:
    """Bytes an unprivileged writer may still use in ``folder``'s file system (0 if unreadable)."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (or no such number): not ours to sweep
    return True


def sweep_stale_slots(*folders: Path) -> list[Path]:
    """Remove slot folders a killed scan left (kill -9 runs no cleanup): those whose pid is dead."""
    swept = []
    for folder in folders:
        try:
            found = list(folder.glob(SLOTS_PREFIX + "*"))
        except OSError:
            continue
        for stale in found:
            pid = stale.name[len(SLOTS_PREFIX) :].split("-", 1)[0]
            if stale.is_dir() and pid.isdigit() and not _pid_alive(int(pid)):
                shutil.rmtree(stale, ignore_errors=True)
                swept.append(stale)
    return swept


class Slots:
    """``count`` shared buffers of ``size`` bytes (one file each, mapped by the cutter), filled by
    the cutter and read by the workers.

    In /dev/shm when it has room (memory, no disk writes), else under ``fallback`` (a container's
    /dev/shm may be 64 MB): the page cache then carries the chunks, at the cost of some writes.
    The room is checked (``os.statvfs``) and the files' blocks reserved (``posix_fallocate``) before
    use: a full or small tmpfs is one line (BufferSpaceError), never a SIGBUS on a mapped page. The
    folder is removed on close, at exit and on SIGTERM (when no one else handles it); one a killed
    run left (its pid dead) is swept when the next scan starts.
    """

    def __init__(self, count: int, size: int, fallback: Path, shm: Path = SHM):
        sweep_stale_slots(shm, fallback)
        need = count * size
        if shm.is_dir() and os.access(shm, os.W_OK) and free_bytes(shm) > 2 * need:
            place = shm
        elif free_bytes(fallback) > need + (64 << 20):  # beside the parts: keep some room for them
            place = fallback
        else:
            raise BufferSpaceError(
                f"no room for the scan's buffers ({need >> 20} MB): {shm} has {free_bytes(shm) >> 20} MB free, "
                f"{fallback} {free_bytes(fallback) >> 20} MB; free some space or lower --chunk-mb/--workers"
            )
        self.folder = Path(tempfile.mkdtemp(prefix=f"{SLOTS_PREFIX}{os.getpid()}-", dir=place))
        self.size = size
        self.maps: list[mmap.mmap] = []
        self._closed = False
        atexit.register(self.close)
        self._previous = self._on_sigterm()
        try:
            for slot in range(count):
                with open(self.path(slot), "w+b") as handle:
                    handle.truncate(size)
                    if hasattr(os, "posix_fallocate"):
                        os.posix_fallocate(handle.fileno(), 0, size)  # ENOSPC here, not SIGBUS later
                    self.maps.append(mmap.mmap(handle.fileno(), size))
        except OSError as exc:
            self.close()
            raise BufferSpaceError(
                f"no room for the scan's buffers ({need >> 20} MB) in {place}: {exc.strerror or exc}; "
                "free some space or lower --chunk-mb/--workers"
            ) from None

    def _on_sigterm(self):
        """Remove the slots on SIGTERM when nothing else handles it (the CLI turns it into
        KeyboardInterrupt, and ``close`` then runs in ``scan``'s finally)."""
        if threading.current_thread() is not threading.main_thread():
            return None
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return None

        def handler(signum, frame):
            self.close()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)  # then die of it, as without the handler

        signal.signal(signal.SIGTERM, handler)
        return signal.SIG_DFL

    def path(self, slot: int) -> Path:
        return self.folder / f"slot-{slot}"

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for one in self.maps:
            try:
                one.close()
            except BufferError:  # a view still held by the traceback of an error being raised:
                pass  # the mapping goes with it; the files go now either way
        shutil.rmtree(self.folder, ignore_errors=True)
        atexit.unregister(self.close)
        if self._previous is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous)


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
        tail = f"done in {elapsed:.1f} s" if final else f"ETA {int(eta // 60)}m{int(eta % 60):02d}s"
        self.emit(f"  {self.label}: {done / 1e9:.2f}/{self.total / 1e9:.2f} GB, {rate / 1e6:.0f} MB/s, {tail}")


class Cutter:
    """Cuts a decompressed stream into line-aligned chunks, each decompressed straight into the
    buffer it is cut in (a shared-memory slot a worker reads): a chunk is never piped or pickled.
    (Sending 32 MB chunks through the pool's pipe cost the main process more CPU than
    decompressing them.)

    A chunk ends at the first newline at or after ``chunk_bytes`` (so boundaries depend on the
    bytes alone, not on read sizes). The line that newline ends, if longer than ``max_record``
    (without its newline), is dropped and counted (``oversized``): the chunk ends before it, and
    it is never held whole. (Shorter oversized lines inside a chunk are the workers' to count.)
    """

    def __init__(self, stream: Decompressed, chunk_bytes: int, max_record: int, counts: Counter):
        self.stream, self.chunk_bytes, self.max_record, self.counts = stream, chunk_bytes, max_record, counts
        self.carry = b""  # the bytes after the last cut: the start of the next chunk
        self.eof = False
        self.skipping = False  # inside an oversized line: drop bytes until its newline

    @staticmethod
    def capacity(chunk_bytes: int, max_record: int) -> int:
        """The buffer size a chunk needs: room to see that a crossing line is oversized."""
        return chunk_bytes + max_record + READ_BYTES

    def _read(self, view: memoryview, start: int, stop: int) -> int:
        n = self.stream.readinto(view[start:stop])
        if not n:
            self.eof = True
        return n

    def next_into(self, buf) -> int | None:
        """Cut the next chunk into ``buf`` (``find``/``rfind`` and the buffer protocol, e.g. an
        mmap or a bytearray of :meth:`capacity` bytes). Its length, or None after the last."""
        view = memoryview(buf)
        size = len(view)
        filled = len(self.carry)
        view[:filled] = self.carry
        self.carry = b""
        while True:
            if self.skipping:
                if filled == 0:
                    if self.eof:
                        return None
                    filled = self._read(view, 0, min(size, READ_BYTES))
                    continue
                newline = buf.find(b"\n", 0, filled)
                if newline < 0:
                    filled = 0
                    continue
                rest = bytes(view[newline + 1 : filled])
                view[: len(rest)] = rest
                filled = len(rest)
                self.skipping = False
            if filled < self.chunk_bytes and not self.eof:
                filled += self._read(view, filled, self.chunk_bytes)
                continue
            if filled < self.chunk_bytes:  # the end of the stream
                return filled or None
            cut = buf.find(b"\n", self.chunk_bytes - 1, filled)
            line_start = buf.rfind(b"\n", 0, self.chunk_bytes - 1) + 1  # of the line the cut ends
            if cut >= 0 and cut - line_start > self.max_record:  # that line is oversized: not sent
                self.counts["oversized"] += 1
                self.carry = bytes(view[cut + 1 : filled])
                if line_start:
                    return line_start
                filled = len(self.carry)
                view[:filled] = self.carry
                self.carry = b""
                continue
            if cut >= 0:
                self.carry = bytes(view[cut + 1 : filled])
                return cut + 1
            if filled - line_start > self.max_record:
                self.counts["oversized"] += 1
                self.skipping = True
                if line_start:
                    return line_start
                filled = 0  # the chunk was all one oversized line: nothing to send
                continue
            if self.eof:
                return filled
            filled += self._read(view, filled, min(size, filled + READ_BYTES))


READ_BYTES = 1 << 20


def chunks(stream: Decompressed, chunk_bytes: int, max_record: int, counts: Counter):
    """The chunks of ``stream`` as bytes (in-process scans and tests; the pool uses slots)."""
    cutter = Cutter(stream, chunk_bytes, max_record, counts)
    buf = bytearray(Cutter.capacity(chunk_bytes, max_record))
    while (length := cutter.next_into(buf)) is not None:
        yield bytes(memoryview(buf)[:length])


def checkpoint_key(item: DumpInput, fn_path: str, ctx: dict, chunk_bytes: int, max_record: int) -> str:
    text = json.dumps(
        [
            SCAN_VERSION,
            item.fingerprint,
            item.size,
            fn_path,
            chunk_bytes,
            max_record,
            hashlib.sha256(json.dumps(ctx, sort_keys=True, default=sorted).encode()).hexdigest(),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


IN_PROCESS_BYTES = 4 << 20  # a smaller file is read in this process: sending it to a worker costs more


def scan(
    item: DumpInput,
    fn_path: str,
    ctx: dict,
    parts_dir: Path,
    *,
    workers: int = 2,
    pool=None,
    chunk_bytes: int = 32 << 20,
    max_record: int = 32 << 20,
    progress: Callable[[str], None] | None = None,
    stop_after: int | None = None,
) -> Counter:
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
    cutter = Cutter(stream, chunk_bytes, max_record, cut_counts)
    pending: deque = deque()  # (result, slot) in submission order
    in_flight = 2 * max(1, getattr(pool, "_processes", workers))
    size = Cutter.capacity(chunk_bytes, max_record)
    slots = None
    free = deque(range(in_flight + 1))
    local = bytearray(size) if pool is None else None
    try:
        if pool is not None:  # checked for room before the first byte is cut into them
            slots = Slots(in_flight + 1, size, parts_dir.parent)
        index = 0
        while stop_after is None or index < stop_after:
            if not free:
                result, slot = pending.popleft()
                counts.update(result.get())
                free.append(slot)
            slot = free.popleft()
            length = cutter.next_into(local if slots is None else slots.maps[slot])
            if length is None:
                break
            meter.update(stream.compressed_pos())
            if index in done:
                free.append(slot)
            elif slots is None:
                counts.update(
                    _run_chunk(fn_path, str(ctx_file), index, bytes(memoryview(local)[:length]), str(parts_dir))
                )
                free.append(slot)
            else:
                job = (fn_path, str(ctx_file), index, (str(slots.path(slot)), length), str(parts_dir))
                pending.append((pool.apply_async(_run_slot, job), slot))
            index += 1
        while pending:
            counts.update(pending.popleft()[0].get())
    finally:
        if own_pool is not None:
            own_pool.terminate()
            own_pool.join()
        stream.close()
        if slots is not None:
            slots.close()
    for index in done:
        counts.update(json.loads((parts_dir / f"part-{index:06d}{DONE}").read_text()))
    if stop_after is None:
        meter.update(item.size, final=True)
    counts.update(cut_counts)
    counts["chunks"] = len({int(p.name[5:11]) for p in parts_dir.glob(f"part-*{DONE}")})
    return counts
