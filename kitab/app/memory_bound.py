"""``kitab sql --memory-limit``: DuckDB's limit, and this process's bound around it, both
settled before DuckDB connects.

DuckDB's ``memory_limit`` bounds its buffer pool, not every allocation, so the process gets a
data limit too (RLIMIT_DATA; its error line is kitab.app.guard's). That limit must leave room for
what DuckDB maps outside its pool, or starting one of its threads fails inside the C library
(``cannot allocate memory for thread-local data: ABORT``), segfaults or hangs, and no Python
code can turn that into a line. Measured on DuckDB 2.0, Linux, 2 cores (docs/operations.md):

- a DuckDB database maps ~89 MiB while open with 8 MiB stacks (its threads' stacks,
  8.25 MiB per thread, and its first allocations), 583 MiB with 64 MiB stacks: so it is
  measured here, at start, not assumed;
- pyarrow's allocator (mimalloc) reserves a 1 GiB arena at its first allocation, or a smaller
  one when the limit is already too tight for it. Where that first allocation fell relative to
  the limit decided the outcome: between ~220MB and ~380MB the reservation fitted and left
  DuckDB's threads nothing (every ``select count(*)`` failed), below and above it did not. So
  the allocator takes its arena before the limit is set, and the limit counts from what the
  process holds then.

Below :data:`MIN_PER_THREAD` of DuckDB limit per thread, reads of the demo tables fail (a sort
needed 2-3 MB, a distinct 3-6 MB at 1-8 threads): such a limit is refused in one line.
"""

from __future__ import annotations

import resource

from kitab.core.errors import BadValue

MIN_PER_THREAD = 8 * 10**6  # DuckDB's own limit per thread, below which --memory-limit is refused
DATABASES = 2  # DuckDB databases a read holds at once (the views, the catalog's copy)


def duckdb_footprint() -> tuple[int, int]:
    """DuckDB's ``threads`` here, and what one of its databases maps outside its limit while it
    is open (its threads' stacks and thread-local data, its first allocations), measured."""
    import duckdb

    before = data_in_use()
    with duckdb.connect() as con:
        threads = int(con.execute("select current_setting('threads')").fetchone()[0])
        mapped = data_in_use() - before
    return threads, max(mapped, 0)


def check_memory_limit(text: str, threads: int | None = None) -> int:
    """``--memory-limit`` in bytes; BadValue (one line) for a size DuckDB cannot parse or one
    below MIN_PER_THREAD per DuckDB thread."""
    from kitab.app.guard import parse_size

    size = parse_size(text)
    threads = threads or duckdb_footprint()[0]
    floor = threads * MIN_PER_THREAD
    if size < floor:
        raise BadValue(
            f"--memory-limit {text} is too small: DuckDB's {threads} thread(s) need at least "
            f"{floor // 10**6}MB ({MIN_PER_THREAD // 10**6}MB each); give it e.g. 1GB"
        )
    return size


def data_in_use() -> int:
    """What RLIMIT_DATA counts now (VmData), or 0 where /proc does not say."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    return 0


def _wake_allocators() -> None:
    """pyarrow's allocator takes its arena now, before the limit (see the module's docstring)."""
    import pyarrow

    pyarrow.allocate_buffer(1)


def limit_memory(duckdb_limit: str) -> int:
    """Bound this process's data memory (never raised) to what it holds now plus DuckDB's limit,
    what DuckDB maps outside it (measured: :func:`duckdb_footprint`, for DATABASES), and
    HEADROOM for Python, Arrow and the printed result. Returns the bound in bytes."""
    from kitab.app import guard

    _wake_allocators()
    threads, mapped = duckdb_footprint()
    size = check_memory_limit(duckdb_limit, threads)
    wanted = data_in_use() + size + DATABASES * mapped + guard.HEADROOM
    guard._LIMITED[:] = [duckdb_limit]
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft == resource.RLIM_INFINITY or wanted < soft:
        resource.setrlimit(resource.RLIMIT_DATA, (wanted, hard))
    return wanted
