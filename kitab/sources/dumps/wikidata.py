"""WikiData chunk readers: the JSON dump and the full N-Triples dump, to the same rows.

Each reader turns one chunk into rows ``(s, p, o, oq, year, v)``: subject item number, short
predicate (``P31 P106 P569 P648 P50 label sitelinks``), the object as an N-Triples term (what the
snapshot's ``wikidata.nt.gz`` will hold), the object's item number (items only), the birth year
(P569 only) and the plain value (labels, P648). Both readers emit exactly the same rows for the
same entity, so the two formats give the same snapshot, byte for byte.

What is kept (the rest never leaves the worker):
* every truthy ``P50`` link (work -> item) with the work's English label and P648: which authors
  matter is only known after the whole file (the DuckDB step joins them);
* of a human (P31 Q5) with a listed occupation and a birth date: P31 Q5, the listed P106, P569,
  P648, the English label and the sitelink count. (The JSON reader drops the others right away;
  the N-Triples reader cannot see a whole entity in a line and keeps those predicates for all.)

"Truthy" as in the dumps' ``wdt:`` triples: per property the preferred statements if there are
any, else the normal ones; deprecated never. A birth date that is not a date (month 13, 29
February of a common year, a year after the as-of date) or an unknown value is skipped and
counted (``invalid_date``, ``unknown_value``), not fatal.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Union

import msgspec

from kitab.snapshot.format import WD, WDT, XSD_DATETIME, XSD_INTEGER, literal

ROW_FIELDS = ("s", "p", "o", "oq", "year", "v")
Q5 = 5


# --- the JSON dump --------------------------------------------------------------------------
# msgspec decodes only the fields named here and skips everything else at C speed. Empty maps
# are written as [] in the dump (a PHP quirk), hence the unions with list.

class _DataValue(msgspec.Struct):
    value: Any = None


class _Snak(msgspec.Struct):
    snaktype: str = "value"
    datavalue: Union[_DataValue, None] = None


class _Statement(msgspec.Struct):
    mainsnak: _Snak
    rank: str = "normal"


class _Claims(msgspec.Struct):
    P31: list[_Statement] = []
    P106: list[_Statement] = []
    P569: list[_Statement] = []
    P648: list[_Statement] = []
    P50: list[_Statement] = []


class _Label(msgspec.Struct):
    value: str = ""


class _Labels(msgspec.Struct):
    en: Union[_Label, None] = None


class _Entity(msgspec.Struct):
    id: str = ""
    labels: Union[_Labels, list] = []
    claims: Union[_Claims, list] = []
    sitelinks: Union[dict[str, msgspec.Raw], list] = []


_DECODER = msgspec.json.Decoder(_Entity)


def truthy(statements: list[_Statement]) -> list[_Snak]:
    best = [s.mainsnak for s in statements if s.rank == "preferred"]
    return best or [s.mainsnak for s in statements if s.rank == "normal"]


def _days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28
    return 30 if m in (4, 6, 9, 11) else 31


_TIME = re.compile(r"([+-]?)(\d{1,16})-(\d\d)-(\d\d)T00:00:00Z")


def birth_lexical(time: str, precision: int, max_year: int) -> tuple[str, int] | None:
    """A WikiData time value -> the ``xsd:dateTime`` lexical of the RDF dumps and its year.

    As the RDF dumps write it: no ``+``, at least four year digits, the month and day below the
    precision set to 01 (so year precision is ``YYYY-01-01``). None = not a usable date.
    """
    match = _TIME.fullmatch(time)
    if not match:
        return None
    sign, year_text, month, day = match[1], match[2], int(match[3]), int(match[4])
    year = int(year_text) * (-1 if sign == "-" else 1)
    if precision <= 9:
        month, day = 1, 1
    elif precision == 10:
        day = 1
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)) or year > max_year:
        return None
    digits = f"{abs(year):04d}"
    return f"{'-' if year < 0 else ''}{digits}-{month:02d}-{day:02d}T00:00:00Z", year


def _item(snak: _Snak) -> int | None:
    if snak.snaktype != "value" or snak.datavalue is None or not isinstance(snak.datavalue.value, dict):
        return None
    number = snak.datavalue.value.get("numeric-id")
    if isinstance(number, int):
        return number
    ident = snak.datavalue.value.get("id")
    return int(ident[1:]) if isinstance(ident, str) and ident[:1] == "Q" and ident[1:].isdigit() else None


def _string(snak: _Snak) -> str | None:
    if snak.snaktype == "value" and snak.datavalue is not None and isinstance(snak.datavalue.value, str):
        return snak.datavalue.value
    return None


def item_term(number: int) -> str:
    return f"<{WD}Q{number}>"


def label_term(text: str) -> str:
    return literal(text, lang="en")


def string_term(text: str) -> str:
    return literal(text)


def date_term(lexical: str) -> str:
    return literal(lexical, datatype=XSD_DATETIME)


def sitelinks_term(count: int) -> str:
    return literal(str(count), datatype=XSD_INTEGER)


def entity_rows(entity: _Entity, ctx: dict, counts: Counter) -> list[tuple]:
    """The rows one JSON entity contributes (empty for most)."""
    if entity.id[:1] != "Q" or not entity.id[1:].isdigit() or isinstance(entity.claims, list):
        return []
    s = int(entity.id[1:])
    claims = entity.claims
    label = entity.labels.en.value if isinstance(entity.labels, _Labels) and entity.labels.en else None
    rows: list[tuple] = []
    p648 = [v for v in map(_string, truthy(claims.P648)) if v is not None]
    authors = [v for v in map(_item, truthy(claims.P50)) if v is not None]
    if authors:
        counts["works_with_p50"] += 1
        rows += [(s, "P50", item_term(a), a, None, None) for a in authors]
    occupations = [v for v in map(_item, truthy(claims.P106)) if v in ctx["occupations"]]
    human = any(v == Q5 for v in map(_item, truthy(claims.P31)))
    births = []
    if human and occupations and claims.P569:
        for snak in truthy(claims.P569):
            if snak.snaktype != "value" or snak.datavalue is None:
                counts["unknown_value"] += 1
                continue
            value = snak.datavalue.value
            parsed = None
            if isinstance(value, dict) and isinstance(value.get("time"), str):
                parsed = birth_lexical(value["time"], value.get("precision", 11) or 11, ctx["max_year"])
            if parsed is None:
                counts["invalid_date"] += 1
            else:
                births.append(parsed)
    person = bool(births) and max(year for _, year in births) >= ctx["min_birth_year"]
    if human and occupations and births and not person:
        counts["born_before_min_year"] += 1
    if person:
        counts["candidate_humans"] += 1
        rows.append((s, "P31", item_term(Q5), Q5, None, None))
        rows += [(s, "P106", item_term(o), o, None, None) for o in occupations]
        rows += [(s, "P569", date_term(lexical), None, year, None) for lexical, year in births]
        links = len(entity.sitelinks)
        rows.append((s, "sitelinks", sitelinks_term(links), None, None, str(links)))
    if person or authors:
        if label is not None:
            rows.append((s, "label", label_term(label), None, None, label))
        rows += [(s, "P648", string_term(v), None, None, v) for v in p648]
    return rows


_PREFILTER_WORK = b'"P50"'
_PREFILTER_HUMAN = (b'"P106"', b'"P569"')


def json_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    """Worker: one chunk of the JSON dump (``[``, ``{entity},`` lines, ``]``) -> a Parquet part."""
    counts: Counter = Counter()
    rows: list[tuple] = []
    max_record = ctx["max_record"]
    for line in data.split(b"\n"):
        # cheap byte test first: most entities have neither P50 nor (P106 and P569)
        if _PREFILTER_WORK not in line and not (_PREFILTER_HUMAN[0] in line and _PREFILTER_HUMAN[1] in line):
            continue
        if len(line) > max_record:
            counts["oversized"] += 1
            continue
        text = line.rstrip()
        if text.endswith(b","):
            text = text[:-1]
        try:
            entity = _DECODER.decode(text)
        except (msgspec.DecodeError, msgspec.ValidationError):
            counts["malformed"] += 1
            continue
        rows += entity_rows(entity, ctx, counts)
    counts["lines"] += data.count(b"\n")
    _write_rows(rows, parts_dir, index)
    return dict(counts)


# --- the full N-Triples dump ----------------------------------------------------------------

_ENTITY = f"<{WD}Q".encode()
_DATA_NODE = b"<https://www.wikidata.org/wiki/Special:EntityData/Q"
_PREDICATES = {
    "P31": f"> <{WDT}P31> <{WD}Q5> .".encode(),
    "P106": f"> <{WDT}P106> ".encode(),
    "P569": f"> <{WDT}P569> ".encode(),
    "P648": f"> <{WDT}P648> ".encode(),
    "P50": f"> <{WDT}P50> ".encode(),
    "label": b'> <http://www.w3.org/2000/01/rdf-schema#label> "',
    "sitelinks": b'> <http://wikiba.se/ontology#sitelinks> "',
}
_NT_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def nt_unescape(text: str) -> str:
    def one(match: re.Match) -> str:
        code = match.group(1) or match.group(2)
        if code:
            return chr(int(code, 16))
        return _ECHAR[match.group(3)]
    return _NT_ESCAPE.sub(one, text)


_NT_ITEM = re.compile(rf"<{re.escape(WD)}Q(\d+)>")
_NT_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_NT_LABEL_EN = re.compile(r'"((?:[^"\\]|\\.)*)"@en')
_NT_DATE = re.compile(r'"([^"]*)"\^\^<http://www\.w3\.org/2001/XMLSchema#dateTime>')
_NT_INT = re.compile(r'"(\d+)"\^\^<http://www\.w3\.org/2001/XMLSchema#integer>')
_NT_LEXICAL = re.compile(r"(-?)(\d{4,})-(\d\d)-(\d\d)T00:00:00Z")


def _nt_row(p: str, s: int, obj: str, ctx: dict, counts: Counter) -> tuple | None:
    if p in ("P31", "P106", "P50"):
        match = _NT_ITEM.fullmatch(obj)
        if not match:
            return None  # an unknown value (blank node) or not an item: not a link
        o = int(match[1])
        if p == "P106" and o not in ctx["occupations"]:
            return None
        return (s, p, item_term(o), o, None, None)
    if p == "P569":
        match = _NT_DATE.fullmatch(obj)
        if not match:
            counts["unknown_value" if obj.startswith("_:") else "invalid_date"] += 1
            return None
        lex = _NT_LEXICAL.fullmatch(match[1])
        if not lex:
            counts["invalid_date"] += 1
            return None
        sign = "-" if lex[1] else "+"
        parsed = birth_lexical(f"{sign}{lex[2]}-{lex[3]}-{lex[4]}T00:00:00Z", 11, ctx["max_year"])
        if parsed is None:
            counts["invalid_date"] += 1
            return None
        return (s, p, date_term(parsed[0]), None, parsed[1], None)
    if p == "P648":
        match = _NT_STRING.fullmatch(obj)
        if not match:
            return None
        value = nt_unescape(match[1])
        return (s, p, string_term(value), None, None, value)
    if p == "label":
        match = _NT_LABEL_EN.fullmatch(obj)
        if not match:
            return None  # another language
        value = nt_unescape(match[1])
        return (s, p, label_term(value), None, None, value)
    match = _NT_INT.fullmatch(obj)  # sitelinks
    if not match:
        counts["malformed"] += 1
        return None
    return (s, p, sitelinks_term(int(match[1])), None, None, str(int(match[1])))


def nt_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    """Worker: one chunk of ``latest-all.nt.gz`` -> a Parquet part.

    Only the lines of seven predicates are looked at, found with ``bytes.find`` (C speed) rather
    than by splitting every line; the subject must be an item (the sitelink count: its data node).
    """
    counts: Counter = Counter()
    rows: list[tuple] = []
    for p, needle in _PREDICATES.items():
        subject_prefix = _DATA_NODE if p == "sitelinks" else _ENTITY
        pos = data.find(needle)
        while pos >= 0:
            start = data.rfind(b"\n", 0, pos) + 1
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end
            subject = data[start:pos]
            line_end = data[pos + 2:end].rstrip()
            pos = data.find(needle, end)
            if not subject.startswith(subject_prefix) or not subject[len(subject_prefix):].isdigit():
                continue
            if not line_end.endswith(b" ."):
                counts["malformed"] += 1
                continue
            s = int(subject[len(subject_prefix):])
            try:
                text = line_end[:-2].decode("ascii")
            except UnicodeDecodeError:
                counts["malformed"] += 1  # N-Triples dumps are pure ASCII
                continue
            obj = text.split(" ", 1)[1] if " " in text else ""
            row = _nt_row(p, s, obj.strip(), ctx, counts)
            if row is not None:
                rows.append(row)
    counts["lines"] += data.count(b"\n")
    _write_rows(rows, parts_dir, index)
    return dict(counts)


# --- parts --------------------------------------------------------------------------------

def _write_rows(rows: list[tuple], parts_dir: Path, index: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kitab.sources.dumps.scan import part_path, write_part

    if not rows:
        return
    columns = list(zip(*rows))
    table = pa.table({
        "s": pa.array(columns[0], pa.int64()), "p": pa.array(columns[1], pa.string()),
        "o": pa.array(columns[2], pa.string()), "oq": pa.array(columns[3], pa.int64()),
        "year": pa.array(columns[4], pa.int32()), "v": pa.array(columns[5], pa.string()),
    })
    write_part(part_path(parts_dir, index, ".parquet"),
               lambda tmp: pq.write_table(table, tmp, compression="zstd"))
