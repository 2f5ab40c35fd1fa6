"""The deliberate edge cases: the authors and books that exercise each pipeline stage's hard paths.

:func:`build_cases` makes the synthetic case authors, marks the case books among the curated
KITAB authors, and returns, for ``MANIFEST.json["cases"]``, every case with its description
and the ids that exercise it (``items``). Tests and the demo read the manifest, never this
module's names, so ids can move without breaking them.
"""

from __future__ import annotations

from datetime import date

from kitab.simulate.generator import curated, words
from kitab.simulate.generator.spec import SYNTHETIC, AuthorSpec, BookSpec, Ids

# KITAB authors (by QID) whose curated books or seed rows some case uses; always included.
KITAB_CASE_AUTHORS = ("Q5878", "Q72334", "Q47293", "Q83566", "Q35155", "Q208101", "Q76498", "Q552372", "Q6120194")

DESCRIPTIONS = {
    # the candidate filter
    "born_before_1850": "writers born before 1850 (fail the birth-year filter)",
    "too_few_wd_works": "writers with fewer than 10 WikiData works (P50)",
    "too_many_wd_works": "a writer with more than 300 WikiData works (P50)",
    "filter_boundaries": "candidates exactly on a filter bound (must pass)",
    "not_human": "writer-like items with works that are not humans (P31 is not Q5)",
    "not_writer": "humans with works whose occupations are not writer or a subclass of it",
    "no_birth_date": "a writer without a birth date (P569)",
    "writer_by_subclass_only": "a writer whose only occupation reaches writer in two P279 steps (science fiction writer)",
    "seed_birth_year_2000": "a real KITAB row whose birth year (2000) is odd in the source itself",
    # matching WikiData to Open Library
    "no_p648": "writers without P648, on Open Library under the same name (maybe unaccented) and birth year",
    "homonym_ol_authors": "two Open Library authors share a name; only the birth year tells the right one "
    "(the wrong one has more works, so it is listed first)",
    "no_ol_match": "a writer with no P648 and nobody of that name on Open Library",
    "p648_missing_ol_author": "a P648 pointing to an Open Library author that does not exist",
    "p648_redirect": "a P648 pointing to an Open Library redirect record; its location is the real author",
    # fetching works
    "many_result_pages": "an author with more than 250 Open Library works: 4 pages at limit 100, the last partial",
    "works_under_5": "a candidate with fewer than 5 Open Library works",
    # cleaning and dedup
    "title_variants": "one book under several titles: subtitle, case, punctuation, leading article, "
    "100/one hundred, &/and",
    "title_is_author_name": "an Open Library work whose title is only the author's name",
    "non_english_titles": "non-English titles, with a language tag on their editions and without one",
    "multi_author_works": "works with 2, 3 and 4 authors (more than two marks an anthology, dropped later)",
    "wikidata_other_author": "a title Open Library lists under our author while WikiData's work of that title "
    "names another writer",
    "impossible_years": "editions with impossible publish years",
    "empty_titles": "works whose title is empty or only punctuation",
    # entity tagging
    "human_name_titles": "titles that contain a person's name",
    "city_name_titles": "titles that contain a city's name",
    "city_word_without_city": "a title with the word 'cities' but no city name",
}


class _Cases:
    """Collects ``{case: {"description": ..., "items": [...]}}`` in a fixed order."""

    def __init__(self) -> None:
        self.cases: dict[str, dict] = {}

    def add(self, case: str, **item: object) -> None:
        self.cases.setdefault(case, {"description": DESCRIPTIONS[case], "items": []})["items"].append(item)


def _bare(key: str) -> str:
    return key.rsplit("/", 1)[-1]


def _ol_birth_date(birth: date) -> str:
    if (birth.month, birth.day) == (1, 1):
        return str(birth.year)
    return f"{birth.day} {words.MONTHS[birth.month - 1]} {birth.year}"


def _author(
    ids: Ids,
    name: str,
    birth: date | None,
    *,
    wd_works: int = 20,
    ol_works: int = 20,
    on_wikidata: bool = True,
    on_ol: bool = True,
    p648: bool = True,
    instance_of: tuple[str, ...] = (curated.HUMAN,),
    occupations: tuple[str, ...] = (curated.NOVELIST,),
) -> AuthorSpec:
    """A synthetic case author; by default an ordinary candidate with 20 works on both sides."""
    ol_key = ids.author() if on_ol else None
    return AuthorSpec(
        slot=f"case:{name}:{birth.year if birth else ''}",
        name=name,
        origin=SYNTHETIC,
        qid=ids.qid() if on_wikidata else None,
        instance_of=instance_of,
        occupations=occupations,
        birth=birth,
        sitelinks=3,
        p648=_bare(ol_key) if ol_key and p648 else None,
        ol_key=ol_key,
        ol_birth_date=_ol_birth_date(birth) if birth and on_ol else None,
        ol_works=ol_works if on_ol else 0,
        wd_works=wd_works if on_wikidata else 0,
    )


def _book(spec: AuthorSpec, title: str) -> BookSpec:
    return next(book for book in spec.books if book.title == title)


def _add_book(ids: Ids, spec: AuthorSpec, title: str, year: int | None, **fields: object) -> BookSpec:
    book = BookSpec(title, year, SYNTHETIC, key=ids.work(), **fields)
    spec.books.append(book)
    return book


def build_cases(ids: Ids, kitab: dict[str, AuthorSpec], created_year: int) -> tuple[list[AuthorSpec], dict]:
    """Synthetic case authors (candidates and deliberate failures) and the manifest's ``cases``.

    ``kitab`` maps QID to the KITAB author specs; the curated ones among them are edited in
    place (variant titles are kept off WikiData, which has one item per book).
    """
    c = _Cases()
    specs: list[AuthorSpec] = []

    def new(name: str, birth: date | None, **options: object) -> AuthorSpec:
        spec = _author(ids, name, birth, **options)
        specs.append(spec)
        return spec

    # --- the candidate filter: failures and boundaries -----------------------------------
    for name, birth in (("Josiah Wetherall", date(1812, 4, 3)), ("Cordelia Ashby", date(1849, 11, 30))):
        c.add("born_before_1850", qid=new(name, birth).qid)
    for name, count in (("Silas Orme", 9), ("Tilda Marsh", 3)):
        c.add("too_few_wd_works", qid=new(name, date(1930, 6, 1), wd_works=count, ol_works=12).qid, wd_works=count)
    spec = new("Augusta Pennyworth", date(1921, 9, 14), wd_works=301, ol_works=40)
    c.add("too_many_wd_works", qid=spec.qid, wd_works=301)
    c.add("filter_boundaries", qid=new("Eleanor Voss", date(1850, 1, 1)).qid, bound="born 1850")
    spec = new("Rowan Ashcombe", date(1938, 3, 22), wd_works=10, ol_works=10)
    c.add("filter_boundaries", qid=spec.qid, bound="10 works")
    many = new("Horace Quill", date(1929, 7, 9), wd_works=300, ol_works=301)
    c.add("filter_boundaries", qid=many.qid, bound="300 works")
    for name, cls in (
        ("The Harrowgate Circle", curated.ORGANIZATION),
        ("Captain Lemuel Thorne", curated.FICTIONAL_HUMAN),
    ):
        c.add(
            "not_human", qid=new(name, date(1901, 1, 1), instance_of=(cls,), occupations=(curated.WRITER,)).qid, p31=cls
        )
    for name, occupation in (("Ronan Beaumont", curated.PAINTER), ("Greta Lindahl", curated.JOURNALIST)):
        c.add("not_writer", qid=new(name, date(1944, 2, 11), occupations=(occupation,)).qid, p106=occupation)
    c.add("no_birth_date", qid=new("Wynn Halvorsen", None).qid)
    spec = new("Lem Castellane", date(1958, 10, 5), occupations=(curated.SF_WRITER,))
    c.add("writer_by_subclass_only", qid=spec.qid, p106=curated.SF_WRITER)
    c.add("seed_birth_year_2000", qid=kitab["Q6120194"].qid, birth_year=kitab["Q6120194"].birth.year)

    # --- matching WikiData to Open Library --------------------------------------------
    for name, ol_name, birth in (
        ("Beatrix Holloway", None, date(1932, 7, 14)),
        ("José Ñúñez Ortega", "Jose Nunez Ortega", date(1948, 5, 30)),  # accents only on WikiData
    ):
        spec = new(name, birth, p648=False, ol_works=25)
        spec.ol_name = ol_name
        c.add("no_p648", qid=spec.qid, expected_ol_author=_bare(spec.ol_key))
    right = new("Daniel Whitcombe", date(1951, 5, 3), p648=False, ol_works=18)
    wrong = new("Daniel Whitcombe", date(1887, 1, 1), on_wikidata=False, ol_works=45)
    c.add(
        "homonym_ol_authors",
        qid=right.qid,
        ol_authors=[_bare(right.ol_key), _bare(wrong.ol_key)],
        expected_ol_author=_bare(right.ol_key),
    )
    c.add("no_ol_match", qid=new("Ingrid Solvang", date(1966, 12, 2), on_ol=False, wd_works=14).qid)
    spec = new("Percival Nash", date(1939, 8, 17), on_ol=False, wd_works=16)
    spec.p648 = _bare(ids.author())  # allocated, never written
    c.add("p648_missing_ol_author", qid=spec.qid, ol_author=spec.p648)
    spec = new("Marguerite Delaunay", date(1927, 4, 26), ol_works=22)
    spec.redirect_from = ids.author()
    spec.p648 = _bare(spec.redirect_from)
    c.add("p648_redirect", qid=spec.qid, ol_author=spec.p648, redirect_to=_bare(spec.ol_key))

    # --- fetching works ----------------------------------------------------------------
    c.add("many_result_pages", qid=many.qid, ol_author=_bare(many.ol_key), work_count=301)
    spec = new("Pippa Grey", date(1972, 1, 19), wd_works=12, ol_works=3)
    c.add("works_under_5", qid=spec.qid, ol_author=_bare(spec.ol_key))

    # --- cleaning and dedup ------------------------------------------------------------
    host = new("Clementine Arden", date(1955, 8, 8), ol_works=24)
    for group in (
        (
            ("The Winter Garden", None),
            ("Winter Garden", "A Novel"),
            ("THE WINTER GARDEN", None),
            ("The Winter-Garden.", None),
            ("A Winter Garden", None),
        ),
        (("An Ocean Apart", None), ("Ocean Apart", None)),
        (("Salt & Stone", None), ("Salt and Stone", None)),
    ):
        books = [
            _add_book(ids, host, title, 1984 + i, subtitle=subtitle, in_wikidata=i == 0)
            for i, (title, subtitle) in enumerate(group)
        ]
        c.add(
            "title_variants",
            ol_author=_bare(host.ol_key),
            ol_works=[_bare(b.key) for b in books],
            titles=[b.title for b in books],
        )
    for qid, titles in (
        ("Q5878", ("One Hundred Years of Solitude", "100 Years of Solitude")),
        ("Q35155", ("Mason & Dixon", "Mason and Dixon")),
        ("Q72334", ("Beloved", "Beloved: A Novel")),
    ):
        books = [_book(kitab[qid], title) for title in titles]
        for variant in books[1:]:
            variant.in_wikidata = False
        c.add(
            "title_variants",
            ol_author=_bare(kitab[qid].ol_key),
            ol_works=[_bare(b.key) for b in books],
            titles=list(titles),
        )
    name_only = _book(kitab["Q5878"], "Gabriel Garcia Marquez")
    name_only.in_wikidata = False
    c.add("title_is_author_name", ol_author=_bare(kitab["Q5878"].ol_key), ol_work=_bare(name_only.key))

    for qid, title in (
        ("Q5878", "Cien años de soledad"),
        ("Q5878", "El amor en los tiempos del cólera"),
        ("Q47293", "Im Westen nichts Neues"),
        ("Q83566", "La casa de los espíritus"),
        ("Q76498", "Die unendliche Geschichte"),
    ):
        book = _book(kitab[qid], title)
        c.add("non_english_titles", ol_work=_bare(book.key), title=title, language=book.language)
    for title, language in (("Le Jardin d'hiver", "fre"), ("El jardín de invierno", None)):
        book = _add_book(ids, host, title, 1992, language=language, in_wikidata=False)
        c.add("non_english_titles", ol_work=_bare(book.key), title=title, language=language)

    editor = new("Harriet Mabry", date(1948, 11, 3), ol_works=18)
    entities = new("Winifred Castellane", date(1957, 6, 21), ol_works=20)
    contributors = (host, entities, right)
    for title, count in (
        ("Harbour Lights: New Stories from Four Writers", 3),
        ("Three Rivers: An Anthology", 2),
        ("Two Roads Home", 1),
    ):
        coauthors = tuple(a.ol_key for a in contributors[:count])
        book = _add_book(ids, editor, title, 1996, coauthors=coauthors, in_wikidata=False)
        c.add("multi_author_works", ol_work=_bare(book.key), n_authors=1 + count)

    claimant = new("Theodora Finch", date(1936, 2, 27), ol_works=20)
    owner = new("Lionel Ashdown", date(1940, 9, 18), ol_works=15)
    # A title the word lists cannot make, so no other WikiData work carries it.
    book = _add_book(ids, claimant, "The Cartographer's Apprentice", 1979, wd_author=owner.qid)
    c.add(
        "wikidata_other_author",
        ol_author=_bare(claimant.ol_key),
        ol_work=_bare(book.key),
        title=book.title,
        wd_author=owner.qid,
    )

    odd = new("Ambrose Kettering", date(1950, 3, 15), ol_works=20)
    for title, publish_date, why in (
        ("The Last Lighthouse", "9999", "placeholder year 9999"),
        ("Songs Before Dawn", "1901", "before the author's birth (1950)"),
        ("Tomorrow's Harvest", str(created_year + 7), "after the snapshot date"),
    ):
        book = _add_book(ids, odd, title, None, publish_dates=(publish_date,))
        c.add("impossible_years", ol_work=_bare(book.key), publish_date=publish_date, why=why)
    for title in ("", "?!..."):
        c.add("empty_titles", ol_work=_bare(_add_book(ids, odd, title, 1999, in_wikidata=False).key), title=title)

    # --- entity tagging ----------------------------------------------------------------
    # Well-known titles by other writers, attributed here to a synthetic author.
    for title, year in (
        ("Florence Nightingale", 1985),
        ("Lincoln in the Bardo", 2017),
        ("Reading Lolita in Tehran", 2003),
        ("Death in Venice", 1990),
        ("A Tale of Two Cities", 1992),
    ):
        _add_book(ids, entities, title, year)
    for case, spec_titles in (
        (
            "human_name_titles",
            (
                (entities, "Florence Nightingale"),
                (entities, "Lincoln in the Bardo"),
                (entities, "Reading Lolita in Tehran"),
                (kitab["Q552372"], "Johnston McCulley's Zorro"),
                (kitab["Q83566"], "Eva Luna"),
                (kitab["Q83566"], "Maya's Notebook"),
            ),
        ),
        (
            "city_name_titles",
            (
                (entities, "Death in Venice"),
                (entities, "Reading Lolita in Tehran"),
                (kitab["Q47293"], "The Night in Lisbon"),
                (kitab["Q208101"], "We Bombed in New Haven"),
            ),
        ),
        ("city_word_without_city", ((entities, "A Tale of Two Cities"),)),
    ):
        for spec, title in spec_titles:
            c.add(case, ol_work=_bare(_book(spec, title).key), title=title)
    return specs, c.cases
