"""city_v3: does a title contain the name of a city, and where.

Candidates are the longest capitalised token runs that are GeoNames city names (canonical, or
an English/historical name from city_exonyms.tsv such as "Peking"). A candidate counts only if
- it is not a country, US state or region ("Texas", "Poland"; city states such as Singapore
  and very big namesakes such as New York excepted), nor part of another place's name ("Big
  Sur", "Madison County"),
- it is not inside a person's name ("Florence Nightingale", "Jack London"), nor the region of
  a "City, Region" title ("Albany, New York", "Victoria, British Columbia"),
- and something besides the gazetteer supports it: spaCy NER tags exactly this name GPE/LOC;
  a locative preposition before it ("Death in Venice"); a "City, Region" pattern ("Lincoln,
  Nebraska": `TitleView.region_after`, which the human tagger reads too); or a
  population of at least BARE_CITY_MIN_POPULATION. A name that is a common word ("Nice Work",
  "Reading Lolita", "Paradise", "Sandy") needs NER and a big city.
"A Tale of Two Cities" has no candidate at all: "Cities" is not a city's name.
"""

from __future__ import annotations

from tasks.taggers.human import find_people
from tasks.taggers.pipeline import PipelineTagger
from tasks.taggers.spans import Span, evidence_string
from tasks.taggers.view import BARE_CITY_MIN_POPULATION, CityMatch, TitleView

KIND = "city"
_LIST_JOINERS = frozenset({"and", "&", ","})
# "Madison County", "Ontario Province": the name is the region's, not the city's.
REGION_NOUNS = frozenset("county province district region state oblast prefecture parish shire".split())
# city_v5: "Salem Falls", "Cedar Springs": a city's name before one of these is another town's.
TOWN_SUFFIXES = frozenset("falls springs heights creek hills junction".split())
# "Big Sur", "New Hope": a city's name after one of these is part of another place's name.
_PLACE_PREFIXES = frozenset("big little great new old upper lower".split())


class CityTagger(PipelineTagger):
    name = "city"
    version = "city_v3"

    def spans(self, view: TitleView) -> list[Span]:
        return find_cities(view, find_people(view))


def find_cities(v: TitleView, people: list[Span]) -> list[Span]:
    out: list[Span] = []
    last: tuple[int, set[str]] | None = None  # (last token, context detectors) of the previous city
    for m in v.cities:
        start, end = v.toks[m.i].start, v.toks[m.j].end
        if any(p.start < end and start < p.end for p in people) or v.lex.region_blocks_city(m.key):
            continue
        if m.i in v.region_tokens:  # "Albany, New York": the state, not the city
            continue
        if m.key in v.lex.districts:  # city_v5: "Brooklyn", "Harlem", "Notting Hill" are parts of a city
            continue
        context = _support(v, m)
        # "Paris and London": a city listed right after a supported one shares its context
        if not context and last and m.i - last[0] == 2 and v.toks[m.i - 1].text.lower() in _LIST_JOINERS:
            context = set(last[1]) - {"ner"}
        if not context:
            continue
        detectors = {"gazetteer:geonames_1000", *context}
        if not m.entry.canonical:
            detectors.add("alternate_name")
        out.append(Span(start=start, end=end, kind=KIND, text=v.title[start:end], evidence=evidence_string(detectors)))
        last = (m.j, context)
    return out


def _support(v: TitleView, m: CityMatch) -> set[str]:
    """Every detector besides the gazetteer that vouches for this city (empty: not a city)."""
    toks = v.toks[m.i : m.j + 1]
    if m.j + 1 < len(v.toks) and v.toks[m.j + 1].key in REGION_NOUNS:
        return set()
    if v.lex.generation >= 5 and m.j + 1 < len(v.toks) and v.toks[m.j + 1].cap and v.toks[m.j + 1].key in TOWN_SUFFIXES:
        return set()  # city_v5: "Salem Falls", "Boston Heights" name another town
    if m.i > 0 and v.toks[m.i - 1].cap and v.toks[m.i - 1].key in _PLACE_PREFIXES:
        return set()
    big = m.entry.population >= BARE_CITY_MIN_POPULATION
    ner = v.place_ner(m.i, m.j)
    # city_v6: WordNet knows the name only as something else ("Arcadia", "Atlantis", "Eden"):
    # a locative or ", Region" may still make it a town; size and NER alone may not
    bare_only = v.lex.generation >= 6 and m.key in v.lex.not_cities
    if all(t.word or t.dictionary for t in toks if t.cap):
        # a word that is also a town ("Nice Work", "Reading", "Paradise", and since city_v3 a
        # word that is also a name, "Sandy", "Warren", that the human tagger leaves alone):
        # only NER, and only for a big city, may call it a city
        return {"ner", "population_rule"} if big and ner and not bare_only else set()
    found = set()
    if ner:
        found.add("ner")
    if v.locative_before(m.i):
        found.add("locative_rule")
    if v.region_after(m.j):
        found.add("region_context_rule")
    if big:
        found.add("population_rule")
    if bare_only and found <= {"ner", "population_rule"}:
        return set()
    return found
