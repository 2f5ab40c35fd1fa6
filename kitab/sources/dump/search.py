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

import functools

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


# an author_tokens table this small (a generated world's: 18 MB at 130,000 authors, its names
# drawn from ~500 tokens) is read whole once per process, and every batch's search reuses it: a
# batch's tokens hold most of it, so taking them per batch copied most of the table each time
# (~15% of collect's CPU at 130,000 authors). A real dump's (millions of authors, ~1 GB) is
# looked up per batch: its names' tokens are a small part of it.
WHOLE_TOKEN_TABLE_BYTES = 64 * 2**20


class TokenIndex:
    """``author_tokens`` rows (sorted by token, then key) ready for :func:`search_names`: the
    ranking columns as NumPy, each token's run of rows, and, once a name needs it, each run
    sorted by key number. Built from a batch's rows, or once per process over a small whole
    table (:func:`token_index`)."""

    def __init__(self, rows):
        import pyarrow as pa

        self.rows = rows.combine_chunks() if isinstance(rows, pa.Table) else rows
        self.key_num = self.rows.column("key_num").to_numpy(zero_copy_only=False)
        self.work_count = self.rows.column("work_count").to_numpy(zero_copy_only=False)
        self.keys = self.rows.column("key")
        self.runs = _token_runs(self.rows) if self.rows.num_rows else {}
        self._by_number: dict[str, tuple | None] = {}

    def numbered(self, token: str) -> tuple | None:
        """(its key numbers sorted, their rows) of ``token``'s run; None: a key without a
        number, or a number two of its keys share (odd keys)."""
        import numpy as np

        if token not in self._by_number:
            start, stop = self.runs[token]
            order = np.argsort(self.key_num[start:stop], kind="stable")
            nums = self.key_num[start:stop][order]
            unique = not len(nums) or (nums[0] >= 0 and not (nums[1:] == nums[:-1]).any())
            self._by_number[token] = (nums, order + start) if unique else None
        return self._by_number[token]


def token_index(table, tokens) -> TokenIndex:
    """The TokenIndex :func:`search_names` needs for ``tokens``, from ``table`` (the dump's
    ``author_tokens`` KeyedTable): the whole table's, read once per process, where the file is at
    most WHOLE_TOKEN_TABLE_BYTES; else the rows of ``tokens`` alone."""
    stat = table.data_path.stat()
    if stat.st_size <= WHOLE_TOKEN_TABLE_BYTES:
        return _whole_table_index(str(table.data_path), stat.st_size, stat.st_mtime_ns)
    return TokenIndex(table.rows(tokens))


@functools.lru_cache(maxsize=2)
def _whole_table_index(path: str, size: int, mtime_ns: int) -> TokenIndex:
    """(size and mtime key the cache: a rebuilt dump cache is read again)"""
    import pyarrow as pa

    with pa.OSFile(path, "r") as source:  # read into this process's memory, not mapped
        rows = pa.ipc.open_file(source).read_all()
    return TokenIndex(rows)


def search_names(wanted: list[list[str]], rows, limit: int) -> list[tuple[int, list[str]]]:
    """For each name's distinct tokens in ``wanted``: (authors matched, their first ``limit``
    keys in search order). ``rows``: a pyarrow Table of the ``author_tokens`` rows of (at least)
    every token in ``wanted``, sorted by token then key, a key at most once per token, or a
    :class:`TokenIndex` of them. A name with no tokens matches nothing.

    A batch's tokens hold most of the table at 130,000 authors (their generator draws names from
    ~500 tokens), so nothing here goes over every row in Python or hashes every key: each token's
    run is sorted by key number once (where a name first needs it), and a name's smallest run is
    looked up in the others' by binary search. A key number names one key in all but odd keys
    (no number, or a number two keys share); where a name's runs hold such a key, or a match's
    keys differ between runs, that name is answered by :func:`_search_by_key_ids` instead."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    index = rows if isinstance(rows, TokenIndex) else TokenIndex(rows)
    if not index.rows.num_rows:
        return [(0, []) for _ in wanted]
    key_num, work_count, keys, runs, numbered = index.key_num, index.work_count, index.keys, index.runs, index.numbered
    rows = index.rows

    found: list[tuple[int, list[str]] | None] = []
    hits: list = []  # per name: its matched rows (of its smallest run), None when not by number
    pairs: list = []  # (name, a matched row, the row of the same key number in another run)
    for name_tokens in wanted:
        spans = [runs.get(t) for t in name_tokens]
        if not spans or None in spans:
            found.append((0, []))
            hits.append(None)
            continue
        tokens = sorted(name_tokens, key=lambda t: runs[t][1] - runs[t][0])  # smallest run first
        sorted_runs = [numbered(t) for t in tokens]
        if None in sorted_runs:
            found.append(None)
            hits.append(None)
            continue
        nums, matched = sorted_runs[0]
        for other_nums, _ in sorted_runs[1:]:
            at = np.minimum(np.searchsorted(other_nums, nums), max(len(other_nums) - 1, 0))
            hit = other_nums[at] == nums if len(other_nums) else np.zeros(len(nums), dtype=bool)
            nums, matched = nums[hit], matched[hit]
        for other_nums, other_rows in sorted_runs[1:]:
            pairs.append((len(found), matched, other_rows[np.searchsorted(other_nums, nums)]))
        found.append(None)
        hits.append(matched)
    # the same number, the same key? (else two odd keys share it: that name goes the exact way);
    # one Arrow call for every name's matches, not a few per name
    if pairs:
        left = keys.take(pa.array(np.concatenate([m for _, m, _ in pairs])))
        right = keys.take(pa.array(np.concatenate([o for _, _, o in pairs])))
        owner = np.concatenate([np.full(len(m), n) for n, m, _ in pairs])
        for n in set(owner[~pc.equal(left, right).to_numpy(zero_copy_only=False)].tolist()):
            hits[n] = None
    numbered_hits = [m for m in hits if m is not None]
    names = keys.take(pa.array(np.concatenate(numbered_hits))).to_pylist() if numbered_hits else []
    offset = 0
    for n, matched in enumerate(hits):
        if matched is not None:
            ranked = sorted(
                zip((-work_count[matched]).tolist(), key_num[matched].tolist(), names[offset : offset + len(matched)])
            )
            offset += len(matched)
            found[n] = (len(matched), [key for _, _, key in ranked[:limit]])
        elif found[n] is None:
            found[n] = _one_name(wanted[n], rows, runs, limit)
    return found


def _token_runs(rows) -> dict[str, tuple[int, int]]:
    """token -> (first row, stop) of its run (the rows are sorted by token)."""
    import numpy as np
    import pyarrow.compute as pc

    tokens = pc.dictionary_encode(rows.column("token").combine_chunks())
    token_ids = tokens.indices.to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, token_ids[1:] != token_ids[:-1]])
    stops = np.r_[starts[1:], len(token_ids)]
    return {tokens.dictionary[int(token_ids[s])].as_py(): (int(s), int(e)) for s, e in zip(starts, stops)}


def _one_name(name_tokens: list[str], rows, runs: dict, limit: int) -> tuple[int, list[str]]:
    """One name's answer from its tokens' runs alone, by :func:`_search_by_key_ids`."""
    import pyarrow as pa

    parts = [rows.slice(start, stop - start) for start, stop in sorted(runs[t] for t in name_tokens)]
    return _search_by_key_ids([name_tokens], pa.concat_tables(parts), limit)[0]


def _search_by_key_ids(wanted: list[list[str]], rows, limit: int) -> list[tuple[int, list[str]]]:
    """:func:`search_names` by intersecting dictionary ids of the keys themselves: exact for any
    key (odd ones too), at the cost of hashing every key of ``rows``."""
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
