"""What the commands share: the ``--warehouse`` option and how it resolves, the output
formats of a result, warnings, and how a user's error is printed."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import typer

from kitab.app.console import print_rows
from kitab.core import jsonl
from kitab.core.env import quiet_prefect_env
from kitab.core.errors import KitabError

WarehouseOpt = typer.Option(None, "--warehouse", help="warehouse root (default: warehouse/ or $KITAB_WAREHOUSE)")
# json: one JSON array (what a JSON reader expects); jsonl: one object per line (for streams)
OUTPUTS = ("table", "json", "jsonl", "csv")
# kitab report and kitab evaluate: the document, or its leaderboard as JSON
REPORT_OUTPUTS = ("markdown", "json")


def warehouse_root(path: Path | None, *, create: bool = True) -> Path:
    """Resolve the warehouse and point Prefect's home inside it, before prefect is imported.
    ``create=False``: nothing is created yet (a refresh checks its inputs first; its lock then
    creates the folder)."""
    from kitab.core.config import Settings

    root = Path(path).resolve() if path else Settings().warehouse
    os.environ["KITAB_WAREHOUSE"] = str(root)
    if create:
        (root / ".prefect").mkdir(parents=True, exist_ok=True)  # Prefect only creates the last level
    quiet_prefect_env(root / ".prefect")
    return root


def existing_warehouse(path: Path | None, release: str | None = None) -> Path:
    """The warehouse a read command reads (never created by it), with ``release`` committed in it."""
    from kitab.core.warehouse import CATALOG, Warehouse

    root = warehouse_root(path, create=False)
    # the ledger alone makes a warehouse (reads build their views from it; the catalog is a copy)
    if not (root / CATALOG).is_file() and not Warehouse(root).committed_releases():
        raise KitabError(
            f"no warehouse at {root} (no committed release): run `kitab refresh` or `kitab demo` first, "
            "or point --warehouse / $KITAB_WAREHOUSE at one"
        )
    if release is not None:
        Warehouse(root).require_release(release)
    return root


def check_output(output: str) -> None:
    """``--output`` of a command printing rows: one of OUTPUTS."""
    if output not in OUTPUTS:
        raise KitabError(f"--output {output!r}: expected one of {', '.join(OUTPUTS)}")


def check_report_output(output: str) -> None:
    """``--output`` of a command printing a document: one of REPORT_OUTPUTS (a usage error)."""
    if output not in REPORT_OUTPUTS:
        raise typer.BadParameter(f"expected one of {', '.join(REPORT_OUTPUTS)}", param_hint="--output")


def print_result(columns: list[str], rows: list[tuple], output: str) -> None:
    """Rows on stdout as ``output`` (OUTPUTS)."""
    if output in ("json", "jsonl"):
        lines = [jsonl.dumps(dict(zip(columns, row)), default=str) for row in rows]
        if output == "json":  # an array, still one row per line
            print("[" + ",\n ".join(lines) + "]")
        else:
            for line in lines:
                print(line)
    elif output == "csv":
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")  # LF: the csv module's default is CRLF
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        print_rows(columns, rows)


def warn(message: str) -> None:
    print(f"kitab: warning: {message}", file=sys.stderr)


@contextlib.contextmanager
def user_errors():
    """A KitabError inside: printed as main() prints it, exit 1, also where the app runs
    without main() (typer's CliRunner, `kitab releases` calling sql)."""
    try:
        yield
    except KitabError as exc:
        print_error(exc)
        raise typer.Exit(1) from None


def print_error(exc: KitabError, cause: BaseException | None = None) -> None:
    """A KitabError as at most two lines on stderr, and its frames (or ``cause``'s) released."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    print(f"kitab: error: {lines[0]}" + ("\n" + " ".join(lines[1:]) if len(lines) > 1 else ""), file=sys.stderr)
    _release_frames(cause or exc)


def _release_frames(exc: BaseException) -> None:
    """Drop the failed code's frames and what they hold (a DuckDB connection left alive at
    interpreter exit makes its bindings print dozens of "leaked" lines after the error)."""
    import gc

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = None  # (3.11 frames keep their function, so clearing locals is not enough)
        exc = exc.__cause__ or exc.__context__
    gc.collect()


# True once main() runs: this process is the `kitab` command (process-wide limits are ours to set)
_own_process = False


def claim_process() -> None:
    """main() says so: this process is the `kitab` command."""
    global _own_process
    _own_process = True


def own_process() -> bool:
    return _own_process
