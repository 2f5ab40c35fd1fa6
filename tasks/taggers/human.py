"""human_v3: does a title contain a person's name, and where.

A name needs an anchor, then grows over neighbouring name-like tokens ("Harry" -> "Harry
Potter", "McCulley" -> "Johnston McCulley"). Anchors:
- spaCy NER PERSON, cut at possessives and trimmed of common words ("Alias Grace" -> "Grace");
- a title before a name-like token ("Mrs Dalloway", "Lord Jim"; not "Doctor Sleep");
- a possessive of a name-like token that is no common word ("Gerald's Game"; not "Cat's Eye");
- a listed first name or surname that is not a common word, place or date ("Emma", "Herzog");
  one that is ("Grace", "Jack", "Georgia", "June") needs a non-word surname after it; one that
  is a less frequent word ("Destiny", "Daisy") needs NER, a name beside it or the whole main
  title ("Carol"); a lone one after "of"/"from" names a place ("East of Eden");
- naming patterns around an unknown capitalised token: epithets ("Gimpel the Fool", "The
  Great Gatsby", "I, Claudius"), families ("The Makioka Sisters", "The Brothers Karamazov"),
  life-writing ("Memoirs of Hadrian", "Washington: A Life");
- a main title made only of unknown proper nouns that look like names ("Pnin", "Oryx and
  Crake").
Names take no article: "The Hunter", "The Cherry Orchard" and "The Lamb's Supper" name no person.
human_v3 also reads rarer English words and two words run together as words ("Shogun",
"Darkover"), and NER's PERSON on a thing ("Faerie Tale", "Castle Roogna") as no evidence.
A listed name followed by a place noun names the place ("Peyton Place", "Brighton Rock"). A name
that is also a city stays a name unless `TitleView.city_reading` finds the place reading
("Lincoln in the Bardo" vs "Paris Spleen", "Lincoln, Nebraska"). Multi-word city names beat
names inside them ("Saint Paul", "Hong Kong"), and the region of a "City, Region" title is no
name ("Charlotte, North Carolina").
"""

from __future__ import annotations

from tasks.taggers.gazetteers import CENSUS_CITY_MAX_POPULATION
from tasks.taggers.patterns import LIFE_NOUNS, biography_anchor, pattern_anchor, proper_title_anchors
from tasks.taggers.pipeline import PipelineTagger
from tasks.taggers.spans import Span, evidence_string
from tasks.taggers.view import BARE_CITY_MIN_POPULATION, LOCATIVES, PARTICLES, TitleView
from tasks.text import ARTICLES

KIND = "human"

# human_v5: titles that only precede a person's surname, which may then be a word ("Mrs. Bridge");
# not "Doctor Sleep", "King Rat", "Mother Night", "Brother Odd", where the title is a role.
PERSONAL_TITLES = frozenset(
    """mr mrs ms miss mister monsieur madame mme mlle mademoiselle herr frau senor senora signor
    signora""".split()
)
# "<Name> Place" is a place named after someone.
PLACE_NOUNS = frozenset(
    """place square park house hall manor abbey castle court lodge grange cottage priory palace
    towers chapel college road avenue street station inn hotel rock beach bay falls island heights
    gardens farm end row bridge mountain valley river lake""".split()
)


class HumanTagger(PipelineTagger):
    name = "human"
    version = "human_v3"

    def spans(self, view: TitleView) -> list[Span]:
        return find_people(view)

    def doubt(self, view: TitleView) -> str | None:
        return human_doubt(view)


def human_doubt(v: TitleView) -> str | None:
    """Why a title with no name might still have one (tasks/entity_states.py: a risky "no"), or
    None: a capitalised token that is a listed name and no common word, which the rules refused
    ("listed_name"), else one that no list knows at all, a coined or foreign word
    ("unknown_word"). Read from the word lists only, never NER, so lazy and full tagging agree."""
    found = None
    for t in v.toks:
        if not t.cap or t.stop or t.honorific or t.calendar or not any(c.isalpha() for c in t.text):
            continue
        if (t.first or t.surname) and not t.word:
            return "listed_name"
        if not (t.word or t.rare or t.first or t.surname):
            found = "unknown_word"
    return found


def find_people(v: TitleView) -> list[Span]:
    """The names in a title (computed once per view: the city tagger asks again)."""
    if v.people is None:
        v.people = _find_people(v)
    return v.people


def _find_people(v: TitleView) -> list[Span]:
    blocked = _city_blocked(v)
    anchors = _ner_anchors(v) + proper_title_anchors(v)
    for i in range(len(v.toks)):
        if i in blocked:
            continue
        for detector in (_honorific_anchor, _possessive_anchor, _listed_name_anchor, pattern_anchor, biography_anchor):
            found = detector(v, i)
            if found:
                anchors.append(found)
    spans = []
    for i, j, evidence in anchors:
        if blocked.intersection(range(i, j + 1)):
            continue
        i, j = _grow(v, i, j, blocked)
        if not _names_a_place(v, i, j):
            spans.append((i, j, evidence))
    if v.lex.generation >= 5:
        spans += _coordinated(v, spans, blocked)
    return [_to_span(v, i, j, ev) for i, j, ev in _merge(spans)]


def _coordinated(
    v: TitleView, spans: list[tuple[int, int, set[str]]], blocked: set[int]
) -> list[tuple[int, int, set[str]]]:
    """human_v5: a name joined by "and"/"&" to a name found is a name too, though it is a word
    ("Jack and Jill"), if it is a listed given name or surname, or a capitalised token that
    no list calls a word ("Rosencrantz and Guildenstern", once one is known); not a date,
    a region or a town of 15,000 or more (the v5 name lists leave those out too)."""
    toks = v.toks
    out = []
    for i, j, _ in spans:
        for k in (j + 2, i - 2):
            joiner = (j + 1) if k > j else (i - 1)
            if not (0 <= k < len(toks)) or k in blocked or toks[joiner].key not in ("and", "&"):
                continue
            t = toks[k]
            if not t.cap or t.stop or t.honorific or t.calendar or v.lex.is_region(t.key) or _after_article(v, k):
                continue
            if not (t.first or t.surname or not (t.word or t.rare)):
                continue
            town = v.lex.cities.get(t.key)
            if town is not None and town.population >= CENSUS_CITY_MAX_POPULATION:
                continue  # "Jack and Florence" may be a trip (a lexicon fact: this rule reads no NER)
            a, b = _grow(v, k, k, blocked)
            if not _names_a_place(v, a, b):
                out.append((a, b, {"coordination_rule"}))
    return out


def _city_blocked(v: TitleView) -> set[int]:
    """Tokens no name may use: multi-word city names that beat a name inside them ("Saint
    Paul", "Hong Kong", but not "John Day", Oregon, 1,700 people, which starts with a given
    name), and every token of the region in "City, Region" ("Charlotte, North Carolina": not
    "Carolina"; the city itself is left to `city_reading`, as for one-word cities)."""
    blocked = set(v.region_tokens)
    for m in v.cities:
        if m.j > m.i and not v.lex.region_blocks_city(m.key):
            if m.entry.population >= BARE_CITY_MIN_POPULATION or not v.toks[m.i].first:
                blocked.update(range(m.i, m.j + 1))
    return blocked


def _ner_anchors(v: TitleView) -> list[tuple[int, int, set[str]]]:
    """NER PERSON entities cut at possessives/punctuation and trimmed to their name-like core."""
    out = []
    for label, i, j in v.ents:
        if label != "PERSON":
            continue
        piece: list[int] = []
        for k in range(i, j + 2):  # one step past the entity, to flush the last piece
            if k <= j and v.toks[k].cap and any(c.isalpha() for c in v.toks[k].text):
                piece.append(k)
                if not v.is_possessive(k):
                    continue
            # a possessive, punctuation, a lower-case word or the end closes the piece
            core = _ner_core(v, piece)
            if core and not _ner_names_a_thing(v, i, j, core):
                out.append((core[0], core[-1], {"ner"}))
            piece = []
    return out


def _ner_names_a_thing(v: TitleView, i: int, j: int, core: list[int]) -> bool:
    """NER's PERSON entity i..j holds a common noun besides its core ("Faerie Tale", "Castle
    Roogna", "The Colossus of Maroussi"): the entity names a thing, so a core that no name list
    knows is no evidence of a person (a listed core is: "Noddy Goes to Toyland")."""
    if any(v.toks[k].first or v.toks[k].surname for k in core):
        return False
    for k in range(i, j + 1):
        t = v.toks[k]
        if k not in core and (t.word or t.rare) and not (t.stop or t.honorific or t.calendar):
            return True
    return False


def _ner_core(v: TitleView, piece: list[int]) -> list[int]:
    def weak(k: int) -> bool:
        t = v.toks[k]
        return t.stop or t.honorific or t.calendar or (t.word and not t.first and not t.surname)

    while piece and weak(piece[0]):
        piece = piece[1:]
    while piece and weak(piece[-1]):
        piece = piece[:-1]
    if len(piece) == 1 and not _lone_name(v, piece[0]):
        return []
    # "Berlin Alexanderplatz" is tagged PERSON: a well-known place that is no listed name vetoes
    if any(v.strong_place(k) and not (v.toks[k].first or v.toks[k].surname) for k in piece):
        return []
    if len(piece) == 1:
        return piece
    # some token must be a name by itself: not "Montana Sky" (a state and a frequent word),
    # "Darkover Landfall" (two words run together, twice)
    if any(v.name_like(k) and not (v.toks[k].word or v.toks[k].rare or v.lex.is_region(v.toks[k].key)) for k in piece):
        return piece
    return []


def _lone_name(v: TitleView, k: int) -> bool:
    """Can one token, which NER calls a person, be a name on its own? Not a common word ("Spring
    Snow", "Look Homeward, Angel"), not after an article ("The Snowman"), not a city by context;
    an unlisted token must look like a name and not follow "in"/"to" ("Bridge to Terabithia")."""
    t = v.toks[k]
    if t.word or _after_article(v, k) or (t.key in v.lex.cities and v.city_reading(k, k)):
        return False
    if v.lex.is_region(t.key):
        return False  # "Montana Sky": a state, not a woman
    if t.first or t.surname:
        return True
    return v.prev_text(k) not in LOCATIVES and v.lex.name_shape.score(t.text) > 0


def _after_article(v: TitleView, k: int) -> bool:
    """ "The Hunter", "The Cherry Orchard", "A Grant": English names take no article (epithets
    sit in between: "The Great Gatsby"). Costs "The Bourne Identity"."""
    return k > 0 and v.toks[k - 1].key in ARTICLES


def _honorific_anchor(v: TitleView, i: int) -> tuple[int, int, set[str]] | None:
    t = v.toks[i]
    if not (t.honorific and t.cap) or i + 1 >= len(v.toks):
        return None
    nxt = v.toks[i + 1]
    if nxt.cap and not nxt.stop and (nxt.first or nxt.surname or not (nxt.word or nxt.rare)):
        return (i + 1, i + 1, {"honorific_rule"})
    if _personal_title(v, i) and nxt.cap and not nxt.stop and nxt.key in v.lex.surname_context:
        return (i + 1, i + 1, {"honorific_rule"})  # human_v5: "Mrs. Bridge", "Mrs. King"
    return None


def _possessive_anchor(v: TitleView, i: int) -> tuple[int, int, set[str]] | None:
    t = v.toks[i]
    if not v.is_possessive(i) or not t.cap or t.stop or t.word or t.rare or t.calendar or t.honorific:
        return None  # "The Devil's Dictionary", "Cat's Eye", "Midsummer Night's Dream"
    if _after_article(v, i):
        return None  # "The Lamb's Supper", "A Hangman's Holiday": a noun's possessive
    if v.lex.is_region(t.key) or (v.strong_place(i) and v.city_reading(i, i) in ("locative_rule", "metropolis_rule")):
        return None  # "America's ...", "London's Burning"; NER calling "Charlotte's" a place is outvoted
    return (i, i, {"possessive_rule"})


def _listed_name_anchor(v: TitleView, i: int) -> tuple[int, int, set[str]] | None:
    t = v.toks[i]
    if not (t.first or t.surname) or not t.cap or t.stop or t.honorific or _after_article(v, i):
        return None
    if t.word or t.calendar or v.lex.is_region(t.key):
        # "Grace Paley", "Virginia Woolf", "Jack London": a surname that is no word must follow
        nxt = i + 1
        if t.first and nxt < len(v.toks) and v.name_like(nxt) and not v.toks[nxt].word:
            return (i, nxt, {"first_name"})
        return None
    if t.key in v.lex.cities and v.city_reading(i, i):
        return None  # "Paris Spleen", "The Stones of Florence": the city reading wins
    if t.dictionary and not _word_name_supported(v, i):
        return None  # "Walking with Destiny", "Frost": a word that is also a name, and nothing more
    if _place_genitive(v, i):
        return None
    return (i, i, {"first_name" if t.first else "surname"})


def _place_genitive(v: TitleView, i: int) -> bool:
    """ "East of Eden", "The Hammer of Eden", "Message from Nam": a lone listed name after "of" or
    "from" names a place, unless a life-writing noun precedes ("The Book of Daniel"), NER says
    person, or a second name part follows ("The Seven Husbands of Evelyn Hugo")."""
    toks = v.toks
    if i < 2 or toks[i - 1].key not in ("of", "from") or toks[i - 2].key in LIFE_NOUNS or toks[i].ner == "PERSON":
        return False
    return not (i + 1 < len(toks) and v.name_like(i + 1) and not toks[i + 1].word)


def _word_name_supported(v: TitleView, i: int) -> bool:
    """A listed name that is also a (less frequent) English word ("Destiny", "Frost", "Daisy")
    reads as a name with NER's agreement, a name-like neighbour ("Daisy Miller", "Olive
    Kitteridge"), or as the whole main title ("Carol")."""
    if v.toks[i].ner == "PERSON" or (v.main_end == 1 and i == 0):
        return True
    return any(0 <= k < len(v.toks) and v.name_like(k) and not v.toks[k].word for k in (i - 1, i + 1))


def _names_a_place(v: TitleView, i: int, j: int) -> bool:
    """ "Peyton Place", "Brighton Rock", "Tokyo Ueno Station", "Wolf Hall": the name i..j is
    (part of) a place's name."""
    toks = v.toks
    if toks[j].key in PLACE_NOUNS and (
        j > i or (i > 0 and toks[i - 1].cap and not toks[i - 1].stop and not _personal_title(v, i - 1))
    ):
        return True
    return j + 1 < len(toks) and toks[j + 1].cap and toks[j + 1].key in PLACE_NOUNS


def _personal_title(v: TitleView, k: int) -> bool:
    """human_v5: token k is "Mr.", "Mrs.", "Monsieur"...: what follows is a surname, even a word
    that names places elsewhere ("Mrs. Bridge", not a bridge)."""
    return v.lex.generation >= 5 and v.toks[k].key in PERSONAL_TITLES


def _grow(v: TitleView, i: int, j: int, blocked: set[int]) -> tuple[int, int]:
    """Extend over name-like neighbours, and over particles and hyphens between two name parts
    ("Leonardo da Vinci", "Finzi-Continis"). A possessive "'s" is no name part, so growth stops
    there ("Johnston McCulley's Zorro" -> "Johnston McCulley")."""
    toks = v.toks

    def joinable(k: int, step: int) -> bool:
        if not 0 <= k < len(toks) or k in blocked:
            return False
        if v.name_like(k):
            return True
        far = k + step
        if not 0 <= far < len(toks) or far in blocked or not v.name_like(far):
            return False
        t = toks[k]
        hyphen = t.text == "-" and toks[k - 1].end == t.start and t.end == toks[k + 1].start
        return hyphen or t.text.lower() in PARTICLES

    while joinable(j + 1, +1):
        j += 1
    while joinable(i - 1, -1):
        i -= 1
    return i, j


def _merge(spans: list[tuple[int, int, set[str]]]) -> list[tuple[int, int, set[str]]]:
    merged: list[tuple[int, int, set[str]]] = []
    for i, j, ev in sorted(spans, key=lambda s: (s[0], s[1])):
        if merged and i <= merged[-1][1]:
            pi, pj, pev = merged[-1]
            merged[-1] = (pi, max(pj, j), pev | ev)
        else:
            merged.append((i, j, set(ev)))
    return merged


def _to_span(v: TitleView, i: int, j: int, evidence: set[str]) -> Span:
    toks = v.toks[i : j + 1]
    detectors = set(evidence)
    if any(t.first for t in toks):
        detectors.add("first_name")
    if any(t.surname for t in toks):
        detectors.add("surname")
    if any(t.ner == "PERSON" for t in toks):
        detectors.add("ner")
    start, end = toks[0].start, toks[-1].end
    return Span(start=start, end=end, kind=KIND, text=v.title[start:end], evidence=evidence_string(detectors))
