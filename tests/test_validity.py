"""The validity battery (issue 38, kitab/release/validity): the no-knowledge baselines as pure
functions, then the stored ``baselines`` table of a published release, its floor and ceiling in
the card and ``kitab report --output json``, and the data test that fails a release whose claim
pairs can be answered from their wording."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kitab.core.refs import duck
from kitab.core.schemas import STORED_RELEASE, table_spec
from kitab.core.views import DataTestFailure, create_views
from kitab.core.warehouse import Warehouse
from kitab.release.evaluation.metrics import QueryTruth, score_answer
from kitab.release.evaluation.parse import read_answer
from kitab.release.validity.battery import TRAIN_COLUMNS, battery, claim_rows, other_claims, query_rows, sample_authors
from kitab.release.validity.claims import (
    always_true,
    author_folds,
    claim_scores,
    claim_verdicts,
    coin,
    naive_bayes,
    naive_bayes_held_out,
    pair_scores,
    wilson,
    wording_rule,
)
from kitab.release.validity.floor import floors, key_error_ceiling
from kitab.release.validity.queries import longest_titles, median_key_size, none_everywhere, pattern_title
from tasks.constraints import Book
from tasks.constraints.kinds.ends_with import EndsWith
from tasks.constraints.kinds.starts_with import StartsWith
from tasks.constraints.kinds.word_count import WordCount
from tests.releases import dump_release

RELEASE = "2026.02.01-battery"


def _pair(author: str, n: int, true_text: str, false_text: str, kind: str = "attribute", first_true=True) -> list:
    sides = [(true_text, True), (false_text, False)] if first_true else [(false_text, False), (true_text, True)]
    return [
        {
            "query_id": f"{kind}:{author}:{n}#{pos}",
            "pair_id": f"{kind}:{author}:{n}",
            "position": pos,
            "author_qid": author,
            "claim_author_qid": None,
            "kind": kind,
            "constraint_type": "starts_with" if kind == "attribute" else None,
            "claim": text,
            "label": label,
        }
        for pos, (text, label) in enumerate(sides, 1)
    ]


def _claims(authors: int = 40, per: int = 3, tell: bool = False) -> list[dict]:
    """Balanced pairs; ``tell``: the true claim's wording gives it away ("indeed")."""
    out = []
    for a in range(authors):
        for n in range(per):
            word = "indeed " if tell else ""
            out += _pair(
                f"Q{a}",
                n,
                f"Author {a} {word}wrote book {n}.",
                f"Author {a} wrote book {n}.",
                first_true=(a + n) % 2 == 0,
            )
    return out


# -- the claim baselines ----------------------------------------------------------------------------------------


def test_wilson_interval_holds_the_estimate_and_narrows():
    low, high = wilson(25, 100)
    assert 0.17 < low < 0.18 and 0.34 < high < 0.35
    assert wilson(250, 1000)[1] - wilson(250, 1000)[0] < high - low
    assert wilson(0, 0) == (0.0, 1.0)


def test_always_true_scores_no_pair_and_the_coin_scores_near_chance():
    claims = _claims(authors=200)
    assert pair_scores(claims, always_true(claims))["overall"]["all"]["pair_accuracy"] == 0.0
    coin_score = pair_scores(claims, coin(claims))["overall"]["all"]
    assert coin_score["low"] <= 0.25 <= coin_score["high"]
    assert coin(claims) == coin(claims)  # seeded
    assert coin(claims, seed=1) != coin(claims)


def test_the_wording_rule_reads_the_old_give_aways():
    # the pairs issue 38 found: the negated entity claim always the true one
    claims = [
        c
        for a in range(10)
        for c in _pair(f"Q{a}", 0, f"A{a} wrote a book whose title doesn't contain a human name.",
                       f"A{a} wrote a book whose title contains a human name.")
    ]  # fmt: skip
    assert pair_scores(claims, wording_rule(claims))["overall"]["all"]["pair_accuracy"] == 1.0


def test_author_folds_split_by_author():
    claims = _claims()
    first, second = author_folds(claims)
    assert first and second
    assert not {c["author_qid"] for c in first} & {c["author_qid"] for c in second}
    assert len(first) + len(second) == len(claims)


def test_the_classifier_learns_wording_but_not_the_scored_authors():
    # a give-away in the wording ("indeed" on the true side) is learned from the other half
    telling = _claims(tell=True)
    assert pair_scores(telling, naive_bayes_held_out(telling))["overall"]["all"]["pair_accuracy"] == 1.0
    # a fact about an author (a word of the author's own marks each side) is learned only by a
    # classifier that saw that author's claims; held out, it is not
    facts = []
    for a in range(60):
        for n in range(3):
            facts += _pair(f"Q{a}", n, f"Author{a} wrote book{n} in yes{a}.", f"Author{a} wrote book{n} in no{a}.",
                           first_true=n % 2 == 0)  # fmt: skip
    trained_on_itself = naive_bayes(facts, [{**c, "author_qid": "X", "claim_author_qid": None} for c in facts])
    assert pair_scores(facts, trained_on_itself)["overall"]["all"]["pair_accuracy"] == 1.0
    held_out = pair_scores(facts, naive_bayes_held_out(facts))["overall"]["all"]["pair_accuracy"]
    assert held_out < 0.25


def test_the_classifier_trains_on_other_releases_when_there_are_any():
    claims = _claims(authors=10)
    other = [{**c, "author_qid": "R" + c["author_qid"], "release": "earlier"} for c in _claims(authors=10)]
    assert claim_verdicts(claims, other)["naive-bayes"][1] == "other releases: earlier"
    assert claim_verdicts(claims, [])["naive-bayes"][1].startswith("held-out half")
    # claims about the scored authors are never training
    assert claim_verdicts(claims, [{**c, "release": "same"} for c in claims])["naive-bayes"][1].startswith("held-out")


def test_the_classifier_reads_only_the_training_columns_publish_keeps():
    """Publishing reads other releases' claims as TRAIN_COLUMNS only (memory): the verdicts are
    those of the whole rows."""
    claims = _claims(authors=10, tell=True)
    other = [{**c, "author_qid": "R" + c["author_qid"], "release": "earlier"} for c in _claims(authors=12, tell=True)]
    # more claims that name a scored author, their labels the other way round: never training
    # (were they, the classifier would learn "indeed" is false)
    other += [
        {
            **c,
            "author_qid": "S" + c["author_qid"],
            "claim_author_qid": c["author_qid"],
            "label": not c["label"],
            "release": "earlier",
        }
        for c in _claims(authors=10, per=6, tell=True)
    ]
    kept = [{k: c[k] for k in TRAIN_COLUMNS} for c in other]
    assert claim_verdicts(claims, kept) == claim_verdicts(claims, other)
    assert pair_scores(claims, claim_verdicts(claims, kept)["naive-bayes"][0])["overall"]["all"]["pair_accuracy"] == 1.0


# -- the query baselines ----------------------------------------------------------------------------------------


def _truth(query_id: str, titles: list[str], mapped: list[str], specs=()) -> QueryTruth:
    books = tuple(Book(f"b{i}", (t,), 2000) for i, t in enumerate(titles))
    return QueryTruth(query_id, tuple(specs), books, tuple(mapped))


@pytest.mark.parametrize(
    "specs",
    [
        (StartsWith("m"), EndsWith("y"), WordCount(4)),
        (StartsWith("q"), WordCount(2)),
        (EndsWith("x"),),
        (WordCount(1), StartsWith("z")),
        (WordCount(6),),
    ],
)
def test_the_pattern_title_fits_the_lexical_criteria(specs):
    title = pattern_title(specs)
    book = Book("b0", (title,), 2000)
    assert all(spec.accepts(title, book) for spec in specs), title


def test_none_and_longest_titles_go_through_the_real_scoring():
    truths = {
        "q1": _truth("q1", ["Ab", "A much longer title", "Mid title"], ["A much longer title", "Mid title"]),
        "q2": _truth("q2", ["Ab", "Cd"], []),
    }
    assert median_key_size(truths) == 2
    answers = longest_titles(truths, 2)
    assert read_answer(answers["q1"]).titles == ["A much longer title", "Mid title"]
    scored = score_answer(truths["q1"], read_answer(answers["q1"]).titles)
    assert scored.completeness == 1.0
    empty = {q: read_answer(text) for q, text in none_everywhere(truths).items()}
    assert all(p.no_books and not p.titles for p in empty.values())
    assert score_answer(truths["q2"], [], no_books=True).all_correct
    assert not score_answer(truths["q1"], [], no_books=True).all_correct


def test_a_large_release_scores_a_seeded_sample_of_authors():
    counts = {f"Q{i}": 1 + i % 5 for i in range(100)}
    kept = sample_authors(counts, limit=30)
    assert kept == sample_authors(counts, limit=30) != sample_authors(counts, limit=30, seed=1)
    assert 30 <= sum(counts[a] for a in kept) < 30 + 5
    assert sample_authors(counts, limit=1000) is None


def test_the_floor_is_the_best_baseline_in_each_direction():
    rows = [
        {"task": "queries", "baseline": b, "metric": m, "dimension": "overall", "bin": "all", "value": v}
        for b, m, v in [
            ("none", "all_correct", 0.05),
            ("longest-titles", "all_correct", 0.01),
            ("none", "not_from_author", 0.2),
            ("longest-titles", "not_from_author", 0.0),
        ]
    ]
    best = floors(rows)["queries"]
    assert best["all_correct"]["baseline"] == "none"
    assert best["not_from_author"]["baseline"] == "longest-titles"


def test_the_key_error_ceiling_loses_the_expected_wrong_keys():
    quality = {"human-name": {"queries": 10, "wrong_key": 0.1, "wrong_key_low": 0.05, "wrong_key_high": 0.2}}
    assert key_error_ceiling(quality, 100) == {"value": 0.99, "low": 0.98, "high": 0.995}
    assert key_error_ceiling({}, 100) is None


# -- a published release ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    return dump_release(tmp_path_factory.mktemp("battery") / "warehouse", authors=10, seed=5, release=RELEASE)


def _kitab(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kitab.app.cli", *args], capture_output=True, text=True, timeout=300)


def test_the_battery_is_stored_and_checksummed_with_the_release(warehouse):
    wh = Warehouse(warehouse)
    checksums = json.loads(wh.ledger_row(RELEASE)["checksums"])
    assert "baselines" in checksums
    rows = wh.read_table("baselines", [RELEASE]).to_pylist()
    by = {(r["task"], r["baseline"], r["metric"]) for r in rows if r["dimension"] == "overall"}
    for name in ("always-true", "coin", "wording-rule", "naive-bayes"):
        assert ("claims", name, "pair_accuracy") in by
    for name in ("none", "longest-titles", "title-pattern"):
        for metric in ("all_correct", "completeness", "satisfied", "unsatisfied", "not_from_author"):
            assert ("queries", name, metric) in by
    always = next(r for r in rows if r["baseline"] == "always-true" and r["dimension"] == "overall")
    assert always["value"] == 0.0 and always["low"] == 0.0 and always["n"] > 0
    assert _kitab("verify", "--warehouse", str(warehouse)).returncode == 0
    # above the limit, a seeded sample of whole authors is scored, and the rows say so
    with duck() as con:
        create_views(con, wh.view_files([RELEASE]))
        sampled = query_rows(con, limit=40)
    overall = [r for r in sampled if r["dimension"] == "overall"]
    assert all("a seeded sample of" in r["trained_on"] for r in overall)
    # all-correct is a mean over every query scored; a rate over those that listed a title
    total = next(r["n"] for r in rows if r["metric"] == "all_correct" and r["dimension"] == "overall")
    assert all(40 <= r["n"] < total for r in overall if r["metric"] == "all_correct")
    none_rated = next(
        r for r in rows if (r["baseline"], r["metric"], r["dimension"]) == ("none", "satisfied", "overall")
    )
    assert none_rated["n"] < total  # "none" lists titles on no satisfiable query


def test_the_stored_claim_baselines_are_the_reference_forms(warehouse):
    """Publishing streams the claims through the baselines (claims.py: streamed_claim_scores);
    the stored rows are those of the list functions over the whole table."""
    wh = Warehouse(warehouse)
    claims = wh.read_table("claims", [RELEASE]).to_pylist()
    stored = wh.read_table("baselines", [RELEASE]).drop_columns(["release"]).to_pylist()

    def key(r):
        return (r["baseline"], r["dimension"], r["bin"])

    expected = sorted(claim_rows(claim_scores(claims, [])), key=key)
    assert expected and sorted((r for r in stored if r["task"] == "claims"), key=key) == expected


def test_other_releases_claims_are_read_a_batch_at_a_time_in_the_training_columns(warehouse):
    wh = Warehouse(warehouse)
    batches = list(other_claims(wh, [RELEASE], size=7))
    rows = [c for batch in batches for c in batch]
    assert len(batches) > 1 and all(len(batch) <= 7 for batch in batches)
    assert len(rows) == wh.read_table("claims", [RELEASE]).num_rows
    assert all(set(c) == set(TRAIN_COLUMNS) and c["release"] == RELEASE for c in rows)


def test_report_json_and_the_card_show_floor_and_ceiling(warehouse, tmp_path):
    out = _kitab("report", "--release", RELEASE, "--warehouse", str(warehouse), "--output", "json")
    assert out.returncode == 0, out.stderr
    validity = json.loads(out.stdout)["validity"]
    claims = validity["claims"]
    assert claims["floor"]["pair_accuracy"]["baseline"] in ("coin", "wording-rule", "naive-bayes")
    assert claims["ceiling"]["pair_accuracy"]["perfect"] == 1.0
    assert claims["chance"] == 0.25
    floor = validity["queries"]["floor"]
    assert set(floor) == {"all_correct", "completeness", "satisfied", "unsatisfied", "not_from_author"}
    assert floor["all_correct"]["low"] <= floor["all_correct"]["value"] <= floor["all_correct"]["high"]
    exported = _kitab("export", "--release", RELEASE, "--warehouse", str(warehouse), "--out", str(tmp_path / "hf"))
    assert exported.returncode == 0, exported.stderr
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "### Floor and ceiling (validity battery)" in card
    assert f"| claims | pair accuracy ↑ | {claims['floor']['pair_accuracy']['value']:.3f}" in card


def _republished(wh: Warehouse, release: str, claim_text) -> dict[str, list[dict]]:
    """``wh``'s release ``release`` as tables to publish again, its claims reworded by ``claim_text``."""
    tables = {}
    for table in json.loads(wh.ledger_row(RELEASE)["checksums"]):
        if table == "baselines":
            continue
        rows = wh.read_table(table, [RELEASE]).drop_columns(["release"]).to_pylist()
        stored = {c["name"] for c in table_spec(table)["columns"]}
        rows = [{**r, STORED_RELEASE: release} if STORED_RELEASE in stored else r for r in rows]
        if table == "claims":
            rows = [{**r, "claim": claim_text(r)} for r in rows]
        tables[table] = rows
    return tables


def test_a_release_whose_claims_are_guessable_fails_its_data_tests(warehouse, tmp_path):
    """The same release with its claims made guessable (the true side ends "Indeed."): the
    battery's classifier reads it, and the data test refuses the release; as published, it passes."""
    from tasks.publish import publish

    wh, target = Warehouse(warehouse), Warehouse(tmp_path / "guessable")
    run = {"seed": 5, "source": "dump", "snapshot_id": None, "n_authors_requested": 10, "requests_made": None}
    guessable = _republished(wh, "guessable", lambda r: r["claim"] + (" Indeed." if r["label"] else ""))
    with pytest.raises(DataTestFailure, match="baselines_claim_floor"):
        publish(target, "guessable", guessable, **run, derive=battery(lambda: []))
    assert target.committed_releases() == []
    publish(target, "honest", _republished(wh, "honest", lambda r: r["claim"]), **run, derive=battery(lambda: []))
    assert target.committed_releases() == ["honest"]
