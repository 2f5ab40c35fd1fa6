"""The authorship cross-check's WikiData rows, narrowed (kitab.sources.wikidata.narrow_crowded):
the dump's Arrow form gives the Python reference's rows, and what clean_books and
wikidata_items decide from the narrowed rows is what they decide from all of them."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.sources.dump.wikidata import label_table_rows
from kitab.sources.wikidata import ENTITY, narrow_crowded
from tasks.clean_books import CROWD, MAX_OTHER_WRITERS, _misattributed, _wikidata_works
from tasks.fetch_works import wikidata_items

LABELS = ["Home", "home", "HOME ", "Beloved", "Ünïcödé", ""]
QIDS = ["Q1", "Q2", "Q3", "Q4", "Q5", "Q10"]
# a work or author as the dump holds it: an IRI, a blank node (either spelling), a literal
TERMS = [ENTITY + q for q in QIDS] + ["_:Q2", "_:b7", ENTITY, "plain literal", ""]


@st.composite
def label_tables(draw):
    rows = draw(
        st.lists(
            st.tuples(
                st.sampled_from(TERMS[:6] + ["_:b1", "_:Q3"]),
                st.sampled_from(LABELS),
                st.sampled_from(TERMS),
                st.sampled_from(["uri", "bnode", "literal"]),
            ),
            max_size=40,
        )
    )
    names = ["s", "label", "o", "o_kind"]
    table = pa.table({n: pa.array([r[i] for r in rows], pa.string()) for i, n in enumerate(names)})
    # the lookup's answer comes in record batches: several chunks
    return pa.Table.from_batches(table.to_batches(max_chunksize=7), schema=table.schema) if rows else table


def _python_rows(table: pa.Table) -> list[dict]:
    """The rows as the dump built them in Python before (a row at a time)."""
    return [
        {
            "work_qid": work.removeprefix("_:").removeprefix(ENTITY),
            "title": title,
            "author_qid": (author.removeprefix("_:") if kind == "bnode" else author).removeprefix(ENTITY),
        }
        for work, title, author, kind in zip(*(table.column(n).to_pylist() for n in ("s", "label", "o", "o_kind")))
    ]


@settings(max_examples=300, deadline=None)
@given(label_tables(), st.sets(st.sampled_from(QIDS + ["", "b7"])), st.integers(1, 4))
def test_arrow_narrowing_equals_the_python_reference(table, ours, crowd):
    full = _python_rows(table)
    assert label_table_rows(table) == full
    assert label_table_rows(table, ours, crowd) == narrow_crowded(full, ours, crowd)


@settings(max_examples=300, deadline=None)
@given(label_tables(), st.sets(st.sampled_from(QIDS), min_size=1))
def test_the_cross_check_decides_the_same_from_the_narrowed_rows(table, ours):
    full = _python_rows(table)
    narrowed = narrow_crowded(full, ours, CROWD)
    titles = sorted({r["title"] for r in full} | {"Home", "Beloved", "Elsewhere"})
    titles_by_author = {qid: set(titles) for qid in ours}
    wd_full, _ = _wikidata_works(titles_by_author, lambda _: full, 10)
    wd_narrowed, _ = _wikidata_works(titles_by_author, lambda _: narrowed, 10)
    for qid in sorted(ours):
        for title in titles:
            assert _misattributed(title, qid, wd_narrowed) == _misattributed(title, qid, wd_full)
    works = [
        {"author_qid": q, "work_key": f"/works/OL{n}W", "title": t}
        for n, (q, t) in enumerate((q, t) for q in sorted(ours) for t in titles)
    ]
    assert wikidata_items(works, narrowed) == wikidata_items(works, full)


def test_a_crowded_label_keeps_ours_and_its_first_authors():
    rows = [{"work_qid": f"W{n}", "title": "Home", "author_qid": a} for n, a in enumerate("ABCDCEA")]
    rows += [{"work_qid": "W9", "title": "Beloved", "author_qid": a} for a in ("X", "Y")]
    kept = narrow_crowded(rows, {"E"}, MAX_OTHER_WRITERS + 1)
    assert [r["work_qid"] for r in kept] == ["W0", "W1", "W2", "W5", "W9", "W9"]
