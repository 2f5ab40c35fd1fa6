"""The claims draw's seeded round robin (tasks/claims.py ``_round_robin``) against the rule it
states, written the plain way: authors in their seeded order, each author's pairs in theirs,
one pair per author per round, the first ``n`` taken."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.claim_draw import _drawn
from tasks.claims import _round_robin


def _by_rounds(pairs: list[dict], n: int, seed: int, stratum: str) -> list[dict]:
    authors = sorted({p["author_qid"] for p in pairs}, key=lambda q: _drawn(seed, stratum, q))
    own = {
        q: sorted((p for p in pairs if p["author_qid"] == q), key=lambda p: _drawn(seed, p["kind"], p["pair_key"]))
        for q in authors
    }
    rounds = max((len(v) for v in own.values()), default=0)
    order = [own[q][depth] for depth in range(rounds) for q in authors if depth < len(own[q])]
    return order[:n]


pair_lists = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, 40)),
    unique=True,
    max_size=60,
).map(lambda keys: [{"author_qid": f"Q{a}", "kind": "year", "pair_key": f"k{k}"} for a, k in keys])


@settings(max_examples=150, deadline=None)
@given(pairs=pair_lists, extra=st.integers(-70, 5), seed=st.integers(0, 3))
def test_round_robin_takes_one_pair_per_author_per_round_in_seeded_orders(pairs, extra, seed):
    n = max(0, len(pairs) + extra)  # up to every pair, and past it: then every pair, no hang
    assert _round_robin(pairs, n, seed, "s") == _by_rounds(pairs, n, seed, "s")
