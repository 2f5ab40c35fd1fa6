"""Issue 38, item 3: scoring rules that hold at every edge.

- "Unsure is don't care" at both edges: an unsatisfiable query whose key leaves out an unsure
  book, and a two-constraint query where the evaluator's ±1 word (or leading stopword) accepts
  an unsure book the key's exact rule does not map; randomised over generated bibliographies.
- Natural "no books" answers are explicit empty answers, refusals are abstentions: two corpora
  kept apart (tests/data/no_books_answers.jsonl, tests/data/refusal_answers.jsonl).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kitab.release.evaluation.metrics import QueryTruth, score_answer
from kitab.release.evaluation.parse import read_answer
from tasks.constraints import Book, EntitySpec, parse_criteria, spec_types
from tasks.constraints.counting import normalise_title
from tasks.generate_constraints import generate_constraints
from tasks.sample_queries import SamplingRates, sample_queries

DATA = Path(__file__).parent / "data"


def rates(score):
    return (score.satisfied_rate, score.unsatisfied_rate, score.not_from_author_rate, score.completeness)


def dont_care_books(truth: QueryTruth) -> list[Book]:
    """Every book a model may list beside a perfect answer without changing a metric: the key's
    unsure books, and the books unsure for a criterion's kind that every other criterion's
    evaluator accepts by their title."""
    out = []
    for book in truth.books:
        open_ = [isinstance(s, EntitySpec) and book.unsure(s.KIND) for s in truth.specs]
        if book.book_id in truth.unsure or (
            any(open_) and all(o or s.accepts(book.title, book) for s, o in zip(truth.specs, open_))
        ):
            out.append(book)
    return out


# --- the two edges, by hand ---------------------------------------------------------------
CITY_BOOKS = (
    Book("b1", ("Paris Nights",), 1990, entities=(("city", True), ("human", False))),
    Book("b2", ("A Tower in Calcutta",), 1991, entities=(("city", None), ("human", False))),  # unsure, 3 words
    Book("b3", ("The Lima Road Home",), 1992, entities=(("city", True), ("human", False))),  # decided, 3 words
    Book("b4", ("Sea Wolves Howling",), 1993, entities=(("city", False), ("human", False))),  # decided no
)
TWO_WORDS = "Criterion 1: Book contains a city name in its title., Criterion 2: Book title contains only 2 words."


def test_an_unsure_book_the_evaluator_accepts_by_one_word_is_dont_care():
    """ "A Tower in Calcutta" (3 words) for a 2-word query: the key's exact count leaves it out
    of unsure_book_ids, the evaluator's ±1 accepts it; only its unsure city decides, so it is
    don't care, as a decided 3-word city title is a satisfied listing."""
    truth = QueryTruth("q", tuple(parse_criteria(TWO_WORDS)), CITY_BOOKS, ("Paris Nights",))
    perfect = score_answer(truth, ["Paris Nights"])
    with_it = score_answer(truth, ["Paris Nights", "A Tower in Calcutta"])
    assert with_it.all_correct and rates(with_it) == rates(perfect) == (1.0, 0.0, 0.0, 1.0)
    assert with_it.match_kinds == ["exact", "unsure"]
    assert score_answer(truth, ["Paris Nights", "The Lima Road Home"]).all_correct  # decided yes, ±1
    assert not score_answer(truth, ["Paris Nights", "Sea Wolves Howling"]).all_correct  # decided no
    # unsure but rejected on a decided criterion whatever its state: scored (unsatisfied)
    four = QueryTruth("q", tuple(parse_criteria(TWO_WORDS.replace("2 words", "1 word"))), CITY_BOOKS, ())
    assert score_answer(four, ["A Tower in Calcutta"]).n_unsatisfied == 1


def test_an_unsatisfiable_query_listing_only_its_unsure_books_is_all_correct():
    truth = QueryTruth(
        "q", tuple(parse_criteria(TWO_WORDS.replace("2 words", "4 words"))), CITY_BOOKS, (), unsure=frozenset({"b2"})
    )
    said_none = score_answer(truth, [], no_books=True)
    listed = score_answer(truth, ["A Tower in Calcutta"])
    assert said_none.all_correct and listed.all_correct and rates(listed) == rates(said_none)
    assert not score_answer(truth, []).all_correct  # a refusal is still not an answer
    assert not score_answer(truth, ["A Tower in Calcutta", "Sea Wolves Howling"]).all_correct


# --- randomised, over generated bibliographies ----------------------------------------------
WORDS = ["The", "A", "Clock", "Old", "Tower", "in", "Lima", "of", "Love", "Zorro", "Night", "Calcutta", "and"]
EVERYTHING = SamplingRates(
    one_constraint={t.TYPE: 1.0 for t in spec_types()},
    two_easy=1.0,
    two_one_book=1.0,
    two_two_books=1.0,
    two_more_books=1.0,
    one_unsatisfiable_share=0.5,
    two_unsatisfiable_share=0.5,
)
STATES = st.sampled_from([True, False, None])  # None: unsure


@st.composite
def bibliography(draw):
    authors = [{"qid": "Q1", "name": "Ann Author", "birth_year": 1900, "sitelinks": 7}]
    books, flags = [], {}
    for b in range(draw(st.integers(2, 8))):
        title = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5)))
        books.append(
            {
                "book_id": f"Q1-{b}",
                "author_qid": "Q1",
                "canonical_title": title,
                "first_year": draw(st.integers(1950, 1960)),
                "n_variants": 1,
                "variant_titles": [title],
            }
        )
        flags[f"Q1-{b}"] = {"human": draw(STATES), "city": draw(STATES)}
    assume(len({normalise_title(b["canonical_title"]) for b in books}) == len(books))  # dedup's job
    assume(all(normalise_title(b["canonical_title"]) for b in books))
    return authors, books, flags


def _truths(authors, books, flags):
    constraints = generate_constraints(authors, books, flags).tables["constraints"]
    queries = sample_queries(constraints, authors, books, seed=1, rates=EVERYTHING).tables["queries"]
    ordered = sorted(books, key=lambda b: (b["canonical_title"], b["book_id"]))
    metadata = tuple(
        Book(
            b["book_id"], (b["canonical_title"],), b["first_year"], entities=tuple(sorted(flags[b["book_id"]].items()))
        )
        for b in ordered
    )
    for q in queries:
        specs = tuple(parse_criteria(q["constraints"]))
        yield QueryTruth(q["query_id"], specs, metadata, tuple(q["mapped_titles"]), (), frozenset(q["unsure_book_ids"]))


@settings(max_examples=150, deadline=None)
@given(bibliography(), st.data())
def test_listing_dont_care_books_beside_a_perfect_answer_changes_no_metric(data, draw):
    """Both edges at once: every query of a generated bibliography with unsure states, its
    perfect answer (the key, or "no books" when empty) with any of its don't-care books listed
    anywhere in it, scores exactly as the perfect answer: all correct, the same rates."""
    for truth in _truths(*data):
        perfect = list(truth.mapped)
        base = score_answer(truth, perfect, no_books=not perfect)
        assert base.all_correct
        extra = [b.title for b in dont_care_books(truth)]
        if not extra:
            continue
        chosen = draw.draw(st.lists(st.sampled_from(extra), min_size=1, unique=True), label=truth.query_id)
        listed = draw.draw(st.permutations(perfect + chosen))
        # with them listed the answer says nothing else: "no books" is not claimed in words
        more = score_answer(truth, listed, no_books=False)
        assert more.all_correct and rates(more) == rates(base), (truth.query_id, listed)
        assert (more.n_clusters, more.n_satisfied, more.abstained) == (base.n_clusters, base.n_satisfied, False)


# --- natural "no books" answers and refusals, kept apart --------------------------------------
def _corpus(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


NO_BOOKS = _corpus("no_books_answers.jsonl")
REFUSALS = _corpus("refusal_answers.jsonl")


def test_the_corpora_are_big_enough_and_apart():
    assert len(NO_BOOKS) >= 40 and len(REFUSALS) >= 20
    assert not {c["response"] for c in NO_BOOKS} & {c["response"] for c in REFUSALS}
    assert len({c["id"] for c in NO_BOOKS + REFUSALS}) == len(NO_BOOKS) + len(REFUSALS)


@pytest.mark.parametrize("case", NO_BOOKS, ids=[c["id"] for c in NO_BOOKS])
def test_a_natural_no_books_answer_is_an_explicit_empty_list(case):
    parsed = read_answer(case["response"])
    assert (parsed.titles, parsed.no_books) == ([], True), case["response"]


@pytest.mark.parametrize("case", REFUSALS, ids=[c["id"] for c in REFUSALS])
def test_a_refusal_is_an_abstention(case):
    parsed = read_answer(case["response"])
    assert (parsed.titles, parsed.no_books) == ([], False), case["response"]


@pytest.mark.parametrize(
    "response, titles",
    [
        ("Nothing to Be Frightened Of", ["Nothing to Be Frightened Of"]),
        ("Zero K", ["Zero K"]),
        (
            "1. Nothing Found in the Attic (2001)\n2. No Books Today (2004)",
            ["Nothing Found in the Attic", "No Books Today"],
        ),
        ("- Sula — not a match for the letter\n- Jazz", ["Sula", "Jazz"]),
        ("Output:\n1. Reason: Published in 1939. Title: And Then There Were None", ["And Then There Were None"]),
        ("Output:\n1. Reason: Her debut. Title: None of the Above (2015)", ["None of the Above"]),
        ("1. Then There Were None\n2. I Found Nothing (2001)", ["Then There Were None", "I Found Nothing"]),
        ("Output:\n1. Reason: Her 1994 novel. Title: None to Accompany Me", ["None to Accompany Me"]),
        # SmolLM2's real reply (tests/data/smollm2_replies.jsonl): "not only" adds, it does not deny
        (
            '1. The book "The Nightingale" by Stephen J. Cannell is a classic example of his work, and '
            "it's not only the first book written by him but also one of his most famous works.",
            ["The Nightingale"],
        ),
    ],
)
def test_titles_that_sound_negative_stay_titles(response, titles):
    assert read_answer(response).titles == titles


# --- issue 38's "done when", on the demo's release --------------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The demo's authors (40, seed 42) from the bundled dump, with the key-error bound off so
    that both edges occur (with the bound the demo keeps 2 queries with unsure books, and no
    unsatisfiable one): ~20 s."""
    from kitab.core.params import DEFAULTS
    from tests.releases import dump_release

    root = tmp_path_factory.mktemp("scoring_edges") / "wh"
    return dump_release(root, authors=DEFAULTS.authors, seed=42, release="demo", max_key_error=1.0)


def _evaluate(warehouse: Path, path: Path, answers: dict[str, str]) -> float:
    from kitab.release.evaluation.run import evaluate_release

    path.write_text("".join(json.dumps({"query_id": q, "response": r}) + "\n" for q, r in answers.items()))
    result = evaluate_release(warehouse, "demo", path, model=path.stem)
    assert result["answered"] == result["queries"] == len(answers)
    (overall,) = [a for a in result["aggregates"] if a["dimension"] == "all" and a["n_constraints"] is None]
    return overall["all_correct"]


def _kitab_text(titles) -> str:
    lines = "".join(f"{n}. Reason: It satisfies the criteria. Title: {t}\n" for n, t in enumerate(titles, 1))
    return f"Let me think step by step.\n\nOutput:\n{lines}"


def test_perfect_answers_with_every_dont_care_book_and_natural_no_books_score_all_correct(demo, tmp_path):
    from kitab.core.warehouse import Warehouse
    from kitab.release.evaluation.run import load_truths

    with Warehouse(demo).connect(release="demo") as con:
        truths = {q: info.truth for q, info in load_truths(con).items()}
    extra = {q: [b.title for b in dont_care_books(t)] for q, t in truths.items()}
    unsatisfiable = [q for q, t in truths.items() if not t.mapped]
    # both edges occur: unsatisfiable queries with unsure books, books don't care by ±1 alone
    assert sum(1 for q in unsatisfiable if extra[q]) >= 2
    assert sum(len(extra[q]) - len(truths[q].unsure) for q in truths) >= 2
    with_unsure = {q: _kitab_text([*t.mapped, *extra[q]]) for q, t in truths.items()}
    assert _evaluate(demo, tmp_path / "perfect-and-unsure.jsonl", with_unsure) == 1.0
    phrasings = [c["response"] for c in NO_BOOKS]
    natural = {q: _kitab_text(t.mapped) for q, t in truths.items()}
    natural.update({q: phrasings[n % len(phrasings)] for n, q in enumerate(unsatisfiable)})
    assert len(unsatisfiable) >= len(phrasings)  # every phrasing is used at least once
    assert _evaluate(demo, tmp_path / "perfect-natural-none.jsonl", natural) == 1.0
