"""Whether a line of an answer says that no book satisfies the query (docs/evaluate.md,
"Reading an answer", rule 10): the natural ways models say "none" (issue 38), told apart from
refusals, which claim nothing.

A **no-books statement** asserts that the list is empty: "Output: None found.", "(none)",
"Zero books satisfy the criteria.", "X has not written any books that satisfy these
criteria.", "I couldn't find any books that …", "None of his novels fit …", "The list is
empty.". A **refusal** declines to give a list or disclaims the means to: "I can't help with
that", "I don't have access to …", "I'm not sure …", "Could you clarify …". A sentence with a
refusal marker is never a no-books statement, whatever else it says.

Each line is split into sentences and each sentence into words (linear scans); the rules look
at words a bounded distance apart, so the cost is linear in the line. A title never matches
alone: the rules need a negation *and* a word for books (or a verb of satisfying) where a
title like "No Country for Old Men", "Nothing", "None of the Above" or "And Then There Were
None" has neither. Tested on tests/data/no_books_answers.jsonl and refusal_answers.jsonl.
"""

from __future__ import annotations

import re

# exact sentences (after lower-casing and stripping markup and brackets)
SHORT = frozenset(
    {
        "none",
        "none found",
        "none listed",
        "none available",
        "n/a",
        "[]",
        "empty",
        "empty list",
        "an empty list",
        "no books",
        "no book",
        "no titles",
        "no results",
        "no matches",
        "no such books",
        "nothing found",
        "nil",
    }
)
_SENTENCE_END = re.compile(r"[.!?;:\n]")
_WORD_EDGES = "\"'“”‘’«»()[]{}*_`#>,"
_NEGATIONS = frozenset({"no", "zero", "0", "none", "nothing", "not", "never", "cannot", "unable", "without"})
# "not only the first book written by him but also …": a negation that adds, not one that denies
_NOT_DENYING = frozenset({"only", "just", "merely", "simply", "least"})
_NOUNS = frozenset(
    {
        "book",
        "books",
        "title",
        "titles",
        "work",
        "works",
        "novel",
        "novels",
        "publication",
        "publications",
        "result",
        "results",
        "match",
        "matches",
        "entry",
        "entries",
    }
)
_PLURALS = frozenset(n for n in _NOUNS if n.endswith(("s", "es")))
_BE = frozenset({"is", "are", "was", "were"})
# words a model puts before "there are none" ("I'm afraid", "Sadly,", "No,")
_LEAD_IN = frozenset({"i'm", "i", "am", "afraid", "sadly", "unfortunately", "no", "well", "so"})
# "None that fit.", "None whatsoever.", "None found by me." (not "None of the Above", "None to
# Accompany Me": titles)
_NONE_THEN = frozenset({"that", "whatsoever", "found"})
_VERBS = (
    "satisf",
    "meet",
    "met",
    "match",
    "fit",
    "qualif",
    "found",
    "find",
    "exist",
    "fulfil",
    "publish",
    "wrote",
    "written",
    "write",
    "contain",
    "start",
    "begin",
    "began",
    "end",
    "appear",
    "correspond",
    "compl",
)
_REFUSAL = re.compile(
    r"\b(?:can't|cannot|can not|unable to|not able to|couldn't|could not) "
    r"(?:help|assist|provide|access|browse|answer|comply|fulfil|fulfill|do that|verify|confirm|say|give|share"
    r"|check|reliably|accurately|confidently)\b"
    r"|\bwon't be able\b"
    r"|\b(?:don't|do not|doesn't|does not|i) (?:have|lack) (?:any |enough |sufficient |the |reliable |complete )?"
    r"(?:information|access|data|knowledge|details|records)\b"
    r"|\bno (?:reliable |available )?(?:information|access|data)\b"
    r"|\bas an ai\b|\blanguage model\b|\bnot sure\b|\brather not\b|\b(?:don't|do not) know\b(?! of\b)"
    r"|\btoo limited\b|\bpolic(?:y|ies)\b|\bclarify\b|\bprovide more\b"
)


def is_refusal(sentence: str) -> bool:
    """A refusal marker in ``sentence`` (lower case, straight apostrophes)."""
    return _REFUSAL.search(sentence) is not None


def says_no_books(line: str) -> bool:
    """Whether one of ``line``'s sentences states that no book satisfies the query."""
    low = line.lower().replace("’", "'").replace("‘", "'")
    return any(_sentence_says_none(s) for s in _SENTENCE_END.split(low) if s.strip())


def _sentence_says_none(sentence: str) -> bool:
    if is_refusal(sentence):
        return False
    words = [w for w in (raw.strip(_WORD_EDGES) for raw in sentence.split()) if w]
    if not words:
        return False
    if " ".join(words) in SHORT or " ".join(words).rstrip(" -") in SHORT:
        return True
    has_verb = any(w.startswith(_VERBS) and w not in _NOUNS for w in words)  # ("a match" names, "match" says)
    if _there_are_none(words):
        return True
    if words[0] == "none" and 1 < len(words) <= 6 and (words[1] in _NONE_THEN or words == ["none", "at", "all"]):
        return True
    if words[-1] == "nothing" and len(words) >= 2 and words[-2].startswith(_VERBS):  # "I found nothing"
        return True
    for i, word in enumerate(words):
        if (word in _NEGATIONS or word.endswith("n't")) and not (i + 1 < len(words) and words[i + 1] in _NOT_DENYING):
            # "no books", "zero books satisfy", "has not written any books that …",
            # "not a single one of her books fits"
            for j in range(i + 1, min(i + (8 if has_verb else 6), len(words))):
                # (not "it doesn't contain a city name in its title": one book's own title, described)
                if words[j] in _NOUNS and words[j - 1] != "its" and (has_verb or (j <= i + 2 and words[j] in _PLURALS)):
                    return True
            # "none match", "nothing matches", "none were found", "none qualify"
            if word in ("none", "nothing") and i + 1 < len(words):
                after = words[i + 1]
                if after.startswith(_VERBS) or (after in ("were", "was", "are", "is") and has_verb):
                    return True
    # "the answer is none", "the list is empty" (not "And Then There Were None")
    return len(words) >= 2 and words[-1] in ("none", "empty") and words[-2] in ("is", "be")


def _there_are_none(words: list[str]) -> bool:
    """ "There aren't any.", "There are none.", "I'm afraid there is none." as a whole
    sentence: it must open with "there" after a lead-in, so the title "And Then There Were
    None" stays a title."""
    start = 0
    while start < len(words) and words[start] in _LEAD_IN and words[start] != "there":
        start += 1
    rest = words[start:]
    if len(rest) < 3 or rest[0] != "there":
        return False
    be, tail = rest[1], rest[2:]
    if be in _BE:
        return tail in (["none"], ["not", "any"], ["none", "at", "all"], ["nothing"])
    return be.endswith("n't") and be[:-3] in _BE and tail[:1] == ["any"] and len(tail) <= 3
