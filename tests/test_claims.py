"""Claim pairs (issue 32, docs/claims.md) on a real release: the claims table, its independent
SQL check (and that the check catches damage), NoCha's scoring through kitab's commands, and the
claim-pairs config of the export. One release for the module (the dump source, like
tests/test_evaluate_release.py)."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kitab.app.cli import app
from kitab.core.warehouse import Warehouse
from kitab.release.claims import evaluate_claims, read_verdict
from tasks.claims import candidate_pairs, claims_from_rows, stratum_capacity
from tasks.constraints import Spec, registry, spec_to_json
from tests.releases import dump_release, run_sql_check

RELEASE = "2026.11.23-s13"
CHECK_SQL = Path(__file__).resolve().parents[1] / "sql" / "checks" / "claims.sql"
INPUTS = ("authors", "books", "title_variants", "book_entities", "constraints")
runner = CliRunner()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    return dump_release(tmp_path_factory.mktemp("claims") / "warehouse", authors=30, seed=13, release=RELEASE)


@pytest.fixture(scope="module")
def tables(warehouse) -> dict:
    with Warehouse(warehouse).connect(release=RELEASE) as con:
        return {t: con.sql(f"SELECT * FROM {t}").to_arrow_table() for t in (*INPUTS, "claims")}


def test_the_release_holds_balanced_minimal_pairs(tables):
    claims = tables["claims"].to_pylist()
    pairs: dict[str, list[dict]] = {}
    for c in claims:
        pairs.setdefault(c["pair_id"], []).append(c)
    assert len(pairs) >= 100
    assert all(sorted(c["label"] for c in p) == [False, True] for p in pairs.values())
    assert all(sorted(c["position"] for c in p) == [1, 2] for p in pairs.values())
    kinds = Counter(p[0]["kind"] for p in pairs.values())
    assert set(kinds) == {"attribute", "authorship", "year"} and len(set(kinds.values())) == 1, kinds
    types = Counter(p[0]["constraint_type"] for p in pairs.values() if p[0]["kind"] == "attribute")
    # even shares (within one) across types, except a type short of candidates, which gives all it has
    capacity = stratum_capacity(candidate_pairs(*(tables[n].to_pylist() for n in INPUTS), seed=13), 13)
    available = {t: n for (k, t), n in capacity.items() if k == "attribute"}
    top = max(types.values())
    assert len(types) >= 5 and all(n >= top - 1 or n == available[t] for t, n in types.items()), (types, available)
    first_true = sum(1 for p in pairs.values() for c in p if c["position"] == 1 and c["label"])
    assert 0.3 < first_true / len(pairs) < 0.7  # the order is a coin, not always true first
    # entity claims never rest on an unsure book: a false one needs every book of the author decided
    unsure = {(r["author_qid"], r["kind"]) for r in tables["book_entities"].to_pylist() if r["state"] == "unsure"}
    constraints = {r["constraint_id"]: r for r in tables["constraints"].to_pylist()}
    false_entity = [c for c in claims if c["kind"] == "attribute" and constraints[c["constraint_id"]]["entity_kind"]]
    for c in false_entity:
        if not c["label"]:
            assert (c["author_qid"], constraints[c["constraint_id"]]["entity_kind"]) not in unsure


def test_every_label_agrees_with_the_independent_sql_check_which_catches_damage(tables):
    assert run_sql_check(CHECK_SQL, tables) == []
    damaged = {
        "a label flipped": "UPDATE claims SET label = NOT label WHERE query_id = (SELECT min(query_id) FROM claims)",
        "a false year set to the true one": "UPDATE claims SET year = (SELECT first_year FROM books b "
        "WHERE b.book_id = claims.book_id) WHERE kind = 'year' AND NOT label",
        "false authorship named the true author": "UPDATE claims SET claim_author_qid = author_qid "
        "WHERE kind = 'authorship' AND NOT label",
        "years shifted": "UPDATE books SET first_year = first_year + 7",
        "an unsatisfiable constraint swapped for a satisfiable one": "UPDATE claims SET constraint_id = "
        "(SELECT c2.constraint_id FROM claims c2 WHERE c2.pair_id = claims.pair_id AND c2.label) "
        "WHERE kind = 'attribute' AND NOT label",
        "a pair's second claim dropped": "DELETE FROM claims WHERE position = 2 AND kind = 'year'",
        # the entity branch reads book_entities once per book: a true entity claim then rests on
        # unsure books only (undetermined), a false one on a book in the wanted state
        "every book's entity state unsure": "UPDATE book_entities SET state = 'unsure'",
        "every entity state flipped": "UPDATE book_entities SET state = CASE state WHEN 'yes' THEN 'no' "
        "WHEN 'no' THEN 'yes' ELSE state END",
    }
    for what, mutate in damaged.items():
        assert run_sql_check(CHECK_SQL, tables, mutate), what
    # a pair's two labels swapped: still one true and one false, positions 1 and 2, one slot
    # apart, so every pair rule holds; only the label rule sees it, on both claims and nothing else
    pair = min(c["pair_id"] for c in tables["claims"].to_pylist())
    swapped = run_sql_check(CHECK_SQL, tables, f"UPDATE claims SET label = NOT label WHERE pair_id = '{pair}'")
    in_pair = sorted(c["query_id"] for c in tables["claims"].to_pylist() if c["pair_id"] == pair)
    assert sorted(swapped) == [(q, "label disagrees") for q in in_pair]


def test_generation_is_a_seeded_pure_function(tables):
    rows = {t: tables[t].to_pylist() for t in INPUTS}
    first, stats = claims_from_rows(rows, seed=13)
    assert claims_from_rows(rows, seed=13)[0] == first
    assert claims_from_rows(rows, seed=14)[0] != first
    assert stats["pairs"] == len(first) // 2
    released = sorted(tables["claims"].to_pylist(), key=lambda r: r["query_id"])
    assert [r["query_id"] for r in released] == sorted(r["query_id"] for r in first)


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("True", True),
        ("false\nNo such book.", False),
        ("**Answer:** TRUE — she did.", True),
        ("The claim is false.", False),
        ("It could be true or false.", None),
        ("I cannot say.", None),
        ("", None),
    ],
)
def test_a_response_reads_as_true_false_or_no_answer(text, verdict):
    assert read_verdict(text) is verdict


def _answers(path: Path, claims: list[dict], verdict_of) -> Path:
    lines = []
    for c in claims:
        text = verdict_of(c)
        if text is not None:
            lines.append(json.dumps({"query_id": c["query_id"], "response": text}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_pair_accuracy_is_nochas_perfect_one_always_true_zero_random_a_quarter(warehouse, tables, tmp_path):
    claims = tables["claims"].to_pylist()
    rng = random.Random(5)
    coins = {c["query_id"]: rng.random() < 0.5 for c in claims}
    models = {
        "perfect": lambda c: f"{c['label']}\nBecause.",
        "always-true": lambda c: "True",
        "random": lambda c: str(coins[c["query_id"]]),
        "refusal": lambda c: "I cannot answer that.",
        "half-silent": lambda c: str(c["label"]) if c["position"] == 1 else None,  # right, but half unanswered
    }
    got = {}
    for name, verdict_of in models.items():
        result = evaluate_claims(warehouse, RELEASE, _answers(tmp_path / f"{name}.jsonl", claims, verdict_of))
        got[name] = result["pair_accuracy"][0]["overall"]
    assert got["perfect"]["pair_accuracy"]["value"] == 1.0 and got["perfect"]["claim_accuracy"]["value"] == 1.0
    assert got["always-true"]["pair_accuracy"]["value"] == 0.0
    assert got["always-true"]["claim_accuracy"]["value"] == pytest.approx(0.5)
    assert got["random"]["pair_accuracy"]["value"] == pytest.approx(0.25, abs=0.08)
    low, high = got["random"]["pair_accuracy"]["low"], got["random"]["pair_accuracy"]["high"]
    assert low < 0.25 < high
    assert got["refusal"]["pair_accuracy"]["value"] == 0.0 and got["refusal"]["claim_accuracy"]["value"] == 0.0
    assert got["half-silent"]["pair_accuracy"]["value"] == 0.0 and got["half-silent"]["answered"] == 0.5
    assert got["half-silent"]["claim_accuracy"]["value"] == 0.5

    # the leaderboard of kitab report --output json carries them, best first, with every dimension
    result = runner.invoke(app, ["report", "--release", RELEASE, "--output", "json", "--warehouse", str(warehouse)])
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)["pair_accuracy"]
    assert [e["model"] for e in entries][0] == "perfect"
    by = entries[0]["by"]
    assert {b["bin"] for b in by["kind"]} == {"attribute", "authorship", "year"}
    assert {b["bin"] for b in by["constraint_type"]} >= {"starts_with", "year_range"}
    assert all(b["pair_accuracy"]["value"] == 1.0 for d in by.values() for b in d)
    markdown = runner.invoke(app, ["report", "--release", RELEASE, "--warehouse", str(warehouse)])
    assert "## Claim pairs" in markdown.stdout


def test_prompts_answers_and_evaluate_through_the_command_line(warehouse, tables, tmp_path):
    result = runner.invoke(app, ["prompts", "--task", "claims", "--release", RELEASE, "--warehouse", str(warehouse)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    labels = {c["query_id"]: c["label"] for c in tables["claims"].to_pylist()}
    assert {row["query_id"] for row in lines} == set(labels)
    assert all("True or False" in row["prompt"] and row["template"] == "claims" for row in lines)
    answers = tmp_path / "cli.jsonl"
    answers.write_text(
        "".join(json.dumps({**row, "response": str(labels[row["query_id"]])}) + "\n" for row in lines),
        encoding="utf-8",
    )
    result = runner.invoke(
        app,
        ["evaluate", "--task", "claims", "--release", RELEASE, "--answers", str(answers), "--output", "json",
         "--warehouse", str(warehouse)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["pair_accuracy"][0]["overall"]["pair_accuracy"]["value"] == 1.0
    limited = runner.invoke(
        app, ["prompts", "--task", "claims", "--limit", "7", "--release", RELEASE, "--warehouse", str(warehouse)]
    )
    assert len(limited.stdout.splitlines()) == 14  # both claims of each of 7 pairs


@pytest.mark.parametrize("layout", ["hf", "kitab"])
def test_the_claim_pairs_config_loads_offline(warehouse, tables, tmp_path, layout, monkeypatch):
    import datasets

    from kitab.release.export import export_release

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = tmp_path / layout
    export_release(warehouse, RELEASE, out, layout=layout)
    loaded = datasets.load_dataset(str(out), "claim-pairs", split="test", cache_dir=str(tmp_path / "cache"))
    assert loaded.num_rows == tables["claims"].num_rows
    assert {"pair_id", "claim", "label", "kind", "position"} <= set(loaded.column_names)
    assert "claim-pairs" in (out / "README.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class _ContainsWord(Spec):
    """A constraint type that exists only in this test: "Book title contains the word farm."."""

    TYPE = "contains_word_test"
    KITAB_TYPE = "contains-word-test"
    ORDER = 9_001

    word: str

    @property
    def value(self) -> str:
        return self.word

    def satisfied_by(self, book, title: str) -> bool:
        return self.word in title.lower().split()

    def accepts(self, answer: str, book) -> bool:
        return self.satisfied_by(book, answer)

    def render(self) -> str:
        return f"Book title contains the word {self.word}."

    def clause(self) -> str:
        return f"whose title contains the word {self.word}"

    @classmethod
    def parse(cls, text: str):
        return None

    @classmethod
    def candidates(cls, books):
        yield from ()


def test_a_constraint_type_registered_elsewhere_makes_claim_pairs_through_its_spec(monkeypatch):
    """tasks/claims.py names no constraint type: a type it has never seen makes attribute pairs,
    true and false as its spec's claim_holds says (the default: its verifier over every title,
    variants included), worded by its spec's claim_clause."""
    monkeypatch.setitem(registry._TYPES, _ContainsWord.TYPE, _ContainsWord)
    authors = [{"qid": "Q1", "name": "Ann Author"}, {"qid": "Q2", "name": "Bob Writer"}]
    books = [
        {"book_id": "b1", "author_qid": "Q1", "canonical_title": "Animal Farm", "variant_titles": [], "first_year": 1945},
        {"book_id": "b2", "author_qid": "Q1", "canonical_title": "Burmese Days", "variant_titles": ["Jungle Days"],
         "first_year": 1934},
        {"book_id": "b3", "author_qid": "Q2", "canonical_title": "Emma", "variant_titles": [], "first_year": 1815},
    ]  # fmt: skip
    variants = [
        {"book_id": b["book_id"], "author_qid": b["author_qid"], "title": t, "match_key": t.lower(),
         "year": b["first_year"], "year_raw": b["first_year"]}
        for b in books for t in [b["canonical_title"], *b["variant_titles"]]
    ]  # fmt: skip

    def constraint(word: str, satisfiable: bool) -> dict:
        spec = _ContainsWord(word)
        return {"constraint_id": f"Q1:{spec.TYPE}:{word}", "author_qid": "Q1", "spec": spec_to_json(spec),
                "constraint_type": spec.TYPE, "entity_kind": None, "satisfiable": satisfiable}  # fmt: skip

    tables = {
        "authors": authors,
        "books": books,
        "title_variants": variants,
        "book_entities": [],
        # "jungle" holds through a variant title only; "ocean" and "river" through none
        "constraints": [constraint(w, w in ("farm", "jungle")) for w in ("farm", "jungle", "ocean", "river")],
    }
    pairs = candidate_pairs(*(tables[n] for n in INPUTS), seed=1)[("attribute", _ContainsWord.TYPE)]
    # one pair per true constraint, each with its own false one while there is one unused; the
    # pair's key names both constraints in sorted order, so it does not say which is true
    assert len(pairs) == 2 and all(p["pair_key"].count("|") == 1 for p in pairs)
    attribute = {(s["label"], s["claim"]) for p in pairs for s in p["sides"]}
    assert attribute == {
        (False, "Ann Author wrote a book whose title contains the word ocean."),
        (False, "Ann Author wrote a book whose title contains the word river."),
        (True, "Ann Author wrote a book whose title contains the word farm."),
        (True, "Ann Author wrote a book whose title contains the word jungle."),
    }


@settings(max_examples=200)
@given(st.lists(st.integers(0, 9), max_size=30), st.sets(st.integers(0, 40)), st.randoms(use_true_random=False))
def test_remaining_draws_as_the_filtered_list_does(items, excluded, rnd):
    """The authorship pair's other author: a seeded choice from ``Remaining`` is the same draw
    as from the list it stands for (so the claims table did not change when the per-book list,
    quadratic in the release's authors, was replaced)."""
    from tasks.claim_draw import Remaining

    excluded = {e for e in excluded if e < len(items)}
    listed = [x for i, x in enumerate(items) if i not in excluded]
    lazy = Remaining(items, excluded)
    assert len(lazy) == len(listed) and list(lazy) == listed
    seed = rnd.random()
    if listed:
        assert random.Random(seed).choice(lazy) == random.Random(seed).choice(listed)


def _undisputed_both_readings(titles, holds):
    """counting.undisputed's reference form: both readings of every title tested."""
    from tasks.constraints.counting import title_readings

    readings = [[holds(words) for words in title_readings(title)] for title in titles]
    if any(all(r) for r in readings):
        return True
    return None if any(any(r) for r in readings) else False


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(["The", "the", "A", "an", "Eye", "Bluest", "&", "Catch-22", "émile", "x"]), max_size=4
        ),
        max_size=5,
    ),
    st.sampled_from(["first_b", "first_t", "two_words", "one_word", "last_e"]),
)
def test_undisputed_testing_a_title_once_where_its_readings_agree_matches_both_readings(words, test):
    from tasks.constraints.counting import first_letter_in, last_letter_in, undisputed

    holds = {
        "first_b": lambda w: first_letter_in(w) == "b",
        "first_t": lambda w: first_letter_in(w) == "t",
        "two_words": lambda w: len(w) == 2,
        "one_word": lambda w: len(w) == 1,
        "last_e": lambda w: last_letter_in(w) == "e",
    }[test]
    titles = [" ".join(w) for w in words]
    assert undisputed(titles, holds) is _undisputed_both_readings(titles, holds)


def _read_batch(refs: dict, name: str, columns: list[str] | None = None):
    from kitab.core.refs import iter_rows

    return iter_rows(refs[name], columns)


def test_a_draw_batch_by_batch_with_spilled_sides_and_shared_keys_is_the_whole_release_draw(tables, tmp_path):
    """tasks/claim_draw.py: the release's material split into batches of authors (as the
    constrain step writes it), read in a shuffled batch order, the candidates' sides spilled to
    disk and only keys of several authors indexed, draws exactly the claims of the whole
    material held as rows."""
    from kitab.core.refs import iter_rows, write_rows
    from tasks.claim_draw import pairs_from_batches, rows_reader, shared_keys
    from tasks.claims import as_rows, claim_material, claims_from_batches, claims_from_material

    rows = {t: tables[t].to_pylist() for t in INPUTS}
    whole = claim_material(*(rows[t] for t in INPUTS))
    authors = sorted(a["qid"] for a in rows["authors"])
    groups = [set(authors[i::3]) for i in range(3)]
    refs = []
    for n, group in enumerate(groups):
        part = {t: [r for r in rows[t] if (r.get("author_qid") or r.get("qid")) in group] for t in INPUTS}
        material = claim_material(*(part[t] for t in INPUTS))
        refs.append({name: write_rows(name, got, tmp_path / f"{n}.{name}.parquet") for name, got in material.items()})
    refs = [refs[2], refs[0], refs[1]]  # batches come in any order
    batches = [partial(_read_batch, r) for r in refs]
    shared = shared_keys([r["claim_authors"].path for r in refs], [r["claim_books"].path for r in refs])
    owners: dict[str, set] = {}  # key -> the authors with it in their own titles or a book's
    for a in whole["claim_authors"]:
        for k in a["keys"]:
            owners.setdefault(k, set()).add(a["qid"])
    for b in whole["claim_books"]:
        for k in b["keys"]:
            owners.setdefault(k, set()).add(b["author_qid"])
    assert shared == {k for k, who in owners.items() if len(who) > 1}
    assert 0 < len(shared) < len(owners) / 2  # some keys shared (the filter matters), most not

    def authors_rows():
        return (a for r in refs for a in iter_rows(r["claim_authors"]))

    reference = claims_from_material(whole["claim_attributes"], whole["claim_authors"], whole["claim_books"], seed=13)
    columns, stats = claims_from_batches(authors_rows(), batches, seed=13, spill=tmp_path, shared=shared)
    assert (as_rows(columns), stats) == reference
    assert sorted(p.name for p in tmp_path.glob("*.pickle")) == ["00000.pickle", "00001.pickle", "00002.pickle"]
    # the candidates themselves: the same pairs in the same order, sides and all
    one = pairs_from_batches(whole["claim_authors"], [rows_reader({
        "claim_attributes": whole["claim_attributes"], "claim_books": whole["claim_books"]})], 13)  # fmt: skip
    many = pairs_from_batches(authors_rows(), batches, 13, shared=shared)
    assert list(one) == list(many)
    assert {s: [p.as_dict() for p in v] for s, v in one.items()} == {
        s: [p.as_dict() for p in v] for s, v in many.items()
    }


def test_a_constraint_type_with_no_true_claim_in_the_release_makes_no_pair_and_no_error():
    from tasks.claims import pairs_from_material

    def attribute(qid, ctype, n, label):
        value = json.dumps([n])
        return {"author_qid": qid, "constraint_type": ctype, "constraint_id": f"{qid}:{ctype}:{n}",
                "label": label, "value": value, "claim": f"claim {n}"}  # fmt: skip

    attributes = [attribute("Q1", "word_count", n, n == 2) for n in (1, 2, 3)]
    attributes += [attribute("Q1", "city_name", n, False) for n in (0, 1)]  # never true anywhere
    authors = [{"qid": "Q1", "name": "A", "birth_year": 1950, "keys": ["x"]}]
    books = [{"author_qid": "Q1", "book_id": "Q1:b", "title": "X", "first_year": 1990, "keys": ["x"], "years": []}]
    pairs = pairs_from_material(attributes, authors, books, seed=1)
    assert ("attribute", "word_count") in pairs and ("attribute", "city_name") not in pairs
