"""One title seen through the word lists: per-token facts that the human and city rules share.

Both taggers read the same facts, so a token cannot be a person for one and a city for the
other: `city_reading()` settles names that are also cities ("Florence", "Lincoln", "Sydney").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from tasks.taggers.gazetteers import CityEntry, Lexicon, norm
from tasks.text import main_title

# A bare city name (no NER agreement, no "in"/"to" before it) must be this big to count: most
# towns of a few thousand people share their name with a word, a person or a myth ("Eden").
BARE_CITY_MIN_POPULATION = 50_000
# ... and this big to beat a given name of the same spelling ("Paris", "Sydney" vs "Lincoln").
METROPOLIS_POPULATION = 1_000_000
MAX_CITY_TOKENS = 6  # "Stratford - upon - Avon"
MAX_REGION_TOKENS = 3  # "City, Region": "Charlotte, North Carolina", "Port Moresby, Papua New Guinea"

# Titles before a name; they are evidence, not part of the name.
HONORIFICS = frozenset(
    """mr mrs ms miss mx dr doctor prof professor sir dame lady lord madame madam mme monsieur
    mademoiselle mlle herr frau senor senora don dona saint st father brother sister mother uncle
    aunt auntie cousin captain capt colonel col general major lieutenant sergeant admiral commander
    inspector detective judge reverend rev pope king queen prince princess emperor empress tsar
    czar sultan count countess baron baroness duke duchess""".split()
)
# Lower-case name particles that may sit inside a name: "Leonardo da Vinci", "Jakob von Gunten".
PARTICLES = frozenset("da de del della di du van von der den la le bin ibn al el ter dos das".split())
# Months, days and feasts are given names too ("June", "August"), but in a title they are dates.
CALENDAR = frozenset(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday spring summer autumn winter
    christmas easter halloween thanksgiving""".split()
)
# Before a city name these make the place reading likely: "Death in Venice", "Goodbye to Berlin".
LOCATIVES = frozenset("in at to from into near outside inside beyond around across through toward towards via".split())
# human_v7 / city_v7: after one of these, "to" addresses someone ("Letters to Milena"): a listed
# given name after it is the addressee, not a place.
ADDRESS_NOUNS = frozenset("letter letters ode odes song songs hymn elegy note notes message postcard postcards".split())
# human_v7: a title with one of these is (partly) in another language: its listed names that are
# frequent words of those languages are words ("Ein Sommer in Hamburg"). Not "la" / "die" / "lo",
# English words too ("La La Land", "Die Hard").
FOREIGN_MARKERS = frozenset("le les l' el los las il gli une des der das ein eine einen dem".split())
# "of" is weaker ("Memoirs of Hadrian"), but settles a name that is also a big city: "The
# Stones of Florence", "The Two Gentlemen of Verona".
OF = "of"
# Articles of the languages whose titles keep them in English ("Les Misérables", "El Aleph").
FOREIGN_ARTICLES = frozenset("le la les l' el los las il lo gli un une des der die das ein eine".split())
POSSESSIVE = frozenset({"'s", "\u2019s", "'", "\u2019"})
# "Won't" is parsed "Wo" + "n't": a token before one of these is part of a contraction, a word.
CONTRACTIONS = frozenset(
    {"n't", "n\u2019t", "'ll", "\u2019ll", "'re", "\u2019re", "'ve", "\u2019ve", "'m", "\u2019m", "'d", "\u2019d"}
)
CITY_NER_LABELS = frozenset({"GPE", "LOC"})
_INITIAL = re.compile(r"^[A-Z]\.$")


class Tok(NamedTuple):
    text: str
    start: int  # char offsets into the title
    end: int
    key: str  # norm(text)
    cap: bool  # starts with an upper-case letter
    stop: bool  # a spaCy stop word (or a foreign article)
    word: bool  # a common English word, stop word or demonym; for a listed name, a frequent word
    rare: bool  # no listed name, but a rarer English word or two words run together ("Shogun", "Middlemarch")
    dictionary: bool  # in the common-word list, listed name or not ("Destiny", "Sandy", "Grace")
    first: bool  # in the first-name list
    surname: bool
    calendar: bool
    honorific: bool
    initial: bool  # "D." in "John D. Rockefeller"
    ner: str  # the spaCy entity label covering the token, or ""


class CityMatch(NamedTuple):
    i: int  # first token
    j: int  # last token (inclusive)
    key: str
    entry: CityEntry


@dataclass
class TitleView:
    title: str
    toks: list[Tok]
    ents: list[tuple[str, int, int]]  # (label, first token, last token inclusive)
    cities: list[CityMatch]  # longest gazetteer matches, left to right, not overlapping
    lex: Lexicon
    people: list | None = None  # human.find_people's answer, kept for the city tagger
    cities_found: list | None = None  # city_v7's spans, kept for human_v7's doubt
    foreign: bool = False  # a token is a FOREIGN_MARKERS word (v7: _foreign_words, human_doubt_v7)

    # --- token classes -------------------------------------------------------------------
    def is_possessive(self, i: int) -> bool:
        return (
            i + 1 < len(self.toks)
            and self.toks[i + 1].text.lower() in POSSESSIVE
            and self.toks[i + 1].start == self.toks[i].end
        )

    def strong_place(self, i: int) -> bool:
        """A country/region, or a city big enough to count with no context."""
        key = self.toks[i].key
        entry = self.lex.cities.get(key)
        return self.lex.is_region(key) or (entry is not None and entry.population >= BARE_CITY_MIN_POPULATION)

    def name_like(self, i: int) -> bool:
        """Could continue a name: a listed name, an initial, or a capitalised non-word that is
        not a well-known place."""
        t = self.toks[i]
        if not t.cap or t.stop or t.honorific or t.calendar:
            return False
        if t.initial or t.surname or (t.first and not t.word):
            return True
        return not t.word and not self.strong_place(i)

    def prev_text(self, i: int) -> str:
        return self.toks[i - 1].text.lower() if i > 0 else ""

    def locative_before(self, i: int) -> bool:
        """A locative precedes token i ("Death in Venice"); since v7 not the "to" of an address
        before a listed given name ("Letters to Milena": a person)."""
        if self.prev_text(i) not in LOCATIVES:
            return False
        return not (
            self.lex.generation >= 7
            and self.prev_text(i) == "to"
            and i >= 2
            and self.toks[i - 2].key in ADDRESS_NOUNS
            and self.toks[i].first
            and not self.toks[i].word
        )

    @cached_property
    def main_end(self) -> int:
        """How many tokens the main title has: those before the first subtitle separator, as
        `tasks.text.main_title` finds it ("Pnin" in "Pnin: A Novel"; all tokens if none)."""
        lead = len(self.title) - len(self.title.lstrip())
        end = lead + len(main_title(self.title))
        return sum(1 for t in self.toks if t.end <= end)

    def region_after(self, j: int) -> tuple[int, int] | None:
        """ "Lincoln, Nebraska", "Charlotte, North Carolina": the tokens (first, last inclusive) of
        the country or region, of up to MAX_REGION_TOKENS tokens (the longest that matches), that
        follows a comma after token j; None if there is none."""
        toks = self.toks
        if j + 2 >= len(toks) or toks[j + 1].text != "," or not toks[j + 2].cap:
            return None
        start = toks[j + 2].start
        for k in range(min(j + 1 + MAX_REGION_TOKENS, len(toks) - 1), j + 1, -1):
            if self.lex.is_region(norm(self.title[start : toks[k].end])):
                return (j + 2, k)
        return None

    @cached_property
    def region_tokens(self) -> frozenset[int]:
        """Every token of a region that follows a gazetteer city and a comma: "North Carolina"
        in "Charlotte, North Carolina", "New York" in "Albany, New York". They name the region,
        so neither tagger takes them for a person ("Carolina") or a city ("Carolina", Puerto
        Rico; "Columbia" in "Victoria, British Columbia")."""
        found: set[int] = set()
        for m in self.cities:
            region = self.region_after(m.j)
            if region:
                found.update(range(region[0], region[1] + 1))
        return frozenset(found)

    # --- names that are also cities ---------------------------------------------------------
    def place_ner(self, i: int, j: int) -> bool:
        """spaCy tags exactly tokens i..j (maybe after "the") as GPE/LOC: partial overlaps such
        as "Green Hills" or "Hanging Rock" do not vouch for "Green" or "Rock"."""
        for a in self.place_ents_ending.get(j, ()):
            if a == i or (a == i - 1 and self.toks[a].key == "the"):
                return True
        return False

    @cached_property
    def place_ents_ending(self) -> dict[int, list[int]]:
        """Last token -> first tokens of the GPE/LOC entities ending there (place_ner looks
        up, instead of scanning every entity for every candidate)."""
        found: dict[int, list[int]] = {}
        for label, a, b in self.ents:
            if label in CITY_NER_LABELS:
                found.setdefault(b, []).append(a)
        return found

    def city_reading(self, i: int, j: int) -> str:
        """Why tokens i..j, a name that is also a city, read as the city, or "" if they don't:
        NER says place, a locative precedes ("of" for big cities), a ", Region" follows
        ("Lincoln, Nebraska"), or the city is a metropolis."""
        if self.place_ner(i, j):
            return "ner"
        entry = self.lex.cities.get(norm(self.title[self.toks[i].start : self.toks[j].end]))
        population = entry.population if entry else 0
        prev = self.prev_text(i)
        if self.locative_before(i) or (prev == OF and population >= BARE_CITY_MIN_POPULATION):
            return "locative_rule"
        if self.region_after(j):
            return "region_context_rule"
        if population >= METROPOLIS_POPULATION:
            return "metropolis_rule"
        return ""


_FACTS: dict[int, dict[tuple[str, bool], tuple]] = {}  # id(lexicon) -> (text, is_stop) -> token facts
_FACTS_MAX = 500_000  # distinct token texts kept per lexicon; beyond, start again (bounded memory)


def _token_facts(text: str, is_stop: bool, lex: Lexicon) -> tuple:
    """A token's list facts, which depend only on its text: computed once per process and text
    (titles repeat their words; `is_compound` alone tries every split of the word)."""
    cache = _FACTS.setdefault(id(lex), {})
    facts = cache.get((text, is_stop))
    if facts is None:
        key = norm(text)
        low = text.lower()
        stop = is_stop or low in FOREIGN_ARTICLES
        first, surname = key in lex.first_names, key in lex.surnames
        # "Peter", "Harry", "Carol" are words too, but rare ones: as capitalised tokens, names
        common = key in (lex.frequent_words if first or surname else lex.words)
        facts = (
            key,
            text[:1].isupper(),
            stop,
            stop or common or key in lex.demonyms,  # `word`, before contractions
            not (first or surname or common) and (key in lex.rare_words or lex.is_compound(key)),
            key in lex.words,
            first,
            surname,
            low in CALENDAR,
            low.rstrip(".") in HONORIFICS,
            bool(_INITIAL.match(text)),
            low in FOREIGN_MARKERS,  # (not a field of Tok: build_view reads it into TitleView.foreign)
        )
        if len(cache) >= _FACTS_MAX:
            cache.clear()
        cache[(text, is_stop)] = facts
    return facts


def build_view(title: str, doc, lex: Lexicon) -> TitleView:
    """`doc` is the spaCy parse of `title` (maybe re-cased, same length)."""
    toks: list[Tok] = []
    index_of: dict[int, int] = {}
    # each Token object built once (doc[i] costs ~20 times a list's index; and not doc.text:
    # spaCy joins it from a new Token object per token on every access)
    tokens = list(doc)
    n_doc = len(tokens)
    foreign = tagged = False  # a foreign marker seen (v7); an entity label set on a token
    for t in tokens:
        if t.is_space:
            continue
        start = t.idx
        text = t.text
        key, cap, stop, word, rare, dictionary, first, surname, calendar, honorific, initial, marker = _token_facts(
            text, t.is_stop, lex
        )
        foreign = foreign or marker
        if not word and t.i + 1 < n_doc:
            nxt = tokens[t.i + 1]
            word = nxt.idx == start + len(text) and nxt.text.lower() in CONTRACTIONS
        index_of[t.i] = len(toks)
        toks.append(
            Tok(
                text,
                start,
                start + len(text),
                key,
                cap,
                stop,
                word,
                rare,
                dictionary,
                first,
                surname,
                calendar,
                honorific,
                initial,
                t.ent_type_,
            )
        )
        tagged = tagged or t.ent_iob != 0
    if lex.generation >= 7 and foreign:
        toks = _foreign_words(toks, lex)
    # a doc no NER ran on (most titles: tasks/taggers/lazy.py) has no entity annotation on any
    # token, so no entities: doc.ents is not built
    ents = [
        (e.label_, index_of[e.start], index_of[e.end - 1])
        for e in (doc.ents if tagged else ())
        if e.start in index_of and e.end - 1 in index_of
    ]
    cities = _match_cities(title, toks, lex)
    return TitleView(title=title, toks=toks, ents=ents, cities=cities, lex=lex, foreign=foreign)


def _foreign_words(toks: list[Tok], lex: Lexicon) -> list[Tok]:
    """v7: in a title with a foreign article ("Ein Sommer in Hamburg"), a listed name that is a
    frequent word of a European language is that word, not a name (a town or region keeps its
    place reading). Called for a title with a marker only (build_view's token facts find it)."""
    return [
        t._replace(first=False, surname=False, word=True)
        if (t.first or t.surname) and t.key in lex.foreign and t.key not in lex.cities and not lex.is_region(t.key)
        else t
        for t in toks
    ]


_CITY_FIRST_WORDS: dict[int, frozenset[str]] = {}  # id(lexicon) -> first words of its city keys


def _city_first_words(lex: Lexicon) -> frozenset[str]:
    """The first word of every city key ("st" of "st louis", and "saint", which norm() turns
    into "st" only before another word): a token that is none of these starts no city name."""
    words = _CITY_FIRST_WORDS.get(id(lex))
    if words is None:
        words = frozenset(k.split(" ", 1)[0] for k in lex.cities)
        words |= {"saint"} if "st" in words else set()
        _CITY_FIRST_WORDS[id(lex)] = words
    return words


def _match_cities(title: str, toks: list[Tok], lex: Lexicon) -> list[CityMatch]:
    """Longest capitalised token runs whose text is a gazetteer city name."""
    found: list[CityMatch] = []
    first_words = _city_first_words(lex)
    i = 0
    while i < len(toks):
        match = None
        if toks[i].cap and toks[i].key.split(" ", 1)[0] in first_words:
            # a stop word only starts a longer name: "The Hague", "Las Vegas", never "Of"
            for j in range(min(len(toks), i + MAX_CITY_TOKENS) - 1, i - 1 if not toks[i].stop else i, -1):
                if not toks[j].cap:
                    continue
                key = norm(title[toks[i].start : toks[j].end])
                entry = lex.cities.get(key)
                if entry is not None:
                    match = CityMatch(i, j, key, entry)
                    break
        if match:
            found.append(match)
            i = match.j + 1
        else:
            i += 1
    return found
