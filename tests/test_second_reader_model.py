"""The model tagger as the second reader (issue 28): the run's second reader "model"
(--second-reader model, KITAB_SECOND_READER=model; RunConfig.second_reader) asks the run's
endpoint (RunConfig.tagger_endpoint) (here the loopback chat server, kitab/simulate/chat.py) about each book's
titles, and its answer goes through the constrain step's functions (book_spans,
second_reader_evidence, book_states -> decide) into the documented states
(docs/tagging.md, "States and evidence")."""

from __future__ import annotations

import json
import re

import pytest

from flows.configure import recorded_config
from kitab.core.params import ModelEndpoint, RefreshParams, RunConfig, identity_of
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
        server.endpoint = ModelEndpoint(server.url, "m9", str(tmp_path / "tags.sqlite"))
        yield server


BOOKS = [
    # title, the title rules' rows for human (start -1: a doubt row, the class of a title with no span)
    ("W1", "Pnin", {"start": 0, "text": "Pnin", "evidence": "proper_title_rule"}),  # risky yes; model yes
    ("W2", "Gilead", {"start": 0, "text": "Gilead", "evidence": "proper_title_rule"}),  # risky yes; model no
    # low-risk yes; model yes
    ("W3", "Emma's Garden", {"start": 0, "text": "Emma", "evidence": "first_name+possessive_rule"}),
    ("W4", "The Sea", None),  # low-risk no; model yes ("Sea")
    # low-risk yes; model no; the record lists the span as a place
    ("W5", "Washington Square", {"start": 0, "text": "Washington", "evidence": "surname"}),
    ("W6", "Night in Paris", None),  # city: risky population yes (below); model yes
]


def states(endpoint, records=()):
    books = [{"book_id": f"Q1:{w}", "author_qid": "Q1", "canonical_title": t} for w, t, _ in BOOKS]
    variants = [{"book_id": f"Q1:{w}", "title": t, "work_key": f"/works/{w}"} for w, t, _ in BOOKS]
    tags = [{"title": t, "kind": "human", **row} for _, t, row in BOOKS if row]
    tags.append(
        {"title": "Night in Paris", "kind": "city", "start": 9, "text": "Paris", "evidence": "gazetteer:geonames_1000"}
    )
    session = second_reader_session("model", endpoint)
    spans = book_spans(session, {b["book_id"]: [b["canonical_title"]] for b in books})
    others = second_reader_evidence(
        books, variants, [{"qid": "Q1", "name": "A"}], records, None, spans, second_reader_version(session), tags
    )
    rows = book_states(books, variants, tags, ["human", "city"], others)
    return {(r["book_id"].split(":")[1], r["kind"]): (r["state"], r["evidence"]) for r in rows}


def test_agreement_decides_and_disagreement_is_unsure_unless_the_record_decides(model):
    place = "Washington Square (New York, N.Y.)"
    got = states(model.endpoint, [{"work_key": "/works/W5", "field": "subject_places", "name": place}])
    # agreement: a risky title class is decided by the model's second reading
    assert got["W1", "human"] == (YES, "title:proper_title|model:yes")
    assert got["W3", "human"] == (YES, "title:rule|model:yes")
    assert got["W6", "city"] == (YES, "title:population|model:yes")
    assert got["W2", "city"] == (NO, "title:plain|model:no")
    # disagreement: the model alone never overrules the title rules, nor do they overrule it: unsure
    assert got["W2", "human"] == (UNSURE, "title:proper_title|model:no")
    assert got["W4", "human"] == (UNSURE, "title:plain|model:yes")
    # ... unless the book's record decides (here with the model: two against one)
    assert got["W5", "human"] == (NO, "title:name_list|record:no|model:no")


def test_answers_are_cached_and_versioned(model):
    first = states(model.endpoint)
    asked = len(model.chat_requests)
    assert asked == 1  # one batch of six titles answers both kinds
    model_module._SESSIONS.clear()  # a new process: the cache file answers
    assert states(model.endpoint) == first and len(model.chat_requests) == asked
    assert second_reader_version(second_reader_session("model", model.endpoint)) == "model_v1:m9"


def test_configuration(model):
    endpoint = model.endpoint
    assert second_reader_session("", endpoint) is None  # the default: no second reader
    with pytest.raises(ModelTaggerError, match="the one second reader is 'model'"):
        second_reader_session("gpt", endpoint)
    with pytest.raises(ModelTaggerError, match="cannot second its own answer"):
        second_reader_session("model", endpoint, ("human_model_v1", "city_model_v1"))
    with pytest.raises(ModelTaggerError, match="KITAB_TAGGER_BASE_URL"):
        second_reader_session("model", None)


def resolved(monkeypatch, tmp_path, env: dict, **params) -> RunConfig:
    """The run configuration the app layer resolves once, with ``env`` as the user's environment."""
    from kitab.app.runs import run_config

    for name in ("KITAB_TAGGERS", "KITAB_SECOND_READER", "KITAB_TAGGER_BASE_URL", "KITAB_TAGGER_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("KITAB_TAGGER_CACHE", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    p = RefreshParams(release="r1", seed=1, warehouse=str(tmp_path / "wh"), **params)
    return run_config(p, direct=True, task_runner=None, dask_address=None)


def test_the_app_layer_resolves_the_endpoint_and_the_second_reader_once(monkeypatch, tmp_path, model):
    """The environment (or --second-reader) is read once, into the RunConfig the ledger records
    and every step gets; a mistake is one line before the run starts."""
    env = {
        "KITAB_SECOND_READER": "model",
        "KITAB_TAGGER_BASE_URL": model.url,
        "KITAB_TAGGER_MODEL": "m9",
        "KITAB_TAGGER_CACHE": model.endpoint.cache,
    }
    config = resolved(monkeypatch, tmp_path, env)
    assert (config.second_reader, config.tagger_endpoint) == ("model", model.endpoint)
    recorded = config.to_dict()
    assert recorded["second_reader"] == "model"
    assert recorded["tagger_endpoint"] == {"base_url": model.url, "model": "m9", "cache": model.endpoint.cache}
    assert "api_key" not in json.dumps(recorded)  # the key is a secret: never in the config
    assert RunConfig.from_dict(json.loads(json.dumps(recorded))) == config  # as a Prefect flow gets it
    identity = identity_of(recorded_config(config), None)  # what a rebuild is compared on
    assert identity["second_reader"] == "model" and identity["tagger_llm"] == "m9"
    # the option wins over the environment; nothing asks the model: the endpoint is not recorded
    plain = resolved(monkeypatch, tmp_path, env, second_reader="")
    assert (plain.second_reader, plain.tagger_endpoint) == ("", None)
    assert identity_of(recorded_config(plain), None)["tagger_llm"] is None
    with pytest.raises(ModelTaggerError, match="need a model endpoint: KITAB_TAGGER_BASE_URL"):
        resolved(monkeypatch, tmp_path, {"KITAB_SECOND_READER": "model"})
    with pytest.raises(ModelTaggerError, match="the one second reader is 'model'"):
        resolved(monkeypatch, tmp_path, {**env, "KITAB_SECOND_READER": "gpt"})
    with pytest.raises(ModelTaggerError, match="cannot second its own answer"):
        resolved(monkeypatch, tmp_path, {**env, "KITAB_TAGGERS": "human_model_v1,city_model_v1"})
    with pytest.raises(ModelTaggerError, match="expected an http"):
        resolved(monkeypatch, tmp_path, {**env, "KITAB_TAGGER_BASE_URL": "localhost:8000"})
