"""A model's True/False verdict on one claim (the claim-pairs task, docs/claims.md, "Reading a
verdict"): True, False, or None (no answer, scored wrong).

1. Reasoning is removed as for book lists (parse.strip_reasoning_blocks): ``<think>…</think>``,
   a leading block whose opening tag was in the chat template (``…</think> True``), and an
   unclosed one (the answer was cut: no verdict).
2. NoCha's format, ``<explanation>…</explanation><answer>TRUE</answer>`` (its prompt.txt): the
   verdict is read from the ``<answer>`` elements only (tag attributes and a missing closing tag
   tolerated); elements that disagree are no answer.
3. JSON (also fenced): ``true``, ``"False"``, ``{"answer": true}``, ``{"verdict": "FALSE"}``.
4. The last answer marker (``Answer:``, ``Final answer:``, ``Verdict:``, bold or not): its text.
5. The first word ``true`` / ``false`` (after markup).
6. Sentences "the claim / statement is [not] true / false / correct / incorrect": all agreeing.
7. The words ``true`` / ``false`` anywhere ("not true" counts as false): all agreeing.
Every step is a linear scan or an anchored pattern without nested quantifiers.
"""

from __future__ import annotations

import json
import re

from kitab.release.evaluation.parse import strip_reasoning_blocks

_FIRST_WORD = re.compile(r"^[\s*_#>`\"'“(\[]*(?:(?:final\s+)?answer\s*[:\-]\s*[*_`\"'“]*)?(true|false)\b", re.I)
_MARKER = re.compile(r"^[ \t*_#>]*(?:final[ \t]+)?(?:answer|verdict)[ \t]*(?:is[ \t]*)?[:\-][ \t*_]*", re.I)
_STATEMENT = re.compile(
    r"\b(?:claim|statement)\s+(?:is|was)\s+(not\s+)?(true|false|correct|incorrect|accurate|inaccurate)\b", re.I
)
_WORD = re.compile(r"\b(not\s+|isn't\s+|is\s+not\s+)?(true|false)\b", re.I)
_KEYS = ("answer", "verdict", "final_answer", "label", "result", "is_true", "truth", "value")
_TRUE_WORDS = ("true", "correct", "accurate")


def read_verdict(response: str | None) -> bool | None:
    """A model's text -> True / False / None (no answer)."""
    text = strip_reasoning_blocks(response or "")
    elements = _answer_elements(text)
    if elements:
        return _agreed(_read_plain(element) for element in elements)
    return _read_plain(text)


def _answer_elements(text: str) -> list[str]:
    """The contents of ``<answer …>…</answer…>`` elements, in order (the last may be unclosed)."""
    low, out, at = text.lower(), [], 0
    while (start := low.find("<answer", at)) >= 0:
        opened = low.find(">", start)
        if opened < 0:
            break
        end = low.find("</answer", opened)
        out.append(text[opened + 1 : end if end >= 0 else len(text)])
        if end < 0:
            break
        at = end + 8
    return out


def _agreed(verdicts) -> bool | None:
    found = {v for v in verdicts if v is not None}
    return found.pop() if len(found) == 1 else None


def _read_plain(text: str) -> bool | None:
    text = text.strip()
    if not text:
        return None
    structured = _structured(text)
    if structured is not None:
        return structured
    lines = text.split("\n")
    for index in range(len(lines) - 1, -1, -1):
        marker = _MARKER.match(lines[index])
        if marker:
            rest = "\n".join([lines[index][marker.end() :], *lines[index + 1 :]]).strip()
            verdict = _first_word(rest) if rest else None
            if verdict is not None:
                return verdict
            break
    verdict = _first_word(text)
    if verdict is not None:
        return verdict
    statements = [(m[1] is None) == m[2].lower().startswith(_TRUE_WORDS) for m in _STATEMENT.finditer(text)]
    if statements:
        return _agreed_all(statements)
    return _agreed_all((m[1] is None) == (m[2].lower() == "true") for m in _WORD.finditer(text))


def _agreed_all(verdicts) -> bool | None:
    found = set(verdicts)
    return found.pop() if len(found) == 1 else None


def _first_word(text: str) -> bool | None:
    found = _FIRST_WORD.match(text)
    return found[1].lower() == "true" if found else None


def _structured(text: str) -> bool | None:
    candidate = text
    if candidate.startswith("```"):
        end = candidate.find("```", 3)
        inner = candidate[3 : end if end >= 0 else len(candidate)]
        newline = inner.find("\n")
        candidate = (inner[newline + 1 :] if newline >= 0 else inner).strip()
    if not candidate or candidate[0] not in '{["tfTF':
        return None
    try:
        value = json.loads(candidate)
    except (ValueError, RecursionError):
        return None
    return _value(value)


def _value(value) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _first_word(value)
    if isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(key, str) and key.lower() in _KEYS:
                return _value(inner)
    return None
