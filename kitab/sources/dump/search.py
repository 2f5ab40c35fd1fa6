"""The author name search of ``/search/authors.json`` over a batch's ``author_tokens`` rows
(token, key, key_num, work_count; in file order: by token, then key): for each name, the
authors whose name tokens include every token of the name, ordered by work_count desc, key
number, key; the first ``limit`` and how many matched.

Set intersections in NumPy, not a join: a token's rows grow with the dump (at 130,000 authors a
batch's tokens hold ~350,000 rows), and a join grouped by (name, author) over them made each
batch's search cost grow with the dump (2 s a batch at 100,000 authors). Intersecting each name's
sorted id arrays costs ~the rows of its tokens, in C. ``SEARCH_SQL`` is the join, kept as the
reference the property test compares this with (tests/test_dump_search.py)."""

from __future__ import annotations

# The join form: names' tokens (qid, token) against the rows; what :func:`search_names` computes.
SEARCH_SQL = """
    WITH q AS (SELECT unnest(?::INTEGER[]) AS qid, unnest(?::VARCHAR[]) AS token),
         need AS (SELECT qid, count(*) AS n FROM q GROUP BY qid),
         hit AS (SELECT q.qid, t.key, any_value(t.key_num) AS key_num,
                        any_value(t.work_count) AS work_count, count(*) AS n
                 FROM q JOIN author_tokens_rows t ON t.token = q.token
                 GROUP BY q.qid, t.key)
    SELECT qid, key, count(*) OVER (PARTITION BY qid) AS total
    FROM hit JOIN need USING (qid, n)
    QUALIFY row_number() OVER (PARTITION BY qid ORDER BY work_count DESC, key_num, key) <= {limit}
    ORDER BY qid, work_count DESC, key_num, key
"""


def search_names(wanted: list[list[str]], rows, limit: int) -> list[tuple[int, list[str]]]:
    """For each name's distinct tokens in ``wanted``: (authors matched, their first ``limit``
    keys in search order). ``rows``: a pyarrow Table of the ``author_tokens`` rows of (at least)
    every token in ``wanted``, sorted by token then key, a key at most once per token. A name
    with no tokens matches nothing."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = rows.combine_chunks() if isinstance(rows, pa.Table) else rows
    if not rows.num_rows:
        return [(0, []) for _ in wanted]
    keys = pc.dictionary_encode(rows.column("key").combine_chunks())
    ids = keys.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    distinct = keys.dictionary
    # each distinct key's ranking columns, from its first row (they are the key's, not the row's)
    first = np.full(len(distinct), len(ids), dtype=np.int64)
    np.minimum.at(first, ids, np.arange(len(ids), dtype=np.int64))
    key_num = rows.column("key_num").to_numpy(zero_copy_only=False)[first]
    work_count = rows.column("work_count").to_numpy(zero_copy_only=False)[first]
    # the key's place in key order (byte order of UTF-8 = code point order, as DuckDB sorts)
    key_rank = np.empty(len(distinct), dtype=np.int64)
    key_rank[pc.array_sort_indices(distinct).to_numpy()] = np.arange(len(distinct), dtype=np.int64)
    # each token's run of rows (the rows are sorted by token)
    tokens = pc.dictionary_encode(rows.column("token").combine_chunks())
    token_ids = tokens.indices.to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, token_ids[1:] != token_ids[:-1]])
    stops = np.r_[starts[1:], len(token_ids)]
    runs = {tokens.dictionary[int(token_ids[s])].as_py(): (s, e) for s, e in zip(starts, stops)}
    found = []
    for name_tokens in wanted:
        spans = [runs.get(t) for t in name_tokens]
        if not spans or None in spans:
            found.append((0, []))
            continue
        spans.sort(key=lambda span: span[1] - span[0])  # smallest first: each step is no larger
        matched = np.sort(ids[spans[0][0] : spans[0][1]])
        for start, stop in spans[1:]:
            matched = np.intersect1d(matched, ids[start:stop], assume_unique=True)
        order = np.lexsort((key_rank[matched], key_num[matched], -work_count[matched]))[:limit]
        found.append((len(matched), distinct.take(pa.array(matched[order])).to_pylist()))
    return found
