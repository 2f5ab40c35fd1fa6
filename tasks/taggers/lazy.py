"""human_v4 / city_v4, speed: spaCy's NER only for the titles whose tags can depend on it.

spaCy's entity recogniser is ~80% of the v3 taggers' time. Most titles need none of it: every
rule that reads NER (an entity PERSON anchoring a name, NER's word on a listed name that is also
a word, on a name after "of", on a city with no other support) reads it on a token of a few
kinds, and a cheap pass (the tokenizer and the word lists alone) finds whether the title has
one. Only those titles go through NER, in batches; the others keep the tokenizer's doc, with no
entities. `ner_matters` errs on the side of running NER: a title that needs it and is not sent
would be tagged wrong, one sent without need only costs time.

The spans are those of human_v3 / city_v3 on every title (benchmarks/entity_speed.py --check
compares them on the labelled sets and on the synthetic titles); the evidence string names
`ner` only where NER was run and agreed, so the version is new.
"""

from __future__ import annotations

from collections.abc import Sequence

from tasks.taggers.blas import one_blas_thread
from tasks.taggers.city import CityTagger
from tasks.taggers.human import HumanTagger
from tasks.taggers.patterns import LIFE_NOUNS, naming_pattern, unknown_proper
from tasks.taggers.pipeline import BATCH_SIZE, PipelineTagger, recase
from tasks.taggers.view import BARE_CITY_MIN_POPULATION, METROPOLIS_POPULATION, OF, TitleView, build_view
from tasks.text import MAX_TITLE_CHARS

HUMAN_VERSION = "human_v4"
CITY_VERSION = "city_v4"


def ner_matters(v: TitleView) -> bool:
    """Could NER change this title's spans? `v` is built from the tokenizer's doc (no entities).

    NER is read (human.py, city.py, view.py, patterns.py) only on capitalised tokens:
    - an unknown token (no list knows it, or only the rare-word list): an entity PERSON may
      anchor a name, a GPE may veto one; except a well-known place or region, which vetoes
      any PERSON entity it is part of;
    - a listed name that is also a word, a date or a region ("Grace", "June", "Georgia"), only
      beside a name-like token no list calls a word, in one run of capitalised tokens: alone,
      every rule refuses it whatever NER says, and an entity PERSON counts only with such a
      token in it ("Grace Paley");
    - a listed name that is a less frequent word ("Destiny"), or follows "of"/"from" ("East of
      Eden"), or is a city with no other reason to read as one ("Florence" with no "in" before
      it), or a city's possessive;
    - a city candidate that is a word ("Reading", "Nice": NER and a big city), or has no other
      support (no locative, no ", Region", under 50,000 people).
    """
    toks = v.toks
    for i, t in enumerate(toks):
        if not t.cap or t.stop:
            continue
        if _pattern_on_metropolis(v, i):
            return True
        if t.key in v.lex.cities and v.is_possessive(i):
            # NER's place reading ("ner") comes before the locative / metropolis readings that
            # refuse a city's possessive as a name ("from Harlem's"): either way NER decides
            return True
        if t.first or t.surname:
            if t.word or t.calendar or v.lex.is_region(t.key):
                if _name_in_run(v, i):
                    return True
                continue
            if t.dictionary:
                return True
            if v.lex.generation >= 5 and _split_run(v, i):
                return True  # v5: an entity PERSON over "Jill Mr Jill" holds the title between
            city = t.key in v.lex.cities
            if city and (not _reads_as_city_without_ner(v, i) or _listed_name_beside(v, i)):
                return True  # beside another listed name, NER may call the run a PERSON ("Ajax Paris")
            if not city and _genitive_open(v, i):
                return True
            continue
        if t.word or t.honorific or t.calendar or not any(c.isalpha() for c in t.text):
            continue
        if v.strong_place(i):
            continue  # a PERSON entity over it is vetoed; its city reading is checked below
        return True
    for m in v.cities:
        cap = [t for t in toks[m.i : m.j + 1] if t.cap]
        big = m.entry.population >= BARE_CITY_MIN_POPULATION
        if all(t.word or t.dictionary for t in cap):
            if big:
                return True
            continue
        if not big and not v.locative_before(m.i) and not v.region_after(m.j):
            return True
    return False


def _pattern_on_metropolis(v: TitleView, i: int) -> bool:
    """`patterns.pattern_anchor` refuses a metropolis only when it reads as one by population
    (`city_reading` == "metropolis_rule"); NER calling it a place reads "ner" first, and then a
    naming pattern around it anchors a name ("Brooklyn the Jack": human with NER, none without).
    So NER matters for a metropolis that no list calls a word with a naming pattern around it.
    (The lazy/full property tests found it: issue 28, item 9.)"""
    t = v.toks[i]
    entry = v.lex.cities.get(t.key)
    if entry is None or entry.population < METROPOLIS_POPULATION or not unknown_proper(v, i, rare_ok=True):
        return False
    return v.city_reading(i, i) == "metropolis_rule" and naming_pattern(v, i) is not None


def _listed_name_beside(v: TitleView, i: int) -> bool:
    """Token i's run of capitalised tokens holds another listed name that is no word: an entity
    PERSON over the run makes a name of a city that reads as a city without NER ("Salvador
    Salvador", "of Ajax Salvador"; the lazy/full property tests found them, issue 28 item 9)."""
    return _run_has(v, i, lambda k, t: (t.first or t.surname) and not t.word and not t.stop)


def _name_in_run(v: TitleView, i: int) -> bool:
    """Another token in token i's run of capitalised tokens (the most an entity PERSON piece can
    hold: `human._ner_anchors`) is name-like and no word, rare word or region: what a
    multi-token NER core needs (`human._ner_core`)."""
    return _run_has(v, i, lambda k, t: v.name_like(k) and not (t.word or t.rare or v.lex.is_region(t.key)))


def _run_has(v: TitleView, i: int, wanted) -> bool:
    """Whether another token of token i's run of capitalised tokens (both ways, up to the first
    token that is not capitalised or holds no letter) satisfies ``wanted(k, token)``."""
    toks = v.toks

    def in_run(k: int) -> bool:
        return 0 <= k < len(toks) and toks[k].cap and any(c.isalpha() for c in toks[k].text)

    for step in (-1, 1):
        k = i + step
        while in_run(k):
            if wanted(k, toks[k]):
                return True
            k += step
    return False


def _split_run(v: TitleView, i: int) -> bool:
    """An entity PERSON over token i's run of capitalised tokens could give other spans than the
    lists alone: the run has a token that is not name-like (a title, a word, a date) between
    name-like ones ("Jill Mr Jill": one span, since `human._ner_core` trims such tokens only at
    the ends). Checked for v5 only: v4's routing, and so its spans, stay as they were. Not
    covered, to keep NER at ~17% of titles: a metropolis that is also a listed name in a longer
    run of capitalised words that NER calls one PERSON ("London The Harlem", made up; sending
    every such run through NER costs 6 points of titles and drops below 5,000 titles per
    CPU-second)."""
    toks = v.toks

    def in_run(k: int) -> bool:
        return 0 <= k < len(toks) and toks[k].cap and any(c.isalpha() for c in toks[k].text)

    a = b = i
    while in_run(a - 1):
        a -= 1
    while in_run(b + 1):
        b += 1
    like = [v.name_like(k) for k in range(a, b + 1)]
    return any(not like[n] and any(like[:n]) and any(like[n + 1 :]) for n in range(len(like)))


def _genitive_open(v: TitleView, i: int) -> bool:
    """`human._place_genitive` of token i would read NER: a lone listed name after "of"/"from"
    with no life-writing noun before and no second name part after ("East of Eden")."""
    toks = v.toks
    if i < 2 or toks[i - 1].key not in (OF, "from") or toks[i - 2].key in LIFE_NOUNS:
        return False
    return not (i + 1 < len(toks) and v.name_like(i + 1) and not toks[i + 1].word)


def _reads_as_city_without_ner(v: TitleView, i: int) -> bool:
    """`TitleView.city_reading` of token i is true whatever NER says."""
    entry = v.lex.cities.get(v.toks[i].key)
    population = entry.population if entry else 0
    prev = v.prev_text(i)
    return (
        v.locative_before(i)
        or (prev == OF and population >= BARE_CITY_MIN_POPULATION)
        or v.region_after(i) is not None
        or population >= 1_000_000
    )


class LazyNerTagger(PipelineTagger):
    """Parse = tokenize every title, then NER only where `ner_matters`; the views built for
    the cheap pass are kept for the titles that skip NER, so no title is viewed twice."""

    def route(self, titles: Sequence[str]) -> tuple[list, list[int]]:
        """The tokenized docs of ``titles`` and the positions of those NER must see
        (``ner_matters``); the others' views are kept for :meth:`views`."""
        texts = [recase(t) if len(t) <= MAX_TITLE_CHARS else "" for t in titles]
        docs = list(self.nlp.tokenizer.pipe(texts, batch_size=BATCH_SIZE))
        self._cheap: dict[int, TitleView] = {}
        send = []
        for n, (title, doc) in enumerate(zip(titles, docs)):
            if len(title) > MAX_TITLE_CHARS:
                continue
            view = build_view(title, doc, self.lex)
            if ner_matters(view):
                send.append(n)
            else:
                self._cheap[id(doc)] = view
        return docs, send

    def parse(self, titles: Sequence[str]) -> list:
        docs, send = self.route(titles)
        ner = self.nlp.get_pipe("ner")
        with one_blas_thread():
            for n, doc in zip(send, ner.pipe((docs[n] for n in send), batch_size=BATCH_SIZE)):
                docs[n] = doc
        self.ner_titles = len(send)  # this call's; the totals below are the process's
        self.ner_total = getattr(self, "ner_total", 0) + len(send)
        self.parsed_total = getattr(self, "parsed_total", 0) + len(titles)
        return docs

    def views(self, titles: Sequence[str], docs: Sequence) -> list[TitleView]:
        cheap = getattr(self, "_cheap", {})
        out = []
        for t, d in zip(titles, docs, strict=True):
            view = cheap.pop(id(d), None)
            if view is None or view.title != t:
                view = build_view(t, d, self.lex) if len(t) <= MAX_TITLE_CHARS else TitleView(t, [], [], [], self.lex)
            out.append(view)
        return out


class HumanTaggerV4(LazyNerTagger):
    name = "human"
    version = HUMAN_VERSION
    spans = HumanTagger.spans
    doubt = HumanTagger.doubt


class CityTaggerV4(LazyNerTagger):
    name = "city"
    version = CITY_VERSION
    spans = CityTagger.spans
