"""Naming patterns that make an unknown capitalised token a person's name (human_v3).

No list knows "Gimpel", "Karamazov" or "Pnin"; the words around them do: epithets ("Gimpel the
Fool", "The Great Gatsby", "I, Claudius"), families ("The Makioka Sisters", "The Brothers
Karamazov", "Dombey and Son"), life-writing ("Memoirs of Hadrian", "Washington: A Life"), or a
main title made only of such tokens ("Pnin", "Oryx and Crake").
"""

from __future__ import annotations

from tasks.taggers.view import METROPOLIS_POPULATION, TitleView

# "Gimpel the Fool", "Bartleby, the Scrivener": <name> [,] the <noun>
EPITHET_ARTICLE = "the"
# "The Great Gatsby", "Little Dorrit", "Dear John": <adjective> <name>
EPITHET_ADJECTIVES = frozenset("great little young old poor dear good".split())
# "The Makioka Sisters", "The Pickwick Papers": The <name> <group>; "The Brothers Karamazov"
GROUP_NOUNS = frozenset("sisters brothers family twins papers letters diaries saga affair gang sons daughters".split())
GROUP_FIRST = frozenset({"brothers", "sisters"})
FIRM_NOUNS = frozenset({"son", "sons", "daughter", "daughters", "co", "company"})
# "Memoirs of Hadrian", "The Death of Ivan Ilyich", "The Mark of Zorro": <life-writing noun> of <name>
LIFE_NOUNS = frozenset(
    """memoirs memoir life lives death confessions confession diary diaries letters journal
    adventures return legend trial murder marriage song book gospel story tale saga ballad epic house
    passion temptation case mark wife daughter son widow ghost secret education travels voyage
    voyages testament sorrows triumph tomb assassination funeral portrait picture""".split()
)
# "Washington: A Life": <name> <subtitle separator> <determiner> <life subtitle>
_LIFE_DETERMINERS = frozenset({"a", "his", "her", "the", "an"})
_LIFE_SUBTITLES = frozenset({"life", "biography", "memoir", "portrait"})
_PROPER_TITLE_MAX_TOKENS = 3


def pattern_anchor(v: TitleView, i: int) -> tuple[int, int, set[str]] | None:
    """An unknown capitalised token (or an initial) that a naming pattern around it marks as a
    name. The pattern outweighs NER calling it a place ("Henderson the Rain King"), not a big city."""
    t = v.toks[i]
    if not (unknown_proper(v, i, rare_ok=True) or t.initial) or (
        t.key in v.lex.cities and v.city_reading(i, i) == "metropolis_rule"
    ):
        return None
    return naming_pattern(v, i)


def naming_pattern(v: TitleView, i: int) -> tuple[int, int, set[str]] | None:
    """The naming pattern around token i, if any (``pattern_anchor`` without its guards).
    Its own function so that the lazy tagger can ask whether one is there (`lazy.ner_matters`)."""
    toks = v.toks
    before = toks[i - 1].key if i > 0 else ""
    k = i + 2 if i + 1 < len(toks) and toks[i + 1].text == "," else i + 1  # "Bartleby, the Scrivener"
    after = toks[k].key if k < len(toks) else ""
    if (after == EPITHET_ARTICLE and k + 1 < len(toks)) or (after and toks[k].honorific and k > i + 1):
        return (i, i, {"epithet_rule"})  # "Gimpel the Fool", "Pericles, Prince of Tyre"
    if before in EPITHET_ADJECTIVES and toks[i - 1].cap:
        return (i, i, {"epithet_rule"})  # "The Great Gatsby", "Little Dorrit"
    if before == "" and i == 2 and toks[0].text == "I" and toks[1].text == ",":
        return (i, i, {"epithet_rule"})  # "I, Claudius"
    if (before == "the" and after in GROUP_NOUNS) or before in GROUP_FIRST:
        return (i, i, {"group_rule"})  # "The Makioka Sisters", "The Brothers Karamazov"
    if after == "and" and k + 1 < len(toks) and toks[k + 1].key in FIRM_NOUNS:
        return (i, i, {"group_rule"})  # "Dombey and Son"
    if before == "of" and i > 1 and toks[i - 2].key in LIFE_NOUNS:
        return (i, i, {"of_rule"})  # "Memoirs of Hadrian", "The Storied Life of A. J. Fikry"
    return None


def biography_anchor(v: TitleView, i: int) -> tuple[int, int, set[str]] | None:
    """ "Washington: A Life", "Einstein: His Life and Universe": a one-word main title before a
    life subtitle is the subject's name, even a region's ("Washington") but not a city that is
    no listed name ("Jerusalem: The Biography") nor a metropolis ("London: The Biography")."""
    toks = v.toks
    if i != 0 or v.main_end != 1:  # the main title (`tasks.text.main_title`) is this one token
        return None
    subtitle = [t.key for t in toks[1:] if any(c.isalpha() for c in t.text)][:3]
    if len(subtitle) < 2 or subtitle[0] not in _LIFE_DETERMINERS or subtitle[1] not in _LIFE_SUBTITLES:
        return None
    if subtitle[2:] == ["of"]:
        return None  # "Pompeii: The Life of a Roman Town", "Titan: The Life of John D. Rockefeller"
    if not toks[0].cap or toks[0].stop or (toks[0].word and not toks[0].first):
        return None
    t = toks[0]
    city = v.lex.cities.get(t.key)
    if city and (not (t.first or t.surname) or city.population >= METROPOLIS_POPULATION):
        return None  # but the subtitle outweighs NER calling "Washington" a place
    return (0, 0, {"biography_rule"})


def unknown_proper(v: TitleView, i: int, rare_ok: bool = False) -> bool:
    """A capitalised token that is no common word, demonym, region or acronym, nor (unless
    `rare_ok`: a naming pattern is evidence enough, "The Pickwick Papers") a rarer word."""
    t = v.toks[i]
    if not t.cap or t.word or (t.rare and not rare_ok) or t.stop or t.honorific or t.calendar or v.lex.is_region(t.key):
        return False
    return any(c.isalpha() for c in t.text) and not t.text.isupper() and not _place_demonym(v, t.key)


def _place_demonym(v: TitleView, key: str) -> bool:
    """ "Dubliners", "Bostonians", "Parisians": a place name plus a people suffix."""
    for suffix in ("ers", "ians", "ans", "ites", "s"):
        stem = key.removesuffix(suffix)
        if stem != key and (stem in v.lex.cities or v.lex.is_region(stem)):
            return True
    return False


def proper_title_anchors(v: TitleView) -> list[tuple[int, int, set[str]]]:
    """A main title (before any subtitle) made only of proper nouns that no list calls a word
    or place, maybe joined by "and", is eponymous: "Pnin", "Suttree", "Oryx and Crake". Not when
    a part is a well-known place, a region, a demonym ("Dubliners"), an acronym ("SPQR"), has
    digits ("Catch-22"), is two words run together ("Middlemarch") or, unlisted, looks more
    like a word than a name by its letters ("Neuromancer", "Outliers")."""
    toks = v.toks
    end = v.main_end  # the tokens of `tasks.text.main_title`
    if not 0 < end <= _PROPER_TITLE_MAX_TOKENS:
        return []
    parts = [k for k in range(end) if toks[k].key not in ("and", "")]  # "" = punctuation
    if not parts or not all(_proper_title_part(v, k) for k in parts):
        return []
    return [(k, k, {"proper_title_rule"}) for k in parts]


def _proper_title_part(v: TitleView, k: int) -> bool:
    t = v.toks[k]
    if not unknown_proper(v, k) or not t.text.isalpha() or v.strong_place(k):
        return False
    if t.first or t.surname:
        return True
    # an unlisted token that NER reads as a place, and no gazetteer knows, names no one
    # ("Americanah"); a known town's name is left as before ("Pandora": 1,149 people)
    return v.lex.name_shape.score(t.text) > 0 and not (v.place_ner(k, k) and t.key not in v.lex.cities)
