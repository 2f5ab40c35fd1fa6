"""The N-Triples grammar, once: one regular expression (RE2, run by DuckDB over
``wikidata.nt.gz``) checks a whole line and splits it into terms, and the escapes of its terms
undone (the dump source's strict reader and the from-dumps builder's)."""

from __future__ import annotations

import re

_HEX4, _HEX8 = "[0-9A-Fa-f]{4}", "[0-9A-Fa-f]{8}"
_IRI = rf'<(?:[^\x00-\x20<>"{{}}|^`\\]|\\u{_HEX4}|\\U{_HEX8})*>'
_PN = r"A-Za-z0-9_\x{80}-\x{10FFFF}"
_BNODE = rf"_:[{_PN}](?:[{_PN}.\-]*[{_PN}\-])?"
_LITERAL = (
    rf'"(?:[^"\\\n\r]|\\[tbnrf"\'\\]|\\u{_HEX4}|\\U{_HEX8})*"'
    rf"(?:@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*|\^\^{_IRI})?"
)
NT_LINE = (
    rf"^[ \t]*({_IRI}|{_BNODE})[ \t]+({_IRI})[ \t]+({_IRI}|{_BNODE}|{_LITERAL})"
    r"[ \t]*\.[ \t]*(?:#.*)?$"
)
# NT_LINE without its blank nodes: the same groups for a line it matches (its subject and object
# start with "<" or '"', never "_"), and RE2 extracts them in one pass, ~3x faster than NT_LINE
# (the bnode's "[...]*[^.]" tail is what keeps NT_LINE off RE2's one-pass matcher)
NT_LINE_IRIS = (
    rf"^[ \t]*({_IRI})[ \t]+({_IRI})[ \t]+({_IRI}|{_LITERAL})"
    r"[ \t]*\.[ \t]*(?:#.*)?$"
)
NT_BLANK = r"[ \t]*(?:#.*)?"
NT_LITERAL_PARTS = r'^"(.*)"(?:@([^"]*)|\^\^<([^"]*)>)?$'

_NT_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def nt_unescape(text: str) -> str:
    """Undo N-Triples escapes (``\\"``, ``\\\\``, ``\\n``, ``\\uXXXX``, ``\\UXXXXXXXX``...)."""

    def one(match: re.Match) -> str:
        code = match.group(1) or match.group(2)
        if code:
            value = int(code, 16)
            if 0xD800 <= value <= 0xDFFF or value > 0x10FFFF:
                raise ValueError(f"\\u escape of a surrogate or beyond Unicode: {match.group(0)}")
            return chr(value)
        if match.group(3) not in _ECHAR:
            raise ValueError(f"unknown escape {match.group(0)!r}")
        return _ECHAR[match.group(3)]

    return _NT_ESCAPE.sub(one, text)
