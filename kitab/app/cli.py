"""The ``kitab`` command line: the typer app, its global options, how an error ends it, and
``main``. The commands live in kitab/app/commands/, one module per group; every command that
touches the warehouse takes ``--warehouse DIR``; heavy imports (prefect, spaCy) happen inside
the commands that need them."""

from __future__ import annotations

import os
import sys

import typer

from kitab.app.commands import GROUPS
from kitab.app.commands.common import claim_process, print_error
from kitab.core.errors import KitabError

app = typer.Typer(
    help="kitab: dynamic data collection for the KITAB benchmark.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for group in GROUPS:
    app.add_typer(group.app)  # no name: the group's commands are kitab's own


def _print_version(value: bool) -> None:
    if value:
        from kitab.core.version import __version__

        print(f"kitab {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    debug: bool = typer.Option(
        False, "--debug", envvar="KITAB_DEBUG", help="show the traceback of an error (also KITAB_DEBUG=1)"
    ),
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="print kitab's version and exit"
    ),
) -> None:
    if debug:
        os.environ["KITAB_DEBUG"] = "1"


def _debug() -> bool:
    return os.environ.get("KITAB_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")


def main() -> None:
    """The ``kitab`` command: a KitabError (a user's mistake, a busy warehouse, a broken
    snapshot) is one or two lines on stderr and exit 1; its traceback only with --debug.
    Usage errors are click's (exit 2); any other exception is a bug and keeps its traceback."""
    from kitab.app.guard import environment_error, terminate_as_interrupt

    claim_process()
    terminate_as_interrupt()
    try:
        app()  # (click prints "Aborted!" for Ctrl-C and SIGTERM, and exits 1)
    except KitabError as exc:
        if _debug():
            raise
        print_error(exc)
        sys.exit(1)
    except BaseException as exc:
        line = environment_error(exc)
        if line is None or _debug():
            raise
        print_error(KitabError(line), exc)
        sys.exit(130 if isinstance(exc, KeyboardInterrupt) else 1)


if __name__ == "__main__":
    main()
