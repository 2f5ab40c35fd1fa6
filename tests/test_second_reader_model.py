"""The model tagger as the second reader (issue 28): KITAB_SECOND_READER=model asks the
configured endpoint (here the loopback chat server, kitab/simulate/chat.py) about each book's
titles, and its answer goes through the constrain step's functions (book_spans,
second_reader_evidence, book_states -> decide) into the documented states
(docs/tagging.md, "States and evidence")."""

from __future__ import annotations

import json
import re

import pytest

from kitab.simulate.chat import ChatServer
from tasks.entity_states import NO, UNSURE, YES, book_states, second_reader_evidence
from tasks.taggers import model as model_module
from tasks.taggers.model import ModelTaggerError, book_spans, second_reader_session, second_reader_version

PEOPLE = ("Pnin", "Emma", "Sea")  # the model's reading: "Sea" is its mistake
CITIES = ("Paris",)


def tagging_model(prompt: str) -> str:
    """Answers the tagger's numbered titles with the listed names each contains."""
    entries = []
    for line in prompt.splitlines():
        n, title = line.split(". ", 1)
        found = {
            kind: [w for w in names if re.search(rf"\b{w}\b", title)]
            for kind, names in (("human", PEOPLE), ("city", CITIES))
        }
        entries.append({"n": int(n), **found})
    return json.dumps({"titles": entries})


@pytest.fixture
def model(monkeypatch, tmp_path):
    with ChatServer(tagging_model) as server:
        monkeypatch.setattr(model_module, "_SESSIONS", {})
        monkeypatch.delenv("KITAB_TAGGERS", raising=False)
        monkeypatch.setenv("KITAB_SECOND_READER", "model")
        monkeypatch.setenv("KITAB_TAGGER_BASE_URL", server.url)
        monkeypatch.setenv("KITAB_TAGGER_MODEL", "m9")
        monkeypatch.setenv("KITAB_TAGGER_CACHE", str(tmp_path / "tags.sqlite"))
        yield server


BOOKS = [
    # title, the title rules' rows for human (start -1: a doubt row, the class of a title with no span)
    ("W1", "Pnin", {"start": 0, "evidence": "proper_title_rule"}),  # risky yes; model yes
    ("W2", "Gilead", {"start": 0, "evidence": "proper_title_rule"}),  # risky yes; model no
    ("W3", "Emma's Garden", {"start": 0, "evidence": "first_name+possessive_rule"}),  # low-risk yes; model yes
    ("W4", "The Sea", None),  # low-risk no; model yes ("Sea")
    ("W5", "The Open Sea", None),  # low-risk no; model yes; the record says no
    ("W6", "Night in Paris", None),  # city: risky population yes (below); model yes
]


def states(records=()):
    books = [{"book_id": f"Q1:{w}", "author_qid": "Q1", "canonical_title": t} for w, t, _ in BOOKS]
    variants = [{"book_id": f"Q1:{w}", "title": t, "work_key": f"/works/{w}"} for w, t, _ in BOOKS]
    tags = [{"title": t, "kind": "human", **row} for _, t, row in BOOKS if row]
    tags.append({"title": "Night in Paris", "kind": "city", "start": 9, "evidence": "gazetteer:geonames_1000"})
    session = second_reader_session()
    spans = book_spans(session, {b["book_id"]: [b["canonical_title"]] for b in books})
    others = second_reader_evidence(
        books, variants, [{"qid": "Q1", "name": "A"}], records, None, spans, second_reader_version(session)
    )
    rows = book_states(books, variants, tags, ["human", "city"], others)
    return {(r["book_id"].split(":")[1], r["kind"]): (r["state"], r["evidence"]) for r in rows}


def test_agreement_decides_and_disagreement_is_unsure_unless_the_record_decides(model):
    got = states([{"work_key": "/works/W5", "field": "subject_people", "name": "Smith, John"}])
    # agreement: a risky title class is decided by the model's second reading
    assert got["W1", "human"] == (YES, "title:proper_title|model:yes")
    assert got["W3", "human"] == (YES, "title:rule|model:yes")
    assert got["W6", "city"] == (YES, "title:population|model:yes")
    assert got["W2", "city"] == (NO, "title:plain|model:no")
    # disagreement: the model alone never overrules the title rules, nor do they overrule it: unsure
    assert got["W2", "human"] == (UNSURE, "title:proper_title|model:no")
    assert got["W4", "human"] == (UNSURE, "title:plain|model:yes")
    # ... unless the book's record decides (here with the title rules: two against one)
    assert got["W5", "human"] == (NO, "title:plain|record:no|model:yes")


def test_answers_are_cached_and_versioned(model):
    first = states()
    asked = len(model.chat_requests)
    assert asked == 1  # one batch of six titles answers both kinds
    model_module._SESSIONS.clear()  # a new process: the cache file answers
    assert states() == first and len(model.chat_requests) == asked
    assert second_reader_version(second_reader_session()) == "model_v1:m9"


def test_configuration(monkeypatch, model):
    monkeypatch.delenv("KITAB_SECOND_READER")
    assert second_reader_session() is None  # the default: no second reader
    monkeypatch.setenv("KITAB_SECOND_READER", "gpt")
    with pytest.raises(ModelTaggerError, match="the one second reader is 'model'"):
        second_reader_session()
    monkeypatch.setenv("KITAB_SECOND_READER", "model")
    monkeypatch.setenv("KITAB_TAGGERS", "human_model_v1,city_model_v1")
    with pytest.raises(ModelTaggerError, match="cannot second its own answer"):
        second_reader_session()
