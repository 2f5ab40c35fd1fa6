"""Second-reader evidence (tasks/book_evidence.py): records, review labels, the model tagger."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tasks.book_evidence import (
    LexiconGazetteer,
    model_evidence,
    person_names,
    record_evidence,
    review_evidence,
    review_key,
    review_labels,
    second_reader_evidence,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gazetteer():
    return LexiconGazetteer()


def people(*names):
    return [{"field": "subject_people", "name": n} for n in names]


def places(*names):
    return [{"field": "subject_places", "name": n} for n in names]


def test_person_names_drop_dates_ranks_and_turn_round():
    assert person_names("Henry Moore (1898-1986)") == [("henry", "moore")]
    assert person_names("Lincoln, Abraham, 1809-1865") == [("abraham", "lincoln")]
    assert person_names("Han Wudi Emperor of China (156-87 B.C)") == [("han", "wudi")]
    assert person_names("Jean Boissonade; Marinus") == [("jean", "boissonade"), ("marinus",)]
    assert person_names("(1900-)") == []


def test_record_names_a_person_in_the_title(gazetteer):
    ev = record_evidence("Du Fu shi xue yin lun", [], people("Fu Du (712-770)"), gazetteer)
    assert ev["human"]["verdict"] == "yes" and ev["human"]["source"] == "record"
    ev = record_evidence(
        "La obra narrativa de Cervantes", [], people("Miguel de Cervantes Saavedra (1547-1616)"), gazetteer
    )
    assert ev["human"]["verdict"] == "yes"
    # a title variant counts as the title
    ev = record_evidence("Untitled", ["Letters to Lincoln"], people("Lincoln, Abraham"), gazetteer)
    assert ev["human"]["verdict"] == "yes"


def test_record_silence_is_no_only_without_unexplained_capitals(gazetteer):
    assert record_evidence("It Ends With Us", [], people("Lily", "Ryle"), gazetteer)["human"]["verdict"] == "no"
    # "Platon" is no English word and no name of the record: the record's silence decides nothing
    assert "human" not in record_evidence("Aisthesis vor Platon", [], people("Thucydides", "Lysias"), gazetteer)


def test_places_decide_city_only_at_city_level(gazetteer):
    assert (
        record_evidence("Cincinnati sonst und jetzt", [], places("Cincinnati (Ohio)"), gazetteer)["city"]["verdict"]
        == "yes"
    )
    assert record_evidence("It Ends With Us", [], places("Boston (Mass.)"), gazetteer)["city"]["verdict"] == "no"
    # a country alone says nothing about a city in the title
    assert "city" not in record_evidence("Nanjing zheng fu di fu wang", [], places("China"), gazetteer)
    # an island in the title is no city
    assert "city" not in record_evidence("Betrayal in Bali", [], places("Indonesia", "Bali"), gazetteer)
    # a district of a city is no city
    assert "city" not in record_evidence(
        "Feira de São Cristóvão", [], places("São Cristóvão (Rio de Janeiro, Brazil)"), gazetteer
    )


def test_no_record_no_evidence(gazetteer):
    assert record_evidence("London Fields", [], [], gazetteer) == {}


def test_model_answers_become_evidence():
    ev = model_evidence({"human": ["Emma"], "city": []}, "human_model_v1")
    assert ev["human"] == {"source": "model", "verdict": "yes", "detail": "human_model_v1: 'Emma'"}
    assert ev["city"]["verdict"] == "no" and ev["city"]["source"] == "model"
    assert model_evidence({}, "v") == {}


def test_review_labels_keyed_by_folded_title_and_author():
    labels = review_labels(
        [
            {"title": "Émile", "author": "J.-J. Rousseau", "kind": "human", "label": "no"},
            {"title": "Émile", "author": "J.-J. Rousseau", "kind": "human", "label": "yes"},  # later wins
        ]
    )
    assert review_key("  emile ", "J J Rousseau") in labels
    ev = review_evidence(labels, "EMILE", "j. j. rousseau")
    assert ev == {"human": {"source": "review", "verdict": "yes", "detail": "labelled by a reviewer"}}
    assert review_evidence(labels, "Emile", "someone else") == {}


def test_second_reader_evidence_per_book_and_kind(gazetteer):
    books = [
        {
            "book_id": "b1",
            "title": "Sculptures by Henry Moore",
            "author": "A",
            "variants": [],
            "work_keys": ["/works/W1"],
        },
        {"book_id": "b2", "title": "Night Train", "author": "A", "variants": [], "work_keys": ["/works/W2"]},
    ]
    records = [{"work_key": "/works/W1", "field": "subject_people", "name": "Henry Moore (1898-1986)"}]
    labels = review_labels([{"title": "Night Train", "author": "A", "kind": "city", "label": "no"}])
    out = second_reader_evidence(
        books, records, labels, {"b2": {"human": [], "city": ["Paris"]}}, "city_model_v1", gazetteer
    )
    assert [e["verdict"] for e in out[("b1", "human")]] == ["yes"]
    assert [(e["source"], e["verdict"]) for e in out[("b2", "city")]] == [("model", "yes"), ("review", "no")]
    assert [(e["source"], e["verdict"]) for e in out[("b2", "human")]] == [("model", "no")]
    assert ("b1", "city") not in out
    assert second_reader_evidence(books) == {}


def test_record_evidence_is_right_on_the_real_records():
    """The benchmark's gate (>= 97% right per set and kind) on the hand-labelled real records."""
    spec = importlib.util.spec_from_file_location("record_evidence_bench", ROOT / "benchmarks" / "record_evidence.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    import sys

    argv, sys.argv = sys.argv, ["record_evidence.py"]
    try:
        assert bench.main() == 0
    finally:
        sys.argv = argv
