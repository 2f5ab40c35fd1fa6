"""The works' own records in the generated Open Library dump: ``subject_people`` and
``subject_places``, at the rates the real dump shows (docs/tagging.md, "Evidence from the
books' own records"): most works carry none (the dump's first 1,000 works: 3.2% people,
10.2% places; issue 37's bands 3-8% / 10-25%), and well-known ones (real or curated titles,
many editions) no more often than the bands allow, so that records seldom speak where the
real dump is silent. A name or a city the title contains is catalogued when the record exists
(as real cataloguers do); the rest are characters and settings that are not in the title, in
the dump's shapes ("Boston (Mass.)").

Each work draws from its own stream (its key), so adding records leaves every other draw of
the generator as it was."""

from __future__ import annotations

import random
import re

from kitab.simulate.generator import words
from kitab.simulate.generator.spec import SYNTHETIC, BookSpec
from kitab.sources.snapshot.olindex import tokens

WELL_KNOWN_EDITIONS = 20
# (people, places): the chance a work has such a record, ordinary and well-known. Both inside
# the dump's bands: the bundled snapshot's 4,768 works carry 5.0% / 14.7%, its 263 real and
# curated ones 6.1% / 19.4% (tests/test_generated_records.py)
RATES = {False: (0.05, 0.15), True: (0.04, 0.2)}
COUNTRIES = ("England", "France", "United States", "Italy", "Egypt", "Ireland", "Japan", "Spain")
_QUALIFIED = {"Boston": "Boston (Mass.)", "Chicago": "Chicago (Ill.)", "Toronto": "Toronto (Ont.)"}
_POSSESSIVE = re.compile(r"['\u2019]s\W*$")
_FIRST = {t for n in words.FIRST_NAMES for t in tokens(n)}
_LAST = {t for n in words.LAST_NAMES for t in tokens(n)}


def well_known(book: BookSpec) -> bool:
    return book.origin != SYNTHETIC or (book.edition_count or 0) >= WELL_KNOWN_EDITIONS


def work_record(book: BookSpec) -> dict[str, list[str]]:
    """The subject_people / subject_places of one work (empty lists are left out)."""
    rng = random.Random(f"records:{book.key}")
    p_people, p_places = RATES[well_known(book)]
    out: dict[str, list[str]] = {}
    if rng.random() < p_people:
        out["subject_people"] = _people(book, rng, (1, 1, 2, 3, 4))
    if rng.random() < p_places:
        title_tokens = tokens(book.title)
        places = [_QUALIFIED.get(c, c) for c in words.CITIES if _in(tokens(c), title_tokens)]
        if rng.random() < 0.7:
            city = rng.choice(words.CITIES)
            places.append(_QUALIFIED.get(city, city))
        places.append(rng.choice(COUNTRIES))
        out["subject_places"] = list(dict.fromkeys(places))
    return out


def _people(book: BookSpec, rng: random.Random, how_many: tuple[int, ...]) -> list[str]:
    """The person the title names (its first two name words), if any, then ``rng.choice(how_many)``
    invented people, each once."""
    named = [_POSSESSIVE.sub("", w).strip(",.:;!?") for w in book.title.split() if set(tokens(w)) & (_FIRST | _LAST)]
    people = [" ".join(named[:2])] if named else []
    for _ in range(rng.choice(how_many)):
        people.append(f"{rng.choice(words.FIRST_NAMES)} {rng.choice(words.LAST_NAMES)}")
    return list(dict.fromkeys(people))


# WikiData: (characters P674, narrative location P840), ordinary and well-known. Items for
# ordinary works rarely carry either; famous novels often list several characters and a setting.
WD_RATES = {False: (0.03, 0.06), True: (0.5, 0.45)}
# A share of characters has only WikiData's language-neutral "mul" label (no "en" one)
MUL_ONLY = 0.3


def wikidata_record(book: BookSpec) -> dict[str, list[str]]:
    """The characters / narrative_locations (P674 / P840 labels) of a work's WikiData item, from its
    own stream (empty lists left out): a person or city the title names is listed, the rest are
    characters and settings not in the title. Labels as WikiData has them ("Boston", not "Boston (Mass.)")."""
    rng = random.Random(f"wikidata-records:{book.key}")
    p_people, p_places = WD_RATES[well_known(book)]
    out: dict[str, list[str]] = {}
    if rng.random() < p_people:
        out["characters"] = _people(book, rng, (1, 2, 2, 3, 5))
    if rng.random() < p_places:
        title_tokens = tokens(book.title)
        places = [c for c in words.CITIES if _in(tokens(c), title_tokens)]
        places.append(rng.choice(words.CITIES) if rng.random() < 0.6 else rng.choice(COUNTRIES))
        out["narrative_locations"] = list(dict.fromkeys(places))
    return out


def label_language(name: str) -> str:
    """``en``, or ``mul`` for some character names (one draw per name: an item has one label)."""
    return "mul" if random.Random(f"wikidata-label:{name}").random() < MUL_ONLY else "en"


def _in(name: list[str], title: list[str]) -> bool:
    return any(title[i : i + len(name)] == name for i in range(len(title) - len(name) + 1))
