"""Text checks shared by the readers of outside text (dumps, model answers, a chat endpoint)."""

from __future__ import annotations


def is_unicode(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: a lone surrogate (which JSON's ``\\ud800``
    escapes and Python's ``surrogateescape`` produce) cannot, and fails any later write."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
