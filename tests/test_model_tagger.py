"""The optional model tagger (tasks/taggers/model.py) against a small OpenAI-compatible chat
server on 127.0.0.1, through the shared chat session (kitab/sources/chat_session.py): batching, parsing into
spans, the (model, prompt, title) cache, retries,
fatal statuses, and that the key never reaches the cache."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kitab.core.policy import ChatPolicy, RetryPolicy
from kitab.sources.chat import cache_key
from tasks.tag_entities import tag_entities
from tasks.taggers.model import (
    PARAMS,
    PROMPT,
    ModelTaggerError,
    batch_message,
    model_taggers,
    parse_answer,
    place,
    title_key,
)

FAST = ChatPolicy(retry=RetryPolicy(backoff_initial=0))
PEOPLE = {"Emma", "Dalloway", "Gatsby", "Will Grayson"}
CITIES = {"Venice", "Paris"}


class ChatFixture:
    """Answers chat completions the way a model would, from fixed name lists: for each numbered
    title, the listed names it contains. `script` holds statuses to answer first (500, 429, ...);
    `skip` title numbers to leave out of an answer; `fence` wraps the JSON in a code fence."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.script: list[int] = []
        self.skip: set[str] = set()
        self.fence = False
        fixture = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fixture.requests.append(body)
                fixture.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": "not found"})
                if fixture.script:
                    return self._send(fixture.script.pop(0), {"error": "scripted"})
                user = body["messages"][-1]["content"]
                entries = []
                for line in user.splitlines():
                    n, title = line.split(". ", 1)
                    if title in fixture.skip:
                        continue
                    human = sorted(p for p in PEOPLE if re.search(rf"\b{p}\b", title))
                    human += ["Will Grayson"] if title.count("Will Grayson") == 2 else []
                    city = sorted(c for c in CITIES if re.search(rf"\b{c}\b", title))
                    entries.append(
                        {"n": int(n), "human": human + (["Nobody"] if "ghost" in title else []), "city": city}
                    )
                text = json.dumps({"titles": entries})
                if fixture.fence:
                    text = f"Here you are:\n```json\n{text}\n```"
                self._send(
                    200, {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
                )

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def chat():
    fixture = ChatFixture()
    yield fixture
    fixture.close()


TITLES = [
    "Emma",
    "Mrs Dalloway",
    "Death in Venice",
    "The Great Gatsby",
    "Will Grayson, Will Grayson",
    "Dune",
    "Paris Spleen",
    "a ghost story",
]


def test_titles_go_in_batches_and_come_back_as_spans(chat, tmp_path):
    human, city = model_taggers(chat.base_url, "m1", tmp_path / "cache.sqlite", batch=3, policy=FAST)
    spans = human.tag_many(TITLES)
    assert len(chat.requests) == 3  # 8 titles, 3 per request
    assert chat.requests[0]["model"] == "m1" and chat.requests[0]["temperature"] == 0
    assert chat.requests[0]["messages"][0]["content"] == PROMPT
    assert chat.requests[0]["messages"][1]["content"] == "1. Emma\n2. Mrs Dalloway\n3. Death in Venice"
    assert [[s.text for s in x] for x in spans] == [
        ["Emma"],
        ["Dalloway"],
        [],
        ["Gatsby"],
        ["Will Grayson", "Will Grayson"],
        [],
        [],
        [],
    ]
    assert spans[1][0].start == 4 and spans[1][0].end == 12  # offsets quote the title
    assert spans[4][1].start == 14  # a repeated name takes its second occurrence
    assert spans[7] == []  # "Nobody" is not in the title: no span
    assert (human.version, human.evidence, spans[0][0].kind) == ("human_model_v1", "model:m1", "human")
    # the city tagger reads the same answers: no new request
    assert [[s.text for s in x] for x in city.tag_many(TITLES)][2:7] == [["Venice"], [], [], [], ["Paris"]]
    assert len(chat.requests) == 3 and city.version == "city_model_v1"


def test_the_cache_answers_a_rerun_whatever_the_batches(chat, tmp_path):
    path = tmp_path / "cache.sqlite"
    model_taggers(chat.base_url, "m1", path, batch=3, policy=FAST)[0].tag_many(TITLES)
    sent = len(chat.requests)
    again = model_taggers(chat.base_url, "m1", path, batch=5, policy=FAST)[0].tag_many(list(reversed(TITLES)))
    assert len(chat.requests) == sent  # 0 requests: every title is cached
    assert [s.text for s in again[-2]] == ["Dalloway"]
    model_taggers(chat.base_url, "m2", path, batch=20, policy=FAST)[0].tag_many(TITLES)
    assert len(chat.requests) == sent + 1  # another model is another question
    assert title_key("m1", "Emma") != title_key("m2", "Emma") != cache_key("m1", "Emma", PARAMS, system=PROMPT + " ")


def test_the_key_goes_in_the_header_only(chat, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    path = tmp_path / "cache.sqlite"
    model_taggers(chat.base_url, "m1", path, policy=FAST)[0].tag_many(["Emma"])
    assert chat.headers[0]["Authorization"] == "Bearer sk-test-not-a-real-key"
    assert b"sk-test" not in path.read_bytes()
    monkeypatch.delenv("OPENAI_API_KEY")
    model_taggers(chat.base_url, "m3", None, policy=FAST)[0].tag_many(["Emma"])
    assert "Authorization" not in chat.headers[1]


def test_server_errors_are_retried_and_a_wrong_url_stops_at_once(chat, tmp_path):
    chat.script = [500, 429]
    human, _ = model_taggers(chat.base_url, "m1", None, policy=FAST)
    assert [s.text for s in human.tag_many(["Emma"])[0]] == ["Emma"]
    assert len(chat.requests) == 3
    chat.script = [401]
    with pytest.raises(ModelTaggerError, match="HTTP 401"):
        model_taggers(chat.base_url, "m1", None, policy=FAST)[0].tag_many(["Mrs Dalloway"])
    with pytest.raises(ModelTaggerError, match="HTTP 404"):
        model_taggers(chat.base_url.replace("/v1", "/nope"), "m1", None, policy=FAST)[0].tag_many(["Emma"])
    chat.script = [503] * 3
    with pytest.raises(ModelTaggerError, match=r"HTTP 503 \(after 3 attempts\)"):
        model_taggers(
            chat.base_url, "m1", None, policy=ChatPolicy(retry=RetryPolicy(max_attempts=3, backoff_initial=0))
        )[0].tag_many(["Paris Spleen"])


def test_a_title_left_out_is_asked_again_alone_then_an_error(chat, tmp_path):
    chat.fence = True  # prose and a code fence around the JSON are fine
    chat.skip = {"Dune"}
    with pytest.raises(ModelTaggerError, match="no readable answer for 1 title"):
        model_taggers(chat.base_url, "m1", tmp_path / "c.sqlite", batch=4, policy=FAST)[0].tag_many(TITLES)
    assert len(chat.requests) == 3  # 2 batches, then "Dune" alone
    assert chat.requests[-1]["messages"][1]["content"] == "1. Dune"
    chat.skip = set()
    # what was answered is cached: only "Dune" is asked now
    assert model_taggers(chat.base_url, "m1", tmp_path / "c.sqlite", batch=4, policy=FAST)[0].tag_many(TITLES)[5] == []
    assert len(chat.requests) == 4


def test_the_stage_stores_model_spans_as_their_own_version(chat):
    books = [
        {"book_id": "b1", "author_qid": "Q1", "canonical_title": "Death in Venice"},
        {"book_id": "b2", "author_qid": "Q1", "canonical_title": "Emma"},
    ]
    rows = tag_entities(books, [], taggers=model_taggers(chat.base_url, "m1", None, policy=FAST)).tables[
        "title_entities"
    ]
    assert [(r["book_id"], r["kind"], r["text"], r["version"], r["evidence"]) for r in rows] == [
        ("b1", "city", "Venice", "city_model_v1", "model:m1"),
        ("b2", "human", "Emma", "human_model_v1", "model:m1"),
    ]
    assert len(chat.requests) == 1


def test_parse_and_place():
    assert parse_answer(
        '{"titles": [{"n": 1, "human": ["A"], "city": []}, {"n": 9, "human": [], "city": []},'
        ' {"n": 2, "human": "B", "city": []}]}',
        2,
    ) == {1: {"human": ["A"], "city": []}}
    assert parse_answer("no json here", 1) == {} and parse_answer("{broken", 1) == {}
    assert batch_message(["a\nb", "c"]) == "1. a b\n2. c"
    assert [(s.start, s.text) for s in place("the tale of EMMA", ["Emma"], "human", "model:x")] == [(12, "EMMA")]
    assert place("Emma", ["Emma", "Emma"], "human", "e") == place("Emma", ["Emma"], "human", "e")


def test_a_bad_base_url_is_a_clear_error():
    with pytest.raises(ModelTaggerError, match="expected an http"):
        model_taggers("localhost:8000", "m1")


def test_selected_by_configuration(chat, monkeypatch, tmp_path):
    """As a user selects them: KITAB_TAGGERS and the endpoint's variables, resolved once by the
    app layer into the RunConfig; the registry builds the model taggers on its endpoint."""
    from kitab.app.runs import run_config
    from kitab.core.params import ModelEndpoint, RefreshParams
    from tasks.taggers import model as model_module
    from tasks.taggers.registry import make_taggers

    monkeypatch.setattr(model_module, "_SESSIONS", {})
    params = RefreshParams(release="r1", seed=1, warehouse=str(tmp_path / "wh"))
    monkeypatch.delenv("KITAB_SECOND_READER", raising=False)
    monkeypatch.setenv("KITAB_TAGGERS", "human_model_v1,city_model_v1")
    monkeypatch.delenv("KITAB_TAGGER_BASE_URL", raising=False)
    monkeypatch.delenv("KITAB_TAGGER_MODEL", raising=False)
    with pytest.raises(ModelTaggerError, match="KITAB_TAGGER_BASE_URL"):  # before the run starts
        run_config(params, direct=True, task_runner=None, dask_address=None)
    with pytest.raises(ModelTaggerError, match="KITAB_TAGGER_BASE_URL"):  # and in a step without one
        make_taggers(("human_model_v1", "city_model_v1"))
    monkeypatch.setenv("KITAB_TAGGER_BASE_URL", chat.base_url)
    monkeypatch.setenv("KITAB_TAGGER_MODEL", "m9")
    config = run_config(params, direct=True, task_runner=None, dask_address=None)
    assert config.tagger_endpoint == ModelEndpoint(chat.base_url, "m9", None)
    for name in ("KITAB_TAGGERS", "KITAB_TAGGER_BASE_URL", "KITAB_TAGGER_MODEL"):
        monkeypatch.delenv(name)  # a step reads the run's configuration, not its environment
    taggers = make_taggers(config.taggers, model="unused", endpoint=config.tagger_endpoint)
    assert [(t.name, t.version, t.fingerprint()) for t in taggers] == [
        ("human", "human_model_v1", {"llm": "m9", "prompt": "v1"}),
        ("city", "city_model_v1", {"llm": "m9", "prompt": "v1"}),
    ]
    books = [{"book_id": "b1", "author_qid": "Q1", "canonical_title": "Emma in Paris"}]
    rows = tag_entities(books, [], taggers=taggers).tables["title_entities"]
    assert [(r["text"], r["version"]) for r in rows] == [("Emma", "human_model_v1"), ("Paris", "city_model_v1")]
    assert len(chat.requests) == 1  # one session: one request answers both kinds
    # the offline taggers take no endpoint: the registry passes it to the model taggers only
    assert [t.version for t in make_taggers(("human_v3", "city_v3"), endpoint=config.tagger_endpoint)] == [
        "human_v3",
        "city_v3",
    ]
