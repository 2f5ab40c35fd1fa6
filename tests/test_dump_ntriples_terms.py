"""The dump scan's split of a WikiData line (kitab/sources/dump/scan.py nt_terms): NT_LINE_IRIS
first, NT_LINE for the rest, must give exactly NT_LINE's groups, for every line, valid or not."""

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.sources.dump.scan import nt_terms
from kitab.sources.dump.sql import sql_string
from kitab.sources.ntriples import NT_LINE

_chars = st.sampled_from(list("ab1_.-#@^<>\"'\\ \t:/é€𝄞") + ["\\u00e9", "\\U0001D11E", "\\n", "\\x", " . ", " # "])
_text = st.lists(_chars, max_size=8).map("".join)
_iri = st.one_of(_text.map(lambda t: f"<http://x/{t}>"), st.just("<http://www.wikidata.org/prop/direct/P31>"))
_bnode = st.sampled_from(["_:b1", "_:a.b", "_:x-", "_:é1", "_:b1.", "_:.b", "_:"])
_literal = st.tuples(_text, st.sampled_from(["", "@en", "@en-GB", "@", "^^<http://x/t>", "^^<bad"])).map(
    lambda parts: f'"{parts[0]}"{parts[1]}'
)
_space = st.sampled_from(["", " ", "\t", "  "])
_line = st.one_of(
    st.tuples(
        _space,
        st.one_of(_iri, _bnode),
        st.sampled_from([" ", "\t", " \t", ""]),
        st.one_of(_iri, _bnode),
        st.sampled_from([" ", "\t", ""]),
        st.one_of(_iri, _bnode, _literal),
        _space,
        st.sampled_from([".", "", ".."]),
        _space,
        st.sampled_from(["", "# c", "#", "# a . b", '# "x" .']),
    ).map("".join),
    _text,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_line, min_size=1, max_size=20))
def test_nt_terms_equal_nt_line_groups(lines):
    con = duckdb.connect()
    con.execute("CREATE TABLE lines AS SELECT unnest(?) AS line", [lines])
    fast = con.execute(f"SELECT line, t.s, t.p, t.o FROM ({nt_terms('SELECT line FROM lines')})").fetchall()
    reference = con.execute(
        f"SELECT line, t.s, t.p, t.o FROM (SELECT line, regexp_extract(line, {sql_string(NT_LINE)}, ['s', 'p', 'o'])"
        " AS t FROM lines)"
    ).fetchall()
    assert sorted(fast) == sorted(reference)


def test_nt_terms_of_typical_lines():
    con = duckdb.connect()
    lines = [
        '<http://x/Q1> <http://x/label> "a . # b"@en . # c . d',
        "<http://x/Q1> <http://x/P50> _:b1.",
        "_:a.b\t<http://x/P31> <http://x/Q5> .",
        "<http://x/Q1> <http://x/P31> Q5 .",
    ]
    con.execute("CREATE TABLE lines AS SELECT unnest(?) AS line", [lines])
    found = dict(
        (line, (s, p, o))
        for line, s, p, o in con.execute(
            f"SELECT line, t.s, t.p, t.o FROM ({nt_terms('SELECT line FROM lines')})"
        ).fetchall()
    )
    assert [found[line] for line in lines] == [
        ("<http://x/Q1>", "<http://x/label>", '"a . # b"@en'),
        ("<http://x/Q1>", "<http://x/P50>", "_:b1"),
        ("_:a.b", "<http://x/P31>", "<http://x/Q5>"),
        ("", "", ""),
    ]
