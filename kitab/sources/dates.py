"""The date rules, once: the proleptic Gregorian calendar (days in a month, days since the
epoch) and how pyoxigraph reads and compares an ``xsd:dateTime`` (what the sampling query's
birth-year window means), used by the dump source's scan and by the from-dumps builder.

The scan answers the common WikiData form in SQL (:data:`COMMON_DATETIME_SQL`) and every other
form with :func:`xsd_year_bounds`; tests/test_dates.py checks the two agree."""

from __future__ import annotations

import re

from kitab.sources.snapshot.format import XSD_DATETIME

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_DATETIME_STAMP = XSD + "dateTimeStamp"
XSD_DATE, XSD_GYEAR, XSD_GYEARMONTH = XSD + "date", XSD + "gYear", XSD + "gYearMonth"

# An xsd:dateTime literal of the form WikiData writes (day precision or better, UTC midnight, a
# year of four digits without a leading zero), as a SQL condition on its lexical form ``{0}``,
# and its year: for these, xsd_year_bounds is [year, year, year] (the scan's fast path).
COMMON_DATETIME_SQL = (
    r"regexp_full_match({0}, '[1-9][0-9]{{3}}-[0-9]{{2}}-[0-9]{{2}}T00:00:00Z') "
    "AND try_strptime(left({0}, 10), '%Y-%m-%d') IS NOT NULL"
)
COMMON_DATETIME_YEAR_SQL = "left({0}, 4)::BIGINT"


_TZ = r"(Z|[+-]\d\d:\d\d)?"
_LEXICAL = {
    XSD_DATETIME: re.compile(rf"(-?\d{{4,}})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?{_TZ}", re.A),
    XSD_DATE: re.compile(rf"(-?\d{{4,}})-(\d\d)-(\d\d){_TZ}", re.A),
    XSD_GYEARMONTH: re.compile(rf"(-?\d{{4,}})-(\d\d){_TZ}", re.A),
    XSD_GYEAR: re.compile(rf"(-?\d{{4,}}){_TZ}", re.A),
}
_LEXICAL[XSD_DATETIME_STAMP] = _LEXICAL[XSD_DATETIME]  # pyoxigraph reads it as a dateTime, zone or not


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar, any year (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28
    return 30 if m in (4, 6, 9, 11) else 31


def _valid_year(text: str) -> int | None:
    digits = text.lstrip("-")
    return None if len(digits) > 4 and digits[0] == "0" else int(text)


def _tz_minutes(tz: str | None) -> int | None:
    """Offset in minutes, None for no zone; ValueError for an out-of-range zone."""
    if tz is None:
        return None
    if tz == "Z":
        return 0
    hours, minutes = int(tz[1:3]), int(tz[4:6])
    if minutes > 59 or hours * 60 + minutes > 14 * 60:
        raise ValueError(tz)
    return (hours * 60 + minutes) * (-1 if tz[0] == "-" else 1)


def xsd_year_bounds(datatype: str | None, lexical: str | None) -> list[int | None]:
    """``[year, cmp_lo, cmp_hi]`` of a P569 literal, as pyoxigraph evaluates the sampling query.

    ``year`` is ``YEAR(?birth)`` (None = an error, which makes the author's MIN an error).
    The value is ``>= "Y-01-01T00:00:00Z"^^xsd:dateTime`` for sure exactly when ``Y <= cmp_lo``
    and ``< "T-01-01T00:00:00Z"`` for sure exactly when ``cmp_hi < T`` (None = never: not a
    dateTime). A dateTime without a time zone may lie 14 hours either way of UTC, so it is only
    surely on one side of a bound more than 14 hours away (else the comparison is an error).
    """
    none = [None, None, None]
    pattern = _LEXICAL.get(datatype or "")
    match = pattern.fullmatch(lexical) if pattern and lexical is not None else None
    if not match:
        return none
    groups = match.groups()
    try:
        year = _valid_year(groups[0])
        zone = _tz_minutes(groups[-1])
    except ValueError:
        return none
    if year is None:
        return none
    if datatype not in (XSD_DATETIME, XSD_DATETIME_STAMP):
        month = int(groups[1]) if len(groups) > 2 else 1
        day = int(groups[2]) if len(groups) > 3 else 1
        valid = 1 <= month <= 12 and 1 <= day <= days_in_month(year, month)
        return [year, None, None] if valid else none  # YEAR() works, comparing with a dateTime does not
    month, day, hour, minute, second = map(int, groups[1:6])
    fraction = groups[6]
    if not (1 <= month <= 12 and 1 <= day <= days_in_month(year, month) and minute <= 59 and second <= 59):
        return none
    if hour > 23 and not (hour == 24 and minute == 0 and second == 0 and not (fraction or "").strip(".0")):
        return none
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second  # 24:00 rolls over
    local_year = _civil_from_days(seconds // 86400)[0]
    exact = not (fraction or "").strip(".0")

    def year_of_instant(instant: int) -> tuple[int, bool]:
        """The instant's year, and whether it is exactly that year's first moment."""
        y, m, d = _civil_from_days(instant // 86400)
        return y, (m, d, instant % 86400) == (1, 1, 0) and exact

    if zone is not None:
        utc_year = year_of_instant(seconds - zone * 60)[0]
        return [local_year, utc_year, utc_year]
    earliest_year, at_start = year_of_instant(seconds - 14 * 3600)
    latest_year = year_of_instant(seconds + 14 * 3600)[0]
    return [local_year, earliest_year - 1 if at_start else earliest_year, latest_year]
