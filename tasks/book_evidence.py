"""Second-reader evidence for the entity kinds: what a book's own record (Open Library's
subject people / places, WikiData's characters P674 / narrative locations P840), a person's
review label and the model tagger say about a title, as plain evidence dicts
``{"source": "record"|"model"|"review", "verdict": "yes"|"no", "detail": str}`` per kind.

Pure functions over rows; ``tasks/entity_states.py``'s ``decide`` weighs them against the title
rules. A record is evidence, not a verdict on absence (docs/tagging.md, "Evidence from the
books' own records"): it confirms the person or city it names in a title, contradicts a title
span only where it lists that span's words as something else, and is otherwise silent
(:func:`record_verdict`, the one rule; each kind registers it as its ``record_rule``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
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


# a batch folds each title and catalogued name once per kind and per rule that reads it; the same
# few thousand strings, so they are folded once (the functions are pure, their results immutable)
@lru_cache(maxsize=1 << 14)
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
    return list(_person_names(raw))


@lru_cache(maxsize=1 << 14)
def _person_names(raw: str) -> tuple[tuple[str, ...], ...]:
    names = []
    for part in raw.split(";"):
        part = _RANK_TAIL.sub("", _DATES.sub(" ", _PAREN.sub(" ", part))).strip(" ,.")
        pieces = [p.strip() for p in part.split(",") if p.strip()]
        if len(pieces) == 2 and all(len(p.split()) <= 3 for p in pieces):
            part = f"{pieces[1]} {pieces[0]}"  # "Lincoln, Abraham" -> "Abraham Lincoln"
        name = tuple(w for w in words(part) if w not in _HONORIFICS and len(w) > 1)
        if name:
            names.append(name)
    return tuple(names)


@lru_cache(maxsize=1 << 14)
def place_name(raw: str) -> tuple[tuple[str, ...], str]:
    """A catalogued place -> (its words, its qualifier): "Cincinnati (Ohio)" -> (("cincinnati",), "Ohio")."""
    qualifier = " ".join(m.strip("() ") for m in _PAREN.findall(raw))
    return tuple(words(_PAREN.sub(" ", raw).split(",")[0])), qualifier


def contains(title_words: Sequence[str], name: Sequence[str]) -> bool:
    n = len(name)
    return any(tuple(title_words[i : i + n]) == tuple(name) for i in range(len(title_words) - n + 1))


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


def is_city_place(raw: str, gazetteer: Gazetteer) -> bool:
    """A city: the gazetteer knows it, and no qualifier says it is something else: a state, a
    region, or a place inside a city ("São Cristóvão (Rio de Janeiro, Brazil)": a district)."""
    name, qualifier = place_name(raw)
    if not name or (qualifier and _NOT_CITY_QUALIFIER.search(qualifier)):
        return False
    within = words(qualifier.split(",")[0]) if "," in qualifier else []
    return gazetteer.is_city(" ".join(name)) and not (within and gazetteer.is_city(" ".join(within)))


def is_other_place(raw: str, gazetteer: Gazetteer) -> bool:
    """A place the record says is no city, explicitly: the qualifier is the place's own kind
    ("Georgia (Republic)", "Punjab (India : State)"), the place lies inside a city
    ("São Cristóvão (Rio de Janeiro, Brazil)"), or the gazetteer knows no city of that name
    ("Rio Grande do Sul (Brazil)"). A qualifier naming the region a city lies in is no such
    word: "Fuzhou (Fujian Sheng)" is a city in Fujian province."""
    name, qualifier = place_name(raw)
    if not name:
        return False
    own = qualifier.rsplit(":", 1)[-1].strip()
    if own and _NOT_CITY_QUALIFIER.fullmatch(own):
        return True
    within = words(qualifier.split(",")[0]) if "," in qualifier else []
    return not gazetteer.is_city(" ".join(name)) or bool(within and gazetteer.is_city(" ".join(within)))


def _evidence(source: str, verdict: str, detail: str) -> dict:
    return {"source": source, "verdict": verdict, "detail": detail}


PEOPLE_FIELDS = ("subject_people", "characters")  # book_records fields that list persons
PLACE_FIELDS = ("subject_places", "narrative_locations")  # ... and places


def record_verdict(
    kind: str, titles: Sequence[str], spans: Sequence[str], records: Sequence[Mapping], gazetteer: Gazetteer
) -> tuple[str, str] | None:
    """What a book's records say about ``kind`` ("human" or "city") in its titles, given the
    title rules' spans of that kind (``spans``: their texts, over every title): (verdict, detail) or None.

    - yes: the record names an entity of the kind that is in a title: a catalogued person (all
      the name's words in any order, "Fu Du" = "Du Fu", or a surname after the first word of >= 4
      letters, "Cervantes", that is no common English word unless a span covers it: "Savage
      Interlude" under "Damien Savage" is not confirmed), or a catalogued place that is a city.
    - no: the record explicitly covers a span's words as something that is not of the kind: every
      word of a span is in a name the record lists, that name is in a title, and no name of the
      kind in the record holds those words. For human: a place ("Washington Square" under
      "Washington Square (New York, N.Y.)"); for city: a person ("London" in "Jack London's
      Yukon" under "London, Jack") or a place the record qualifies as no city ("Georgia (Republic)").
    - None otherwise: a record that lists *other* people or places says nothing about the title
      ("Verity" with characters not named Verity; "We Bombed in New Haven" under "Lisbon").
    """
    title_words = [words(t) for t in dict.fromkeys(titles) if t]
    span_words = [set(w) for w in (words(s) for s in dict.fromkeys(spans)) if w]
    covered = set().union(*span_words) if span_words else set()
    people = [(r, n) for r in records if r["field"] in PEOPLE_FIELDS for n in person_names(r["name"])]
    places = [(r, *place_name(r["name"])) for r in records if r["field"] in PLACE_FIELDS]
    # (row, words, a city, explicitly no city): "Fuzhou (Fujian Sheng)" is neither for sure
    places = [
        (r, n, is_city_place(r["name"], gazetteer), is_other_place(r["name"], gazetteer)) for r, n, _ in places if n
    ]

    def person_named(name: tuple[str, ...]) -> bool:
        if any(set(name) <= set(t) for t in title_words):
            return True
        surnames = [w for w in name[1:] if len(w) >= 4 and (w in covered or not gazetteer.is_word(w))]
        return any(w in t for w in surnames for t in title_words)

    def place_named(name: tuple[str, ...]) -> bool:
        return any(contains(t, name) for t in title_words)

    if kind == "human":
        mine = [(r, n) for r, n in people if person_named(n)]
        kind_words = {w for _, n in people for w in n}
        others = [(r, n) for r, n, _, _ in places if place_named(n)]
    elif kind == "city":
        mine = [(r, n) for r, n, city, _ in places if city and place_named(n)]
        kind_words = {w for _, n, city, other in places if not other for w in n}
        others = [(r, n) for r, n in people if person_named(n)]
        others += [(r, n) for r, n, _, other in places if other and place_named(n)]
    else:
        raise ValueError(f"record_verdict: no record rule for the kind {kind!r}")
    if mine:
        r = mine[0][0]
        return YES, f"{r['field']} {r['name']!r} in the title"
    for span in span_words:
        cover = [r for r, n in others if span <= set(n)]
        if cover and not span & kind_words:
            what = "a person" if cover[0]["field"] in PEOPLE_FIELDS else "a place" if kind == "human" else "no city"
            return NO, f"{cover[0]['field']} {cover[0]['name']!r} ({what}) covers the span"
    return None


def record_evidence(
    title: str,
    variants: Sequence[str],
    records: Sequence[Mapping],
    gazetteer: Gazetteer | None = None,
    spans: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, dict]:
    """A book's records (``book_records`` rows: ``field``, ``name``, ``source``) against its
    title and title variants and the title rules' spans (``spans``: kind -> span texts over the
    book's titles; absent: none found) -> ``{kind: evidence}``: each registered kind with a record
    rule reads them; a kind its records say nothing about is absent.
    ``gazetteer`` defaults to :class:`LexiconGazetteer` (build it once per batch)."""
    from tasks.entities.registry import entity_kinds

    gazetteer = gazetteer or LexiconGazetteer()
    spans = spans or {}
    out: dict[str, dict] = {}
    if not records:
        return out
    for kind in entity_kinds():
        if kind.record_rule is not None:
            found = kind.record_rule([title, *variants], spans.get(kind.name, ()), records, gazetteer)
            if found:
                out[kind.name] = _evidence(RECORD, *found)
    return out


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
    (``work_key``, ``field``, ``name``); ``spans`` (optional): kind -> the title rules' span texts over
    the book's titles; ``labels``: :func:`review_labels`; ``model_spans``:
    book_id -> {kind: span texts} from the model tagger (absent: no model configured)."""
    by_work: dict[str, list[Mapping]] = {}
    for r in records:
        by_work.setdefault(r["work_key"], []).append(r)
    gazetteer = gazetteer or (LexiconGazetteer() if records else None)
    out: dict[tuple[str, str], list[dict]] = {}
    for book in books:
        mine = [r for k in book.get("work_keys") or [] for r in by_work.get(k, [])]
        found = [
            record_evidence(book["title"], book.get("variants") or [], mine, gazetteer, book.get("spans"))
            if mine
            else {}
        ]
        if model_spans is not None and book["book_id"] in model_spans:
            found.append(model_evidence(model_spans[book["book_id"]], model_version))
        if labels:
            found.append(review_evidence(labels, book["title"], book.get("author") or ""))
        for ev in found:
            for kind, e in ev.items():
                out.setdefault((book["book_id"], kind), []).append(e)
    return out
