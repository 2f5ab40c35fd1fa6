"""Turn author specs into WikiData triples and Open Library dump records, streamed to disk.

Dump lines are written as they are made (gzip streams), so memory stays flat however many
authors there are. N-Triples must come out sorted, so triples are sorted in bounded chunks
("runs") on disk and merged at the end: an external sort.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import random
import zlib
from collections import Counter
from dataclasses import replace
from datetime import date, datetime, timedelta
from pathlib import Path

from kitab.simulate.generator import curated, words
from kitab.simulate.generator.records import label_language, wikidata_record, work_record
from kitab.simulate.generator.spec import SYNTHETIC, AuthorSpec, BookSpec, Ids, person_label_lang
from kitab.sources.snapshot.format import (
    OL_AUTHOR,
    OL_AUTHORS_FILE,
    OL_EDITION,
    OL_EDITIONS_FILE,
    OL_REDIRECT,
    OL_WORK,
    OL_WORKS_FILE,
    RDFS_LABEL,
    WIKIBASE_SITELINKS,
    WIKIDATA_FILE,
    date_literal,
    deterministic_gzip,
    integer_literal,
    iri,
    literal,
    ol_dump_line,
    triple,
    wd,
    wdt,
)
from kitab.sources.snapshot.olindex import tokens

EARLIEST_RECORD = datetime(2008, 4, 1)  # Open Library's records start around then
LANGUAGES = ("eng", "fre", "ger", "spa", "ita")
LEADING_ARTICLES = ("the", "a", "an")


class SnapshotWriter:
    """Streams triples and dump lines into a snapshot folder; triples are sorted on :meth:`close`."""

    def __init__(self, folder: Path, run_lines: int = 200_000):
        self.folder = folder
        self.counts: Counter[str] = Counter()
        # Generated title keys already given to any author: see _new_title.
        self.generated_titles: set[tuple[str, ...]] = set()
        # (work item, property, field, name) of the works' P674 / P840: their target items get
        # QIDs only after every author (emit_record_items), so no other id moves
        self.record_links: list[tuple[str, str, str, str]] = []
        # tests' worlds only (generate_snapshot(both_labels=True)): some items get a `mul` label
        # beside their `en` one, differing from it, so readers' "en, else mul" rule is exercised
        self.both_labels = False
        self._run_lines = run_lines
        self._pending: list[str] = []
        self._runs: list[Path] = []
        self._files = contextlib.ExitStack()
        self._dumps = {
            name: self._files.enter_context(deterministic_gzip(folder / name))
            for name in (OL_AUTHORS_FILE, OL_WORKS_FILE, OL_EDITIONS_FILE)
        }

    def triple(self, subject: str, predicate: str, obj: str) -> None:
        self._pending.append(triple(subject, predicate, obj))
        if len(self._pending) >= self._run_lines:
            self._spill()

    def record(self, dump: str, record_type: str, stamp: tuple[int, str, str], record: dict) -> None:
        """Write one dump line; ``stamp`` is (revision, created, last_modified), also put into the JSON."""
        revision, created, modified = stamp
        record.update(
            revision=revision,
            latest_revision=revision,
            created={"type": "/type/datetime", "value": created},
            last_modified={"type": "/type/datetime", "value": modified},
        )
        self._dumps[dump].write(ol_dump_line(record_type, record["key"], revision, modified, record) + "\n")
        self.counts[record_type] += 1

    def close(self) -> None:
        """Finish the dumps and write ``wikidata.nt.gz``: the merged runs, sorted, without duplicates."""
        self._files.close()
        self._pending.sort()
        with contextlib.ExitStack() as runs:
            sources = [iter(self._pending)]
            sources += [runs.enter_context(open(path, encoding="utf-8", newline="\n")) for path in self._runs]
            with deterministic_gzip(self.folder / WIKIDATA_FILE) as out:
                previous = None
                for line in heapq.merge(*sources):
                    line = line.rstrip("\n")
                    if line != previous:
                        out.write(line + "\n")
                        self.counts["triples"] += 1
                    previous = line
        for path in self._runs:
            path.unlink()
        self._pending = []

    def _spill(self) -> None:
        self._pending.sort()
        path = self.folder / f".triples-run-{len(self._runs)}.nt"
        path.write_text("".join(line + "\n" for line in self._pending), encoding="utf-8")
        self._runs.append(path)
        self._pending = []


def emit_ontology(out: SnapshotWriter) -> None:
    """The classes and occupations the snapshot uses, with labels and the author subclass tree."""
    for qid, label in curated.LABELS.items():
        out.triple(wd(qid), iri(RDFS_LABEL), literal(label, lang="en"))
    for sub, sup in curated.SUBCLASS_OF.items():
        out.triple(wd(sub), wdt("P279"), wd(sup))


def emit_author(out: SnapshotWriter, ids: Ids, spec: AuthorSpec, rng: random.Random, created_at: datetime) -> None:
    """Write everything about one author: WikiData person and works, Open Library records."""
    books = []
    if spec.ol_key:  # work keys are fixed first, so WikiData items can link to them (P648)
        books = [
            replace(b, key=b.key or ids.work())
            for b in _with_generated_books(spec, rng, created_at.year, out.generated_titles)
        ]
    if spec.qid:
        _emit_person(out, spec)
        _emit_wikidata_works(out, ids, spec, books, rng, created_at.year)
    if spec.ol_key:
        _emit_ol_author(out, spec, rng, created_at)
        for book in books:
            _emit_ol_work(out, ids, spec.ol_key, book, rng, created_at)


# --- WikiData ---------------------------------------------------------------------------


def has_both_labels(qid: str) -> bool:
    """With ``both_labels``: about a third of the items labelled in English (by their id)."""
    return zlib.crc32(f"both-labels:{qid}".encode()) % 3 == 0


def mul_label(name: str) -> str:
    """The `mul` label of an item that has an `en` one: another text, so a reader that took it
    instead of the English label is seen; it sorts first, so one that kept both and took the
    least (SPARQL's SAMPLE, a MIN) is seen too."""
    return f"(mul) {name}"


def _emit_person(out: SnapshotWriter, spec: AuthorSpec) -> None:
    subject = wd(spec.qid)
    lang = person_label_lang(spec.qid)
    out.triple(subject, iri(RDFS_LABEL), literal(spec.name, lang=lang))
    if out.both_labels and lang == "en" and has_both_labels(spec.qid):
        out.triple(subject, iri(RDFS_LABEL), literal(mul_label(spec.name), lang="mul"))
        out.counts["wd_both_labels"] += 1
    for cls in spec.instance_of:
        out.triple(subject, wdt("P31"), wd(cls))
    for occupation in spec.occupations:
        out.triple(subject, wdt("P106"), wd(occupation))
    if spec.birth:
        out.triple(subject, wdt("P569"), date_literal(spec.birth.year, spec.birth.month, spec.birth.day))
    if spec.p648:
        out.triple(subject, wdt("P648"), literal(spec.p648))
    out.triple(subject, iri(WIKIBASE_SITELINKS), integer_literal(spec.sitelinks))
    out.counts["wd_people"] += 1


def _emit_wikidata_works(
    out: SnapshotWriter, ids: Ids, spec: AuthorSpec, books: list[BookSpec], rng: random.Random, created_year: int
) -> None:
    """``spec.wd_works`` works naming the author: their Open Library titles first, then WikiData-only ones.

    Books that WikiData credits to someone else get an item naming that person instead.
    """
    own: dict[str, BookSpec] = {}
    for book in books:
        if book.in_wikidata and book.title.strip() and book.wd_author is None:
            own.setdefault(book.title, book)
    items = [(title, book.key, spec.qid) for title, book in list(own.items())[: spec.wd_works]]
    seen = {_title_key(book.title) for book in books}
    while len(items) < spec.wd_works:
        title = words.short_work_title(rng)
        if _title_key(title) not in seen:
            seen.add(_title_key(title))
            items.append((title, None, spec.qid))
    items += [(book.title, book.key, book.wd_author) for book in books if book.in_wikidata and book.wd_author]
    for title, work_key, author in items:
        qid = ids.qid()
        item = wd(qid)
        if work_key and author == spec.qid and title in own:
            for field, names in wikidata_record(own[title]).items():
                out.record_links += [(qid, RECORD_PROPERTY[field], field, name) for name in names]
        out.triple(item, iri(RDFS_LABEL), literal(title, lang="en"))
        # Mostly "literary work", some plain "written work": the count must not depend on P31.
        out.triple(item, wdt("P31"), wd(curated.LITERARY_WORK if rng.random() < 0.9 else curated.WRITTEN_WORK))
        out.triple(item, wdt("P50"), wd(author))
        if work_key and rng.random() < 0.5:  # WikiData links about half its works to Open Library
            out.triple(item, wdt("P648"), literal(work_key.rsplit("/", 1)[-1]))
        out.counts["wd_works"] += 1


RECORD_PROPERTY = {"characters": "P674", "narrative_locations": "P840"}


def emit_record_items(out: SnapshotWriter, ids: Ids) -> None:
    """The characters and places the works' P674 / P840 name: one item per (field, name), numbered
    after every other generated id, labelled in English (some characters only "mul")."""
    targets: dict[tuple[str, str], str] = {}
    for work, prop, field, name in out.record_links:
        if (field, name) not in targets:
            targets[field, name] = ids.qid()
            lang = label_language(name) if field == "characters" else "en"
            out.triple(wd(targets[field, name]), iri(RDFS_LABEL), literal(name, lang=lang))
            if out.both_labels and lang == "en" and has_both_labels(targets[field, name]):
                out.triple(wd(targets[field, name]), iri(RDFS_LABEL), literal(mul_label(name), lang="mul"))
                out.counts["wd_both_labels"] += 1
            out.counts["wd_record_items"] += 1
        out.triple(wd(work), wdt(prop), wd(targets[field, name]))
        out.counts["wd_record_links"] += 1
    out.record_links = []


# --- Open Library -----------------------------------------------------------------------


def _emit_ol_author(out: SnapshotWriter, spec: AuthorSpec, rng: random.Random, created_at: datetime) -> None:
    record = {"key": spec.ol_key, "type": {"key": OL_AUTHOR}, "name": spec.ol_name or spec.name}
    if spec.alternate_names:
        record["alternate_names"] = list(spec.alternate_names)
    if spec.ol_birth_date:
        record["birth_date"] = spec.ol_birth_date
    if spec.ol_death_date:
        record["death_date"] = spec.ol_death_date
    out.record(OL_AUTHORS_FILE, OL_AUTHOR, _stamp(rng, created_at), record)
    if spec.redirect_from:
        redirect = {"key": spec.redirect_from, "type": {"key": OL_REDIRECT}, "location": spec.ol_key}
        out.record(OL_AUTHORS_FILE, OL_REDIRECT, _stamp(rng, created_at), redirect)


def _emit_ol_work(
    out: SnapshotWriter, ids: Ids, host: str, book: BookSpec, rng: random.Random, created_at: datetime
) -> None:
    author_keys = (host, *book.coauthors)
    record = {"key": book.key, "type": {"key": OL_WORK}, "title": book.title}
    if book.subtitle:
        record["subtitle"] = book.subtitle
    record["authors"] = [{"author": {"key": k}, "type": {"key": "/type/author_role"}} for k in author_keys]
    if book.year is not None and rng.random() < 0.6:
        record["first_publish_date"] = _publish_date(rng, book.year)
    record.update(work_record(book))  # its own stream: the draws above and below are unchanged
    out.record(OL_WORKS_FILE, OL_WORK, _stamp(rng, created_at), record)
    for index, publish_date in enumerate(_edition_dates(book, rng, created_at.year)):
        edition = {"key": ids.edition(), "type": {"key": OL_EDITION}, "title": book.title}
        if book.subtitle:
            edition["subtitle"] = book.subtitle
        edition["authors"] = [{"key": k} for k in author_keys]
        edition["works"] = [{"key": book.key}]
        language = _edition_language(book.language, first=index == 0, rng=rng)
        if language:
            edition["languages"] = [{"key": f"/languages/{language}"}]
        if publish_date:
            edition["publish_date"] = publish_date
        out.record(OL_EDITIONS_FILE, OL_EDITION, _stamp(rng, created_at), edition)


def _edition_dates(book: BookSpec, rng: random.Random, created_year: int) -> list[str | None]:
    """Edition publish dates: the first in the book's year, reprints later (never after the snapshot)."""
    if book.publish_dates is not None:
        return list(book.publish_dates)
    count = book.edition_count or rng.choices(range(1, 9), weights=(40, 22, 13, 8, 6, 4, 4, 3))[0]
    if book.year is None:
        return [None] * count
    years = [book.year] + [min(created_year, book.year + int(rng.expovariate(1 / 8))) for _ in range(count - 1)]
    return [_publish_date(rng, year) for year in years]


def _edition_language(language: str | None, first: bool, rng: random.Random) -> str | None:
    """The first edition carries the book's language; later ones may be untagged or translations."""
    if language is None or first:
        return language
    r = rng.random()
    if r < 0.75:
        return language
    if r < 0.87:
        return None
    return rng.choice([code for code in LANGUAGES if code != language])


def _publish_date(rng: random.Random, year: int) -> str:
    """An Open Library publish date in one of its common shapes: "1987", "March 1987", "1987-03-01"."""
    style = rng.choices(("year", "month", "iso"), weights=(60, 25, 15))[0]
    month = rng.randint(1, 12)
    if style == "year":
        return str(year)
    if style == "month":
        return f"{words.MONTHS[month - 1]} {year}"
    return f"{year:04d}-{month:02d}-{rng.randint(1, 28):02d}"


def _stamp(rng: random.Random, created_at: datetime) -> tuple[int, str, str]:
    """(revision, created, last_modified) for a record, all before the snapshot's date."""
    span = (created_at - EARLIEST_RECORD).total_seconds()
    created = EARLIEST_RECORD + timedelta(seconds=int(rng.random() * span * 0.9), microseconds=rng.randrange(10**6))
    modified = created + timedelta(seconds=int(rng.random() * (created_at - created).total_seconds()))
    revision = 1 + int(rng.expovariate(1 / 3))
    return revision, _timestamp(created), _timestamp(modified)


def _timestamp(moment: datetime) -> str:
    """Open Library's timestamp shape, "2021-03-02T12:00:00.000000" (isoformat is much faster than strftime)."""
    return moment.isoformat(timespec="microseconds")


# --- generated books --------------------------------------------------------------------


UNIQUE_TRIES = 40


def _title_key(title: str) -> tuple[str, ...]:
    """Titles that differ only in case, punctuation or a leading article count as the same."""
    words_ = tokens(title)
    return tuple(words_[1:] if words_[:1] and words_[0] in LEADING_ARTICLES else words_)


def _with_generated_books(
    spec: AuthorSpec, rng: random.Random, created_year: int, taken: set[tuple[str, ...]]
) -> list[BookSpec]:
    """The spec's books topped up with generated ones to ``spec.ol_works``, none clashing in title."""
    books = list(spec.books)
    seen = {_title_key(book.title) for book in books}
    while len(books) < spec.ol_works:
        book = _generated_book(rng, seen, taken, spec.birth, created_year)
        books.append(book)
        # Open Library often holds one book as several works (reprints, retitled editions):
        # the case dedup_titles exists for, so generated bibliographies have it too.
        if len(books) < spec.ol_works and book.language == "eng" and rng.random() < VARIANT_RATE:
            books.append(_variant_of(book, rng, created_year))
    return books


VARIANT_RATE = 0.08
_NUMBER_WORDS = {"Two": "2", "Three": "3", "Seven": "7", "Twelve": "12", "Forty": "40", "A Thousand": "1000"}


def _variant_of(book: BookSpec, rng: random.Random, created_year: int) -> BookSpec:
    """Another Open Library work of the same book: a later reprint under a variant title
    (subtitle, case, leading article, & / and, numerals), not on WikiData."""
    title = book.title
    words_ = title.split()
    choices = [f"{title}: A Novel", f"{title}: {rng.choice(words.SUBTITLES)}", title.upper(), title.lower()]
    if words_[0] in ("The", "A", "An") and len(words_) > 1:
        choices.append(" ".join(words_[1:]))
    if " & " in title or " and " in title:
        choices.append(title.replace(" & ", " and ") if " & " in title else title.replace(" and ", " & "))
    for word, digits in _NUMBER_WORDS.items():
        if title.startswith(word + " "):
            choices.append(digits + title[len(word) :])
    year = None if book.year is None else min(created_year, book.year + rng.randint(0, 30))
    return BookSpec(rng.choice(choices), year, book.origin, language=book.language, in_wikidata=False)


def _generated_book(
    rng: random.Random, seen: set[tuple[str, ...]], taken: set[tuple[str, ...]], birth: date | None, created_year: int
) -> BookSpec:
    """A synthetic book whose title is new to ``seen`` (which it extends)."""
    title, language = _new_title(rng, seen, taken)
    subtitle = rng.choice(words.SUBTITLES) if rng.random() < 0.08 else None
    return BookSpec(title, _draw_year(rng, birth, created_year), SYNTHETIC, subtitle=subtitle, language=language)


def _new_title(rng: random.Random, seen: set[tuple[str, ...]], taken: set[tuple[str, ...]]) -> tuple[str, str | None]:
    """A generated title not in ``seen`` (this author's, which it extends) and its language
    (None = untagged). It also avoids ``taken`` (every author's generated titles) for up to
    UNIQUE_TRIES draws: two authors with a same-titled book, one of them on WikiData, would
    look like a misattribution that nobody planted. Large snapshots exhaust the word lists,
    and then titles repeat across authors, as real ones sometimes do."""
    foreign = rng.random() < 0.12  # decided once, so retries do not shift the language mix
    untagged = rng.random() < (0.3 if foreign else 0.12)
    for attempt in itertools.count():
        title, language = words.foreign_title(rng) if foreign else (words.english_title(rng), "eng")
        key = _title_key(title)
        if key not in seen and (key not in taken or attempt >= UNIQUE_TRIES):
            seen.add(key)
            taken.add(key)
            return title, None if untagged else language


def _draw_year(rng: random.Random, birth: date | None, created_year: int) -> int | None:
    """A first-publication year in the author's working life (a few books have none)."""
    if rng.random() < 0.03:
        return None
    start = min(created_year, (birth.year if birth else 1930) + 22)
    end = min(created_year, start + 60)
    return start + int((end - start) * rng.random() ** 0.8)
