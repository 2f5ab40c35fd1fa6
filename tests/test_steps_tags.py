"""tasks/tag_routing.py route_tags + tags_for: each batch's title_tags rows, routed once to the
batches and read back by part, against a DuckDB semi-join of the batch's titles with every tag
chunk (the reference, below) on generated chunks and batches."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core.refs import TableRef, duck
from tasks.tag_routing import ROUTED_ROW_GROUP, route_tags, tags_for

TITLES = ["Pnin", "Ada", "Émile", "emile", "Zazie dans le métro", "Ádám", "The Sea", "the sea", "Ω", "a"]
SCHEMA = pa.schema(
    [
        ("title", pa.string()),
        ("tagger", pa.string()),
        ("version", pa.string()),
        ("kind", pa.string()),
        ("text", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("evidence", pa.string()),
    ]
)


def tags_for_sql(titles: list[str], tags: tuple[TableRef, ...]) -> list[dict]:
    """The reference: a semi-join in DuckDB."""
    files = [ref.path for ref in tags if ref.rows]
    if not files or not titles:
        return []
    with duck() as con:
        con.execute("CREATE TEMP TABLE wanted AS SELECT unnest(?::VARCHAR[]) AS title", [titles])
        return (
            con.sql(
                "SELECT t.* FROM read_parquet(?) t SEMI JOIN wanted USING (title) ORDER BY title, tagger, start",
                params=[files],
            )
            .to_arrow_table()
            .to_pylist()
        )


# (title, tagger, start) is unique in a run's tags (a tagger finds one span per position), so the
# order is total: the reference's ties have no order to compare
spans = st.lists(
    st.tuples(st.sampled_from(TITLES), st.sampled_from(["human_v7", "city_v7"]), st.integers(-1, 5)),
    unique=True,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(
    spans,
    st.integers(1, 3),
    st.lists(st.lists(st.sampled_from(TITLES), unique=True), min_size=1, max_size=4),
    st.booleans(),
    st.lists(st.sampled_from(TITLES), unique=True),
)
def test_routed_tags_are_the_duckdb_semi_join(tmp_path_factory, keys, n_files, batches, empty_chunk, asked):
    tmp = tmp_path_factory.mktemp("tags")
    rows = [
        {
            "title": title,
            "tagger": tagger,
            "version": tagger,
            "kind": tagger.split("_")[0],
            "text": "" if start < 0 else title[: start + 1],
            "start": start,
            "end": start if start < 0 else start + 1,
            "evidence": "unknown_word" if start < 0 else "rule",
        }
        for title, tagger, start in keys
    ]
    refs = []
    for i in range(n_files):
        part = rows[i::n_files]
        path = tmp / f"{i}.title_tags.parquet"
        pq.write_table(pa.Table.from_pylist(part, schema=SCHEMA), path)
        refs.append(TableRef("title_tags", str(path), len(part), ""))
    if empty_chunk:
        refs.append(TableRef("title_tags", str(tmp / "absent.parquet"), 0, ""))  # an empty chunk is not read
    variants = []
    for n, titles in enumerate(batches):
        path = tmp / f"{n}.title_variants.parquet"
        pq.write_table(
            pa.table(
                {"book_id": [f"b{n}"] * len(titles), "title": titles},
                pa.schema([("book_id", pa.string()), ("title", pa.string())]),
            ),
            path,
        )
        variants.append((n * 7, TableRef("title_variants", str(path), len(titles), "")))  # parts need not be 0..n
    routed = route_tags(tmp, variants, tuple(refs), tmp / "routed.parquet")
    for (part, _), titles in zip(variants, batches):
        assert tags_for(sorted(titles), routed, part) == tags_for_sql(sorted(titles), tuple(refs))
        # a step asking for titles outside its batch gets only its batch's
        assert tags_for(sorted(asked), routed, part) == tags_for_sql(sorted(set(asked) & set(titles)), tuple(refs))
    assert tags_for(TITLES, routed, 1) == []  # part 1 is no batch


def test_a_batch_reads_only_its_row_groups(tmp_path):
    """With many batches the routed file has many row groups; each batch's rows come back whole
    even where they straddle a row-group boundary."""
    titles = [f"t{i:05d}" for i in range(3 * ROUTED_ROW_GROUP)]
    tags = tmp_path / "0.title_tags.parquet"
    pq.write_table(
        pa.Table.from_pylist(
            [
                {
                    "title": t,
                    "tagger": "city_v7",
                    "version": "v7",
                    "kind": "city",
                    "text": t,
                    "start": 0,
                    "end": len(t),
                    "evidence": "rule",
                }
                for t in titles
            ],
            schema=SCHEMA,
        ),
        tags,
    )
    variants = []
    for n, start in enumerate(range(0, len(titles), 5_000)):  # batches straddle the row groups
        path = tmp_path / f"{n}.title_variants.parquet"
        pq.write_table(pa.table({"title": titles[start : start + 5_000]}), path)
        variants.append((n, TableRef("title_variants", str(path), len(titles[start : start + 5_000]), "")))
    routed = route_tags(
        tmp_path, variants, (TableRef("title_tags", str(tags), len(titles), ""),), tmp_path / "r.parquet"
    )
    assert pq.ParquetFile(routed.path).metadata.num_row_groups == 3
    # the same bytes when routed again (a resumed run): the constrain steps' keys hold
    tag_refs = (TableRef("title_tags", str(tags), len(titles), ""),)
    assert route_tags(tmp_path, variants[::-1], tag_refs, tmp_path / "again.parquet").sha256 == routed.sha256
    for n in range(len(variants)):
        got = tags_for(titles, routed, n)
        assert [r["title"] for r in got] == titles[n * 5_000 : (n + 1) * 5_000]
