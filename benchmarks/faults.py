"""Reliability: a refresh through a faulty mirror, and a refresh killed with SIGKILL then rerun.

    .venv/bin/python benchmarks/faults.py                  # 40 authors, seed 7, 10 kill points
    .venv/bin/python benchmarks/faults.py --kills 3 --rates 0.1
    .venv/bin/python benchmarks/faults.py --cases issue31 --authors 10   # issue 31's probes (~2 min)

One in-process mirror of the bundled snapshot (the real clients talk to it over HTTP), a fresh
warehouse per case (so a fresh HTTP cache: every request meets the mirror), production retry
settings. Cases:

- **faults R**: ``run_refresh(direct=True)`` with the mirror's seeded random faults at rate R
  (``rate=R,seed=S,kinds=429+500+502+503+504+cut+slow+timeout``; the same plan as
  ``kitab mirror serve --faults``); R = 0 is the clean reference every case is compared to;
- **kill -9 at Ts**: ``python -m kitab.app.cli refresh`` (the Prefect flow, a real subprocess,
  clean mirror) killed with SIGKILL T seconds in, T drawn with ``random.Random(--kill-seed)``
  from [1, 0.9 × an uninterrupted CLI run]; then the same refresh again (``--rerun direct``,
  the default: the pipeline without Prefect, in this process; ``--rerun cli``: the command
  again), which resumes from the work folder and the HTTP cache.

Hostile cases (issue 21; ``--cases hostile``), each through the real ``kitab`` command on a copy
of the clean release, with the stderr lines and exit code of every error counted:

- **damage** (a table file deleted, a byte flipped, truncated to 100 bytes): ``kitab export
  --push`` must write nothing; ``kitab sql`` on the damaged table must fail, on another answer;
- **reader during a rebuild**: a process reading in a loop (``Warehouse.connect``, what ``kitab
  sql`` runs: the books count against the ``releases`` row it sees; plus a slow reader that holds
  its connection 3 s) while the same release is rebuilt with another seed;
- **disk full** on a small tmpfs (root only: ``mount -t tmpfs``): a refresh on a nearly full disk,
  one that fills it while it runs, and a rebuild of a committed release that fills it;
- **deleted lock**: ``rm .refresh.lock`` during refresh A, then refresh B;
- **Ctrl-C / SIGTERM** on a recursive query: measured time from the signal to the exit.

Issue 31's probes (``--cases issue31``; not part of ``hostile``: ``--cases hostile,issue31``
runs both), each through the real ``kitab`` command on the clean release or a copy of it:

- **warehouse reads**: the books file deleted, then ``kitab sql`` with ``where release = …``,
  with ``group by release`` and on a mart over books (``books_per_author``): each fails in
  <= 2 lines, nothing on stdout; a byte flipped in the books footer after restamping the copy
  (``Warehouse.stamp``), size, mtime and inode kept: one line naming the file, another table
  still answers; the ledger overwritten with junk: ``sql`` and ``prompts`` one line, exit != 0;
  ``sql --memory-limit 300MB``: the answer, or one line about memory;
- **sql**: SIGINT and SIGTERM 0.1 s after spawning the installed ``kitab`` script on a
  recursive query, 5 tries each: every try exits within 2 s in <= 2 lines;
- **export/push** (against tests/fake_hub.py, the tests' loopback Hub): no token (HF_* unset,
  HF_HOME an empty folder): one line, no request, nothing written to ``--out``; the tag
  request failing after the commit: one line saying the commit is not tagged, and the same
  command again tags that commit;
- **answer** (kitab/simulate/chat.py's ``ChatServer.hostile``): ``--timeout 5`` against a body
  that never ends gives up within 30 s; SIGINT / SIGTERM while a request hangs stop it within 5 s;
- **evaluate**: two ``kitab evaluate`` of different answers files started together both exit 0
  with both models in ``evaluations``; a process connected (``Warehouse.connect``) before an
  evaluation reads ``evaluations`` after it without error (released after 30 s if the
  evaluation waits for it);
- **from-dumps** (small inputs in the published formats, kitab/simulate/generator/published.py):
  ``--out`` a user's folder and ``--out`` the ``--openlibrary`` folder refused with nothing
  deleted; an empty ``ol_dump_works`` file refused in <= 2 lines.

Issue 39's probes (``--cases issue39``): one module per surface in benchmarks/round4/, each
through the real ``kitab`` command on a copy of the clean release.

Every hostile row names its surface (warehouse reads, sql, refresh, export/push, answer,
evaluate, from-dumps) and the summary ends with "probes tried / held, by surface". With only
``hostile`` / ``issue31`` the uninterrupted CLI refresh (the kill cases' reference) is skipped.

Per case: authors lost (clean run's authors missing), tables identical to the clean run (every
table of the release; ``authors`` and ``works_raw`` compared without ``fetched_at``, the
services' Date header, the one column a rerun changes; every other table byte for byte by the
``checksums`` of the ``releases`` row), faults injected, wall time. Kill cases also list the
steps checkpointed when the kill landed and the processes of the killed refresh still alive
a second later (its Prefect server, its workers), which the benchmark then kills. The table is
in docs/reliability.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
if sys.path and Path(sys.path[0]).resolve() == ROOT / "benchmarks":
    sys.path[0] = str(ROOT)  # run as a script: benchmarks/requests.py would shadow the requests library
BENCH_OUT = ROOT / "bench_out" / "faults"  # gitignored
KINDS = "429+500+502+503+504+cut+slow+timeout"
RELEASE = "bench"
PROVENANCE = {"authors": ("fetched_at",), "works_raw": ("fetched_at",)}


def refresh_direct(mirror, warehouse: Path, authors: int, seed: int, replace: bool = False) -> dict:
    """``replace``: rebuild a committed release with other parameters (a release is fixed
    otherwise: the same command is refused, issue 30)."""
    from kitab.app.runs import run_refresh
    from kitab.core.env import BUNDLED_SNAPSHOT

    return run_refresh(
        source="mirror",
        snapshot=BUNDLED_SNAPSHOT,
        authors=authors,
        seed=seed,
        release=RELEASE,
        warehouse=warehouse,
        mirror_url=mirror.url,
        direct=True,
        replace=replace,
    )


def cli_command(mirror, warehouse: Path, authors: int, seed: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kitab.app.cli",
        "refresh",
        "--source",
        "mirror",
        "--mirror-url",
        mirror.url,
        "--authors",
        str(authors),
        "--seed",
        str(seed),
        "--release",
        RELEASE,
        "--warehouse",
        str(warehouse),
    ]


def committed(warehouse: Path) -> dict | None:
    """The releases row of RELEASE, or None."""
    from kitab.core.warehouse import Warehouse

    wh = Warehouse(warehouse)
    if RELEASE not in wh.committed_releases():
        return None
    return [r for r in wh.read_table("releases").to_pylist() if r["release"] == RELEASE][0]


def table_rows(warehouse: Path, table: str) -> list[tuple]:
    from kitab.core.schemas import view_name
    from kitab.core.warehouse import Warehouse

    drop = PROVENANCE.get(table, ())
    exclude = f" exclude ({', '.join(drop)})" if drop else ""
    with Warehouse(warehouse).connect() as con:  # the stored table's own view (authors: sampled_authors)
        return con.execute(f"select *{exclude} from {view_name(table)} order by all").fetchall()


def qids(warehouse: Path) -> set[str]:
    from kitab.core.warehouse import Warehouse

    with Warehouse(warehouse).connect() as con:
        return {q for (q,) in con.execute("select qid from authors").fetchall()}


def compare(clean: Path, warehouse: Path) -> dict:
    """Authors lost and table equality against the clean run's release."""
    row, reference = committed(warehouse), committed(clean)
    clean_qids = qids(clean)
    if row is None:
        return {"published": False, "authors_lost": len(clean_qids), "identical": False, "differing": ["(none)"]}
    sums, clean_sums = json.loads(row["checksums"]), json.loads(reference["checksums"])
    differing = sorted(
        t for t in clean_sums if sums.get(t) != clean_sums[t] and table_rows(warehouse, t) != table_rows(clean, t)
    )
    return {
        "published": True,
        "authors_lost": len(clean_qids - qids(warehouse)),
        "identical": not differing,
        "differing": differing,
        "byte_identical": sorted(t for t in clean_sums if sums.get(t) == clean_sums[t]),
    }


def faults_injected(mirror, since: int) -> dict:
    return dict(Counter(e.fault for e in mirror.log()[since:] if e.fault))


def checkpoints(warehouse: Path) -> str:
    """Steps with at least one checkpoint in the release's work folder (what a rerun resumes)."""
    work = warehouse / ".work" / RELEASE
    steps = [
        s
        for s in ("sample_authors", "collect", "tag_entities", "generate_constraints")
        if any((work / s).glob("*.json"))
    ]
    if committed(warehouse) is not None:
        return "published"
    return "+".join(steps) or "none"


def kill_tree(proc: subprocess.Popen, grace: float = 10.0) -> list[str]:
    """SIGKILL the refresh (only its own pid, as a crash would); then name what its session
    still runs after ``grace`` seconds (its Prefect server's watchdog stops the server within
    a few seconds; a pool worker exits when its parent's pipe closes) and kill those too."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    def session() -> list:
        found = []
        for p in psutil.process_iter(["pid"]):
            try:
                if p.pid != os.getpid() and os.getsid(p.pid) == proc.pid:
                    found.append(p)
            except (psutil.Error, ProcessLookupError, PermissionError):
                pass
        return found

    deadline = time.monotonic() + grace
    left = session()
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = session()
    names = []
    for p in left:
        try:
            cmd = " ".join(p.cmdline())
            names.append(
                "Prefect server"
                if "uvicorn" in cmd or "prefect" in cmd and "server" in cmd
                else "pool worker"
                if "spawn_main" in cmd or "multiprocessing" in cmd
                else p.name()
            )
            p.kill()
        except psutil.Error:
            pass
    return names


def run_cli(cmd: list[str], timeout: float | None = None) -> tuple[float, int]:
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
    return time.monotonic() - started, proc.returncode


def cli_env(env: dict | None = None, unset: tuple[str, ...] = ()) -> dict:
    """This process's environment with ``env`` set and every variable starting with one of
    ``unset`` removed (KITAB_DEBUG always: a person's run prints no debug traceback)."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith((*unset, "KITAB_DEBUG"))}
    return {**kept, **(env or {})}


def kitab_cli(
    *args, env: dict | None = None, unset: tuple[str, ...] = (), timeout: float = 600, cwd: Path = ROOT
) -> dict:
    """``kitab ARGS`` as a person runs it: exit code, stderr lines, seconds, stdout."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kitab.app.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(env, unset),
    )
    lines = proc.stderr.strip().splitlines()
    return {
        "exit": proc.returncode,
        "lines": len(lines),
        "seconds": round(time.monotonic() - started, 1),
        "stdout": proc.stdout,
        "first": lines[0][:160] if lines else "",
        "traceback": "Traceback" in proc.stderr,
        "stderr": proc.stderr[-3000:],
    }


def copy_release(clean: Path, target: Path) -> Path:
    import shutil

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(clean, target, ignore=shutil.ignore_patterns(".prefect", ".work", ".cache"))
    return target


def damage_cases(clean: Path, out: Path) -> list[dict]:
    from kitab.core.warehouse import Warehouse

    rows = []
    for how in ("deleted", "flipped byte", "truncated"):
        wh = Warehouse(copy_release(clean, out / f"damage-{how.replace(' ', '-')}"))
        path = wh.committed_files(RELEASE)["books"]
        if how == "deleted":
            path.unlink()
        elif how == "truncated":
            os.truncate(path, 100)
        else:
            data = bytearray(path.read_bytes())
            data[len(data) // 2] ^= 0xFF
            path.write_bytes(bytes(data))
        hf = out / f"hf-{how.replace(' ', '-')}"
        export = kitab_cli(
            "export",
            "--release",
            RELEASE,
            "--out",
            hf,
            "--push",
            "org/kitab",
            "--warehouse",
            wh.root,
            env={"HF_TOKEN": "hf_benchmarknotused", "HF_ENDPOINT": "http://127.0.0.1:9"},
        )
        books = kitab_cli("sql", "select count(*) from books", "--warehouse", wh.root)
        authors = kitab_cli("sql", "select count(*) from authors", "--output", "csv", "--warehouse", wh.root)
        held = (
            export["exit"] != 0
            and not hf.exists()
            and export["lines"] <= 2
            and books["exit"] != 0
            and books["lines"] <= 2
            and books["stdout"] == ""
            and authors["exit"] == 0
        )
        rows.append(
            {
                "case": f"damage: books {how}",
                "surface": "warehouse reads",
                "held": held,
                "lines": max(export["lines"], books["lines"]),
                "exit": export["exit"],
                "measured": f"export exit {export['exit']}, nothing written: "
                f"{not hf.exists()}; sql books exit {books['exit']}; sql authors answers "
                f"{authors['stdout'].split()[-1] if authors['exit'] == 0 else 'no'}",
                "first": export["first"],
            }
        )
    return rows


READER = r"""
import json, sys, time
from pathlib import Path
from kitab.core.warehouse import Warehouse
wh, stop = Warehouse(Path(sys.argv[1])), Path(sys.argv[2])
stats = {"reads": 0, "inconsistent": 0, "errors": 0, "slow_reads": 0, "slow_errors": 0, "versions": []}
n = 0
while not stop.exists():
    n += 1
    try:
        with wh.connect(warn=False) as con:
            if n % 25 == 0:  # a slow reader: holds its connection while the release may be swapped
                time.sleep(3)
                stats["slow_reads"] += 1
            books, counts = con.execute("select (select count(*) from books), (select counts from releases)").fetchone()
            if books != json.loads(counts)["books"]:
                stats["inconsistent"] += 1
            if not stats["versions"] or stats["versions"][-1] != books:
                stats["versions"].append(books)
        stats["reads"] += 1
    except Exception as exc:
        stats["errors"] += 1
        stats["last_error"] = str(exc)[:200]
print(json.dumps(stats))
"""


def reader_during_rebuild(mirror, clean: Path, out: Path, authors: int, seed: int) -> dict:
    wh = copy_release(clean, out / "reader")
    stop = out / "reader.stop"
    stop.unlink(missing_ok=True)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(wh), str(stop)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    time.sleep(2)
    started = time.monotonic()
    refresh_direct(mirror, wh, authors, seed + 1, replace=True)  # the same release, other writers: all change
    time.sleep(4)  # let a slow reader that connected before the commit finish
    stop.touch()
    stats = json.loads(reader.communicate(timeout=120)[0])
    held = stats["inconsistent"] == 0 and stats["errors"] == 0 and len(stats["versions"]) >= 2
    return {
        "case": "reader in a loop during a rebuild of its release",
        "surface": "refresh",
        "held": held,
        "lines": 0,
        "exit": 0,
        "measured": f"{stats['reads']} reads ({stats['slow_reads']} slow, 3 s each), {stats['inconsistent']} "
        f"inconsistent, {stats['errors']} errors; books counts seen {stats['versions']}; rebuild "
        f"{time.monotonic() - started:.0f} s",
        "first": stats.get("last_error", ""),
    }


def cli_refresh_args(mirror, warehouse: Path, authors: int, seed: int) -> list[str]:
    # without "python -m kitab.app.cli refresh"; --quiet: stderr holds only warnings and errors
    return ["--quiet", *cli_command(mirror, warehouse, authors, seed)[4:]]


def disk_full_cases(mirror, clean: Path, out: Path, authors: int, seed: int) -> list[dict]:
    """On a 64 MB tmpfs (needs root)."""
    import shutil

    mount = out / "tmpfs"
    mount.mkdir(exist_ok=True)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)]).returncode:
        return [
            {
                "case": "disk full (tmpfs)",
                "surface": "refresh",
                "held": None,
                "lines": "-",
                "exit": "-",
                "measured": "skipped: needs root to mount a tmpfs",
                "first": "",
            }
        ]
    rows = []

    def fill(leave_mb: float) -> None:
        free = shutil.disk_usage(mount).free
        with open(mount / "filler", "ab") as handle:
            os.posix_fallocate(handle.fileno(), 0, max(0, int(free - leave_mb * 2**20)) + handle.tell())

    try:
        fill(50)  # under KITAB_MIN_FREE_MB's 200
        r = kitab_cli("refresh", *cli_refresh_args(mirror, mount / "wh1", authors, seed))
        rows.append(
            {
                "case": "disk full: refresh on a disk with 50 MB free",
                "surface": "refresh",
                "exit": r["exit"],
                "lines": r["lines"],
                "held": r["exit"] != 0 and r["lines"] <= 2 and not r["traceback"] and not (mount / "wh1").exists(),
                "measured": f"refused in {r['seconds']} s, before Prefect",
                "first": r["first"],
                "stderr": r["stderr"],
            }
        )
        (mount / "filler").unlink()
        fill(6)  # Prefect's database fits, the release does not
        r = kitab_cli(
            "refresh", *cli_refresh_args(mirror, mount / "wh2", authors, seed), env={"KITAB_MIN_FREE_MB": "1"}
        )
        rows.append(
            {
                "case": "disk full: fills during a refresh (6 MB free, check off)",
                "surface": "refresh",
                "exit": r["exit"],
                "lines": r["lines"],
                "held": r["exit"] != 0 and r["lines"] <= 2 and not r["traceback"],
                "measured": f"failed after {r['seconds']} s",
                "first": r["first"],
                "stderr": r["stderr"],
            }
        )
        shutil.rmtree(mount / "wh2", ignore_errors=True)
        (mount / "filler").unlink()
        from kitab.core.warehouse import Warehouse

        wh = copy_release(clean, mount / "wh3")
        before = Warehouse(wh).ledger_row(RELEASE)["checksums"]
        fill(4)
        r = kitab_cli(
            "refresh", *cli_refresh_args(mirror, wh, authors, seed + 1), "--replace", env={"KITAB_MIN_FREE_MB": "1"}
        )
        (mount / "filler").unlink()
        verify = kitab_cli("verify", "--warehouse", wh)
        same = Warehouse(wh).ledger_row(RELEASE)["checksums"] == before
        rows.append(
            {
                "case": "disk full: fills during a rebuild of a committed release",
                "surface": "refresh",
                "exit": r["exit"],
                "lines": r["lines"],
                "held": r["exit"] != 0 and r["lines"] <= 2 and not r["traceback"] and verify["exit"] == 0 and same,
                "measured": f"failed after {r['seconds']} s; old release intact: {same}, verify exit {verify['exit']}",
                "first": r["first"],
                "stderr": r["stderr"],
            }
        )
    finally:
        subprocess.run(["umount", str(mount)])
    return rows


def deleted_lock_case(mirror, out: Path, authors: int, seed: int) -> dict:
    from kitab.core.locking import lock_path

    root = out / "lock"
    first = subprocess.Popen(
        cli_command(mirror, root, authors, seed), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while not (lock_path(root).exists() and lock_path(root).read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    lock_path(root).unlink()
    second = kitab_cli(
        "refresh", *cli_refresh_args(mirror, root, authors, seed + 1)[:-4], "--release", "second", "--warehouse", root
    )
    code = first.wait(timeout=900)
    verify = kitab_cli("verify", "--warehouse", root)
    held = (
        second["exit"] != 0 and second["lines"] <= 2 and "busy" in second["first"] and code == 0 and verify["exit"] == 0
    )
    return {
        "case": "lock file deleted during refresh A, then refresh B",
        "surface": "refresh",
        "held": held,
        "exit": second["exit"],
        "lines": second["lines"],
        "measured": f"B refused in {second['seconds']} s; A exit {code}, verify exit {verify['exit']}",
        "first": second["first"],
    }


def signal_cases(clean: Path, out: Path) -> list[dict]:
    rows = []
    query = "with recursive r(n) as (select 1 union all select n + 1 from r) select count(*) from r"
    for sig in (signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen(
            [sys.executable, "-m", "kitab.app.cli", "sql", query, "--warehouse", str(clean)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(10)  # started and running the query (a loaded machine takes a few seconds to start)
        sent = time.monotonic()
        proc.send_signal(sig)
        first = proc.stderr.readline()
        said = time.monotonic() - sent  # the query stopped and the error was printed
        try:
            err = first + proc.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            proc.kill()
            err = first + proc.communicate()[1]
        took = time.monotonic() - sent
        lines = err.strip().splitlines()
        rows.append(
            {
                "case": f"{sig.name} during a recursive query",
                "surface": "sql",
                "exit": proc.returncode,
                "lines": len(lines),
                "held": proc.returncode != 0 and len(lines) <= 2 and said <= 1.0,
                "measured": f"query stopped and error printed {said:.2f} s after the signal; process "
                f"exited after {took:.2f} s",
                "first": lines[0] if lines else "",
            }
        )
    return rows


# -- issue 31's probes (``--cases issue31``), each through the real ``kitab`` command -------------
SQL_SIGNAL_AFTER = 0.1  # seconds after spawning: while Python still imports (issue 31: lost there)
SQL_SIGNAL_TRIES = 5


def probe(case: str, surface: str, held: bool | None, measured: str, *results: dict) -> dict:
    """One row: the worst of ``results`` (most stderr lines; the first non-zero exit)."""
    worst = max(results, key=lambda r: r["lines"]) if results else {"lines": "-", "first": ""}
    failed = [r["exit"] for r in results if r["exit"] != 0]
    return {
        "case": case,
        "surface": surface,
        "held": held,
        "measured": measured,
        "lines": worst["lines"],
        "exit": (failed[0] if failed else 0) if results else "-",
        "first": worst["first"],
    }


def spoke(result: dict, most: int = 1) -> bool:
    """Failed in at most ``most`` stderr lines, without a traceback, with nothing on stdout."""
    return result["exit"] != 0 and 1 <= result["lines"] <= most and not result["traceback"] and not result["stdout"]


def flip_in_place(wh, table: str, back: int) -> tuple[Path, bool]:
    """Flip the byte ``back`` bytes before the end of ``table``'s file after restamping the
    release on this copy, keeping size, mtime and inode (the cheap check at connect sees
    nothing). Returns the file and whether its stat was kept."""
    wh.stamp(RELEASE)
    path = wh.committed_files(RELEASE)[table]
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(st.st_size - back)
        byte = fh.read(1)
        fh.seek(st.st_size - back)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    return path, (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


def reads_probes(clean: Path, out: Path) -> list[dict]:
    from kitab.core.ledger import LEDGER_FILE
    from kitab.core.warehouse import Warehouse

    rows = []
    wh = Warehouse(copy_release(clean, out / "i31-deleted"))
    wh.committed_files(RELEASE)["books"].unlink()
    shapes = {
        "where release": f"select count(*) from books where release = '{RELEASE}'",
        "group by release": "select release, count(*) from books group by release",
        "a mart over books": "select count(*) from books_per_author",
    }
    for name, query in shapes.items():
        r = kitab_cli("sql", query, "--warehouse", wh.root)
        rows.append(
            probe(
                f"books file deleted: sql with {name}",
                "warehouse reads",
                spoke(r, 2),
                f"exit {r['exit']}, stdout {r['stdout'].strip()[:40]!r}, {r['seconds']} s",
                r,
            )
        )

    wh = Warehouse(copy_release(clean, out / "i31-footer"))
    path, kept = flip_in_place(wh, "books", 20)
    r = kitab_cli("sql", "select * from books", "--warehouse", wh.root)
    other = kitab_cli("sql", "select count(*) from released_authors", "--output", "csv", "--warehouse", wh.root)
    rows.append(
        probe(
            "a byte flipped in the books footer, size/mtime/inode kept: sql",
            "warehouse reads",
            kept and spoke(r) and path.name in r["first"] and other["exit"] == 0,
            f"stat kept: {kept}; exit {r['exit']}, names the file: {path.name in r['first']}; "
            f"another table answers: {other['exit'] == 0}",
            r,
        )
    )

    wh = Warehouse(copy_release(clean, out / "i31-ledger"))
    (wh.partition("releases", RELEASE) / LEDGER_FILE).write_bytes(b"PAR1 not a parquet file")
    for args in (["sql", "select count(*) from books"], ["prompts", "--release", RELEASE]):
        r = kitab_cli(*args, "--warehouse", wh.root)
        rows.append(
            probe(
                f"ledger overwritten with junk: {' '.join(args[:2]) if args[0] == 'sql' else 'prompts'}",
                "warehouse reads",
                spoke(r),
                f"exit {r['exit']}, stdout {r['stdout'].strip()[:40]!r}",
                r,
            )
        )

    r = kitab_cli("sql", "select count(*) from books", "--memory-limit", "300MB", "--warehouse", clean)
    answered = r["exit"] == 0 and r["stdout"].strip() != "" and r["lines"] == 0
    rows.append(
        probe(
            "sql --memory-limit 300MB",
            "warehouse reads",
            answered or (spoke(r) and "memory" in r["first"].lower()),
            "answered" if answered else f"exit {r['exit']} in {r['seconds']} s",
            r,
        )
    )
    return rows


def kitab_script() -> list[str]:
    """The installed ``kitab`` script, as a person runs it (else ``python -m kitab.app.cli``)."""
    script = Path(sys.executable).with_name("kitab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kitab.app.cli"]


def early_signal_probes(clean: Path, tries: int = SQL_SIGNAL_TRIES) -> list[dict]:
    """SIGINT / SIGTERM 0.1 s after spawning ``kitab sql`` on a query that never ends, ``tries``
    times each (where 0.1 s lands, in Python's own start-up or in kitab's imports, depends on
    the machine's load): held when every try exits within 2 s in at most 2 lines."""
    query = "with recursive r(n) as (select 1 union all select n + 1 from r) select count(*) from r"
    rows = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        tried = []
        for _ in range(tries):
            proc = subprocess.Popen(
                [*kitab_script(), "sql", query, "--warehouse", str(clean)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=cli_env(),
            )
            time.sleep(SQL_SIGNAL_AFTER)
            proc.send_signal(sig)
            sent = time.monotonic()
            try:
                stdout, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, err = proc.communicate()
            took = time.monotonic() - sent
            lines = err.strip().splitlines()
            ok = proc.returncode != 0 and took <= 2 and len(lines) <= 2 and "Traceback" not in err
            where = "Python's start-up (site import)" if "init_import_site" in err else "after start-up"
            tried.append({"ok": ok, "took": took, "exit": proc.returncode, "lines": len(lines),
                          "first": lines[0][:160] if lines else "", "where": where, "stdout": stdout})  # fmt: skip
        bad = [t for t in tried if not t["ok"]]
        worst = bad[0] if bad else max(tried, key=lambda t: t["took"])
        rows.append(
            probe(
                f"{sig.name} {SQL_SIGNAL_AFTER} s after spawning kitab sql (recursive query), {tries} tries",
                "sql",
                not bad,
                f"{len(tried) - len(bad)} of {len(tried)} held; slowest exit {max(t['took'] for t in tried):.2f} s "
                f"after the signal; exits {sorted({t['exit'] for t in tried})}"
                + (f"; a failure's signal landed in {bad[0]['where']}" if bad else ""),
                worst,
            )
        )
    return rows


def push_probes(clean: Path, out: Path) -> list[dict]:
    import secrets

    from tests.fake_hub import FakeHub  # the loopback Hub of the tests; a plain class, no pytest

    rows = []
    hf_home = out / "i31-hf-home"  # empty: no saved login is found
    hf_home.mkdir(exist_ok=True)
    target = out / "i31-push-notoken"
    with FakeHub("unused", max_seconds=120) as hub:
        r = kitab_cli(
            "export", "--release", RELEASE, "--out", target, "--push", "org/x", "--warehouse", clean,
            env={"HF_HOME": str(hf_home), "HF_ENDPOINT": hub.url}, unset=("HF_", "HUGGING_FACE"),
        )  # fmt: skip
        requests = len(hub.requests)
    rows.append(
        probe(
            "export --push with no token (HF_HOME empty)",
            "export/push",
            spoke(r) and not target.exists() and requests == 0,
            f"exit {r['exit']}, --out written: {target.exists()}, requests to the Hub: {requests}",
            r,
        )
    )

    token = "hf_kitabbench" + secrets.token_hex(16)
    target = out / "i31-push-tag"
    with FakeHub(token, max_seconds=600) as hub:
        env = {"HF_TOKEN": token, "HF_ENDPOINT": hub.url, "HF_HOME": str(hf_home), "HF_XET_CACHE": str(out / "xet")}
        hub.fail_next["tag"] = 1  # the commit lands, then the tag request fails
        push = ("export", "--release", RELEASE, "--out", target, "--push", "org/x", "--warehouse", clean)
        failed = kitab_cli(*push, env=env, unset=("HF_", "HUGGING_FACE"))
        repo = hub.repos.get("org/x")
        head = repo.head.oid if repo and repo.commits else None
        says = bool(head) and f"committed as {head}, not tagged" in failed["first"]
        rerun = kitab_cli(*push, env=env, unset=("HF_", "HUGGING_FACE"))
        tags = dict(repo.tags) if repo else {}
        commits = len(repo.commits) if repo else 0
    leaked = token in failed["stderr"] + rerun["stderr"] + rerun["stdout"]
    rows.append(
        probe(
            "export --push: tag fails after the commit, then the same command again",
            "export/push",
            failed["exit"] != 0
            and failed["lines"] == 1
            and not failed["traceback"]
            and says
            and rerun["exit"] == 0
            and tags == {RELEASE: head}
            and not leaked,
            f"first exit {failed['exit']}, says committed-not-tagged: {says}; rerun exit {rerun['exit']}, "
            f"tagged the release's commit: {tags == {RELEASE: head}}, commits {commits}; token leaked: {leaked}",
            failed,
        )
    )
    return rows


def answer_args(url: str, clean: Path, folder: Path, *extra) -> list:
    return [
        "answer", "--release", RELEASE, "--model", "hostile", "--base-url", url, "--out", folder / "answers.jsonl",
        "--cache", folder / "cache.sqlite", "--warehouse", clean, "--quiet", *extra,
    ]  # fmt: skip


def answer_probes(clean: Path, out: Path) -> list[dict]:
    from kitab.simulate.chat import ChatServer

    rows = []
    folder = out / "i31-answer-endless"
    folder.mkdir(exist_ok=True)
    with ChatServer() as server:
        server.hostile("endless", 5)
        r = kitab_cli(
            *answer_args(server.url, clean, folder, "--limit", "1", "--timeout", "5", "--max-attempts", "1"),
            timeout=300,
        )
    rows.append(
        probe(
            "answer --timeout 5 against a body that never ends",
            "answer",
            r["exit"] != 0 and r["seconds"] <= 30 and r["lines"] <= 2 and not r["traceback"],
            f"gave up after {r['seconds']} s (limit 30 s)",
            r,
        )
    )
    for sig in (signal.SIGINT, signal.SIGTERM):
        folder = out / f"i31-answer-{sig.name}"
        folder.mkdir(exist_ok=True)
        with ChatServer() as server:
            server.hostile("hang", 5)
            proc = subprocess.Popen(
                [sys.executable, "-m", "kitab.app.cli", *map(str, answer_args(server.url, clean, folder, "--limit", "2",
                 "--timeout", "600"))],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
            )  # fmt: skip
            deadline = time.monotonic() + 120
            while not server.chat_requests and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            arrived = bool(server.chat_requests)
            time.sleep(0.5)  # inside the hanging request
            proc.send_signal(sig)
            sent = time.monotonic()
            try:
                stdout, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, err = proc.communicate()
            took = time.monotonic() - sent
        lines = err.strip().splitlines()
        r = {"exit": proc.returncode, "lines": len(lines), "first": lines[0][:160] if lines else ""}
        rows.append(
            probe(
                f"{sig.name} while an answer request hangs",
                "answer",
                arrived and proc.returncode != 0 and took <= 5 and len(lines) <= 2 and "Traceback" not in err,
                f"request arrived: {arrived}; stopped {took:.2f} s after the signal (limit 5 s)",
                r,
            )
        )
    return rows


def write_answers(clean: Path, path: Path, titles: int) -> int:
    """An answers file for every query of the release: ``titles`` made-up titles per answer."""
    from kitab.core.warehouse import Warehouse

    with Warehouse(clean).connect(warn=False) as con:
        ids = [q for (q,) in con.execute("select query_id from queries order by query_id").fetchall()]
    body = "Output:\n" + "".join(f"{n}. Reason: r. Title: Title {n}\n" for n in range(1, titles + 1))
    path.write_text("".join(json.dumps({"query_id": q, "response": body}) + "\n" for q in ids), encoding="utf-8")
    return len(ids)


EVAL_READER = r"""
import sys, time
from pathlib import Path
from kitab.core.warehouse import Warehouse
root, stop = Path(sys.argv[1]), Path(sys.argv[2])
with Warehouse(root).connect(warn=False) as con:
    print("connected", flush=True)
    deadline = time.monotonic() + 120
    while not stop.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        print("models", con.execute("select count(distinct model) from evaluations").fetchone()[0], flush=True)
    except Exception as exc:
        print("error", str(exc).splitlines()[0][:150], flush=True)
"""


def evaluate_probes(clean: Path, out: Path) -> list[dict]:
    from kitab.core.warehouse import Warehouse

    rows = []
    wh = copy_release(clean, out / "i31-evaluate")
    files = {}
    for model, titles in (("model-a", 1), ("model-b", 3)):
        files[model] = out / f"i31-{model}.jsonl"
        write_answers(clean, files[model], titles)

    def evaluate(model: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "kitab.app.cli", "evaluate", "--release", RELEASE, "--answers", str(files[model]),
             "--model", model, "--warehouse", str(wh)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
        )  # fmt: skip

    started = time.monotonic()
    procs = [evaluate(m) for m in files]
    outputs = [p.communicate(timeout=600) for p in procs]
    done = [(p.returncode, err) for p, (_, err) in zip(procs, outputs)]
    took = time.monotonic() - started
    with Warehouse(wh).connect(warn=False) as con:
        models = sorted(m for (m,) in con.execute("select distinct model from evaluations").fetchall())
    worst = max(done, key=lambda d: len(d[1].strip().splitlines()))
    rows.append(
        {
            "case": "two evaluations of different answers files started together",
            "surface": "evaluate",
            "held": all(code == 0 for code, _ in done) and models == sorted(files),
            "measured": f"exits {[code for code, _ in done]} in {took:.0f} s; models in evaluations: {models}",
            "lines": len(worst[1].strip().splitlines()),
            "exit": next((code for code, _ in done if code), 0),
            "first": (worst[1].strip().splitlines() or [""])[0][:160],
        }
    )

    # a reader connected while evaluations holds model-a's file; model-b's evaluation then rewrites it
    wh = copy_release(clean, out / "i31-evaluate-reader")
    first = evaluate("model-a")
    first.communicate(timeout=600)
    stop = out / "i31-evaluate-reader.stop"
    stop.unlink(missing_ok=True)
    reader = subprocess.Popen(
        [sys.executable, "-c", EVAL_READER, str(wh), str(stop)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    ready = reader.stdout.readline().strip() == "connected"
    second = evaluate("model-b")
    try:  # an evaluation that waits for the readers (a sweep) waits for this one: let it go after 30 s
        second.wait(timeout=30)
        waited = False
    except subprocess.TimeoutExpired:
        waited = True
    stop.touch()
    said = reader.communicate(timeout=120)[0].strip()
    _, err = second.communicate(timeout=600)
    lines = err.strip().splitlines()
    rows.append(
        {
            "case": "a reader connected before an evaluation reads evaluations after it",
            "surface": "evaluate",
            "held": ready and said.startswith("models") and second.returncode == 0,
            "measured": f"reader: {said or 'nothing'}; evaluation exit {second.returncode}"
            + (" after waiting for the reader" if waited else " while the reader was connected"),
            "lines": len(lines),
            "exit": second.returncode,
            "first": lines[0][:160] if lines else "",
        }
    )
    return rows


def from_dumps_probes(out: Path) -> list[dict]:
    import shutil

    from kitab.simulate.generator.generate import generate_snapshot
    from kitab.simulate.generator.published import JSON_FILE, write_published

    base = out / "i31-dumps"
    generate_snapshot(base / "world", 5, 40)  # small inputs in the published formats (as the tests make)
    write_published(base / "world", base / "dumps", seed=5)
    dumps = base / "dumps"

    def from_dumps(openlibrary: Path, target: Path) -> dict:
        return kitab_cli(
            "snapshot", "from-dumps", "--wikidata", dumps / JSON_FILE, "--openlibrary", openlibrary,
            "--out", target, "--workers", "0",
        )  # fmt: skip

    rows = []
    thesis = base / "thesis"
    thesis.mkdir()
    (thesis / "chapter1.tex").write_text("years of work")
    r = from_dumps(dumps / "openlibrary", thesis)
    kept = (thesis / "chapter1.tex").exists() and sorted(p.name for p in thesis.iterdir()) == ["chapter1.tex"]
    rows.append(
        probe(
            "from-dumps --out a user's folder",
            "from-dumps",
            r["exit"] != 0 and r["lines"] <= 2 and not r["traceback"] and kept,
            f"exit {r['exit']}; the user's file still there, nothing added: {kept}",
            r,
        )
    )
    before = sorted((p.name, p.stat().st_size) for p in (dumps / "openlibrary").iterdir())
    r = from_dumps(dumps / "openlibrary", dumps / "openlibrary")
    after = sorted((p.name, p.stat().st_size) for p in (dumps / "openlibrary").iterdir())
    rows.append(
        probe(
            "from-dumps --out equal to the --openlibrary folder",
            "from-dumps",
            r["exit"] != 0 and r["lines"] <= 2 and not r["traceback"] and before == after,
            f"exit {r['exit']}; the dumps untouched: {before == after} ({len(after)} files)",
            r,
        )
    )
    broken = base / "broken"
    shutil.copytree(dumps, broken)
    works = next((broken / "openlibrary").glob("ol_dump_works_*"))
    works.write_bytes(b"")
    target = base / "out-empty"
    r = kitab_cli(
        "snapshot", "from-dumps", "--wikidata", broken / JSON_FILE, "--openlibrary", broken / "openlibrary",
        "--out", target, "--workers", "0",
    )  # fmt: skip
    rows.append(
        probe(
            "from-dumps with an empty ol_dump_works file",
            "from-dumps",
            r["exit"] != 0 and r["lines"] <= 2 and not r["traceback"] and not target.exists(),
            f"exit {r['exit']} in {r['seconds']} s; names the file: {works.name in r['first']}; "
            f"--out created: {target.exists()}",
            r,
        )
    )
    return rows


def issue31_cases(clean: Path, out: Path) -> list[dict]:
    return [
        *reads_probes(clean, out),
        *early_signal_probes(clean),
        *push_probes(clean, out),
        *answer_probes(clean, out),
        *evaluate_probes(clean, out),
        *from_dumps_probes(out),
    ]


def hostile_cases(mirror, clean: Path, out: Path, authors: int, seed: int) -> list[dict]:
    return [
        *damage_cases(clean, out),
        reader_during_rebuild(mirror, clean, out, authors, seed),
        *disk_full_cases(mirror, clean, out, authors, seed),
        deleted_lock_case(mirror, out, authors, seed),
        *signal_cases(clean, out),
    ]


SURFACES = ("warehouse reads", "sql", "refresh", "export/push", "answer", "evaluate", "from-dumps")


def print_by_surface(hostile: list[dict]) -> None:
    """Probes tried / held, by surface (a skipped probe is not tried)."""
    print("| surface | probes tried | held | not held | skipped |")
    print("|---|---|---|---|---|")
    totals = Counter()
    for surface in [*SURFACES, *sorted({c["surface"] for c in hostile} - set(SURFACES))]:
        mine = [c for c in hostile if c["surface"] == surface]
        if not mine:
            continue
        count = Counter("skipped" if c["held"] is None else "held" if c["held"] else "not held" for c in mine)
        tried = count["held"] + count["not held"]
        totals.update(count, tried=tried)
        print(f"| {surface} | {tried} | {count['held']} | {count['not held']} | {count['skipped']} |")
    print(f"| **all** | {totals['tried']} | {totals['held']} | {totals['not held']} | {totals['skipped']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7, help="sampling seed of every refresh")
    parser.add_argument("--fault-seed", type=int, default=7, help="seed of the mirror's random faults")
    parser.add_argument("--rates", default="0.1,0.3", help="fault rates besides the clean run (0)")
    parser.add_argument("--kills", type=int, default=10, help="kill -9 points")
    parser.add_argument("--kill-seed", type=int, default=10)
    parser.add_argument("--rerun", choices=("direct", "cli"), default="direct")
    parser.add_argument(
        "--cases",
        default="faults,kills,hostile",
        help="which groups of cases to run (faults, kills, hostile, issue31, issue39)",
    )
    args = parser.parse_args()
    groups = set(args.cases.split(","))
    known = {"faults", "kills", "hostile", "issue31", "issue39"}
    if groups - known:
        parser.error(f"--cases: unknown {', '.join(sorted(groups - known))}")

    from kitab.core.env import BUNDLED_SNAPSHOT
    from kitab.simulate.mirror.faults import RandomFaults
    from kitab.simulate.mirror.server import Mirror

    BENCH_OUT.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="run-", dir=BENCH_OUT))  # each CLI refresh: Prefect home in its warehouse
    cases: list[dict] = []

    def report(case: dict) -> None:
        cases.append(case)
        print(json.dumps(case), flush=True)

    with Mirror(BUNDLED_SNAPSHOT) as mirror:
        clean = out / "clean"
        rates = [float(r) for r in args.rates.split(",") if r] if "faults" in groups else []
        for rate in [0.0, *rates]:
            warehouse = clean if rate == 0 else out / f"faults-{rate:g}"
            mirror.faults.random = (
                RandomFaults.parse(f"rate={rate},seed={args.fault_seed},kinds={KINDS}") if rate else None
            )
            mark, started = len(mirror.log()), time.monotonic()
            try:
                summary = refresh_direct(mirror, warehouse, args.authors, args.seed)
                error = None
            except Exception as exc:  # noqa: BLE001 - a failed refresh is a result here
                summary, error = None, f"{type(exc).__name__}: {exc}"
            wall = time.monotonic() - started
            if rate == 0 and error:
                raise SystemExit(f"the clean refresh failed: {error}")
            report(
                {
                    "case": f"faults {rate:.0%}" if rate else "clean (0% faults)",
                    "wall_s": round(wall, 1),
                    "requests": len(mirror.log()) - mark,
                    "faults": faults_injected(mirror, mark),
                    "source_unavailable": summary["stage_counts"]["source unavailable"] if summary else None,
                    "error": error,
                    **compare(clean, warehouse),
                }
            )
        mirror.faults.random = None

        if "hostile" in groups:
            for case in hostile_cases(mirror, clean, out, args.authors, args.seed):
                report(case)
        if "issue31" in groups:
            for case in issue31_cases(clean, out):
                report(case)
        if "issue39" in groups:
            from benchmarks.round4 import all_probes  # one module per surface

            for case in all_probes(clean, out):
                report(case)
        mark = len(mirror.log())
        if "kills" not in groups:
            args.kills = 0
        if not groups & {"faults", "kills"}:  # only probes: no uninterrupted CLI refresh to compare with
            return finish(args, out, cases)
        full, code = run_cli(cli_command(mirror, out / "cli", args.authors, args.seed))
        report(
            {
                "case": "CLI refresh, not killed",
                "wall_s": round(full, 1),
                "requests": len(mirror.log()) - mark,
                "exit": code,
                **compare(clean, out / "cli"),
            }
        )

        rng = random.Random(args.kill_seed)
        delays = [round(rng.uniform(1.0, 0.9 * full), 1) for _ in range(args.kills)]
        for n, delay in enumerate(delays, 1):
            warehouse = out / f"kill-{n:02d}"
            proc = subprocess.Popen(
                cli_command(mirror, warehouse, args.authors, args.seed),
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            launched = time.monotonic()
            try:
                proc.wait(timeout=delay)
                left, at_kill, killed_at = [], "finished before the kill", None
            except subprocess.TimeoutExpired:
                killed_at = time.monotonic() - launched  # measured: when the SIGKILL was sent
                left = kill_tree(proc)
                at_kill = checkpoints(warehouse)
            started = time.monotonic()
            if args.rerun == "cli":
                _, code = run_cli(cli_command(mirror, warehouse, args.authors, args.seed))
                error = None if code == 0 else f"exit {code}"
            else:
                try:
                    refresh_direct(mirror, warehouse, args.authors, args.seed)
                    error = None
                except Exception as exc:  # noqa: BLE001
                    error = f"{type(exc).__name__}: {exc}"
            rerun = time.monotonic() - started
            report(
                {
                    "case": f"kill -9 at {killed_at:.1f}s (measured; drawn {delay:.1f}s), rerun"
                    if killed_at
                    else f"no kill: finished before {delay:.1f}s",
                    "wall_s": round((killed_at or delay) + rerun, 1),
                    "rerun_s": round(rerun, 1),
                    "checkpoints_at_kill": at_kill,
                    "processes_left": left,
                    "error": error,
                    **compare(clean, warehouse),
                }
            )

    finish(args, out, cases)


def finish(args, out: Path, cases: list[dict]) -> None:
    """results.json, then the tables: hostile probes, tried / held by surface, the refreshes."""
    (out / "results.json").write_text(json.dumps(cases, indent=2))
    print()
    print(
        f"{args.authors} authors, seed {args.seed}; faults seed {args.fault_seed} ({KINDS}); "
        f"kill seed {args.kill_seed}; rerun {args.rerun}; results in {out / 'results.json'}"
    )
    print()
    hostile = [c for c in cases if "held" in c]
    if hostile:
        print("| hostile case | held | measured | stderr lines | exit | first stderr line |")
        print("|---|---|---|---|---|---|")
        for c in hostile:
            held = "skipped" if c["held"] is None else "yes" if c["held"] else "**no**"
            print(
                f"| {c['case']} | {held} | {c['measured']} | {c['lines']} | {c['exit']} | "
                f"{c['first'].replace('|', '/')} |"
            )
        print()
        print_by_surface(hostile)
        print()
    print("| case | authors lost | tables identical to the clean run | faults injected | wall (s) | notes |")
    print("|---|---|---|---|---|---|")
    for c in (c for c in cases if "held" not in c):
        notes = []
        if c.get("error"):
            notes.append(c["error"][:120])
        if c.get("checkpoints_at_kill"):
            notes.append(f"checkpointed at kill: {c['checkpoints_at_kill']}; rerun {c['rerun_s']} s")
        if c.get("processes_left"):
            notes.append(f"left running: {', '.join(c['processes_left'])}")
        if c.get("source_unavailable"):
            notes.append(f"{c['source_unavailable']} source_unavailable rejects")
        if c.get("differing"):
            notes.append("differ: " + ", ".join(c["differing"]))
        faults = sum(c.get("faults", {}).values())
        injected = f"{faults} of {c['requests']} requests" if "faults" in c else "-"
        print(
            f"| {c['case']} | {c['authors_lost']} | {'yes' if c['identical'] else 'no'} | {injected} | "
            f"{c['wall_s']} | {'; '.join(notes)} |"
        )


if __name__ == "__main__":
    main()
