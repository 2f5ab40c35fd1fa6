"""The run's title tags, routed to its batches once: tagging works per chunk of the release's
distinct titles, constraining per batch of authors, and each batch needs the tags of its own
titles. :func:`route_tags` joins every batch's titles with every tag chunk once, after tagging;
:func:`tags_for` reads one batch's share (flows/pipeline.py tag, tasks/steps.py constrain_step)."""

from __future__ import annotations

from pathlib import Path

from kitab.core.refs import TableRef, duck, write_batches

# rows per row group of the routed tags: a batch's few thousand rows span one or two of them
ROUTED_ROW_GROUP = 8_192


def route_tags(
    spill: str | Path, variants: list[tuple[int, TableRef]], tags: tuple[TableRef, ...], target: str | Path
) -> TableRef:
    """Every batch's title_tags, found once for the run: for each (batch index, title_variants
    ref), the tag rows of its titles (a book's canonical title is one of its variants), with the
    index as ``part``, sorted by part, title, tagger and start (unique in a batch, so the file's
    bytes are the same on a resumed run and the constrain steps' keys hold), in row groups of
    ROUTED_ROW_GROUP rows, so that a constrain step reads only its part's row groups
    (:func:`tags_for`). Reading every tag chunk in every batch made the lookups grow as batches ×
    chunks: at 100,000 writers, ~480 batches each read the ~130 chunks (~0.35 CPU-s a batch)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = [ref.path for ref in tags if ref.rows]
    parts = [(part, ref.path) for part, ref in variants if ref.rows]
    columns = list(pq.read_schema(files[0])) if files else [pa.field("title", pa.string())]
    schema = pa.schema([pa.field("part", pa.int32()), *columns])
    if not files or not parts:
        return write_batches([], "title_tags", target, schema)
    with duck(spill) as con:
        con.register("parts", pa.table({"part": [p for p, _ in parts], "filename": [f for _, f in parts]}))
        reader = con.sql(
            "SELECT b.part::INTEGER AS part, t.* "
            "FROM (SELECT DISTINCT p.part, v.title FROM read_parquet(?, filename = true) v "
            "      JOIN parts p ON v.filename = p.filename) b "
            "JOIN read_parquet(?) t ON t.title = b.title "
            "ORDER BY b.part, t.title, t.tagger, t.start",
            params=[[f for _, f in parts], files],
        ).to_arrow_reader(ROUTED_ROW_GROUP)
        return write_batches(reader, "title_tags", target, schema, ROUTED_ROW_GROUP)


def tags_for(titles: list[str], routed: TableRef, part: int) -> list[dict]:
    """The title_tags rows of ``titles`` in batch ``part``'s (its index's) share of the routed tags
    (:func:`route_tags`), ordered by title, tagger and start: only the row groups whose ``part``
    statistics hold ``part`` are read, filtered in Arrow (tests/test_steps_tags.py keeps a DuckDB
    semi-join over the tag chunks as the reference)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if not routed.rows or not titles:
        return []
    with pq.ParquetFile(routed.path) as parquet:
        meta, column = parquet.metadata, parquet.schema_arrow.get_field_index("part")
        groups = []
        for i in range(meta.num_row_groups):
            stats = meta.row_group(i).column(column).statistics
            if stats is None or not stats.has_min_max or stats.min <= part <= stats.max:
                groups.append(i)
        table = parquet.read_row_groups(groups) if groups else parquet.schema_arrow.empty_table()
    wanted = pa.array(titles, pa.string())
    keep = pc.and_(pc.equal(table["part"], pa.scalar(part, pa.int32())), pc.is_in(table["title"], value_set=wanted))
    found = table.filter(keep).drop_columns(["part"])
    return found.sort_by([("title", "ascending"), ("tagger", "ascending"), ("start", "ascending")]).to_pylist()
