"""human_v6 / city_v6 (issue 20, quality): v5's rules and lazy NER, grown from WordNet 3.0.

WordNet knows which capitalised words name people and which name places that are no city
(gazetteers.load_lexicon_v6, tools/build_v6_lists.py):
- the people it knows by one word are surnames ("Faust", "Hamlet", "Burr", "Usher");
- a city name it knows as another place, never a city ("Arcadia", a region; "Atlantis", an imaginary
  place; "Salvador", El Salvador) is a city only with a locative or ", Region" (city.py).
"""

from __future__ import annotations

from tasks.taggers.city import CityTagger
from tasks.taggers.gazetteers import load_lexicon_v6
from tasks.taggers.human import HumanTagger
from tasks.taggers.lazy import LazyNerTagger
from tasks.taggers.pipeline import DEFAULT_MODEL

HUMAN_VERSION = "human_v6"
CITY_VERSION = "city_v6"


class _V6Lists(LazyNerTagger):
    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        super().__init__(model)
        self.lex = load_lexicon_v6()


class HumanTaggerV6(_V6Lists):
    name = "human"
    version = HUMAN_VERSION
    spans = HumanTagger.spans
    doubt = HumanTagger.doubt


class CityTaggerV6(_V6Lists):
    name = "city"
    version = CITY_VERSION
    spans = CityTagger.spans
