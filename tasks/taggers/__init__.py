"""Offline, explainable taggers for names of people and cities in book titles.

    from tasks.taggers import HumanTagger, CityTagger
    HumanTagger().tag_many(["Gerald's Game"])  # [[Span(0, 6, 'human', 'Gerald', 'ner+first_name+possessive_rule')]]

Both taggers share one spaCy pipeline per process and model (`load_pipeline`), and one set of
compiled gazetteers (`load_lexicon`). See docs/tagging.md.
"""

from tasks.taggers.city import CityTagger
from tasks.taggers.human import HumanTagger
from tasks.taggers.lazy import CityTaggerV4, HumanTaggerV4
from tasks.taggers.model import CityModelTagger, HumanModelTagger
from tasks.taggers.pipeline import DEFAULT_MODEL, ModelNotAvailableError, load_pipeline
from tasks.taggers.spans import Span
from tasks.taggers.v5 import CityTaggerV5, HumanTaggerV5
from tasks.taggers.v6 import CityTaggerV6, HumanTaggerV6

__all__ = [
    "CityModelTagger",
    "CityTaggerV4",
    "CityTaggerV5",
    "CityTaggerV6",
    "HumanModelTagger",
    "HumanTaggerV4",
    "HumanTaggerV5",
    "HumanTaggerV6",
    "CityTagger",
    "DEFAULT_MODEL",
    "HumanTagger",
    "ModelNotAvailableError",
    "Span",
    "load_pipeline",
]
