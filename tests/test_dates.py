"""The date rules have one Python home (kitab/sources/dates.py); the dump scan's SQL fast path
for the common WikiData form (COMMON_DATETIME_SQL) must agree with them on every input."""

from __future__ import annotations

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from kitab.sources.dates import COMMON_DATETIME_SQL, COMMON_DATETIME_YEAR_SQL, days_in_month, xsd_year_bounds
from kitab.sources.snapshot.format import XSD_DATETIME

# lexical forms near the common one: any year digits, months and days in and out of range,
# midnight or not, with or without a zone
common = st.builds(
    "{}-{:02d}-{:02d}T{}{}".format,
    st.one_of(st.integers(1000, 9999).map(str), st.sampled_from(["0999", "0000", "-1890", "12345", "190"])),
    st.integers(0, 13),
    st.integers(0, 32),
    st.sampled_from(["00:00:00", "00:00:00.0", "12:00:00", "24:00:00"]),
    st.sampled_from(["Z", "", "+01:00", "z"]),
)
lexical = st.one_of(common, st.text(alphabet="0123456789-:TZ+.", max_size=24))
# a connection of this module's own: the default one is shared by every test in the process
CON = duckdb.connect()


def sql_answers(values: list[str]) -> list[tuple[bool, int | None]]:
    """(the fast path applies, its year) for each value, as the scan's SQL computes them."""
    condition, year = COMMON_DATETIME_SQL.format("o"), COMMON_DATETIME_YEAR_SQL.format("o")
    rows = CON.execute(
        f"SELECT i, coalesce({condition}, false), CASE WHEN {condition} THEN {year} END "
        "FROM (SELECT unnest(?::VARCHAR[]) AS o, generate_subscripts(?::VARCHAR[], 1) AS i) ORDER BY i",
        [values, values],
    ).fetchall()
    return [(applies, y) for _, applies, y in rows]


@settings(max_examples=300, deadline=None)
@given(values=st.lists(lexical, min_size=1, max_size=40))
def test_the_sql_fast_path_agrees_with_the_python_rules(values):
    for value, (applies, year) in zip(values, sql_answers(values)):
        python = xsd_year_bounds(XSD_DATETIME, value)
        if applies:  # where SQL answers, it answers as Python does
            assert python == [year, year, year], value
        is_common = value.endswith("T00:00:00Z") and len(value) == 20 and value[:1] != "0"
        if is_common and python[0] is not None:  # and it answers every valid common value
            assert applies, value


@given(year=st.integers(1, 9999), month=st.integers(1, 12))
def test_days_in_month_is_the_calendars(year, month):
    """The one calendar rule against DuckDB's: the last day of the month."""
    last = CON.execute("SELECT day(last_day(make_date(?, ?, 1)))", [year, month]).fetchone()[0]
    assert days_in_month(year, month) == last
