"""The ``kitab`` command line: the typer app, its global options, how an error ends it, and
``main``. The commands live in kitab/app/commands/, one module per group; every command that
touches the warehouse takes ``--warehouse DIR``; heavy imports (prefect, spaCy) happen inside
the commands that need them."""

from __future__ import annotations

import os
import sys

from kitab.core.errors import KitabError

# Importing this module is light (the `kitab` script imports it before main() runs): the typer app
# and its commands are imported inside main(), after the signal handlers are in place, so Ctrl-C
# or SIGTERM at any moment from the process's start ends it in one line.


def _build_app():
    import typer

    from kitab.app.commands import GROUPS
    from kitab.app.help_format import command_classes, set_metavars

    classes = command_classes()
    built = typer.Typer(
        cls=classes[1],
        help="kitab: dynamic data collection for the KITAB benchmark.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for group in GROUPS:
        built.add_typer(group.app)  # no name: the group's commands are kitab's own

    def _print_version(value: bool) -> None:
        if value:
            from kitab.core.version import __version__

            print(f"kitab {__version__}")
            raise typer.Exit()

    @built.callback()
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

    set_metavars(built, classes)
    return built


def __getattr__(name: str):
    """``kitab.app.cli.app``, the typer app (built on first use: tests' CliRunner, docs tools)."""
    if name == "app":
        globals()["app"] = built = _build_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _debug() -> bool:
    return os.environ.get("KITAB_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")


def _print_error(exc: KitabError, cause: BaseException) -> None:
    """commands.common's print_error, or (a signal before the commands were imported) its one line."""
    common = sys.modules.get("kitab.app.commands.common")
    if common is not None and hasattr(common, "print_error"):
        common.print_error(exc, cause)
    else:
        print(f"kitab: error: {exc}", file=sys.stderr)


def main() -> None:
    """The ``kitab`` command: a KitabError (a user's mistake, a busy warehouse, a broken
    snapshot) is one or two lines on stderr and exit 1; its traceback only with --debug.
    Usage errors are click's (exit 2); any other exception is a bug and keeps its traceback.
    Ctrl-C and SIGTERM are handled from the first line, before the commands are imported."""
    from kitab.app.guard import environment_error, ignore_stop_signals, terminate_as_interrupt

    terminate_as_interrupt()
    try:
        from kitab.app.commands.common import claim_process

        claim_process()
        app = __getattr__("app")
        app()  # (click prints "Aborted!" for Ctrl-C and SIGTERM, and exits 1)
    except KitabError as exc:
        ignore_stop_signals()
        if _debug():
            raise
        from kitab.app.commands.common import print_error

        print_error(exc)
        sys.exit(1)
    except BaseException as exc:
        ignore_stop_signals()
        line = environment_error(exc)
        if line is None or _debug():
            raise
        _print_error(KitabError(line), exc)
        sys.exit(130 if isinstance(exc, KeyboardInterrupt) else 1)


if __name__ == "__main__":
    main()
