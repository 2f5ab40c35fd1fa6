from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from hypothesis import given
from hypothesis import strategies as st

from kitab.core.policy import parse_retry_after
from kitab.sources.http import fingerprint


def test_fingerprint_ignores_host_and_param_order():
    a = fingerprint("GET", "http://127.0.0.1:5000/search.json", {"author_key": "OL1A", "page": 2})
    b = fingerprint("GET", "https://openlibrary.org/search.json?page=2", {"author_key": "OL1A"})
    assert a == b


@given(st.dictionaries(st.sampled_from(["q", "page", "limit", "fields"]), st.text(min_size=1, max_size=5), min_size=1))
def test_fingerprint_changes_with_any_param(params):
    base = fingerprint("GET", "http://x/search.json", params)
    changed = {**params, next(iter(params)): next(iter(params.values())) + "x"}
    assert fingerprint("GET", "http://x/search.json", changed) != base


def test_fingerprint_depends_on_body():
    assert fingerprint("POST", "/sparql", body="SELECT 1") != fingerprint("POST", "/sparql", body="SELECT 2")


def test_retry_after_seconds_and_http_date():
    """The one parser (kitab/core/policy.py), as the sources' clients call it: with the
    response's headers, whatever their case."""
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    soon = datetime.now(UTC) + timedelta(seconds=30)
    assert 25 <= parse_retry_after({"retry-after": format_datetime(soon, usegmt=True)}) <= 31
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": "inf"}) is None and parse_retry_after({"Retry-After": "-3"}) == 0.0
