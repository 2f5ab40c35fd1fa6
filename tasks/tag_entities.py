"""Stage: find names of people and cities in every book title and title variant.

Tags live beside the titles (table `title_entities`, schema schemas/title_entities.json) and
never rewrite them. Each distinct title string is tagged once, however many books and variants
share it; taggers that share a spaCy pipeline share one parse.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from time import perf_counter
from typing import Protocol

from kitab.core import jsonl
from tasks.base import StageResult
from tasks.taggers import DEFAULT_MODEL, Span
from tasks.taggers.pipeline import PipelineTagger
from tasks.taggers.registry import make_taggers

TABLE = "title_entities"
PROBE_BATCH = 256
PARSE_BATCH = 2000  # titles parsed together: a title's spans do not depend on its neighbours


class Tagger(Protocol):
    name: str  # the kind of span it finds
    version: str  # its registry id (tasks/taggers/registry.py)

    def tag_many(self, titles: list[str]) -> list[list[Span]]: ...

    def fingerprint(self) -> dict: ...


def default_taggers(model: str = DEFAULT_MODEL) -> list[Tagger]:
    """The configured taggers (tasks/taggers/registry.py: $KITAB_TAGGERS, else DEFAULT:
    human_v7 and city_v7); pipeline taggers share one spaCy pipeline (model and gazetteers load
    once per process)."""
    return make_taggers(model=model)


def v3_taggers(model: str = DEFAULT_MODEL) -> list[Tagger]:
    """human_v3 / city_v3 (NER on every title): what releases before v4 were tagged with."""
    return make_taggers(("human_v3", "city_v3"), model=model)


def tag_titles(
    titles: list[str], taggers: Sequence[Tagger], doubts: dict[str, list[str | None]] | None = None
) -> dict[str, list[list[Span]]]:
    """Tagger name -> spans per title. Pipeline taggers on the same spaCy pipeline and lists
    share one parse and one set of token facts (which also caches the people found).
    ``doubts``, if given, is filled with tagger name -> per title, the class of a risky "no"
    (``PipelineTagger.doubt``) where the title has no span, else None."""
    out: dict[str, list[list[Span]]] = {}
    shared: dict[tuple[int, int], list] = {}
    for tagger in taggers:
        if isinstance(tagger, PipelineTagger):
            key = (id(tagger.nlp), id(tagger.lex))
            if key not in shared:
                shared[key] = tagger.views(titles, tagger.parse(titles))
            out[tagger.name] = [tagger.spans(v) for v in shared[key]]
            if doubts is not None:
                doubts[tagger.name] = [
                    None if found else tagger.doubt(v) for v, found in zip(shared[key], out[tagger.name])
                ]
        else:
            out[tagger.name] = tagger.tag_many(titles)
            if doubts is not None:
                doubts[tagger.name] = [None] * len(titles)
    return out


def title_tags(titles: Sequence[str], taggers: Sequence[Tagger]) -> list[dict]:
    """Distinct titles -> one row per span found: title, tagger, version, kind, text, start,
    end, evidence; and one *doubt row* per title and kind with no span whose "no" is risky
    (text "", start = end = -1, evidence = the class, e.g. "unknown_word": tasks/entity_states.py).
    A title with neither has no row. What the pipeline tags once per distinct title (in chunks,
    on every core) and then joins to books and variants (entity_rows, entity_states.book_states)."""
    titles = sorted({t for t in titles if t})
    rows = []
    for start in range(0, len(titles), PARSE_BATCH):  # parsed docs of one slice at a time: bounded memory
        part = titles[start : start + PARSE_BATCH]
        doubts: dict[str, list[str | None]] = {}
        tagged = tag_titles(part, taggers, doubts)
        rows += [
            {
                "title": title,
                "tagger": tagger.name,
                "version": tagger.version,
                "kind": span.kind,
                "text": span.text,
                "start": span.start,
                "end": span.end,
                "evidence": span.evidence,
            }
            for n, title in enumerate(part)
            for tagger in taggers
            for span in tagged[tagger.name][n]
        ]
        rows += [
            {
                "title": title,
                "tagger": tagger.name,
                "version": tagger.version,
                "kind": tagger.name,
                "text": "",
                "start": -1,
                "end": -1,
                "evidence": doubts[tagger.name][n],
            }
            for n, title in enumerate(part)
            for tagger in taggers
            if doubts[tagger.name][n]
        ]
    return rows


def entity_rows(books: list[dict], title_variants: list[dict], tags: Iterable[dict]) -> tuple[list[dict], dict]:
    """Rows of `title_entities` for each book's canonical title and each title variant, from
    ``title_tags`` rows (which must cover every distinct title of ``books`` and
    ``title_variants``), and their counts for the run report."""
    spans_of: dict[str, list[dict]] = {}
    for tag in tags:
        if tag["start"] >= 0:  # doubt rows are no spans (entity_states reads them)
            spans_of.setdefault(tag["title"], []).append(tag)
    targets = [("book", b["book_id"], b["book_id"], b["author_qid"], b["canonical_title"]) for b in books]
    targets += [("variant", v["variant_id"], v["book_id"], v["author_qid"], v["title"]) for v in title_variants]
    rows = []
    with_kind: Counter = Counter()
    for target_kind, target_id, book_id, author_qid, title in targets:
        kinds_here = set()
        for tag in spans_of.get(title, []):
            kinds_here.add(tag["kind"])
            rows.append(_row(target_kind, target_id, book_id, author_qid, tag))
        with_kind.update(kinds_here)
    rows.sort(key=lambda r: (r["target_kind"], r["target_id"], r["start"], r["kind"]))
    stats = {
        "targets": len(targets),
        "empty_titles": sum(1 for t in targets if not t[4]),
        "spans_per_kind": dict(sorted(Counter(r["kind"] for r in rows).items())),
        "targets_with_kind": dict(sorted(with_kind.items())),
    }
    return rows, stats


def tag_entities(
    books: list[dict], title_variants: list[dict], *, taggers: Sequence[Tagger] | None = None
) -> StageResult:
    """Rows of `title_entities` for each book's canonical title and each title variant:
    every distinct title tagged once (title_tags), then joined to its targets (entity_rows).

    books: book_id, author_qid, canonical_title (variant_titles is not read: each variant is
    tagged from its own title_variants row, which carries its id).
    title_variants: variant_id, book_id, author_qid, title.
    """
    taggers = list(taggers) if taggers is not None else default_taggers()
    distinct = sorted(({b["canonical_title"] for b in books} | {v["title"] for v in title_variants}) - {"", None})
    started = perf_counter()
    tags = title_tags(distinct, taggers)
    seconds = perf_counter() - started
    rows, stats = entity_rows(books, title_variants, tags)
    return StageResult(
        tables={TABLE: rows},
        stats={
            **stats,
            "titles_tagged": len(distinct),
            "seconds": round(seconds, 3),
            "titles_per_s": round(len(distinct) / seconds, 1) if seconds > 0 else None,
            "taggers": {t.name: t.version for t in taggers},
        },
    )


def _row(target_kind: str, target_id: str, book_id: str, author_qid: str, tag: dict) -> dict:
    return {
        "entity_id": f"{target_kind}:{target_id}:{tag['kind']}:{tag['start']}",
        "target_kind": target_kind,
        "target_id": target_id,
        "book_id": book_id,
        "author_qid": author_qid,
        "kind": tag["kind"],
        "text": tag["text"],
        "start": tag["start"],
        "end": tag["end"],
        "tagger": tag["tagger"],
        "version": tag["version"],
        "evidence": tag["evidence"],
    }


def tag_probe(
    titles: Iterable[str], *, taggers: Sequence[Tagger] | None = None, explain: bool = False
) -> Iterator[str]:
    """For `kitab tag`: one JSON line per input title (a trailing newline is dropped), in order:
    {"title", "<kind>_names": [...] per tagger's kind ("human_names", ...), "<kind>": "yes|no|unsure"}:
    each kind's state from the title rules alone (tasks/entity_states.py; no second reader here).
    ``explain`` adds "<kind>_evidence": the class that decided it, and "<kind>_error" with
    "<kind>_error_interval": the stated chance the state is wrong and its 95% interval (null when
    unsure; tasks/entity_states.book_error). Streams in batches of PROBE_BATCH."""
    from tasks.entity_states import UNSURE, book_error, decide, span_class, title_evidence

    taggers = list(taggers) if taggers is not None else default_taggers()
    it = iter(titles)
    while batch := [t.rstrip("\r\n") for t in islice(it, PROBE_BATCH)]:
        doubts: dict[str, list[str | None]] = {}
        tagged = tag_titles(batch, taggers, doubts)
        for n, title in enumerate(batch):
            names: dict[str, list[str]] = {t.name: [] for t in taggers}
            for tagger in taggers:
                for span in tagged[tagger.name][n]:
                    names.setdefault(span.kind, []).append(span.text)
            states: dict[str, str] = {}
            for tagger in taggers:
                spans = tagged[tagger.name][n]
                cls = (span_class(tagger.name, [s.evidence for s in spans]), True) if spans else None
                cls = cls or (doubts[tagger.name][n] or "plain", False)
                state, evidence = decide(tagger.name, title_evidence(tagger.name, [cls]), [])
                states[tagger.name] = state
                if explain:
                    states[f"{tagger.name}_evidence"] = evidence
                    # the stated chance the state is wrong, calibrated on held-out titles (issue 37)
                    error = None if state == UNSURE else book_error(tagger.name, state, evidence, tagger.version)
                    states[f"{tagger.name}_error"] = error and round(error[0], 4)
                    states[f"{tagger.name}_error_interval"] = error and [round(error[1], 4), round(error[2], 4)]
            yield jsonl.dumps(
                {"title": title, **{f"{kind}_names": found for kind, found in names.items()}, **states},
                ensure_ascii=False,
            )
