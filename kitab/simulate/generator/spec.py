"""What the generator will write, one author at a time, before any record exists.

An :class:`AuthorSpec` says who an author is on WikiData and on Open Library and which books
they have; :mod:`kitab.simulate.generator.emit` turns it into triples and dump records. Builders here
make the specs for the seed rows and for generated filler authors; :mod:`kitab.simulate.generator.cases`
makes the deliberate edge cases.
"""

from __future__ import annotations

import itertools
import random
import unicodedata
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date

from kitab.simulate.generator import curated, words
from kitab.simulate.generator.seed import KitabAuthor, RomanceAuthor

REAL, CURATED, SYNTHETIC = "real", "curated", "synthetic"
SYNTHETIC_ID_BASE = 990_000_000  # every generated QID / OL key number is above this; real ids are far below
MIN_BIRTH_YEAR = 1850  # the candidate filter's birth-year floor
WD_WORKS_RANGE = (10, 300)  # the candidate filter's bounds on works with P50


def rng_for(seed: int, *parts: object) -> random.Random:
    """An independent random stream per (seed, purpose): adding authors never shifts earlier ones."""
    return random.Random(":".join(map(str, (seed, *parts))))


class Ids:
    """Allocates synthetic WikiData and Open Library ids, in order, above :data:`SYNTHETIC_ID_BASE`."""

    def __init__(self) -> None:
        self._last = {"Q": SYNTHETIC_ID_BASE, "A": SYNTHETIC_ID_BASE, "W": SYNTHETIC_ID_BASE, "M": SYNTHETIC_ID_BASE}

    def qid(self) -> str:
        return f"Q{self._next('Q')}"

    def author(self) -> str:
        return f"/authors/OL{self._next('A')}A"

    def work(self) -> str:
        return f"/works/OL{self._next('W')}W"

    def edition(self) -> str:
        return f"/books/OL{self._next('M')}M"

    def _next(self, kind: str) -> int:
        self._last[kind] += 1
        return self._last[kind]

    def ranges(self) -> dict[str, list[str] | None]:
        """First and last generated id of each kind (``None`` if none was made)."""
        names = {
            "Q": ("qids", "Q{}"),
            "A": ("ol_authors", "OL{}A"),
            "W": ("ol_works", "OL{}W"),
            "M": ("ol_editions", "OL{}M"),
        }
        return {
            name: [pattern.format(SYNTHETIC_ID_BASE + 1), pattern.format(self._last[kind])]
            if self._last[kind] > SYNTHETIC_ID_BASE
            else None
            for kind, (name, pattern) in names.items()
        }


@dataclass
class BookSpec:
    title: str
    year: int | None  # first publication year; None = unknown (no dates anywhere)
    origin: str  # REAL (seed), CURATED or SYNTHETIC title
    subtitle: str | None = None
    language: str | None = "eng"  # code on its first edition; None = every edition untagged
    key: str | None = None  # the work key, when known before emission (real works, case works)
    coauthors: tuple[str, ...] = ()  # other authors' OL keys, in order, after the host
    edition_count: int | None = None  # None = drawn at emission
    publish_dates: tuple[str, ...] | None = None  # exact edition dates (overrides year/edition_count)
    in_wikidata: bool = True  # may get a WikiData work item
    wd_author: str | None = None  # QID WikiData names as its author, if not the host


@dataclass
class AuthorSpec:
    slot: str  # stable name of this author's random stream
    name: str
    origin: str  # REAL if the person and ids come from the seed rows, else SYNTHETIC
    qid: str | None  # None = not on WikiData
    instance_of: tuple[str, ...] = (curated.HUMAN,)
    occupations: tuple[str, ...] = (curated.WRITER,)
    birth: date | None = None  # WikiData birth date (year precision is stored as January 1st)
    sitelinks: int = 0
    p648: str | None = None  # the Open Library id WikiData gives ("OL31120A"); may point nowhere
    ol_key: str | None = None  # the Open Library author record to write; None = not on Open Library
    ol_name: str | None = None  # Open Library's spelling of the name, when it differs from WikiData's
    ol_birth_date: str | None = None
    ol_death_date: str | None = None
    alternate_names: tuple[str, ...] = ()
    redirect_from: str | None = None  # an older OL key kept as a redirect to ol_key
    books: list[BookSpec] = field(default_factory=list)
    ol_works: int = 0  # Open Library works wanted in total; books are topped up with generated ones
    wd_works: int = 0  # WikiData works naming this author (P50), before any borrowed from others


# Since 2024 WikiData keeps a name that is the same in many languages under `mul` only, with no
# `en` label (Douglas Adams, Q42): a few % of the world's people are labelled so. A stable hash of
# the id decides, so the snapshot (emit.py) and the published dumps made from it (published.py,
# which reads the tag back) agree on who.
MUL_PERCENT = 4


def person_label_lang(qid: str) -> str:
    """``mul`` for about MUL_PERCENT % of people (by their id), else ``en``."""
    return "mul" if zlib.crc32(qid.encode()) % 100 < MUL_PERCENT else "en"


def is_candidate(spec: AuthorSpec, wd_works: int) -> bool:
    """The sampling filter: human, author (or a subclass), born 1850 or later, 10-300 works with P50."""
    author = any(occ in curated.WRITER_OCCUPATIONS for occ in spec.occupations)
    return (
        spec.qid is not None
        and curated.HUMAN in spec.instance_of
        and author
        and spec.birth is not None
        and spec.birth.year >= MIN_BIRTH_YEAR
        and WD_WORKS_RANGE[0] <= wd_works <= WD_WORKS_RANGE[1]
    )


# --- drawn quantities -------------------------------------------------------------------


def draw_ol_works(rng: random.Random) -> int:
    """Open Library works per author: mostly 5-60, some under 5 (dropped later), a few large."""
    r = rng.random()
    if r < 0.07:
        return rng.randint(1, 4)
    if r < 0.94:
        return 5 + int(55 * rng.random() ** 1.7)
    return rng.randint(61, 160)


def draw_wd_works(rng: random.Random) -> int:
    """WikiData works per candidate author: inside the filter's 10-300, mostly small."""
    return 10 + int(70 * rng.random() ** 2)


def ol_date(rng: random.Random, day: date, precise: bool) -> str:
    """A date the way Open Library author records write it (several styles occur)."""
    if not precise:
        return str(day.year)
    style = rng.choices(("dmy", "mdy", "iso", "year"), weights=(70, 15, 5, 10))[0]
    month = words.MONTHS[day.month - 1]
    if style == "dmy":
        return f"{day.day} {month} {day.year}"
    if style == "mdy":
        return f"{month} {day.day}, {day.year}"
    if style == "iso":
        return day.isoformat()
    return str(day.year)


def alternate_names(name: str) -> tuple[str, ...]:
    """Name forms Open Library commonly holds: "Last, First" and the unaccented spelling."""
    parts = name.split()
    forms = [f"{parts[-1]}, {' '.join(parts[:-1])}"] if len(parts) > 1 else []
    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    if plain != name:
        forms.append(plain)
    return tuple(forms)


# --- seed rows --------------------------------------------------------------------------


def kitab_spec(row: KitabAuthor, seed: int, ids: Ids) -> AuthorSpec:
    """A real KITAB author: real QID, name, birth year, sitelinks and OL id; books curated or generated."""
    rng = rng_for(seed, row.qid, "spec")
    facts = curated.AUTHORS.get(row.qid)
    birth = facts.birth if facts and facts.birth else date(row.birth_year, 1, 1)
    books = [
        # WikiData labels works in English, so only English titles get a work item here.
        # Famous books have many editions (which also makes them the authors' "top work").
        BookSpec(
            title,
            year,
            CURATED,
            language=language,
            key=ids.work(),
            edition_count=rng.randint(2, 12),
            in_wikidata=language == "eng",
        )
        for title, year, language in (facts.books if facts else ())
    ]
    return AuthorSpec(
        slot=row.qid,
        name=row.name,
        origin=REAL,
        qid=row.qid,
        occupations=facts.occupations if facts else (curated.WRITER,),
        birth=birth,
        sitelinks=row.sitelinks,
        p648=row.ol_id,
        ol_key=f"/authors/{row.ol_id}",
        ol_birth_date=ol_date(rng, birth, precise=bool(facts and facts.birth)),
        ol_death_date=facts.death_date if facts else None,
        alternate_names=alternate_names(row.name),
        books=books,
        # Curated bibliographies stay as written down, without generated titles mixed in.
        ol_works=len(books) if books else draw_ol_works(rng),
        wd_works=max(draw_wd_works(rng), min(len(books), WD_WORKS_RANGE[1])),
    )


def romance_specs(rows: list[RomanceAuthor], seed: int, ids: Ids) -> list[AuthorSpec]:
    """Real Open Library authors with their real works, given synthetic WikiData items.

    A work shared by two authors is written once, under the first, listing both.
    """
    authors_of: dict[str, list[str]] = {}
    for row in rows:
        for work in row.works:
            authors_of.setdefault(work.key, []).append(f"/authors/{row.ol_id}")
    specs = []
    for row in rows:
        rng = rng_for(seed, row.ol_id, "spec")
        key = f"/authors/{row.ol_id}"
        books = [
            BookSpec(
                work.title,
                work.first_publish_year,
                REAL,
                language=curated.ROMANCE_LANGUAGES.get(work.title, "eng"),
                key=work.key,
                coauthors=tuple(k for k in authors_of[work.key] if k != key),
                edition_count=work.edition_count,
            )
            for work in row.works
            if authors_of[work.key][0] == key
        ]
        # The seed gives no birth year for some; WikiData gets a synthetic one so the author can be sampled.
        birth_year = row.birth_year or rng.randint(1950, 1995)
        specs.append(
            AuthorSpec(
                slot=row.ol_id,
                name=row.name,
                origin=REAL,
                qid=ids.qid(),
                occupations=(curated.NOVELIST,),
                birth=date(birth_year, 1, 1),
                sitelinks=rng.randint(0, 30),
                p648=row.ol_id,
                ol_key=key,
                ol_birth_date=str(row.birth_year) if row.birth_year else None,
                ol_death_date=str(row.death_year) if row.death_year else None,
                alternate_names=alternate_names(row.name),
                books=books,
                ol_works=max(len(books), draw_ol_works(rng)),
                wd_works=draw_wd_works(rng),
            )
        )
    return specs


# --- generated authors ------------------------------------------------------------------


def filler_specs(seed: int, ids: Ids, used_names: set[str]) -> Iterator[AuthorSpec]:
    """An endless stream of synthetic candidate authors with unique names."""
    for index in itertools.count(1):
        rng = rng_for(seed, "filler", index)
        name = words.person_name(rng)
        while name in used_names:
            name = words.person_name(rng)
        used_names.add(name)
        birth = date(int(rng.triangular(MIN_BIRTH_YEAR, 1995, 1945)), rng.randint(1, 12), rng.randint(1, 28))
        precise = rng.random() < 0.6
        if not precise:
            birth = date(birth.year, 1, 1)
        ol_key = ids.author() if rng.random() < 0.97 else None
        # A few lack P648 although they are on Open Library: the matcher must use name + birth year.
        linked = ol_key is not None and rng.random() < 0.95
        yield AuthorSpec(
            slot=f"filler-{index}",
            name=name,
            origin=SYNTHETIC,
            qid=ids.qid(),
            occupations=tuple(sorted(set(rng.sample(curated.WRITER_OCCUPATIONS, rng.choice((1, 1, 2)))))),
            birth=birth,
            sitelinks=min(150, int(rng.expovariate(1 / 10))),
            p648=ol_key.rsplit("/", 1)[-1] if linked else None,
            ol_key=ol_key,
            ol_birth_date=ol_date(rng, birth, precise) if rng.random() < 0.9 else None,
            alternate_names=alternate_names(name) if rng.random() < 0.4 else (),
            ol_works=draw_ol_works(rng),
            wd_works=draw_wd_works(rng),
        )
