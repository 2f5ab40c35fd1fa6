"""The book list inside one model answer (docs/evaluate.md, "Reading an answer").

:func:`read_answer` returns the titles a model listed and whether it explicitly said that no
book satisfies the query (``no_books``). An answer with no titles that is not such a statement
(a refusal, empty or null content, an answer cut inside its reasoning) is an abstention: the
metrics tell the two apart (kitab/release/evaluation/metrics.py). A list item or prose line
that is a sentence gives only its quoted or delimited titles (:func:`item_titles`); one that
gives none is an unread line (``unread``), so "The book is a love story about …" is never a
title (tests/data/small_model_answers.jsonl).

Every step is linear in the answer's length: string scans and anchored patterns without nested
quantifiers, applied per line, and lines longer than MAX_LINE_CHARS are never title lines;
a search for a closing quote looks at most MAX_SPAN_CHARS ahead.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

from kitab.release.evaluation.no_books import is_refusal, says_no_books

MAX_LINE_CHARS = 4_096
# reasoning blocks, matched by depth whatever their spelling (<think> inside <reasoning> goes whole)
_BLOCK_TAG = re.compile(r"<(/?)(?:think|thinking|reasoning)>|\[(/?)THINK\]", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"</?answer>", re.IGNORECASE)
_HARMONY_FINAL = "<|channel|>final<|message|>"
_HARMONY_TOKEN = re.compile(r"<\|(?:end|return|start|channel|message)\|>")
# "Output:", "Final Output:", "Final answer:", "Answer:", also bold or after "#"/">"
_MARKER = re.compile(r"[#>\s*_]*(?:final[ \t]+)?(?:output|answer)[ \t]*:(?:\*\*|__)?", re.IGNORECASE)
_HEADING_MARKERS = frozenset({"output", "final output", "answer", "final answer"})
_TITLE_KEY = re.compile(r"\btitle[ \t]*:", re.IGNORECASE)
_REASON_KEY = re.compile(r"\breason[ \t]*:", re.IGNORECASE)
_LIST_ITEM = re.compile(r"([ \t]*)(?:\d{1,3}[.)]|[-*•])[ \t]+(\S.*)")
_HEADING = re.compile(r"#{1,6}[ \t]+(?:\d{1,3}[.)][ \t]+)?(\S.*)")
_YEAR = re.compile(r"[ \t]*\((?:c\.[ \t]*)?\d{3,4}\)")
_SPACED_DASHES = (" — ", " – ", " - ")
_CLOSERS = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "`": "`"}
_NO_TITLE = frozenset({"", "none", "n/a", "na", "-", "<title>", "..."})
# explicit empty answers, matched as phrases on a whole line (never by a first word alone:
# "No Longer at Ease", "Nothing" and "None of the Above" are titles)
_NO_BOOKS_LINES = frozenset({"none", "no books", "no books found", "no such books", "no titles", "n/a", "[]"})
_NO_BOOKS_STARTS = (
    "no books ",
    "no book ",
    "there are no ",
    "there is no ",
    "there were no ",
    "i found no ",
    "i could not find any book",
    "i couldn't find any book",
)
_NO_BOOKS_VERBS = (" satisf", " meet", " match", " fit", " qualif")
_EXCLUDED = ("left out", "excluded", "not included", "do not satisfy", "don't satisfy", "did not include")


@dataclass(frozen=True)
class ParsedAnswer:
    titles: list[str]
    no_books: bool  # an explicit empty answer ("No books found.", "[]", "Title: None")
    # list items and prose lines a title was looked for in and none could be read from: a bare
    # sentence ("The book is a love story about …") names no title (a parse failure, counted)
    unread: int = 0


def parse_answer(text: str | None) -> list[str]:
    """The titles of :func:`read_answer`."""
    return read_answer(text).titles


def read_answer(text: str | None) -> ParsedAnswer:
    """The titles a model listed, and whether it said explicitly that there are none. The
    reasoning field of a response is never passed here: it is kept apart, not read."""
    body, marked = _answer_body(_normalise(_strip_reasoning(text or "")))
    structured = _structured(body)
    if structured is not None:
        return structured
    lines = [line for line in body.split("\n") if len(line) <= MAX_LINE_CHARS]
    titles, table_none = _table(lines)
    said_none, unread = False, 0
    if not titles and not any(_TITLE_KEY.search(line) for line in lines):
        titles, said_none, unread = _list_items(lines)
    elif not titles:
        titles, said_none = _kitab_lines(lines)
    if titles:
        return ParsedAnswer(titles, False, unread)
    said_none = said_none or table_none or any(_is_no_books(line) for line in lines)
    # an answer marker followed by nothing: the requested list, empty
    return ParsedAnswer([], said_none or (marked and not body.strip()), 0 if said_none else unread)


# -- reasoning, markers --------------------------------------------------------------------
def _strip_reasoning(text: str) -> str:
    return _ANSWER_TAG.sub("", strip_reasoning_blocks(text))


def strip_reasoning_blocks(text: str) -> str:
    """``text`` without its reasoning: ``<think>``-style blocks by depth (a closing tag with no
    opening one: everything before it; an opening one never closed: everything after it) and
    leaked harmony text before the final channel. Other tags (``<answer>``) are kept."""
    at = text.rfind(_HARMONY_FINAL)
    if at >= 0:
        text = text[at + len(_HARMONY_FINAL) :]
    text = _HARMONY_TOKEN.sub("", text)
    kept, depth, start = [], 0, 0
    for m in _BLOCK_TAG.finditer(text):
        closing = bool(m.group(1) or m.group(2))
        if not closing:
            if depth == 0:
                kept.append(text[start : m.start()])
            depth += 1
        elif depth == 0:  # opened in the chat template: everything before is reasoning
            kept, start = [], m.end()
        else:
            depth -= 1
            if depth == 0:
                start = m.end()
    if depth == 0:
        kept.append(text[start:])  # else: opened and never closed (cut): the rest is reasoning
    return "".join(kept)


def is_reasoning_only(response: str | None, reasoning: str | None = None) -> bool:
    """Whether a reply is all reasoning: no text outside its reasoning blocks, and some reasoning
    (the separate ``reasoning`` field, or blocks in ``response``). Read as an abstention, as any
    answer with no title; ``kitab answer`` flags it (``reasoning_only``) and warns."""
    text = response or ""
    if strip_reasoning_blocks(text).strip():
        return False
    return bool(text.strip() or (reasoning or "").strip())


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " ")


def _answer_body(text: str) -> tuple[str, bool]:
    """What follows the last answer marker (and whether there was one)."""
    lines = text.split("\n")
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if len(line) > MAX_LINE_CHARS:
            continue
        m = _MARKER.match(line)
        if m:
            return "\n".join([line[m.end() :], *lines[index + 1 :]]), True
        bare = line.strip().strip("#*_ \t").strip().lower()
        if bare in _HEADING_MARKERS and line.strip() != bare:  # "## Final Output", "**Answer**"
            return "\n".join(lines[index + 1 :]), True
    return text, False


# -- structured answers --------------------------------------------------------------------
def _structured(body: str) -> ParsedAnswer | None:
    candidate = body.strip()
    fence = candidate.find("```")
    if fence >= 0:
        end = candidate.find("```", fence + 3)
        if end < 0:
            return None
        inner = candidate[fence + 3 : end]
        newline = inner.find("\n")
        candidate = (inner[newline + 1 :] if newline >= 0 else inner).strip()
    if not candidate or candidate[0] not in "[{":
        return None
    value = _load(candidate)
    if value is None:
        return None
    titles = _titles_of(value)
    if titles is None:
        return None
    cleaned = [t for t in (clean_title(raw) for raw in titles) if t.lower() not in _NO_TITLE]
    return ParsedAnswer(cleaned, not cleaned)


def _load(candidate: str):
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        pass
    if candidate[0] != "[":
        return None
    try:
        return ast.literal_eval(candidate)  # a Python list literal: ['Ripper', "Maya's Notebook"]
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return None


def _titles_of(value) -> list[str] | None:
    if isinstance(value, dict):
        for key, inner in value.items():
            if (
                isinstance(key, str)
                and key.lower() in ("books", "titles")
                and (inner is None or isinstance(inner, list))
            ):
                return _titles_of(inner or [])  # {"books": null}: the empty list
        return None
    if not isinstance(value, list):
        return None
    titles = []
    for item in value:
        if isinstance(item, str):
            titles.append(item)
        elif isinstance(item, dict):
            titles += [v for k, v in item.items() if isinstance(k, str) and k.lower() == "title" and isinstance(v, str)]
        else:
            return None
    return titles


# -- text answers --------------------------------------------------------------------------
def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> tuple[list[str], bool]:
    rows = [line for line in lines if line.strip().startswith("|")]
    if len(rows) < 2:
        return [], False
    header = [cell.strip("*_ ").lower() for cell in _cells(rows[0])]
    column = next((i for i, cell in enumerate(header) if cell.startswith(("title", "book"))), None)
    if column is None:
        return [], False
    titles, said_none = [], False
    for row in rows[1:]:
        cells = _cells(row)
        if column >= len(cells) or not cells[column].strip("-: "):
            continue  # the |---| row
        title = clean_title(cells[column])
        if title.lower() not in _NO_TITLE:
            titles.append(title)
        elif title.lower() in _NO_BOOKS_LINES:  # "| None | - |"
            said_none = True
    return titles, said_none


def _kitab_lines(lines: list[str]) -> tuple[list[str], bool]:
    titles, said_none = [], False
    for line in lines:
        raw = _title_slot(line)
        if raw is None:
            continue
        title = clean_title(raw)
        if title.lower() in _NO_TITLE or _is_no_books(title):
            said_none = said_none or title.lower() == "none" or _is_no_books(title)
            continue
        titles.append(title)
    return titles, said_none


def _title_slot(line: str) -> str | None:
    """The text of a line's ``Title:`` slot: after "Reason: …" the ``Title:`` that follows the
    end of a sentence (a reason may say "original title: …"), else the first ``Title:``, up to
    a following ``Reason:``."""
    keys = list(_TITLE_KEY.finditer(line))
    if not keys:
        return None
    reason = _REASON_KEY.search(line)
    chosen = keys[0]
    if reason is not None and reason.start() < keys[0].start():
        for key in keys:
            at = key.start() - 1
            while at >= 0 and line[at] in " \t*_":
                at -= 1
            if at >= 0 and line[at] in ".!?":
                chosen = key
                break
    rest = line[chosen.end() :]
    if line[max(0, chosen.start() - 2) : chosen.start()] in ("**", "__") and rest[:2] in ("**", "__"):
        rest = rest[2:]  # "**Title:** *X*": the bold key's closing marks
    after = _REASON_KEY.search(rest)
    return rest[: after.start()] if after else rest


def _list_items(lines: list[str]) -> tuple[list[str], bool, int]:
    """Top-level items of the first list block; without one, bold lines and headings; without
    those, prose lines. An item or line that is a sentence gives only its quoted or delimited
    titles (:func:`item_titles`); one that gives none is counted unread."""
    items, said_none, indent, started = [], False, None, False
    for line in lines:
        m = _LIST_ITEM.fullmatch(line.rstrip())
        if m:
            depth = len(m.group(1).expandtabs(4))
            if indent is None:
                indent = depth
            if depth <= indent:
                items.append(m.group(2))
            started = True
        elif started and line.strip() and not line[:1].isspace():
            break  # prose after the list ends it (and a later, excluded list is not read)
    if not items:
        for line in lines:
            stripped = line.strip()
            heading = _HEADING.fullmatch(stripped)
            if heading:
                items.append(heading.group(1))
            elif len(stripped) > 4 and stripped.startswith("**") and stripped.endswith("**"):
                items.append(stripped)
    prose = False
    if not items:
        content = [line.strip() for line in lines if line.strip()]
        if len(content) == 1 and _bare_title(content[0]) and not is_sentence(content[0]):
            items = content
        else:  # prose: each line's quoted or delimited titles (an introduction or a refusal looks for none)
            prose = True
            items = [
                line
                for line in content
                if line[-1] != ":" and not line.startswith(("|", "```")) and not is_refusal(_plain(line))
            ]
    titles, unread = [], 0
    for item in items:
        if _is_no_books(item):
            said_none = True
            continue
        if prose and not is_sentence(item) and not _bare_title(item):
            continue  # "Sure!", "Thanks.": neither a title nor prose that could name one
        found = [t for t in item_titles(item) if t.lower() not in _NO_TITLE]
        titles += found
        unread += not found
    if prose and titles:
        unread = 0  # an answer in prose: unread only when no line of it names a title
    return titles, said_none, unread


def _plain(line: str) -> str:
    return line.lower().replace("’", "'")


def _bare_title(line: str) -> bool:
    low = line.lower().replace("’", "'")
    return (
        len(line) <= 300
        and line[-1] not in ".!?:"
        and not _is_no_books(line)
        and not any(word in low for word in ("sorry", "can't", "cannot", "as an ai"))
    )


def _is_no_books(line: str) -> bool:
    text = line.strip()
    m = _LIST_ITEM.fullmatch(text)
    if m:
        text = m.group(2)
    if _YEAR.search(text):  # "Nothing Found in the Attic (2001)": a title with its year
        return False
    text = text.strip(" \t*_#`()[]").rstrip(".!").strip(" \t*_()").lower().replace("’", "'")
    if text in _NO_BOOKS_LINES or (text.startswith(_NO_BOOKS_STARTS) and not is_refusal(text)):
        return True
    if text.startswith("none of ") and any(verb in text for verb in _NO_BOOKS_VERBS):
        return True
    return says_no_books(text)


# -- one title -----------------------------------------------------------------------------
# words a title keeps in lower case ("The Lord of the Rings"); any other lower-case word is prose
_SMALL = frozenset(
    "a an the and but or nor for so yet of on in at to by with from as into onto upon over per via vs "
    "de del la le les du da di van von der den y e et".split()
)
# lower-case finite verbs that make a line a sentence with a single other lower-case word
_VERBS = frozenset(
    "is are was were be been being has have had do does did can could will would shall should may might must "
    "wrote writes written tells follows explores features describes won set published tell follow explore".split()
)
_WORD_TRIM = "\"'“”‘’«»()[]{}*_`#>,.;:!?"
_OPENER = re.compile("[\"“«'‘*_]")
MAX_SPAN_CHARS = 300  # a quoted span longer than this is not a title (and bounds each search)


def is_sentence(text: str) -> bool:
    """Whether ``text`` reads as prose rather than a title: three lower-case words a title would
    capitalise, or one with a lower-case verb ("The book is a love story about …", "Beloved is
    great."), where titles capitalise their words ("Their Eyes Were Watching God")."""
    words = [w.strip(_WORD_TRIM) for w in text.split()]
    lower = [w for w in words if w and w[0].islower() and w not in _SMALL]
    verbs = any(w in _VERBS for w in words)
    if not any(w and w[0].isupper() for w in words):
        # written all in lower case ("the god of small things"): case says nothing, only a verb or
        # a sentence's full stop does
        return (len(words) >= 3 and verbs) or text.rstrip().endswith((".", "!", "?"))
    return len(lower) >= 3 or (len(words) >= 3 and verbs and len(lower) >= 1)


def item_titles(item: str) -> list[str]:
    """The titles of one list item or prose line. A title alone ("Beloved (1987)", "*Jazz* — set
    in Harlem") is :func:`clean_title`'s. Text around quoted spans that is not a title ("The book
    \"The Nightingale\" by … is a must-read") gives the quoted spans; a sentence without them gives
    its delimited head (``X (1987) is …``, ``X by Author is …``, ``X — …``), else nothing."""
    text = " ".join(item.split())
    if not text:
        return []
    spans, outside = _quoted_spans(text)
    if spans and any(_lower_word(w) for w in outside.split()):
        titles = [t for t in (clean_title(_sentence_stop(span)) for span in spans) if t and not is_sentence(t)]
        return list(dict.fromkeys(titles))  # one sentence naming a book twice names it once
    if _wrapped(text) is not None or not is_sentence(text):
        return [clean_title(text)]
    head = _delimited_head(text)
    return [head] if head else []


def _sentence_stop(span: str) -> str:
    """A quoted span without the sentence's full stop written inside the quotes ("… titled "The
    Night I Will Never Grow Old."), but an abbreviation's ("Jr.", "U.S.") kept."""
    words = span.rstrip().split()
    last = words[-1] if words else ""
    if last.endswith(".") and not last.endswith("..") and len(last) > 3 and "." not in last[:-1]:
        return span.rstrip()[:-1]
    return span


def _lower_word(word: str) -> bool:
    word = word.strip(_WORD_TRIM)
    return bool(word) and word[0].islower() and word not in _SMALL


def _delimited_head(text: str) -> str | None:
    """The title a sentence opens with when a delimiter ends it: a year, "by Author", a spaced
    dash; None when the head is itself prose or there is no delimiter."""
    cuts = []
    year = _YEAR.search(text)
    if year is not None:
        cuts.append(year.start())
    by = text.find(" by ")
    if by > 0:
        cuts.append(by)
    for dash in _SPACED_DASHES:
        at = text.find(dash)
        if at > 0:
            cuts.append(at)
    for cut in sorted(cuts):
        head = text[:cut].strip().rstrip(",;:")
        if head and not is_sentence(head) and any(ch.isalnum() for ch in head):
            return head
        break  # the first delimiter decides: a later one ends prose, not a title
    return None


def _quoted_spans(text: str) -> tuple[list[str], str]:
    """The spans ``text`` quotes or emphasises ("…", “…”, «…», '…' opening a word and closing
    before a non-letter, *…*, **…**, _…_), and the text outside them. One left-to-right scan;
    each search for a closing mark looks at most MAX_SPAN_CHARS ahead."""
    spans, outside, i, n, start = [], [], 0, len(text), 0
    while i < n:
        found = _OPENER.search(text, i)  # (the text between marks is skipped in C)
        if found is None:
            break
        i = found.start()
        ch = text[i]
        at_word_start = i == 0 or not text[i - 1].isalnum()
        if ch in "*_" and at_word_start:
            run = min(len(text[i : i + 3]) - len(text[i : i + 3].lstrip(ch)), 3)
            end = text.find(ch * run, i + run, i + run + MAX_SPAN_CHARS)
            if end > i + run and not text[end - 1].isspace():
                spans.append(text[i + run : end])
                outside.append(text[start:i])
                i = start = end + run
                continue
            i += run
            continue
        closer = _CLOSERS.get(ch)
        if closer is not None and ch != "`" and at_word_start:
            limit = min(n, i + 1 + MAX_SPAN_CHARS)
            at = text.find(closer, i + 1, limit)
            while at >= 0 and text[at + 1 : at + 2].isalpha():  # "Hannah's": an apostrophe, not the end
                at = text.find(closer, at + 1, limit)
            if at > i + 1:
                spans.append(text[i + 1 : at])
                outside.append(text[start:i])
                i = start = at + 1
                continue
        i += 1
    outside.append(text[start:])
    cleaned = [span.strip().rstrip(",;:") for span in spans]
    return [span for span in cleaned if any(ch.isalnum() for ch in span)], " ".join(outside)


def clean_title(raw: str) -> str:
    """A title as the model meant it: a wrapped span (quotes, emphasis) is the title; else the
    text up to ``(YYYY)`` or, without a year, up to a spaced dash; a trailing "by Author" (two
    to four capitalised words) is not the title's; inner punctuation kept."""
    text = " ".join(raw.split())
    wrapped = _wrapped(text)
    if wrapped is not None:
        text = wrapped
        inner = _wrapped(text)  # **"Jazz"**
        if inner is not None:
            text = inner
    year = _YEAR.search(text)
    if year is not None and text[: year.start()].strip():
        return _without_author(text[: year.start()].strip())
    for dash in _SPACED_DASHES:
        at = text.find(dash)
        if at > 0:
            text = text[:at]
    return _without_author(text.strip())


def _without_author(title: str) -> str:
    """ "The Road by Cormac McCarthy" -> "The Road" ("Stand by Me", "Death by Water" stay)."""
    at = title.rfind(" by ")
    if at <= 0:
        return title
    name = title[at + 4 :].split()
    if 2 <= len(name) <= 4 and all(word[0].isupper() for word in name):
        return title[:at].strip()
    return title


def _wrapped(text: str) -> str | None:
    """The span a title is wrapped in, or None. A quote opens a wrapping only if its closing
    quote is followed by a non-letter ("'Salem's Lot" is not wrapped)."""
    if not text:
        return None
    first = text[0]
    if first in "*_":
        run = len(text) - len(text.lstrip(first))
        run = min(run, 3)
        mark = first * run
        end = text.find(mark, run)
        while end >= 0 and text[end + run : end + run + 1] == first:  # "***" closing a "**"
            end += 1
        if end > run:
            return text[run:end].strip()
        return None
    closer = _CLOSERS.get(first)
    if closer is None:
        return None
    at = text.find(closer, 1)
    while at >= 0:
        after = text[at + 1 : at + 2]
        if not after.isalpha():
            return text[1:at].strip() if at > 1 else None
        at = text.find(closer, at + 1)
    return None
