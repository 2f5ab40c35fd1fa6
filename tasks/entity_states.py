"""Three-valued entity states per (book, kind): ``yes``, ``no`` or ``unsure``, with the evidence
that decided them (issue 28; docs/tagging.md, "States and evidence").

The title rules say *what* they found (``title_entities``) and *how* (an evidence class per
title, ``title_class``); a class the labelled sets show to be low-risk decides alone, a risky one
is ``unsure`` unless a second, independent source decides it (the book's own record, the model
tagger, a reviewer's label: ``others``). Pure functions: the constrain step calls ``book_states``
per batch of authors; ``decide`` is the one rule.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from tasks.entities.registry import entity_kind, find_kind

YES, NO, UNSURE = "yes", "no", "unsure"
STATES = (YES, NO, UNSURE)
SOURCES = ("record", "model", "review")
# Precedence when the sources disagree: a reviewer's label, then the book's own record (its
# subjects matched against the title: ~97% right where present, issue 28); the model alone never
# overrules the title rules, and neither decides against them without a second source.
PRECEDENCE = ("review", "record")

# The title rules' evidence classes of each kind, with their measured error counts and which may
# decide alone, are the kind's (tasks/entities/kinds/: EntityKind.classes, measured on dev,
# holdout and dev2; docs/tagging.md, "States and evidence").


@dataclass(frozen=True)
class TitleEvidence:
    """What the title rules say of one book and kind: their verdict and the class per title
    (canonical and variants) that led to it, e.g. ("yes", ("name_list",))."""

    verdict: str  # "yes" | "no"
    classes: tuple[str, ...]


def span_class(kind: str, evidence: Iterable[str]) -> str:
    """The class of a title with spans of ``kind``, from their evidence strings (the kind's rule)."""
    return entity_kind(kind).span_class(frozenset(d for e in evidence for d in e.split("+")))


def risky(kind: str, cls: str) -> bool:
    """Whether the title rules' class ``cls`` may not decide alone. An unregistered kind, or a
    class its kind does not list, is an error (BadValue / ValueError), not "risky": an unmeasured
    kind would otherwise come out unsure on every book, and all its constraints rejected."""
    return entity_kind(kind).risky(cls)


def decide(kind: str, title_evidence: TitleEvidence | None, others: Sequence[Mapping]) -> tuple[str, str]:
    """(state, evidence text) of one book and kind.

    1. A review label decides (reviews that disagree: unsure).
    2. Every source that speaks (title rules, record, model) agrees: decided if they are two or
       more, or the title rules' classes are all low-risk.
    3. They disagree: the record decides (the book's own subjects), unless the title rules are
       low-risk and the model sides with them (then two sources against one: theirs); else unsure.
    4. The title rules alone, a risky class: unsure.
    The evidence lists every source and what it said, "|"-joined: "title:rule",
    "title:proper_title|model:yes", "title:unknown_word|record:yes|model:yes".
    """
    votes: list[tuple[str, str]] = []  # (source, verdict)
    parts: list[str] = []
    sure_title = False
    if title_evidence is not None:
        if title_evidence.verdict not in (YES, NO):
            raise ValueError(f"title verdict must be yes or no, got {title_evidence.verdict!r}")
        classes = sorted(set(title_evidence.classes))
        sure_title = bool(classes) and not any(risky(kind, c) for c in classes)
        votes.append(("title", title_evidence.verdict))
        parts.append("title:" + "+".join(classes or ["none"]))
    for other in sorted(others, key=lambda o: (SOURCES.index(o["source"]), o["verdict"], o.get("detail", ""))):
        if other["source"] not in SOURCES or other["verdict"] not in (YES, NO):
            raise ValueError(f"second reader evidence must be a source of {SOURCES} with a yes/no verdict: {other!r}")
        votes.append((other["source"], other["verdict"]))
        parts.append(f"{other['source']}:{other['verdict']}")
    evidence = "|".join(parts)
    reviews = {v for s, v in votes if s == "review"}
    if reviews:
        return (reviews.pop() if len(reviews) == 1 else UNSURE), evidence
    verdicts = {v for _, v in votes}
    if not votes:
        return UNSURE, evidence or "none"
    if len(verdicts) == 1:
        return (votes[0][1] if len(votes) >= 2 or sure_title else UNSURE), evidence
    by_source = dict(votes)
    if sure_title and by_source.get("model") == by_source["title"] and "record" in by_source:
        return by_source["title"], evidence
    record = {v for s, v in votes if s == "record"}
    if len(record) == 1:
        return record.pop(), evidence
    return UNSURE, evidence


def title_evidence(kind: str, classes: Sequence[tuple[str, bool]]) -> TitleEvidence:
    """A book's titles' (class, has a span) pairs -> the title rules' evidence for the book.
    A book has a name if any title has one; the classes are those of its verdict's titles
    (for "yes", the titles with a span; for "no", every title's)."""
    if not classes:
        return TitleEvidence(NO, ())
    found = [c for c, has in classes if has]
    if found:
        # a low-risk "yes" on one title makes the book's "yes" low-risk
        sure = [c for c in found if not risky(kind, c)]
        return TitleEvidence(YES, tuple(sorted(set(sure or found))))
    return TitleEvidence(NO, tuple(sorted({c for c, _ in classes})))


def second_reader_evidence(
    books: Sequence[Mapping],
    title_variants: Sequence[Mapping],
    authors: Sequence[Mapping],
    records: Sequence[Mapping] = (),
    labels: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
    model_spans: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    model_version: str = "",
    tag_rows: Iterable[Mapping] = (),
) -> dict[tuple[str, str], list[dict]]:
    """(book_id, kind) -> the second readers' verdicts (``{"source", "verdict", "detail"}``) for
    one batch, as the constrain step has it: its ``books`` and ``title_variants`` rows, its
    ``authors`` (the name a reviewer saw), the ``book_records`` rows of its works, the review
    labels (tasks/book_evidence.review_labels) and the model tagger's spans per book (None: no
    model configured), and the title_tags rows of its titles (the title rules' spans, which a
    record may confirm or contradict). The evidence itself is tasks/book_evidence.py's."""
    from tasks.book_evidence import second_reader_evidence as evidence

    if not records and not labels and model_spans is None:
        return {}
    names = {a["qid"]: a.get("name") or "" for a in authors}
    variants: dict[str, list[str]] = {}
    work_keys: dict[str, list[str]] = {}
    for v in title_variants:
        variants.setdefault(v["book_id"], []).append(v["title"])
        work_keys.setdefault(v["book_id"], []).append(v["work_key"])
    spans: dict[str, dict[str, list[str]]] = {}  # title -> kind -> span texts
    for t in tag_rows:
        if t["start"] >= 0:
            spans.setdefault(t["title"], {}).setdefault(t["kind"], []).append(t["text"])
    rows = []
    for b in sorted(books, key=lambda b: b["book_id"]):
        mine = [b["canonical_title"], *variants.get(b["book_id"], [])]
        found: dict[str, list[str]] = {}
        for title in dict.fromkeys(mine):
            for kind, texts in spans.get(title, {}).items():
                found.setdefault(kind, []).extend(texts)
        rows.append(
            {
                "book_id": b["book_id"],
                "title": b["canonical_title"],
                "author": names.get(b["author_qid"], ""),
                "variants": [t for t in variants.get(b["book_id"], []) if t != b["canonical_title"]],
                "work_keys": sorted(set(work_keys.get(b["book_id"], []))),
                "spans": found,
            }
        )
    return evidence(rows, records, labels, model_spans, model_version)


def decided_by(
    states: Sequence[Mapping],
    baseline: Sequence[Mapping] | Mapping[tuple[str, str], str],
    others: Mapping[tuple[str, str], Sequence[Mapping]],
) -> dict[str, dict[str, int]]:
    """kind -> how its books' states came about, for the step's stats: ``title`` (the title rules
    alone), ``title+record`` (the same state, a second reader agreeing), ``record`` / ``model`` /
    ``review`` (a second reader decided what the title rules alone left unsure or said
    otherwise), ``unsure`` (``unsure:disagree`` where the title rules alone would have decided).
    ``baseline``: :func:`book_states` of the same books without second readers (the reference),
    or what ``book_states(..., before=...)`` filled in the same pass: (book_id, kind) -> the title
    rules' state alone, for the books and kinds with second readers (any other's state is the
    title rules' alone)."""
    if isinstance(baseline, Mapping):
        before: Mapping[tuple[str, str], str] = baseline
    else:
        before = {(r["book_id"], r["kind"]): r["state"] for r in baseline}
    out: dict[str, Counter] = {}
    for r in states:
        key = (r["book_id"], r["kind"])
        alone = before.get(key, r["state"])
        agreeing = sorted({o["source"] for o in others.get(key, ()) if o["verdict"] == r["state"]}, key=SOURCES.index)
        if r["state"] == UNSURE:
            label = UNSURE if alone == UNSURE else "unsure:disagree"
        elif alone == r["state"]:
            label = "+".join(["title", *agreeing])
        else:
            label = "+".join(agreeing) or "title"
        out.setdefault(r["kind"], Counter())[label] += 1
    return {k: dict(sorted(c.items())) for k, c in sorted(out.items())}


def book_states(
    books: Sequence[Mapping],
    title_variants: Sequence[Mapping],
    tag_rows: Iterable[Mapping],
    kinds: Sequence[str],
    others: Mapping[tuple[str, str], Sequence[Mapping]] | None = None,
    versions: Mapping[str, str] | None = None,
    before: dict[tuple[str, str], str] | None = None,
) -> list[dict]:
    """Rows of ``book_entities`` (schemas/book_entities.json): one per book and kind, from the
    title_tags rows of the books' titles (spans, and the tagger's doubt rows: ``start`` < 0,
    ``evidence`` = the class of a title with no span) and the second readers' verdicts, with each
    decided state's stated error and its interval (:func:`book_error`; ``versions``: kind -> the
    run's tagger version, default the kind's default; unsure: null). ``before``, if given, is
    filled with (book_id, kind) -> the state the title rules alone decide, for each book and kind
    with second readers (:func:`decided_by`'s baseline, without deciding every book again)."""
    others = others or {}
    versions = versions or {}
    per_title: dict[tuple[str, str], tuple[str, bool]] = {}
    spans: dict[tuple[str, str], list[str]] = {}
    for row in tag_rows:
        key = (row["title"], row["kind"])
        if row["start"] < 0:
            per_title[key] = (row["evidence"], False)
        else:
            spans.setdefault(key, []).append(row["evidence"])
    for (title, kind), evidence in spans.items():
        per_title[(title, kind)] = (span_class(kind, evidence), True)
    titles_of: dict[str, list[str]] = {b["book_id"]: [b["canonical_title"]] for b in books}
    for v in title_variants:
        titles_of.setdefault(v["book_id"], []).append(v["title"])
    # a book's state is a function of its titles' classes and its second readers' verdicts: each
    # distinct combination is decided once (most books share "plain" and no second reader)
    # (state, evidence, error, error_low, error_high) per distinct key
    decided: dict[tuple, tuple] = {}
    default = ("plain", False)  # a title with no span and no doubt row
    rows = []
    for book in sorted(books, key=lambda b: b["book_id"]):
        book_id, author_qid = book["book_id"], book["author_qid"]
        titles = [t for t in dict.fromkeys(titles_of[book_id]) if t]
        for kind in kinds:
            classes = tuple(per_title.get((t, kind), default) for t in titles)
            mine = others.get((book_id, kind), ())
            key = (kind, classes, tuple((o["source"], o["verdict"], o.get("detail", "")) for o in mine))
            found = decided.get(key)
            if found is None:
                state, evidence, error = _book_state(kind, classes, mine, versions.get(kind))
                found = decided[key] = (state, evidence, *(error or (None, None, None)))
            state, evidence, error, error_low, error_high = found
            if mine and before is not None:
                alone = (kind, classes, ())
                if alone not in decided:
                    state_alone, evidence_alone, error_alone = _book_state(kind, classes, (), versions.get(kind))
                    decided[alone] = (state_alone, evidence_alone, *(error_alone or (None, None, None)))
                before[(book_id, kind)] = decided[alone][0]
            rows.append(
                {
                    "book_id": book_id,
                    "author_qid": author_qid,
                    "kind": kind,
                    "state": state,
                    "evidence": evidence,
                    ERROR_COLUMNS[0]: error,
                    ERROR_COLUMNS[1]: error_low,
                    ERROR_COLUMNS[2]: error_high,
                }
            )
    return rows


def _book_state(
    kind: str, classes: Sequence[tuple[str, bool]], others: Sequence[Mapping], version: str | None
) -> tuple[str, str, tuple[float, ...] | None]:
    """(state, evidence, rounded error or None) of one book and kind (:func:`book_states`)."""
    state, evidence = decide(kind, title_evidence(kind, classes), others)
    error = None if state == UNSURE else book_error(kind, state, evidence, version)
    return state, evidence, error and tuple(round(x, 6) for x in error)


# -- stated errors (issue 28 item 7, issue 37 item 1) -----------------------------------------
# A second reader's error where measured: a review label is the truth; the book's record, read
# as evidence since issue 37 (tasks/book_evidence.record_verdict), decided 24 of 24 real works
# right (benchmarks/record_evidence.py: 19 + 4 dump works, 1 romance work; under 30, so its
# stated error is the upper end, 13.8%). The model tagger has no measurement here: no credit.
SOURCE_ERRORS: dict[str, tuple[int, int] | None] = {"record": (0, 24), "model": None}
NO_ERROR = (0.0, 0.0, 0.0)
ERROR_COLUMNS = ("error", "error_low", "error_high")  # book_entities' columns of book_error


def book_error(kind: str, state: str, evidence: str, version: str | None = None) -> tuple[float, float, float]:
    """(stated, low, high): the estimated probability that a decided book's ``state`` is wrong,
    from its ``evidence`` (``book_entities.evidence``), with a 95% interval. A review label that
    agrees: 0. Else the best-measured source that *agrees* with the state: the title rules (their
    worst class among the book's, calibrated on held-out titles: tasks/entities/calibration.py,
    tagger ``version`` of the kind, default its default) or the book's record; sources are
    correlated, so the best one, never a product. A source that disagrees lends nothing, and one
    that agrees never raises the error (issue 37: a plain title at 0.4% with an agreeing record
    is not the record's 6%). Nothing measured agrees: no credit (1). Unsure: 0 (in no key)."""
    from tasks.entities.calibration import class_rate, rate

    if state == UNSURE:
        return NO_ERROR
    parts = [p.split(":", 1) for p in evidence.split("|") if ":" in p]
    if any(src == "review" and verdict == state for src, verdict in parts):
        return NO_ERROR
    agreeing = [rate(SOURCE_ERRORS.get(src)) for src, verdict in parts if src in SOURCES and verdict == state]
    classes = [c for src, value in parts if src == "title" for c in value.split("+")]
    known = find_kind(kind)
    verdicts = {known.class_verdict(c) for c in classes} if known else set()
    if classes and verdicts == {state}:
        agreeing.append(max((class_rate(kind, version, c) for c in classes), key=lambda r: r[0]))
    measured = [r for r in agreeing if r[0] < 1.0]
    return min(measured, key=lambda r: r[0]) if measured else (1.0, 1.0, 1.0)


def state_error(row: Mapping, version: str | None = None) -> tuple[float, float, float]:
    """A ``book_entities`` row's (stated, low, high) error: its stored columns, or, for a release
    written before they existed, :func:`book_error` of its evidence."""
    if row.get("error") is not None:
        return row["error"], row.get("error_low", row["error"]), row.get("error_high", row["error"])
    return book_error(row["kind"], row["state"], row["evidence"], version)


Deciding = dict[tuple[str, str], list[tuple[str, str, tuple[float, float, float]]]]


def deciding_index(states: Iterable[Mapping]) -> Deciding:
    """(author, kind) -> its books as (book_id, state, (stated, low, high) error)."""
    books: Deciding = {}
    for s in states:
        books.setdefault((s["author_qid"], s["kind"]), []).append((s["book_id"], s["state"], state_error(s)))
    return books


def meets_other_criteria(criterion: Mapping, members: Sequence[Mapping]) -> Callable[[str], bool]:
    """Whether a book decides the entity ``criterion`` of the query ``members``: it meets every
    other criterion (every book does for a one-constraint query). The one definition of a
    *deciding book* (key quality, the bound, the review queue)."""
    allowed = other_criteria_books(criterion, members)
    return (lambda book_id: True) if allowed is None else allowed.__contains__


def other_criteria_books(criterion: Mapping, members: Sequence[Mapping]) -> set[str] | None:
    """The book ids meeting every criterion of ``members`` but ``criterion`` (one set
    intersection, not a test per book and criterion); None: there is no other criterion."""
    others = [o["mapped_book_ids"] for o in members if o is not criterion]
    return set(others[0]).intersection(*others[1:]) if others else None


def query_key_error(
    author_qid: str, members: Sequence[Mapping], books: Deciding
) -> tuple[tuple[float, float, float], list[tuple[Mapping, int, int]]]:
    """One query's chance that its key holds a wrong decided book, (stated, low, high) =
    1 - prod(1 - e) over the decided deciding books of every entity criterion, and per entity
    criterion (constraint row, unsure deciding books, deciding books). ``members``: the query's
    constraint rows (``entity_kind``, ``mapped_book_ids``). A criterion's deciding books are the
    author's books meeting every other criterion (all of them for a one-constraint query)."""
    ok0 = ok1 = ok2 = 1.0  # one product per bound, in the books' order (sampling asks it per drawn pair)
    per: list[tuple[Mapping, int, int]] = []
    for c in members:
        if not c.get("entity_kind"):
            continue
        deciding = books.get((author_qid, c["entity_kind"]), [])
        allowed = other_criteria_books(c, members) if deciding else None  # meets_other_criteria, as a set
        if allowed is not None:
            deciding = [b for b in deciding if b[0] in allowed]
        unsure = 0
        for _, state, (error, low, high) in deciding:
            if state == UNSURE:
                unsure += 1
            else:
                ok0 *= 1.0 - error
                ok1 *= 1.0 - low
                ok2 *= 1.0 - high
        per.append((c, unsure, len(deciding)))
    return (1.0 - ok0, 1.0 - ok1, 1.0 - ok2), per


def wrong_count_quantile(ps: Sequence[float], q: float) -> int:
    """The ``q``-quantile of the number of wrong keys among queries whose keys are wrong with
    chances ``ps`` (independently): exact (the Poisson-binomial) up to 600 queries, else the normal
    approximation, rounded outward."""
    if len(ps) <= 600:
        dist = [1.0]
        for p in ps:
            nxt = [0.0] * (len(dist) + 1)
            for k, mass in enumerate(dist):
                nxt[k] += mass * (1 - p)
                nxt[k + 1] += mass * p
            dist = nxt
        total = 0.0
        for k, mass in enumerate(dist):
            total += mass
            if total >= q - 1e-12:
                return k
        return len(ps)
    mean = sum(ps)
    sd = math.sqrt(sum(p * (1 - p) for p in ps))
    z = 1.959963984540054 if q > 0.5 else -1.959963984540054
    value = mean + z * sd
    return max(0, min(len(ps), math.ceil(value) if q > 0.5 else math.floor(value)))


def wrong_share_range(ps: Sequence[tuple[float, float, float]]) -> tuple[float | None, float | None]:
    """The 95% range of the share of these queries whose key turns out wrong, what a full labelling
    of the release would measure: each query's chance at the low (high) end of its books' error
    intervals, and the 2.5% (97.5%) quantile of how many of them are wrong."""
    if not ps:
        return None, None
    n = len(ps)
    low = wrong_count_quantile([p[1] for p in ps], 0.025) / n
    high = wrong_count_quantile([p[2] for p in ps], 0.975) / n
    return round(low, 4), round(high, 4)


def _mean(xs: Sequence[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def key_quality(queries: Iterable[Mapping], constraints: Iterable[Mapping], states: Iterable[Mapping]) -> dict:
    """Per entity constraint type (its label: human-name, no-human-name, city-name, ...), over a
    release's queries: how many, the share of their deciding books left out as unsure, the
    estimated share of queries whose key holds a wrong decided book (one-, two-constraint and
    all) with its 95% range (:func:`wrong_share_range`: what labelling every book of the release
    would measure, given the books' error intervals and which queries happen to be wrong), and
    the **ceiling**: the expected all-correct of a perfect model, which loses exactly the
    queries whose key is wrong (1 - wrong_key, same range reversed).

    Errors are each book's stated error (:func:`state_error`: calibrated on held-out titles).
    Rows: ``queries`` (query_id, author_qid, n_constraints, constraint_ids), ``constraints``
    (constraint_id, spec, entity_kind, mapped_book_ids), ``states`` (book_entities rows)."""
    return key_quality_of_parts([(queries, constraints, states)])


def key_quality_of_parts(parts: Iterable[tuple[Iterable[Mapping], Iterable[Mapping], Iterable[Mapping]]]) -> dict:
    """:func:`key_quality` over a release read in parts (kitab/release/key_quality.py reads a
    large one a slice of queries at a time): each part is (queries, their constraints, the
    states of their authors' books), the parts' queries in the release's query order, so the
    result is :func:`key_quality` of the whole."""
    from tasks.constraints.registry import spec_from_json

    acc: dict[str, dict] = {}
    for queries, constraints, states in parts:
        by_id = {c["constraint_id"]: c for c in constraints}
        books = deciding_index(states)
        for q in queries:
            members = [by_id[c] for c in q["constraint_ids"]]
            if not any(c.get("entity_kind") for c in members):
                continue
            wrong, per = query_key_error(q["author_qid"], members, books)
            for c, unsure, n in per:
                a = acc.setdefault(
                    spec_from_json(c["spec"]).label, {"kind": c["entity_kind"], "unsure": 0, "deciding": 0, "p": {}}
                )
                a["unsure"] += unsure
                a["deciding"] += n
                a["p"].setdefault(q["n_constraints"], []).append(wrong)
    out = {}
    for label in sorted(acc):
        a = acc[label]
        ps = [p for size in sorted(a["p"]) for p in a["p"][size]]
        one, two = a["p"].get(1, []), a["p"].get(2, [])
        wrong_key = [_mean([p[0] for p in ps]), *wrong_share_range(ps)]
        out[label] = {
            "kind": a["kind"],
            "queries": len(ps),
            "queries_one": len(one),
            "queries_two": len(two),
            "unsure_share": round(a["unsure"] / a["deciding"], 4) if a["deciding"] else None,
            "wrong_key": wrong_key[0],
            "wrong_key_low": wrong_key[1],
            "wrong_key_high": wrong_key[2],
            "wrong_key_one": _mean([p[0] for p in one]),
            "wrong_key_two": _mean([p[0] for p in two]),
            "ceiling": None if wrong_key[0] is None else round(1 - wrong_key[0], 4),
            "ceiling_low": None if wrong_key[2] is None else round(1 - wrong_key[2], 4),
            "ceiling_high": None if wrong_key[1] is None else round(1 - wrong_key[1], 4),
        }
    return out
