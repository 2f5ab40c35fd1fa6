"""``kitab evaluate``: score a model's answers to a release's queries and keep the scores.

The ground truth is read from the release exactly as it is exported (the KITAB views'
``mapped_books`` and ``raw_books`` strings, ``constraints`` parsed back into specs) plus the
book metadata of the export (each book's first year and entity flags). Scores go to the
warehouse table ``evaluations`` (schemas/evaluations.json), in the release's partition: one
file per release holding every evaluation of it, rewritten atomically (temp file + rename,
under the warehouse's author lock); evaluating the same answers file again with the same
model replaces its rows. The view ``evaluation_summary`` aggregates them.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from functools import cached_property, lru_cache
from pathlib import Path

from kitab.core.errors import KitabError
from kitab.core.warehouse import Warehouse
from kitab.release.bins import kappa_bin_label, popularity_bin_label
from kitab.release.evaluation.answers import Answer, answers_model, read_answers
from kitab.release.evaluation.metrics import QueryScore, QueryTruth, score_answer, unanswered_score
from kitab.release.evaluation.parse import ParsedAnswer, is_reasoning_only, read_answer
from kitab.release.evaluation.population import Population, choose_population, file_limit
from kitab.release.leaderboard import leaderboard
from tasks.constraints import Book, entity_kinds, parse_criteria
from tasks.generate_constraints import state_flags

TABLE = "evaluations"


@dataclass(frozen=True)
class QueryInfo:
    """A query's truth and what the scores are grouped by."""

    truth: QueryTruth
    author_qid: str
    kitab_key: tuple[str, str, str]  # (Author, constraint_type, constraints)
    n_constraints: int
    constraint_type: str
    n_mapped: int
    n_books: int
    constrainedness: float
    sitelinks: int

    # what each of the query's rows repeats (a row per answer sample, a baseline's row per query)
    @cached_property
    def type_labels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(spec.label for spec in self.truth.specs))

    @cached_property
    def kappa_bin(self) -> str:
        return kappa_bin_label(self.n_mapped, self.n_books)

    @cached_property
    def popularity_bin(self) -> str:
        return popularity_bin_label(self.sitelinks)


def load_truths(con) -> dict[str, QueryInfo]:
    """Every query of the release ``con`` is scoped to, from its KITAB rows and book metadata."""
    books: dict[str, list[Book]] = defaultdict(list)  # per author, shared by the author's queries
    rows = con.execute(
        "SELECT author_qid, book_id, canonical_title, first_year FROM books "
        "ORDER BY author_qid, canonical_title, book_id"
    ).fetchall()
    # every entity kind a constraint type reads, from the release's own states (as generation
    # did): yes / no, None for unsure (book_entities)
    flags = state_flags(
        [{"book_id": r[1]} for r in rows],
        (
            {"book_id": b, "kind": k, "state": s}
            for b, k, s in con.execute("SELECT book_id, kind, state FROM book_entities").fetchall()
        ),
        kinds=entity_kinds(),
    )
    for qid, book_id, title, year in rows:
        books[qid].append(Book(book_id, (title,), year, entities=tuple(sorted(flags[book_id].items()))))
    shared = {qid: tuple(author_books) for qid, author_books in books.items()}
    # An author's all_books and raw_books are the same on each of its queries: read once per
    # author as lists (sql/marts/kitab_author_books.sql), not stringified per query and parsed
    # back (20,000 queries' copies held ~0.3 GB of DuckDB's memory at 10,000 authors); all_books
    # checked against the author's books. Criteria and mapped texts parsed once per distinct text.
    raw_books: dict[str, tuple[str, ...]] = {}
    for qid, all_books, raw in con.execute(
        "SELECT author_qid, all_books, raw_books FROM kitab_author_books"
    ).fetchall():
        entries, author_books = all_books or [], shared.get(qid, ())
        if (
            qid in raw_books
            or len(entries) != len(author_books)
            or not all(entry.startswith(book.title) for entry, book in zip(entries, author_books))
        ):
            raise KitabError(
                f"author {qid}: all_books does not list the author's books in order "
                "(the release's views and tables disagree)"
            )
        raw_books[qid] = tuple(raw or ())
    lists: dict[str, tuple[str, ...]] = {}
    criteria: dict[str, tuple] = {}

    def mapped_list(text: str) -> tuple[str, ...]:
        found = lists.get(text)
        if found is None:
            found = lists[text] = read_py_list(text)
        return found

    def specs(text: str) -> tuple:
        found = criteria.get(text)
        if found is None:
            found = criteria[text] = tuple(parse_criteria(text))
        return found

    out = {}
    for (
        query_id,
        qid,
        author,
        ctype,
        constraints,
        mapped,
        unsure,
        n_constraints,
        n_mapped,
        n_books,
        kappa,
        sitelinks,
    ) in _fetched(
        con.execute(
            'SELECT k.query_id, q.author_qid, k."Author", k.constraint_type, k.constraints, k.mapped_books, '
            "q.unsure_book_ids, q.n_constraints, q.n_mapped, q.n_books, q.constrainedness, a.sitelinks "
            "FROM kitab_book_constraints k JOIN queries q ON q.query_id = k.query_id "
            "JOIN authors a ON a.qid = q.author_qid ORDER BY k.query_id"
        )
    ):
        author_books = shared.get(qid, ())
        truth = QueryTruth(
            query_id,
            specs(constraints),
            author_books,
            mapped_list(mapped),
            raw_books[qid],
            frozenset(unsure or ()),
        )
        out[query_id] = QueryInfo(
            truth, qid, (author, ctype, constraints), n_constraints, ctype, n_mapped, n_books, kappa, sitelinks
        )
    return out


def _fetched(cursor, size: int = 2048) -> Iterator[tuple]:
    """A result's rows, fetched ``size`` at a time (not every row's tuple held at once)."""
    while batch := cursor.fetchmany(size):
        yield from batch


# kitab_py_list's text (sql/marts/kitab_book_constraints.sql) when no item needed an escape:
# each item quoted by a quote it does not hold, so the item's text is the string
_ITEM = r"'[^'\\\n\r\x00]*'|\"[^\"\\\n\r\x00]*\""
_PLAIN_LIST = re.compile(rf"\[(?:(?:{_ITEM})(?:, (?:{_ITEM}))*)?\]")
_PLAIN_ITEM = re.compile(r"'([^']*)'|\"([^\"]*)\"")


def read_py_list(text: str) -> tuple[str, ...]:
    """A KITAB view's stringified list of strings read back: what ``ast.literal_eval`` returns
    (KITAB's consumers read it so), without compiling it when no item holds an escape."""
    if _PLAIN_LIST.fullmatch(text):
        return tuple(a or b for a, b in _PLAIN_ITEM.findall(text))
    return tuple(ast.literal_eval(text))


def match_answers(answers: Iterable[Answer], queries: dict[str, QueryInfo], path: Path) -> list[tuple[Answer, str]]:
    """(answer, query id) for every answer; an answer to no query of the release, or a second
    answer to one (query, sample), is an error naming the lines."""
    by_key: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for query_id, info in queries.items():
        by_key[info.kitab_key].append(query_id)
    matched, unknown, ambiguous, seen = [], [], [], {}
    for answer in answers:
        if answer.query_id is not None:
            ids = [answer.query_id] if answer.query_id in queries else []
        else:
            ids = by_key.get(answer.kitab_key, [])
        if not ids:
            unknown.append(answer)
        elif len(ids) > 1:
            ambiguous.append(answer)
        elif (ids[0], answer.sample) in seen:
            raise KitabError(
                f"{path}: lines {seen[ids[0], answer.sample]} and {answer.line} both answer query {ids[0]}"
                + (f" (sample {answer.sample})" if answer.sample else "")
            )
        else:
            seen[ids[0], answer.sample] = answer.line
            matched.append((answer, ids[0]))
    if unknown:
        shown = ", ".join(f"line {a.line} ({a.query_id or a.kitab_key[0]})" for a in unknown[:5])
        raise KitabError(
            f"{path}: {len(unknown)} answer(s) match no query of this release: {shown}"
            f"{' …' if len(unknown) > 5 else ''}"
        )
    if ambiguous:
        raise KitabError(
            f"{path}: line {ambiguous[0].line} matches several queries by Author, constraint_type "
            "and constraints; add a query_id column"
        )
    return matched


def score_rows(
    matched: list[tuple[Answer, str]],
    queries: dict[str, QueryInfo],
    *,
    model: str,
    sha256: str,
    answers_file: str,
    evaluated_at: datetime,
    queries_sha256: str | None,
    population: str | None = None,
) -> Iterator[dict]:
    """One ``evaluations`` row per query of ``queries`` (the population scored) and sample, in key order: scored from
    its answer, or, with no answer in the file, ``answered = false`` and wrong (never left out).
    A generator that lets go of each answer once scored (``matched`` is emptied): the rows go
    to disk as they come (:func:`write_evaluation`), so memory holds the answers, not the rows."""
    answers = {(query_id, answer.sample): answer for answer, query_id in matched}
    matched.clear()
    samples = sorted({sample for _, sample in answers}) or [0]
    head = {
        "model": model,
        "answers_sha256": sha256,
        "answers_file": answers_file,
        "evaluated_at": evaluated_at,
        "queries_sha256": queries_sha256,
        "population": population,
    }
    for query_id in sorted(queries):
        for sample in samples:
            yield _score_row(head, queries[query_id], query_id, sample, answers.pop((query_id, sample), None))


def _score_row(head: dict, info: QueryInfo, query_id: str, sample: int, answer: Answer | None) -> dict:
    unread = None
    if answer is None:
        score = unanswered_score(satisfiable=info.n_mapped > 0)
    else:
        parsed = _read(answer.response)
        score = score_answer(info.truth, parsed.titles, no_books=parsed.no_books)
        unread = parsed.unread
    finish_reason = answer.finish_reason if answer is not None else None
    return {
        **head,
        "query_id": query_id,
        "sample": sample,
        "author_qid": info.author_qid,
        "n_constraints": info.n_constraints,
        "constraint_type": info.constraint_type,
        "type_labels": list(info.type_labels),
        "constrainedness": info.constrainedness,
        "kappa_bin": info.kappa_bin,
        "sitelinks": info.sitelinks,
        "popularity_bin": info.popularity_bin,
        "n_mapped": info.n_mapped,
        "n_books": info.n_books,
        "answered": answer is not None,
        "finish_reason": finish_reason,
        "cut": finish_reason == "length",
        "unread_lines": unread,
        # the transcript, so a person can see why an answer scored as it did (kitab report --html)
        "response": answer.response if answer is not None else None,
        "reasoning": answer.reasoning if answer is not None else None,
        # (a shallow copy: asdict would deep-copy every title list again)
        **{name: getattr(score, name) for name in _SCORE_FIELDS},
    }


_SCORE_FIELDS = tuple(f.name for f in fields(QueryScore))


@lru_cache(maxsize=256)
def _read(response: str | None) -> ParsedAnswer:
    """:func:`read_answer`, a recent response read once: the baselines (kitab/release/validity)
    give an author's queries the same few answers, and a model repeats "No books found."."""
    return read_answer(response)


# what an evaluations file written before a column existed means by its absence
DEFAULTS = {"answered": True, "sample": 0, "cut": False, "abstained": False, "population": None, "unread_lines": None}


def write_evaluation(wh: Warehouse, release: str, rows: Iterable[dict], *, model: str, answers_sha256: str) -> int:
    """Add ``rows`` (one evaluation of ``model`` on the answers file ``answers_sha256``, in key
    order) to the release's evaluations, replacing an earlier run of the same (model, answers
    file): atomic, in bounded memory, under the warehouse's author lock (Warehouse.store_annex).
    Returns how many rows."""
    return wh.store_annex(TABLE, release, rows, {"model": model, "answers_sha256": answers_sha256}, DEFAULTS)


def evaluate_release(
    warehouse: Path,
    release: str,
    answers_path: Path,
    *,
    model: str | None = None,
    response_column: str | None = None,
    over: str | None = None,
) -> dict:
    """Score ``answers_path`` against release ``release`` and store the scores (every query of
    the population, evaluation/population.py: the release, the file's --limit sample, or with
    ``over="answered"`` the queries it answers; one without an answer is scored wrong). Returns a
    summary: model, sha256, the population, queries answered / in it and coverage, this
    evaluation's leaderboard entry (kitab/release/leaderboard.py) and its rows of
    ``evaluation_summary``."""
    wh = Warehouse(Path(warehouse))
    wh.require_release(release)
    answers_path = Path(answers_path)
    answers, sha256 = read_answers(answers_path, response_column=response_column)
    # --model, else the name the lines give (kitab answer writes it), else the file's name;
    # lines naming two models are refused even with --model (the file mixes two evaluations)
    named = answers_model(answers, answers_path)
    model = model or named or answers_path.stem
    with wh.connect(release=release) as con:
        queries = load_truths(con)
        ledger = con.execute("SELECT checksums FROM releases").fetchall()
    queries_sha256 = json.loads(ledger[0][0]).get("queries") if ledger else None
    matched = match_answers(answers, queries, answers_path)
    limit = file_limit(((a.limit, a.limit_seed) for a in answers), answers_path)
    del answers  # the matched answers hold them; score_rows lets go of each once scored
    population = _population(wh, release, over, limit, queries, matched, answers_path)
    total = len(queries)
    if population.ids is not None:
        queries = {q: info for q, info in queries.items() if q in population.ids}
    counts = Counter()

    def counted(rows: Iterator[dict]) -> Iterator[dict]:
        for r in rows:
            counts.update(rows=1, answered=r["answered"], abstained=r["abstained"], cut=r["cut"])
            counts.update(parse_failures=bool(r["unread_lines"]), unread_lines=r["unread_lines"] or 0)
            # answers that were all reasoning (scored as abstentions): derived, so files without the flag count too
            counts.update(reasoning_only=r["answered"] and is_reasoning_only(r["response"], r["reasoning"]))
            yield r

    rows = score_rows(
        matched,
        queries,
        model=model,
        sha256=sha256,
        answers_file=answers_path.name,
        evaluated_at=datetime.now(UTC).replace(microsecond=0),
        queries_sha256=queries_sha256,
        population=population.note,
    )
    write_evaluation(wh, release, counted(rows), model=model, answers_sha256=sha256)
    with wh.connect(release=release) as con:
        summary = con.execute(
            "SELECT * FROM evaluation_summary WHERE model = ? AND answers_sha256 = ? "
            "ORDER BY n_constraints NULLS FIRST, dimension, bin_order, bin",
            [model, sha256],
        )
        columns = [d[0] for d in summary.description]
        aggregates = [dict(zip(columns, row)) for row in summary.fetchall()]
        board = leaderboard(con, release, model=model, answers_sha256=sha256)
    answered, n = counts["answered"], counts["rows"]
    return {
        # over the queries answered (an unanswered query is in coverage, not here)
        "abstention_rate": counts["abstained"] / answered if answered else None,
        "cut_rate": counts["cut"] / answered if answered else None,
        "reasoning_only": counts["reasoning_only"],
        "release": release,
        "model": model,
        "answers_sha256": sha256,
        "answered": answered,
        "queries": len(queries),  # the population's: what coverage divides by
        "release_queries": total,
        "population": population.as_json(len(queries)),
        "coverage": answered / n if n else None,
        # answers with a list item or prose line no title could be read from (a bare sentence)
        "parse_failures": counts["parse_failures"],
        "unread_lines": counts["unread_lines"],
        "leaderboard": board,
        "aggregates": aggregates,
    }


def _population(wh: Warehouse, release: str, over, limit, queries: dict, matched, path: Path) -> Population:
    """The population the evaluation is scored over; an answer outside the file's own --limit
    sample is an error naming it (the file is not the trial it says it is)."""
    from kitab.release.prompts import sampled_query_ids

    def sample(n: int, seed: int) -> set[str]:
        with wh.connect(release=release) as con:
            return sampled_query_ids(con, n, seed)

    answered = {query_id for _, query_id in matched}
    population = choose_population(over, limit, total=len(queries), answered=answered, sample=sample, noun="queries")
    if population.over == "sample":
        outside = sorted(answered - population.ids)
        if outside:
            raise KitabError(
                f"{path}: {len(outside)} answer(s) outside the file's --limit {limit[0]} sample (seed {limit[1]}), "
                f"e.g. {outside[0]}: score it with --over answered or --over release"
            )
    return population
