"""Errors meant for a person, not a traceback."""

from __future__ import annotations


class KitabError(Exception):
    """A failure the user can act on (bad input, a source that is down, a busy warehouse).

    The CLI prints its message as one or two lines on stderr and exits non-zero; the
    traceback is shown only with ``--debug`` or ``KITAB_DEBUG=1``. Keep the message short and
    say what to do or which file/value is wrong."""


def first_line(exc: BaseException) -> str:
    """An exception's message as one line for a person (its type's name when it has none)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class UnknownRelease(KitabError, ValueError):
    """No committed release of that id in the warehouse (Warehouse.require_release)."""


class BadValue(KitabError, ValueError):
    """A value given by the user (an option, a file's content) is wrong. Also a ValueError,
    so Python callers that caught ValueError before still do."""
