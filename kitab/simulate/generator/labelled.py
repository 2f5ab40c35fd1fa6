"""A snapshot whose candidates are exactly some labelled bibliographies (benchmarks/key_truth.py).

Input: ``author_books_*.tsv`` files (header ``author, qid, birth_year, title, year, human,
city``; ``human`` / ``city`` are the gold span texts, ``; ``-separated, empty = none, as in
benchmarks/data/entity_titles.tsv). Output: a snapshot folder in the contract format
(docs/snapshot.md) written with the generator's writer (emit.SnapshotWriter): per author a
WikiData person (human, writer, born ``birth_year``, sitelinks, a P648 to its Open Library
author, and 10 or more works naming it with P50, so the sample filter keeps it) and an Open
Library author with one work and one English edition per labelled title, dated its year.
Nothing else: no records (subjects), no other authors, no WikiData work titled like a labelled
one (so no title looks borrowed from another author). The labels come back keyed by work key,
which ``title_variants.work_key`` carries through the pipeline.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

from kitab.core.errors import BadValue
from kitab.simulate.generator import curated
from kitab.simulate.generator.emit import SnapshotWriter, emit_ontology
from kitab.simulate.generator.spec import WD_WORKS_RANGE, Ids
from kitab.sources.snapshot.format import (
    OL_AUTHOR,
    OL_AUTHORS_FILE,
    OL_EDITION,
    OL_EDITIONS_FILE,
    OL_WORK,
    OL_WORKS_FILE,
    RDFS_LABEL,
    WIKIBASE_SITELINKS,
    date_literal,
    integer_literal,
    iri,
    literal,
    wd,
    wdt,
)
from kitab.sources.snapshot.manifest import write_manifest

COLUMNS = ("author", "qid", "birth_year", "title", "year", "human", "city")
KINDS = ("human", "city")
SITELINKS = 40
STAMP = (1, "2020-01-01T00:00:00.000000", "2020-01-01T00:00:00.000000")  # every record's revision and dates
_QID = re.compile(r"Q[1-9][0-9]*")


@dataclass
class LabelledTitle:
    title: str
    year: int | None
    spans: dict[str, tuple[str, ...]]  # kind -> gold span texts (empty: the title names none)

    def label(self, kind: str) -> str:
        return "yes" if self.spans[kind] else "no"


@dataclass
class LabelledAuthor:
    name: str
    qid: str  # "" = none given: the snapshot gives a generated one
    birth_year: int
    titles: list[LabelledTitle] = field(default_factory=list)


def _year(text: str, where: str, what: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not re.fullmatch(r"-?[0-9]{1,4}", text):
        raise BadValue(f"{where}: {what} {text!r}: a year such as 1987")
    return int(text)


def read_bibliographies(paths: list[Path]) -> list[LabelledAuthor]:
    """The authors of the TSV files, in file order; an author is (qid, or else name). A missing
    column or a bad year is a BadValue naming the file and line."""
    authors: dict[str, LabelledAuthor] = {}
    for path in paths:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise BadValue(f"{path}: no column {', '.join(missing)} (header: {chr(9).join(COLUMNS)})")
            for row in reader:
                where = f"{path} line {reader.line_num}"
                name, qid, title = (row["author"] or "").strip(), (row["qid"] or "").strip(), row["title"] or ""
                if not name or not title.strip():
                    raise BadValue(f"{where}: author and title must not be empty")
                if qid and not _QID.fullmatch(qid):
                    raise BadValue(f"{where}: qid {qid!r}: a WikiData id such as Q5878, or empty")
                birth = _year(row["birth_year"] or "", where, "birth_year")
                if birth is None:
                    raise BadValue(f"{where}: birth_year is empty (the sample filter needs one)")
                author = authors.setdefault(qid or f"name:{name}", LabelledAuthor(name, qid, birth))
                if author.birth_year != birth:
                    raise BadValue(f"{where}: birth_year {birth}, but {author.birth_year} on an earlier row of {name}")
                spans = {k: tuple(s.strip() for s in (row[k] or "").split(";") if s.strip()) for k in KINDS}
                author.titles.append(LabelledTitle(title, _year(row["year"] or "", where, "year"), spans))
    return list(authors.values())


def write_labelled_snapshot(folder: Path, authors: list[LabelledAuthor]) -> dict[str, tuple[str, str, LabelledTitle]]:
    """Write the snapshot of ``authors`` into ``folder`` (created); returns work key -> (author
    qid, author name, its labelled title). Generated ids are numbered above the real ones (spec.Ids)."""
    folder.mkdir(parents=True, exist_ok=True)
    ids = Ids()
    out = SnapshotWriter(folder)
    works: dict[str, tuple[str, str, LabelledTitle]] = {}
    emit_ontology(out)
    last_year = 2023
    for author in authors:
        qid = author.qid or ids.qid()
        ol_key = ids.author()
        person = wd(qid)
        out.triple(person, iri(RDFS_LABEL), literal(author.name, lang="en"))
        out.triple(person, wdt("P31"), wd(curated.HUMAN))
        out.triple(person, wdt("P106"), wd(curated.WRITER))
        out.triple(person, wdt("P569"), date_literal(author.birth_year))
        out.triple(person, wdt("P648"), literal(ol_key.rsplit("/", 1)[-1]))
        out.triple(person, iri(WIKIBASE_SITELINKS), integer_literal(SITELINKS))
        # the filter counts works with P50; their labels are no Open Library title
        for i in range(max(WD_WORKS_RANGE[0], min(len(author.titles), WD_WORKS_RANGE[1]))):
            item = wd(ids.qid())
            out.triple(item, iri(RDFS_LABEL), literal(f"{author.name}: WikiData work {i + 1}", lang="en"))
            out.triple(item, wdt("P31"), wd(curated.LITERARY_WORK))
            out.triple(item, wdt("P50"), person)
        record = {"key": ol_key, "type": {"key": OL_AUTHOR}, "name": author.name, "birth_date": str(author.birth_year)}
        out.record(OL_AUTHORS_FILE, OL_AUTHOR, STAMP, record)
        for labelled in author.titles:
            work_key = ids.work()
            works[work_key] = (qid, author.name, labelled)
            work = {"key": work_key, "type": {"key": OL_WORK}, "title": labelled.title}
            work["authors"] = [{"author": {"key": ol_key}, "type": {"key": "/type/author_role"}}]
            edition = {"key": ids.edition(), "type": {"key": OL_EDITION}, "title": labelled.title}
            edition["authors"] = [{"key": ol_key}]
            edition["works"] = [{"key": work_key}]
            edition["languages"] = [{"key": "/languages/eng"}]
            if labelled.year is not None:
                work["first_publish_date"] = edition["publish_date"] = str(labelled.year)
                last_year = max(last_year, labelled.year)
            out.record(OL_WORKS_FILE, OL_WORK, STAMP, work)
            out.record(OL_EDITIONS_FILE, OL_EDITION, STAMP, edition)
    out.close()
    # the as-of date after every labelled year, so no real year reads as "in the future"
    write_manifest(folder, as_of=f"{last_year + 1}-01-01")
    return works
