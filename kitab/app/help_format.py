"""How ``kitab --help`` names what an option takes: a flag takes nothing, so it shows no
metavar; an option shows a word for its value (SEED, PATH, N, ...), not typer's ``<str>`` /
``<bool>`` type tag; and help paragraphs that wrap where the terminal does, not where the
source line broke. Applied once to the whole app (:func:`set_metavars`), so a command added
later gets the same convention without writing ``metavar=`` itself; one written is kept."""

from __future__ import annotations

import inspect
import types
import typing
from pathlib import Path

# what the value is, where the option's name does not say it well by itself
_BY_NAME = {
    "output": "FORMAT",
    "memory_limit": "SIZE",
    "mirror_url": "URL",
    "base_url": "URL",
    "dask_address": "URL",
    "as_of": "DATE",
    "timeout": "SECONDS",
    "max_retry_after": "SECONDS",
    "files": "NAME=PATH",
    "compare": "A B",
    "show": "RELEASE",
    "push": "REPO",
    "taggers": "NAMES",
    "max_failed_share": "SHARE",
    "rate": "PER_SECOND",
    "ol_rate": "PER_SECOND",
    "wdqs_rate": "PER_SECOND",
    "faults": "SPEC",
    "system": "TEXT",
    "response_column": "COLUMN",
    "chunk_mb": "MB",
    "max_record_mb": "MB",
    "port": "PORT",
}


def _bare(annotation) -> object:
    """``X | None`` -> X (the value's own type)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def metavar_for(name: str, annotation) -> str:
    """The metavar of the option for parameter ``name`` of type ``annotation``: "" for a flag."""
    kind = _bare(annotation)
    if kind is bool:
        return ""
    if name in _BY_NAME:
        return _BY_NAME[name]
    if isinstance(kind, type) and issubclass(kind, Path):
        return "PATH"
    if "seed" in name:
        return "SEED"
    if kind is int:
        return "N"
    return name.upper().replace("_", "-")


def one_line_paragraphs(text: str) -> str:
    """A docstring with each paragraph on one line: the commands list of ``kitab --help`` keeps
    a docstring's line breaks as they are, so a sentence broke wherever the source line did."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def _options_of(callback) -> None:
    from typer.models import ArgumentInfo, OptionInfo

    hints = typing.get_type_hints(callback)
    for name, parameter in inspect.signature(callback).parameters.items():
        info = parameter.default
        if isinstance(info, OptionInfo) and info.metavar is None:
            info.metavar = metavar_for(name, hints.get(name, str))
        elif isinstance(info, ArgumentInfo) and info.metavar is None:  # usage: QUERY, not {query}
            info.metavar = name.upper()


def _no_help_metavar(cls):
    """``cls`` (a typer command or group class) whose own ``--help`` flag shows no metavar."""

    class Conventional(cls):
        def get_help_option(self, ctx):
            option = super().get_help_option(ctx)
            if option is not None and option.metavar is None:
                option.metavar = ""
            return option

    Conventional.__name__ = f"Kitab{cls.__name__}"
    return Conventional


def command_classes():
    """(command class, group class) for typer: typer's own, with --help shown as a flag."""
    from typer.core import TyperCommand, TyperGroup

    return _no_help_metavar(TyperCommand), _no_help_metavar(TyperGroup)


def set_metavars(app, classes=None) -> None:
    """Give every option of every command of ``app`` (a typer.Typer, its groups included) the
    metavar :func:`metavar_for` says, unless it names its own; each command's help its
    docstring with one line per paragraph (:func:`one_line_paragraphs`); and each command and
    group the classes of :func:`command_classes` (the root's: ``typer.Typer(cls=...)``)."""
    from typer.core import TyperCommand
    from typer.models import DefaultPlaceholder

    command_cls, group_cls = classes or command_classes()
    if app.registered_callback is not None and app.registered_callback.callback is not None:
        _options_of(app.registered_callback.callback)
    for command in app.registered_commands:
        if command.help is None and command.callback.__doc__:
            command.help = one_line_paragraphs(command.callback.__doc__)
        if command.cls in (None, TyperCommand):  # typer's default: no class of its own
            command.cls = command_cls
        _options_of(command.callback)
    for group in app.registered_groups:
        info = group.typer_instance.info
        if isinstance(info.help, str):
            info.help = one_line_paragraphs(info.help)
        if isinstance(group.cls, DefaultPlaceholder):
            group.cls = group_cls
        set_metavars(group.typer_instance, (command_cls, group_cls))
