"""Politeness towards the live services, proven with the clients a live refresh uses, at their
live defaults (Open Library 1 request/s, WDQS queries spaced by 1 s, production retries),
pointed at a mirror whose own rate limit is on: the measured rate stays under the cap, WDQS
gets one query at a time, every request names a contact, and a 429's Retry-After holds every
thread of the client."""

from __future__ import annotations

import threading

import pytest

from kitab.core.config import Settings
from kitab.simulate.mirror.faults import Fault
from kitab.simulate.mirror.server import Mirror
from kitab.sources import open_sources

CONTACT = "kitab-tests@example.org"
TOLERANCE = 0.02  # seconds: the clock resolution between the client's spacing and the mirror's log


@pytest.fixture(scope="module")
def limited(snapshot_dir):
    """A mirror that answers 429 (with Retry-After) above 3 Open Library requests/s (Open
    Library's documented ceiling) and above 1 WDQS query/s."""
    with Mirror(snapshot_dir, ol_rate=3.0, wdqs_rate=1.0) as m:
        yield m


@pytest.fixture
def live_clients(limited, tmp_path):
    """``open_sources("live")``: the live clients and their defaults, only the URLs are the mirror's."""
    settings = Settings(
        warehouse=tmp_path / "wh",
        contact=CONTACT,
        openlibrary_base=limited.url,
        wikidata_endpoint=f"{limited.url}/sparql",
    )
    assert settings.ol_rate == 1.0 and settings.wdqs_min_interval == 1.0 and settings.max_attempts == 6
    sources = open_sources("live", settings, cache_scope="politeness")
    yield sources
    sources.openlibrary.close()
    sources.wikidata.close()


def run_in_threads(calls) -> None:
    errors = []

    def run(call):
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors


def entries(mirror: Mirror, since: int, service: str):
    return [e for e in mirror.log()[since:] if e.service == service]


def test_open_library_at_its_live_default_stays_under_one_request_a_second(limited, live_clients):
    mark = len(limited.log())
    names = [f"Politeness Probe {n}" for n in range(8)]
    run_in_threads([lambda n=n: live_clients.openlibrary.search_authors(n) for n in names])  # 8 threads at once
    sent = entries(limited, mark, "openlibrary")
    assert len(sent) == 8
    gaps = [b.t - a.t for a, b in zip(sent, sent[1:])]
    assert min(gaps) >= 1.0 - TOLERANCE, gaps  # every two requests at least 1 s apart ...
    assert (len(sent) - 1) / (sent[-1].t - sent[0].t) <= 1.0 + TOLERANCE  # ... so the measured rate <= 1/s
    assert all(e.status == 200 for e in sent)  # the mirror's 3/s limit never tripped
    assert all(CONTACT in e.user_agent for e in sent)


def test_wdqs_gets_one_query_at_a_time_spaced_by_a_second(limited, live_clients):
    mark = len(limited.log())
    windows = [(1900 + 5 * n, 1904 + 5 * n) for n in range(4)]
    run_in_threads(
        [
            lambda w=w: live_clients.wikidata.candidate_authors(
                from_year=w[0], to_year=w[1], min_works=10, max_works=300
            )
            for w in windows
        ]
    )
    sent = entries(limited, mark, "wikidata")
    assert [e.status for e in sent].count(200) == 4
    gaps = [b.t - a.t for a, b in zip(sent, sent[1:])]
    assert min(gaps) >= 1.0 - TOLERANCE, gaps  # one at a time, a second apart: the rate <= 1/s
    # The mirror's bucket is strict to the millisecond, so a query may arrive a few ms early
    # and get a 429 (Retry-After: 1): then nothing more is sent before that second is over.
    for refused, following in zip(sent, sent[1:]):
        if refused.status == 429:
            assert following.t - refused.t >= 1.0 - TOLERANCE
    assert all(CONTACT in e.user_agent for e in sent)


def test_a_429_retry_after_holds_every_thread_of_the_client(limited, live_clients):
    mark = len(limited.log())
    limited.faults.add(Fault("status", path_prefix="/search/authors.json", status=429, retry_after=3))
    try:
        run_in_threads([lambda n=n: live_clients.openlibrary.search_authors(f"Retry Probe {n}") for n in range(3)])
    finally:
        limited.faults.clear()
    sent = entries(limited, mark, "openlibrary")
    assert [e.status for e in sent].count(429) == 1 and len(sent) == 4
    refused = next(i for i, e in enumerate(sent) if e.status == 429)
    after = sent[refused + 1 :]
    assert after and all(e.t - sent[refused].t >= 3.0 - TOLERANCE for e in after)  # nobody went before it elapsed


# -- disjointness: a released author comes back under another WikiData item or by its OL key -----
def test_an_author_released_under_another_qid_or_by_its_open_library_key_is_not_released_again(tmp_path):
    """WikiData has duplicate items for one person: an author released under another QID (same
    normalised name) must not be sampled again, nor one whose Open Library author was released."""
    from kitab.core.warehouse import Warehouse
    from tasks.match_openlibrary import name_key
    from tasks.publish import publish
    from tests.releases import dump_release
    from tests.test_warehouse import tables

    def refresh(root, release):
        wh = Warehouse(dump_release(root, authors=8, seed=42, release=release))
        # the released ones (--authors 8 means 8 released: the draw goes on past rejected ones)
        kept = {(r["release"], r["qid"]) for r in wh.read_table("released_authors").to_pylist()}
        return [a for a in wh.read_table("authors").to_pylist() if (a["release"], a["qid"]) in kept]

    probe = refresh(tmp_path / "probe", "probe")  # whom this seed samples on an empty warehouse
    by_name, by_key = probe[0], next(a for a in probe[1:] if a["ol_author_key"])
    earlier = tables(["Q990001", "Q990002"])  # two other WikiData items, released before
    earlier["released_authors"][0]["name_norm"] = name_key(by_name["name"])
    earlier["released_authors"][1]["ol_author_key"] = by_key["ol_author_key"]
    root = tmp_path / "wh"
    publish(
        Warehouse(root),
        "earlier",
        earlier,
        seed=1,
        source="dump",
        snapshot_id="s",
        n_authors_requested=2,
        requests_made=0,
    )
    released = {a["qid"]: a for a in refresh(root, "later") if a["release"] == "later"}
    assert by_name["qid"] not in released and by_key["qid"] not in released
    assert len(released) == 8  # two others took their places
    assert not {name_key(a["name"]) for a in released.values()} & {name_key(by_name["name"])}
    assert by_key["ol_author_key"] not in {a["ol_author_key"] for a in released.values()}
