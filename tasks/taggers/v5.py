"""human_v5 / city_v5 (issue 20, quality): v4's rules and lazy NER over grown lists.

The lists (gazetteers.load_lexicon_v5) carry what is new, so the same rule code serves every
version and v3/v4 keep their tags:
- US Census 1990 surnames to rank 20,000 ("Babbitt", "Churchill", "Custer"), less words, towns
  and regions; after a personal title ("Mrs.", "Monsieur") any census surname, words too
  ("Mrs. Bridge", "Mrs. King"; not "Mr. Perfect", rank 50,045);
- the frequent words of six European languages read as words, not unknown proper nouns
  ("Bonjour Tristesse", "Bel Canto", "Maus");
- boroughs and districts are no cities ("Brooklyn", "Harlem", "Notting Hill").
The rules that read these are in human.py and city.py, switched on by `Lexicon.generation`.
"""

from __future__ import annotations

from tasks.taggers.city import CityTagger
from tasks.taggers.gazetteers import load_lexicon_v5
from tasks.taggers.human import HumanTagger
from tasks.taggers.lazy import LazyNerTagger
from tasks.taggers.pipeline import DEFAULT_MODEL

HUMAN_VERSION = "human_v5"
CITY_VERSION = "city_v5"


class _V5Lists(LazyNerTagger):
    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        super().__init__(model)
        self.lex = load_lexicon_v5()


class HumanTaggerV5(_V5Lists):
    name = "human"
    version = HUMAN_VERSION
    spans = HumanTagger.spans
    doubt = HumanTagger.doubt


class CityTaggerV5(_V5Lists):
    name = "city"
    version = CITY_VERSION
    spans = CityTagger.spans
