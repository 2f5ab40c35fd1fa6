"""WikiData chunk readers: the JSON dump and the full N-Triples dump, to the same rows.

Each reader turns one chunk into rows ``(s, p, o, oq, year, v)``: subject item number, short
predicate (``P31 P106 P569 P648 P50 label sitelinks``, and ``scholarly``: a mark, no object), the object as an N-Triples term (what the
snapshot's ``wikidata.nt.gz`` will hold; null for an item, whose term is made from ``oq`` when
written), the object's item number (items only), the birth year
(P569 only) and the plain value (labels, P648). Both readers emit exactly the same rows for the
same entity, so the two formats give the same snapshot, byte for byte.

What is kept (the rest never leaves the worker):
* every truthy ``P50`` link (work -> item) with the work's ``en`` and ``mul`` labels and P648: which authors
  matter is only known after the whole file (the DuckDB step joins them);
* of a human (P31 Q5) with a listed occupation and a birth date: P31 Q5, the listed P106, P569,
  P648, the ``en`` and ``mul`` labels and the sitelink count (readers take en, else mul). (The JSON reader drops the others right away;
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

import msgspec

from kitab.sources.dates import days_in_month
from kitab.sources.ntriples import nt_unescape
from kitab.sources.queries import SCHOLARLY_CLASSES, SCHOLARLY_PROPERTY
from kitab.sources.snapshot.format import WD, WDT, XSD_DATETIME, XSD_INTEGER, literal

ROW_FIELDS = ("s", "p", "o", "oq", "year", "v")
Q5 = 5
MAX_ITEM = (1 << 63) - 1  # item numbers are stored as int64; a larger one is counted (``range``)
MIN_YEAR, MAX_YEAR = -(1 << 31), (1 << 31) - 1  # years are stored as int32
# The works rule (kitab.sources.queries): an item of these classes, or with a P13046, is in WDQS's
# scholarly graph since the split, so not a work. Both readers mark it with a ``scholarly`` row; the
# join (build.py) then counts and writes only the main graph's works.
SCHOLARLY = frozenset(int(q[1:]) for q in SCHOLARLY_CLASSES)
# the reasons a record is skipped, as counted in the manifest's "skipped"
SKIP_REASONS = (
    "malformed", "decode", "depth", "range", "type", "oversized", "invalid_date", "unknown_value",
    "born_before_min_year", "scholarly",
)  # fmt: skip


# --- the JSON dump --------------------------------------------------------------------------
# msgspec decodes only the fields named here and skips everything else at C speed. Empty maps
# are written as [] in the dump (a PHP quirk), hence the unions with list.

# One struct per value shape: decoding into ``Any`` would build a dict per statement and runs
# ten times slower than these (measured: ~50 against ~650 MB/s of CPU time per core).


class _Item(msgspec.Struct):
    numeric_id: int = msgspec.field(name="numeric-id", default=0)
    id: str = ""


class _Time(msgspec.Struct):
    time: str = ""
    precision: int = 11


class _ItemValue(msgspec.Struct):
    value: _Item | None = None


class _StringValue(msgspec.Struct):
    value: str | None = None


class _TimeValue(msgspec.Struct):
    value: _Time | None = None


class _ItemSnak(msgspec.Struct):
    snaktype: str = "value"
    datavalue: _ItemValue | None = None


class _StringSnak(msgspec.Struct):
    snaktype: str = "value"
    datavalue: _StringValue | None = None


class _TimeSnak(msgspec.Struct):
    snaktype: str = "value"
    datavalue: _TimeValue | None = None


class _ItemStatement(msgspec.Struct):
    mainsnak: _ItemSnak
    rank: str = "normal"


class _StringStatement(msgspec.Struct):
    mainsnak: _StringSnak
    rank: str = "normal"


class _TimeStatement(msgspec.Struct):
    mainsnak: _TimeSnak
    rank: str = "normal"


class _WorkClaims(msgspec.Struct):
    P50: list[_ItemStatement] = []
    P648: list[_StringStatement] = []
    P31: list[_ItemStatement] = []  # a work's: the works rule (scholarly articles are not works)
    P13046: list[_ItemStatement] = []  # publication type of scholarly work: likewise


class _Claims(_WorkClaims):
    P106: list[_ItemStatement] = []
    P569: list[_TimeStatement] = []


class _Label(msgspec.Struct):
    value: str = ""


class _Labels(msgspec.Struct):
    en: _Label | None = None
    mul: _Label | None = None  # since 2024 a name the same in many languages is kept under `mul` only


class _Work(msgspec.Struct):
    """The fields of any entity with a P50 (most are scholarly articles); a human adds more."""

    id: str = ""
    labels: _Labels | list = []
    claims: _WorkClaims | list = []


class _Entity(_Work):
    claims: _Claims | list = []
    sitelinks: dict[str, msgspec.Raw] | list = []


_DECODE_ENTITY = msgspec.json.Decoder(_Entity).decode


def truthy(statements: list) -> list:
    best = [s.mainsnak for s in statements if s.rank == "preferred"]
    return best or [s.mainsnak for s in statements if s.rank == "normal"]


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
    if not (1 <= month <= 12 and 1 <= day <= days_in_month(year, month)) or year > max_year or year < MIN_YEAR:
        return None
    digits = f"{abs(year):04d}"
    return f"{'-' if year < 0 else ''}{digits}-{month:02d}-{day:02d}T00:00:00Z", year


def _item(snak: _ItemSnak) -> int | None:
    if snak.snaktype != "value" or snak.datavalue is None or snak.datavalue.value is None:
        return None
    item = snak.datavalue.value
    if item.numeric_id > 0:
        return item.numeric_id
    if item.id[:1] == "Q" and item.id[1:].isdigit():
        return int(item.id[1:]) if len(item.id) <= 20 else MAX_ITEM + 1
    return None


def _string(snak: _StringSnak) -> str | None:
    if snak.snaktype == "value" and snak.datavalue is not None:
        return snak.datavalue.value
    return None


def item_term(number: int) -> str:
    return f"<{WD}Q{number}>"


def label_term(text: str, lang: str = "en") -> str:
    return literal(text, lang=lang)


def string_term(text: str) -> str:
    return literal(text)


def date_term(lexical: str) -> str:
    return literal(lexical, datatype=XSD_DATETIME)


def sitelinks_term(count: int) -> str:
    return literal(str(count), datatype=XSD_INTEGER)


class Rows:
    """Row columns, appended to directly (P50 links come in bulk: most rows are links)."""

    def __init__(self):
        self.columns: tuple[list, ...] = tuple([] for _ in ROW_FIELDS)

    def add(self, s: int, p: str, o: str | None, oq: int | None, year: int | None, v: str | None) -> None:
        for column, value in zip(self.columns, (s, p, o, oq, year, v)):
            column.append(value)

    def links(self, s: int, p: str, items: list[int]) -> None:
        n = len(items)
        cs, cp, co, coq, cyear, cv = self.columns
        cs.extend([s] * n)
        cp.extend([p] * n)
        coq.extend(items)
        for column in (co, cyear, cv):
            column.extend([None] * n)

    def __len__(self) -> int:
        return len(self.columns[0])


def entity_rows(entity: _Work, ctx: dict, counts: Counter, out: Rows) -> None:
    """Add the rows one JSON entity contributes (none for most)."""
    if entity.id[:1] != "Q" or not entity.id[1:].isdigit() or isinstance(entity.claims, list):
        return
    s = int(entity.id[1:]) if len(entity.id) <= 20 else MAX_ITEM + 1  # int() refuses 4,300+ digits
    if s > MAX_ITEM:
        counts["range"] += 1
        return
    claims = entity.claims
    # both labels are kept, as the N-Triples reader sees them: the readers of the snapshot pick en, else mul
    labels = []
    if isinstance(entity.labels, _Labels):
        labels = [
            (lang, label.value) for lang, label in (("en", entity.labels.en), ("mul", entity.labels.mul)) if label
        ]
    p648 = [v for v in map(_string, truthy(claims.P648)) if v is not None]
    authors = [v for v in map(_item, truthy(claims.P50)) if v is not None]
    if any(v > MAX_ITEM for v in authors):
        counts["range"] += len([v for v in authors if v > MAX_ITEM])
        authors = [v for v in authors if v <= MAX_ITEM]
    if authors:
        counts["works_with_p50"] += 1
        out.links(s, "P50", authors)
        if truthy(claims.P13046) or any(v in SCHOLARLY for v in map(_item, truthy(claims.P31))):
            out.add(s, "scholarly", None, None, None, None)
    person_claims = isinstance(claims, _Claims)
    occupations = [v for v in map(_item, truthy(claims.P106)) if v in ctx["occupations"]] if person_claims else []
    human = bool(occupations) and any(v == Q5 for v in map(_item, truthy(claims.P31)))  # works stop here
    births = []
    if human and occupations and claims.P569:
        for snak in truthy(claims.P569):
            if snak.snaktype != "value" or snak.datavalue is None:
                counts["unknown_value"] += 1
                continue
            value = snak.datavalue.value
            parsed = None
            if value is not None:
                parsed = birth_lexical(value.time, value.precision or 11, ctx["max_year"])
            if parsed is None:
                counts["invalid_date"] += 1
            else:
                births.append(parsed)
    person = bool(births) and max(year for _, year in births) >= ctx["min_birth_year"]
    if human and occupations and births and not person:
        counts["born_before_min_year"] += 1
    if person:
        counts["candidate_humans"] += 1
        out.links(s, "P31", [Q5])
        out.links(s, "P106", occupations)
        for lexical, year in births:
            out.add(s, "P569", date_term(lexical), None, year, None)
        links = len(entity.sitelinks)
        out.add(s, "sitelinks", sitelinks_term(links), None, None, str(links))
    if person or authors:
        for lang, label in labels:
            out.add(s, "label", label_term(label, lang), None, None, label)
        for v in p648:
            out.add(s, "P648", string_term(v), None, None, v)


_PREFILTER_WORK = b'"P50"'
_PREFILTER_HUMAN = (b'"P106"', b'"P569"', b'"id":"Q5"')


def json_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    """Worker: one chunk of the JSON dump (``[``, ``{entity},`` lines, ``]``) -> a Parquet part.

    Lines are found and tested in place (``find`` on a range, a memoryview for the decoder): no
    line is copied, and the bytes of a line that fails the byte tests are only ever searched.
    """
    counts: Counter = Counter()
    rows = Rows()
    max_record = ctx["max_record"]
    occupation, birth, q5 = _PREFILTER_HUMAN
    view = memoryview(data)
    find = data.find
    size, start, lines = len(data), 0, 0
    while start < size:
        end = find(b"\n", start)
        if end < 0:
            end = size
        lines += 1
        line_start, start = start, end + 1
        # cheap byte tests first: most entities have neither P50 nor (P106, P569 and Q5). "P50"
        # first: it sits early in a work's claims, so most lines stop searching there, and a line
        # that has it is decoded in full (a human with a P50 is still read as a human).
        maybe_work = find(_PREFILTER_WORK, line_start, end) >= 0
        maybe_human = maybe_work or (
            find(occupation, line_start, end) >= 0
            and find(birth, line_start, end) >= 0
            and find(q5, line_start, end) >= 0
        )
        if not maybe_human:
            continue
        if end - line_start > max_record:
            counts["oversized"] += 1
            continue
        while end > line_start and data[end - 1] in b" \r\t,":  # the separator after each entity
            end -= 1
        # a bad record is a counted skip by reason, never the end of a 130 GB run
        try:
            entity = _DECODE_ENTITY(view[line_start:end])
        except msgspec.ValidationError:
            counts["type"] += 1  # a value of the wrong JSON type where a field is read
            continue
        except msgspec.DecodeError:
            counts["malformed"] += 1
            continue
        except UnicodeDecodeError:
            counts["decode"] += 1  # invalid UTF-8
            continue
        except RecursionError:
            counts["depth"] += 1  # nested deeper than the decoder goes
            continue
        entity_rows(entity, ctx, counts, rows)
    counts["lines"] += lines
    _write_rows(rows, parts_dir, index)
    return dict(counts)


# --- the full N-Triples dump ----------------------------------------------------------------

_ENTITY = f"<{WD}Q".encode()
_DATA_NODE = b"<https://www.wikidata.org/wiki/Special:EntityData/Q"
_PREDICATES = {
    "P31": f"> <{WDT}P31> <{WD}Q5> .".encode(),
    "scholarly": f"> <{WDT}P31> <{WD}Q".encode(),  # P31 one of SCHOLARLY
    SCHOLARLY_PROPERTY: f"> <{WDT}{SCHOLARLY_PROPERTY}> ".encode(),
    "P106": f"> <{WDT}P106> ".encode(),
    "P569": f"> <{WDT}P569> ".encode(),
    "P648": f"> <{WDT}P648> ".encode(),
    "P50": f"> <{WDT}P50> ".encode(),
    "label": b'> <http://www.w3.org/2000/01/rdf-schema#label> "',
    "sitelinks": b'> <http://wikiba.se/ontology#sitelinks> "',
}
_NT_ITEM = re.compile(rf"<{re.escape(WD)}Q(\d+)>")
_NT_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_NT_LABEL = re.compile(r'"((?:[^"\\]|\\.)*)"@(en|mul)')
_NT_DATE = re.compile(r'"([^"]*)"\^\^<http://www\.w3\.org/2001/XMLSchema#dateTime>')
_NT_INT = re.compile(r'"(\d+)"\^\^<http://www\.w3\.org/2001/XMLSchema#integer>')
_NT_LEXICAL = re.compile(r"(-?)(\d{4,})-(\d\d)-(\d\d)T00:00:00Z")


def _nt_row(p: str, s: int, obj: str, ctx: dict, counts: Counter) -> tuple | None:
    if p == SCHOLARLY_PROPERTY:
        return (s, "scholarly", None, None, None, None)
    if p == "scholarly":
        match = _NT_ITEM.fullmatch(obj)
        return (s, p, None, None, None, None) if match and len(match[1]) <= 19 and int(match[1]) in SCHOLARLY else None
    if p in ("P31", "P106", "P50"):
        match = _NT_ITEM.fullmatch(obj)
        if not match:
            return None  # an unknown value (blank node) or not an item: not a link
        o = int(match[1]) if len(match[1]) <= 19 else MAX_ITEM + 1
        if o > MAX_ITEM:
            counts["range"] += 1
            return None
        if p == "P106" and o not in ctx["occupations"]:
            return None
        return (s, p, None, o, None, None)
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
        value = _unescaped(match[1], counts)
        return None if value is None else (s, p, string_term(value), None, None, value)
    if p == "label":
        match = _NT_LABEL.fullmatch(obj)
        if not match:
            return None  # another language
        value = _unescaped(match[1], counts)
        return None if value is None else (s, p, label_term(value, match[2]), None, None, value)
    match = _NT_INT.fullmatch(obj)  # sitelinks
    if not match:
        counts["malformed"] += 1
        return None
    return (s, p, sitelinks_term(int(match[1])), None, None, str(int(match[1])))


def _unescaped(text: str, counts: Counter) -> str | None:
    """A literal's text with its escapes undone (kitab.sources.ntriples' strict reader: a surrogate
    or unknown escape is an error there); a bad one is counted as malformed, never fatal."""
    try:
        return nt_unescape(text)
    except ValueError:
        counts["malformed"] += 1
        return None


def nt_chunk(data: bytes, ctx: dict, parts_dir: Path, index: int) -> dict:
    """Worker: one chunk of ``latest-all.nt.gz`` -> a Parquet part.

    Only the lines of nine predicates are looked at, found with ``bytes.find`` (C speed) rather
    than by splitting every line; the subject must be an item (the sitelink count: its data node).
    """
    counts: Counter = Counter()
    rows = Rows()
    for p, needle in _PREDICATES.items():
        subject_prefix = _DATA_NODE if p == "sitelinks" else _ENTITY
        pos = data.find(needle)
        while pos >= 0:
            start = data.rfind(b"\n", 0, pos) + 1
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end
            subject = data[start:pos]
            line_end = data[pos + 2 : end].rstrip()
            pos = data.find(needle, end)
            if not subject.startswith(subject_prefix) or not subject[len(subject_prefix) :].isdigit():
                continue
            if not line_end.endswith(b" ."):
                counts["malformed"] += 1
                continue
            digits = subject[len(subject_prefix) :]
            s = int(digits) if len(digits) <= 19 else MAX_ITEM + 1
            if s > MAX_ITEM:
                counts["range"] += 1
                continue
            try:
                text = line_end[:-2].decode("ascii")
            except UnicodeDecodeError:
                counts["decode"] += 1  # N-Triples dumps are pure ASCII (\\u escapes)
                continue
            obj = text.split(" ", 1)[1] if " " in text else ""
            row = _nt_row(p, s, obj.strip(), ctx, counts)
            if row is not None:
                rows.add(*row)
    counts["lines"] += data.count(b"\n")
    _write_rows(rows, parts_dir, index)
    return dict(counts)


# --- parts --------------------------------------------------------------------------------


def _write_rows(rows: Rows, parts_dir: Path, index: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kitab.sources.from_dumps.scan import part_path, write_part

    if not len(rows):
        return
    s, p, o, oq, year, v = rows.columns
    table = pa.table(
        {
            "s": pa.array(s, pa.int64()),
            "p": pa.array(p, pa.string()).dictionary_encode(),
            "o": pa.array(o, pa.string()),
            "oq": pa.array(oq, pa.int64()),
            "year": pa.array(year, pa.int32()),
            "v": pa.array(v, pa.string()),
        }
    )
    write_part(part_path(parts_dir, index, ".parquet"), lambda tmp: pq.write_table(table, tmp, compression="zstd"))
