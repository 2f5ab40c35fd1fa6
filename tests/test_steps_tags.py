"""tasks/steps.py tags_for: a batch's title_tags rows read off the tag chunks in Arrow, against
the DuckDB semi-join it replaced (the reference, below) on generated chunks."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.core.refs import TableRef, duck
from tasks.steps import tags_for

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
@given(spans, st.integers(1, 3), st.lists(st.sampled_from(TITLES), unique=True), st.booleans())
def test_tags_for_is_the_duckdb_semi_join(tmp_path_factory, keys, n_files, wanted, empty_chunk):
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
    titles = sorted(wanted)
    assert tags_for(titles, tuple(refs)) == tags_for_sql(titles, tuple(refs))
