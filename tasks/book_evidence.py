"""Second-reader evidence for the entity kinds: what a book's own record (Open Library's
subject people / places, WikiData's characters P674 / narrative locations P840), a person's
review label and the model tagger say about a title, as plain evidence dicts
``{"source": "record"|"model"|"review", "verdict": "yes"|"no", "detail": str}`` per kind.

Pure functions over rows; ``tasks/entity_states.py``'s ``decide`` weighs them against the title
rules. Which record verdicts are emitted is measured, not assumed (docs/tagging.md, "Evidence
from the books' own records"): each entity kind carries its own rule and the record fields it
reads (tasks/entities/kinds/: ``record_fields``, ``record_rule``); the helpers they share are here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

RECORD, MODEL, REVIEW = "record", "model", "review"  # evidence sources
YES, NO = "yes", "no"

_PAREN = re.compile(r"\([^)]*\)?")
_DATES = re.compile(
    r"\b(?:ca\.?|fl\.?|d\.|b\.)?\s*\d{1,4}\s*(?:b\.?c\.?)?\s*-\s*(?:\d{1,4})?\s*(?:b\.?c\.?)?|\b\d{3,4}\b"
)
_WORD = re.compile(r"[^\W_]+")
# titles and ranks before or after a name: never the name itself
_HONORIFICS = frozenset(
    "dr mr mrs ms miss sir lady lord dame sister brother father saint st prince princess king queen "
    "emperor empress duke duchess earl count countess baron marquis marques conde sheik sheikh pope "
    "family the of and de la le du da van von ter al el".split()
)
# the words after which a name's title or realm follows ("Sejong King of Korea", "Han Wudi Emperor of China")
_RANK_TAIL = re.compile(r"\b(?:king|queen|emperor|empress|prince|princess|duke|pope|marqu[eê]s|sultan)\b.*$", re.I)
# parenthetical qualifiers that say the place is not a city
_NOT_CITY_QUALIFIER = re.compile(
    r"\b(?:state|dept|department|province|region|county|country|island|islands|sheng|kingdom|empire|"
    r"republic|district|river|mountains?|lake|sea|valley|coast|peninsula|caves?)\b",
    re.I,
)


def fold(text: str) -> str:
    """Case and accents folded (dotless i too: "Nursı̂" -> "nursi")."""
    text = text.replace("ı", "i").replace("İ", "I")
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


def words(text: str) -> list[str]:
    """A title's or a name's words, folded; apostrophes and hyphens split ("Nursi'den" -> nursi, den)."""
    return _WORD.findall(fold(text))


def person_names(raw: str) -> list[tuple[str, ...]]:
    """A catalogued person -> the word tuples that name it: dates and parentheses dropped,
    "Last, First" turned round, ranks and realms dropped, ";" separating aliases."""
    names = []
    for part in raw.split(";"):
        part = _RANK_TAIL.sub("", _DATES.sub(" ", _PAREN.sub(" ", part))).strip(" ,.")
        pieces = [p.strip() for p in part.split(",") if p.strip()]
        if len(pieces) == 2 and all(len(p.split()) <= 3 for p in pieces):
            part = f"{pieces[1]} {pieces[0]}"  # "Lincoln, Abraham" -> "Abraham Lincoln"
        name = tuple(w for w in words(part) if w not in _HONORIFICS and len(w) > 1)
        if name:
            names.append(name)
    return names


def place_name(raw: str) -> tuple[tuple[str, ...], str]:
    """A catalogued place -> (its words, its qualifier): "Cincinnati (Ohio)" -> (("cincinnati",), "Ohio")."""
    qualifier = " ".join(m.strip("() ") for m in _PAREN.findall(raw))
    return tuple(words(_PAREN.sub(" ", raw).split(",")[0])), qualifier


def contains(title_words: Sequence[str], name: Sequence[str]) -> bool:
    n = len(name)
    return any(tuple(title_words[i : i + n]) == tuple(name) for i in range(len(title_words) - n + 1))


def person_in_title(name: tuple[str, ...], title_words: Sequence[str]) -> bool:
    """The whole name (any order: "Fu Du" is "Du Fu") or one of its surnames (a word after the
    first, >= 4 letters: "Cervantes" of "Miguel de Cervantes Saavedra") is in the title."""
    have = set(title_words)
    return set(name) <= have or any(len(w) >= 4 and w in have for w in name[1:])


class Gazetteer(Protocol):
    """What record evidence looks up: is a place name a city; is a word a common English word."""

    def is_city(self, name: str) -> bool: ...

    def is_word(self, word: str) -> bool: ...


class LexiconGazetteer:
    """The lists the title taggers use (tasks/taggers/gazetteers.py, v6): a city is one GeoNames
    knows, and no country or region that merely shares a town's name ("Bali", "Cornwall")."""

    def __init__(self):
        from tasks.taggers.gazetteers import load_lexicon_v6, norm

        self.lex, self.norm = load_lexicon_v6(), norm

    def is_city(self, name: str) -> bool:
        key = self.norm(name)
        lex = self.lex
        return key in lex.cities and not lex.region_blocks_city(key) and key not in lex.districts

    def is_word(self, word: str) -> bool:
        return word in self.lex.words or word in self.lex.rare_words


def unexplained_capitals(title: str, records: Sequence[Mapping], gazetteer: Gazetteer) -> list[str]:
    """Capitalised words that are neither English words nor words of the record's names: "Platon"
    in "Aisthesis vor Platon" (people: Antiphon, Thucydides, Lysias), "Paula" (people: Allende's).
    Where there are any, a record's silence is no evidence that the title names nobody."""
    known = {w for r in records for w in words(r["name"])}
    found = _WORD.findall(title)
    return [w for w in found if w[:1].isupper() and fold(w) not in known and not gazetteer.is_word(fold(w))]


def is_city_place(raw: str, gazetteer: Gazetteer) -> bool:
    """A city: the gazetteer knows it, and no qualifier says it is something else: a state, a
    region, or a place inside a city ("São Cristóvão (Rio de Janeiro, Brazil)": a district)."""
    name, qualifier = place_name(raw)
    if not name or (qualifier and _NOT_CITY_QUALIFIER.search(qualifier)):
        return False
    within = words(qualifier.split(",")[0]) if "," in qualifier else []
    return gazetteer.is_city(" ".join(name)) and not (within and gazetteer.is_city(" ".join(within)))


def _evidence(source: str, verdict: str, detail: str) -> dict:
    return {"source": source, "verdict": verdict, "detail": detail}


def record_evidence(
    title: str,
    variants: Sequence[str],
    records: Sequence[Mapping],
    gazetteer: Gazetteer | None = None,
) -> dict[str, dict]:
    """A book's records (``book_records`` rows: ``field``, ``name``, ``source``) against its
    title and title variants -> ``{kind: evidence}``: each registered kind with a record rule
    reads the rows of its fields; a kind its records say nothing reliable about is absent.
    ``gazetteer`` defaults to :class:`LexiconGazetteer` (build it once per batch)."""
    from tasks.entities.registry import entity_kinds

    gazetteer = gazetteer or LexiconGazetteer()
    out: dict[str, dict] = {}
    for kind in entity_kinds():
        rows = [r for r in records if r["field"] in kind.record_fields]
        if kind.record_rule is not None and rows:
            found = kind.record_rule(title, variants, rows, records, gazetteer)
            if found:
                out[kind.name] = _evidence(RECORD, *found)
    return out


def fields_of(rows: Iterable[Mapping]) -> str:
    """The record fields of ``rows``, "/"-joined (an evidence detail)."""
    return "/".join(sorted({r["field"] for r in rows}))


# -- review labels ---------------------------------------------------------------------------


def review_key(title: str, author: str) -> tuple[str, str]:
    """What a review label is keyed by: the title and the author, folded to their words."""
    return " ".join(words(title)), " ".join(words(author))


def review_evidence(labels: Mapping[tuple[str, str], Mapping[str, str]], title: str, author: str) -> dict[str, dict]:
    """``labels``: review_key -> {kind: "yes"|"no"} (the ``review_v1`` rows) -> ``{kind: evidence}``."""
    found = labels.get(review_key(title, author), {})
    return {kind: _evidence(REVIEW, v, "labelled by a reviewer") for kind, v in found.items() if v in (YES, NO)}


def review_labels(rows: Iterable[Mapping]) -> dict[tuple[str, str], dict[str, str]]:
    """``review_labels`` table rows (title, author, kind, label) -> the lookup review_evidence reads.
    A later row for the same key and kind wins (rows come in import order)."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for r in rows:
        out.setdefault(review_key(r["title"], r["author"]), {})[r["kind"]] = r["label"]
    return out


# -- the model tagger --------------------------------------------------------------------------


def model_evidence(spans_by_kind: Mapping[str, Sequence[str]], version: str) -> dict[str, dict]:
    """The model tagger's answer for one title (the span texts it found per kind; a kind it was
    asked about and found nothing for maps to []) -> ``{kind: evidence}``: a span is "yes", an
    answer with none is "no". A kind the model was not asked about is absent (no evidence)."""
    out = {}
    for kind, spans in spans_by_kind.items():
        if spans:
            out[kind] = _evidence(MODEL, YES, f"{version}: {', '.join(repr(s) for s in spans[:3])}")
        else:
            out[kind] = _evidence(MODEL, NO, f"{version}: none found")
    return out


def second_reader_evidence(
    books: Sequence[Mapping],
    records: Sequence[Mapping] = (),
    labels: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
    model_spans: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    model_version: str = "",
    gazetteer: Gazetteer | None = None,
) -> dict[tuple[str, str], list[dict]]:
    """One author batch -> ``{(book_id, kind): [evidence, ...]}`` (record, then model, then review).

    ``books``: ``book_id``, ``title``, ``author`` (the name reviewers saw), ``variants`` (title
    variants), ``work_keys`` (every work merged into the book); ``records``: ``book_records`` rows
    (``work_key``, ``field``, ``name``); ``labels``: :func:`review_labels`; ``model_spans``:
    book_id -> {kind: span texts} from the model tagger (absent: no model configured)."""
    by_work: dict[str, list[Mapping]] = {}
    for r in records:
        by_work.setdefault(r["work_key"], []).append(r)
    gazetteer = gazetteer or (LexiconGazetteer() if records else None)
    out: dict[tuple[str, str], list[dict]] = {}
    for book in books:
        mine = [r for k in book.get("work_keys") or [] for r in by_work.get(k, [])]
        found = [record_evidence(book["title"], book.get("variants") or [], mine, gazetteer) if mine else {}]
        if model_spans is not None and book["book_id"] in model_spans:
            found.append(model_evidence(model_spans[book["book_id"]], model_version))
        if labels:
            found.append(review_evidence(labels, book["title"], book.get("author") or ""))
        for ev in found:
            for kind, e in ev.items():
                out.setdefault((book["book_id"], kind), []).append(e)
    return out
