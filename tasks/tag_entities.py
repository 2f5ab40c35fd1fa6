"""Stage: find names of people and cities in every book title and title variant.

Tags live beside the titles (table `title_entities`, schema schemas/title_entities.json) and
never rewrite them. Each distinct title string is tagged once, however many books and variants
share it; taggers that share a spaCy pipeline share one parse.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from time import perf_counter
from typing import Protocol

from tasks.base import StageResult
from tasks.taggers import DEFAULT_MODEL, CityTagger, HumanTagger, Span
from tasks.taggers.pipeline import PipelineTagger

TABLE = "title_entities"
PROBE_BATCH = 256


class Tagger(Protocol):
    name: str
    version: str

    def tag_many(self, titles: list[str]) -> list[list[Span]]: ...


def default_taggers(model: str = DEFAULT_MODEL) -> list[Tagger]:
    """The human and city taggers on one shared pipeline (model and gazetteers load once per process)."""
    return [HumanTagger(model), CityTagger(model)]


def tag_titles(titles: list[str], taggers: Sequence[Tagger]) -> dict[str, list[list[Span]]]:
    """Tagger name -> spans per title. Pipeline taggers on the same spaCy pipeline and lists
    share one parse and one set of token facts (which also caches the people found)."""
    out: dict[str, list[list[Span]]] = {}
    shared: dict[tuple[int, int], list] = {}
    for tagger in taggers:
        if isinstance(tagger, PipelineTagger):
            key = (id(tagger.nlp), id(tagger.lex))
            if key not in shared:
                shared[key] = tagger.views(titles, tagger.parse(titles))
            out[tagger.name] = [tagger.spans(v) for v in shared[key]]
        else:
            out[tagger.name] = tagger.tag_many(titles)
    return out


def tag_entities(books: list[dict], title_variants: list[dict], *, taggers: Sequence[Tagger] | None = None) -> StageResult:
    """Rows of `title_entities` for each book's canonical title and each title variant.

    books: book_id, author_qid, canonical_title (variant_titles is not read: each variant is
    tagged from its own title_variants row, which carries its id).
    title_variants: variant_id, book_id, author_qid, title.
    """
    taggers = list(taggers) if taggers is not None else default_taggers()
    targets = [("book", b["book_id"], b["book_id"], b["author_qid"], b["canonical_title"]) for b in books]
    targets += [("variant", v["variant_id"], v["book_id"], v["author_qid"], v["title"]) for v in title_variants]
    distinct = sorted({t[4] for t in targets if t[4]})

    started = perf_counter()
    tagged = tag_titles(distinct, taggers)
    seconds = perf_counter() - started
    spans_of = {title: [(tagger, tagged[tagger.name][n]) for tagger in taggers] for n, title in enumerate(distinct)}

    rows = []
    with_kind: Counter = Counter()
    for target_kind, target_id, book_id, author_qid, title in targets:
        kinds_here = set()
        for tagger, spans in spans_of.get(title, []):
            for span in spans:
                kinds_here.add(span.kind)
                rows.append(_row(target_kind, target_id, book_id, author_qid, tagger, span))
        with_kind.update(kinds_here)
    rows.sort(key=lambda r: (r["target_kind"], r["target_id"], r["start"], r["kind"]))

    span_counts = Counter(r["kind"] for r in rows)
    return StageResult(
        tables={TABLE: rows},
        stats={
            "targets": len(targets),
            "titles_tagged": len(distinct),
            "empty_titles": sum(1 for t in targets if not t[4]),
            "seconds": round(seconds, 3),
            "titles_per_s": round(len(distinct) / seconds, 1) if seconds > 0 else None,
            "spans_per_kind": dict(sorted(span_counts.items())),
            "targets_with_kind": dict(sorted(with_kind.items())),
            "taggers": {t.name: t.version for t in taggers},
        },
    )


def _row(target_kind: str, target_id: str, book_id: str, author_qid: str, tagger: Tagger, span: Span) -> dict:
    return {
        "entity_id": f"{target_kind}:{target_id}:{span.kind}:{span.start}",
        "target_kind": target_kind,
        "target_id": target_id,
        "book_id": book_id,
        "author_qid": author_qid,
        "kind": span.kind,
        "text": span.text,
        "start": span.start,
        "end": span.end,
        "tagger": tagger.name,
        "version": tagger.version,
        "evidence": span.evidence,
    }


def tag_probe(titles: Iterable[str], *, taggers: Sequence[Tagger] | None = None) -> Iterator[str]:
    """For `kitab tag`: one JSON line per input title (a trailing newline is dropped), in order:
    {"title", "human_names": [...], "city_names": [...]}. Streams in batches of PROBE_BATCH."""
    taggers = list(taggers) if taggers is not None else default_taggers()
    it = iter(titles)
    while batch := [t.rstrip("\r\n") for t in islice(it, PROBE_BATCH)]:
        tagged = tag_titles(batch, taggers)
        for n, title in enumerate(batch):
            names: dict[str, list[str]] = {"human": [], "city": []}
            for tagger in taggers:
                for span in tagged[tagger.name][n]:
                    names.setdefault(span.kind, []).append(span.text)
            yield json.dumps(
                {"title": title, "human_names": names["human"], "city_names": names["city"]}, ensure_ascii=False
            )
