"""Issue 31 item 9, through the real ``kitab`` command: damage always speaks. A table whose
file is missing or unreadable fails in one line under every query shape (filters on the
release included, never 0 rows); a file changed in place with size, mtime and inode kept is
found when a read of it fails (its footer, or its sha256); a damaged release or an unreadable
ledger is one line in every command; a too-small ``--memory-limit`` is one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kitab.core.warehouse import LEDGER_FILE, Warehouse
from tests import test_hostile
from tests.test_cli_errors import assert_user_error, kitab
from tests.test_hostile import RELEASE, damage, out

# the fixtures of tests/test_hostile.py: one small release, a private copy of it per test
released, wh = test_hostile.released, test_hostile.wh

SHAPES = [
    "select count(*) from books",
    f"select count(*) from books where release = '{RELEASE}'",
    f"select count(*) from books where release in ('{RELEASE}', 'other')",
    "select release, count(*) from books group by release",
    "select * from books where first_year > 1900 limit 3",
    f"select exists (select 1 from books where release = '{RELEASE}')",
    "select count(*) from books_per_author",  # a mart over books
]


def flip_in_place(wh: Warehouse, table: str, back: int | None) -> Path:
    """Flip one byte of ``table``'s file ``back`` bytes before its end (None: the middle),
    keeping its size, mtime and inode, after the warehouse's stamps were taken of this very
    copy: the cheap check at connect sees an unchanged file and hashes nothing."""
    wh.stamp(RELEASE)
    path = wh.committed_files(RELEASE)[table]
    st = path.stat()
    at = st.st_size // 2 if back is None else st.st_size - back
    with open(path, "r+b") as fh:
        fh.seek(at)
        byte = fh.read(1)
        fh.seek(at)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    return path


@pytest.mark.parametrize("how", ["deleted", "truncated"])
def test_a_damaged_table_fails_under_every_query_shape(wh, how):
    damage(wh, "books", how)
    for query in SHAPES:
        result = kitab("sql", query, "--warehouse", wh.root)
        assert_user_error(result, "books of release demo is damaged", "kitab verify")
        assert out(result) == "", (query, out(result))  # never 0 rows for a file that is not there
    # a query that reads no damaged part answers, and other releases' filters prune it
    fine = kitab(
        "sql", "select count(*) as n from books where release = 'other'", "--output", "jsonl", "--warehouse", wh.root
    )
    assert fine.returncode == 0 and json.loads(out(fine)) == {"n": 0}, fine.stderr


@pytest.mark.parametrize("where", ["footer", "data page"])
def test_a_file_changed_in_place_with_its_stat_kept_is_one_line_when_read(wh, where):
    path = flip_in_place(wh, "books", 20 if where == "footer" else None)
    result = kitab("sql", "select * from books", "--warehouse", wh.root)
    assert_user_error(result, "books of release demo is damaged", path.name, "kitab verify")
    authors = kitab("sql", "select count(*) as n from released_authors", "--output", "jsonl", "--warehouse", wh.root)
    assert authors.returncode == 0 and json.loads(out(authors)) == {"n": 8}, authors.stderr
    if where == "footer":  # (a flipped data page fails only the reads that decode it)
        prompts = kitab("prompts", "--release", RELEASE, "--warehouse", wh.root)
        assert_user_error(prompts, "books of release demo is damaged")


@pytest.mark.parametrize("how", ["deleted", "flipped byte", "truncated"])
def test_a_damaged_release_is_one_line_in_every_command(wh, tmp_path, how):
    damage(wh, "books", how)
    for args in (
        ["sql", f"select count(*) from books where release = '{RELEASE}'"],
        ["prompts", "--release", RELEASE],
        ["prompts", "--release", RELEASE, "--task", "claims"],
        ["report", "--release", RELEASE],
        ["export", "--release", RELEASE, "--out", tmp_path / "hf"],
    ):
        result = kitab(*args, "--warehouse", wh.root)
        assert_user_error(result, "books", "demo")
        assert len(result.stderr.decode().strip().splitlines()) == 1, (args, result.stderr.decode())


def test_an_unreadable_ledger_is_one_line_for_every_read(wh):
    (wh.partition("releases", RELEASE) / LEDGER_FILE).write_bytes(b"PAR1 not a parquet file")
    for args in (
        ["sql", "select count(*) from books"],
        ["sql", f"select count(*) from authors where release = '{RELEASE}'"],
        ["sql", "select count(*) from releases"],
        ["sql", "select count(*) from books", "--release", RELEASE],
        ["prompts", "--release", RELEASE],
    ):
        result = kitab(*args, "--warehouse", wh.root)
        assert_user_error(result, "ledger", "demo")
        assert out(result) == "", (args, out(result))  # never an answer of 0, never an empty prompts file


@pytest.mark.parametrize("limit", ["1MB", "10MB", "50MB"])
def test_a_too_small_memory_limit_is_one_line(wh, limit):
    """A join whose distinct set (185 books x 20,000 = 3.7 million strings) needs far more than
    ``limit`` fails in exactly one line naming memory (refused before DuckDB connects when it is
    below 8MB per DuckDB thread: 1MB always, 10MB on two cores or more; else DuckDB's own "Out of
    Memory" line, once: it was printed twice, the second time as the process bound's line), and
    nothing on stdout; under the default 2GB the same query answers."""
    query = "select count(distinct x.book_id || r.range) as n from books x, range(20000) r"
    small = kitab("sql", query, "--memory-limit", limit, "--output", "jsonl", "--warehouse", wh.root)
    err = assert_user_error(small)
    assert "memory" in err.lower() and len(err.strip().splitlines()) == 1, err
    if limit == "1MB":
        assert "--memory-limit 1MB is too small: DuckDB's" in err, err
    assert out(small) == ""
    books = kitab("sql", "select count(*) as n from books", "--output", "jsonl", "--warehouse", wh.root)
    enough = kitab("sql", query, "--memory-limit", "2GB", "--output", "jsonl", "--warehouse", wh.root)
    assert enough.returncode == 0, enough.stderr
    assert json.loads(out(enough)) == {"n": json.loads(out(books))["n"] * 20000}


@pytest.mark.parametrize(("limit", "stack_mib"), [("300MB", None), ("300MB", 256), ("16MB", 256)])
def test_duckdb_threads_get_room_under_the_memory_limit(wh, limit, stack_mib):
    """The process bound leaves room for what DuckDB maps outside its limit (its threads' stacks,
    measured at start) on top of what the process holds once pyarrow's allocator took its arena.
    At 71b4b8e, 300MB fell in the window where that arena left DuckDB nothing (every run of this
    count failed), and with 256 MiB thread stacks (``ulimit -s``) the process hung, deaf to
    SIGTERM. Now: the answer (one line at worst, never a signal death or a hang)."""
    import resource
    import subprocess

    from tests.test_cli_errors import kitab_cmd

    def stack() -> None:
        if stack_mib:
            resource.setrlimit(resource.RLIMIT_STACK, (stack_mib << 20, resource.getrlimit(resource.RLIMIT_STACK)[1]))

    env = {k: v for k, v in os.environ.items() if k != "KITAB_DEBUG"}
    args = ["sql", "select count(*) as n from books", "--memory-limit", limit, "--output", "jsonl"]
    result = subprocess.run(
        [*kitab_cmd(), *args, "--warehouse", str(wh.root)],
        capture_output=True,
        env=env,
        timeout=120,
        preexec_fn=stack,
    )
    if stack_mib is None or result.returncode == 0:
        assert result.returncode == 0, result.stderr
        assert json.loads(out(result))["n"] > 0
    else:
        err = assert_user_error(result)
        assert "memory" in err.lower() and len(err.strip().splitlines()) == 1, err


def test_duckdb_out_of_memory_outside_a_query_is_one_line():
    """DuckDB's OutOfMemoryException raised while the views are built (before the bounded query
    that turns errors into KitabErrors) is the environment's, one line, not a traceback: seen
    as a traceback about one run in five of `kitab sql ... --memory-limit 300MB`."""
    import duckdb

    from kitab.app import guard

    oom = duckdb.OutOfMemoryException("Out of Memory Error: Allocation failure")
    guard._LIMITED[:] = ["300MB"]
    try:
        assert "--memory-limit 300MB" in guard.environment_error(oom)
    finally:
        guard._LIMITED.clear()
    assert "out of memory" in guard.environment_error(oom)
    assert guard.environment_error(duckdb.BinderException("no such column")) is None  # a bug stays one


def test_a_signal_inside_duckdbs_arrow_stream_callback_is_the_signals_line():
    """SIGTERM landing while DuckDB pulls a registered Arrow table through its Python callback
    comes back as DuckDB's InvalidInputError naming our Terminated: seen once in the suite as a
    traceback of `kitab sql` stopped at 0.5 s (test_hostile's Ctrl-C/SIGTERM test)."""
    import duckdb

    from kitab.app import guard

    wrapped = duckdb.InvalidInputException(
        "Invalid Input Error: exporting a stream from the object registered as 'kitab_ledger_source' failed: Terminated: "
    )
    assert guard.environment_error(wrapped) is None  # no signal received: not ours to explain
    guard._RECEIVED.append("SIGTERM")
    try:
        assert guard.environment_error(wrapped) == guard.STOPPED_BY["SIGTERM"]
    finally:
        guard._RECEIVED.clear()
