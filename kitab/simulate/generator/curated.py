"""Facts written down from public knowledge, labelled ``curated`` in the manifest.

Two kinds:

* the slice of WikiData's class and occupation tree the snapshot uses (real QIDs and labels,
  simplified: only the ``P279`` edges the candidate filter needs);
* for a dozen famous KITAB authors: birth (and death) dates, occupations, and well-known book
  titles with their first-publication years.

These are commonly cited facts, not a checked bibliography: a year may be off by one, a list is
never complete. The WikiData items and Open Library keys of the curated *books* are synthetic
(the generator allocates them); only the titles and years are curated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

HUMAN = "Q5"
LITERARY_WORK = "Q7725634"
WRITTEN_WORK = "Q47461344"
ORGANIZATION = "Q43229"
FICTIONAL_HUMAN = "Q15632617"
WRITER = "Q36180"
NOVELIST = "Q6625963"
POET = "Q49757"
PLAYWRIGHT = "Q214917"
ESSAYIST = "Q11774202"
CHILDRENS_WRITER = "Q4853732"
SF_WRITER = "Q18844224"
JOURNALIST = "Q1930187"
PAINTER = "Q1028181"
COMPOSER = "Q36834"
CHEF = "Q3499072"
SURGEON = "Q774306"
PHILOSOPHER = "Q4964182"
HISTORIAN = "Q201788"
POLITICIAN = "Q82955"

LABELS = {
    HUMAN: "human",
    LITERARY_WORK: "literary work",
    WRITTEN_WORK: "written work",
    ORGANIZATION: "organization",
    FICTIONAL_HUMAN: "fictional human",
    WRITER: "writer",
    NOVELIST: "novelist",
    POET: "poet",
    PLAYWRIGHT: "playwright",
    ESSAYIST: "essayist",
    CHILDRENS_WRITER: "children's writer",
    SF_WRITER: "science fiction writer",
    JOURNALIST: "journalist",
    PAINTER: "painter",
    COMPOSER: "composer",
    CHEF: "chef",
    SURGEON: "surgeon",
    PHILOSOPHER: "philosopher",
    HISTORIAN: "historian",
    POLITICIAN: "politician",
}

# P279 edges (subclass -> superclass). Science fiction writer reaches writer in two hops, so a
# filter that follows only one P279 step misses it. Journalist is deliberately not a writer.
SUBCLASS_OF = {
    NOVELIST: WRITER,
    POET: WRITER,
    PLAYWRIGHT: WRITER,
    ESSAYIST: WRITER,
    CHILDRENS_WRITER: WRITER,
    SF_WRITER: NOVELIST,
}
WRITER_OCCUPATIONS = (WRITER, NOVELIST, POET, PLAYWRIGHT, ESSAYIST, CHILDRENS_WRITER, SF_WRITER)

# Romance-sample works whose title is not English (the sample itself has no language field).
ROMANCE_LANGUAGES = {"Contra Su Voluntad": "spa"}


@dataclass(frozen=True)
class CuratedAuthor:
    occupations: tuple[str, ...]
    birth: date | None = None  # full date where well known; otherwise the seed's year is used
    death_date: str | None = None  # as Open Library writes it
    # (title, first publication year, language code or None for an untagged edition)
    books: tuple[tuple[str, int | None, str | None], ...] = field(default=())


def _english(*books: tuple[str, int]) -> tuple[tuple[str, int, str], ...]:
    return tuple((title, year, "eng") for title, year in books)


# Keyed by the KITAB author's WikiData id (the seed rows give name, birth year, sitelinks, OL id).
AUTHORS: dict[str, CuratedAuthor] = {
    "Q5878": CuratedAuthor(  # Gabriel García Márquez
        (NOVELIST, JOURNALIST, WRITER),
        date(1927, 3, 6),
        "17 April 2014",
        (
            ("Cien años de soledad", 1967, None),
            *_english(
                ("One Hundred Years of Solitude", 1967),
                ("100 Years of Solitude", 1967),
                ("Love in the Time of Cholera", 1985),
                ("Chronicle of a Death Foretold", 1981),
                ("The Autumn of the Patriarch", 1975),
                ("The General in His Labyrinth", 1989),
                ("Of Love and Other Demons", 1994),
                ("News of a Kidnapping", 1996),
                ("Living to Tell the Tale", 2002),
                ("Memories of My Melancholy Whores", 2004),
                ("No One Writes to the Colonel", 1961),
                ("Leaf Storm", 1955),
                ("In Evil Hour", 1962),
                ("The Story of a Shipwrecked Sailor", 1970),
                ("Strange Pilgrims", 1992),
                ("Gabriel Garcia Marquez", 1991),  # an OL work titled only with the author's name
            ),
            ("El amor en los tiempos del cólera", 1985, "spa"),
        ),
    ),
    "Q72334": CuratedAuthor(  # Toni Morrison
        (NOVELIST, ESSAYIST, WRITER),
        date(1931, 2, 18),
        "5 August 2019",
        _english(
            ("The Bluest Eye", 1970),
            ("Sula", 1973),
            ("Song of Solomon", 1977),
            ("Tar Baby", 1981),
            ("Beloved", 1987),
            ("Beloved: A Novel", 1987),
            ("Jazz", 1992),
            ("Playing in the Dark", 1992),
            ("Paradise", 1997),
            ("Love", 2003),
            ("A Mercy", 2008),
            ("Home", 2012),
            ("God Help the Child", 2015),
        ),
    ),
    "Q47293": CuratedAuthor(  # Erich Maria Remarque
        (NOVELIST, WRITER),
        date(1898, 6, 22),
        "25 September 1970",
        (
            ("Im Westen nichts Neues", 1929, "ger"),
            *_english(
                ("All Quiet on the Western Front", 1929),
                ("The Road Back", 1931),
                ("Three Comrades", 1937),
                ("Flotsam", 1941),
                ("Arch of Triumph", 1945),
                ("Spark of Life", 1952),
                ("A Time to Love and a Time to Die", 1954),
                ("The Black Obelisk", 1956),
                ("Heaven Has No Favorites", 1961),
                ("The Night in Lisbon", 1962),
                ("Shadows in Paradise", 1971),
            ),
        ),
    ),
    "Q47619": CuratedAuthor(  # Nadine Gordimer
        (NOVELIST, WRITER),
        date(1923, 11, 20),
        "13 July 2014",
        _english(
            ("The Lying Days", 1953),
            ("A World of Strangers", 1958),
            ("Occasion for Loving", 1963),
            ("The Late Bourgeois World", 1966),
            ("A Guest of Honour", 1970),
            ("The Conservationist", 1974),
            ("Burger's Daughter", 1979),
            ("July's People", 1981),
            ("A Sport of Nature", 1987),
            ("My Son's Story", 1990),
            ("None to Accompany Me", 1994),
            ("The House Gun", 1998),
            ("The Pickup", 2001),
            ("Get a Life", 2005),
            ("No Time Like the Present", 2012),
        ),
    ),
    "Q83566": CuratedAuthor(  # Isabel Allende
        (NOVELIST, JOURNALIST, WRITER),
        date(1942, 8, 2),
        None,
        (
            ("La casa de los espíritus", 1982, "spa"),
            *_english(
                ("The House of the Spirits", 1982),
                ("Of Love and Shadows", 1984),
                ("Eva Luna", 1987),
                ("The Stories of Eva Luna", 1989),
                ("The Infinite Plan", 1991),
                ("Paula", 1994),
                ("Aphrodite", 1997),
                ("Daughter of Fortune", 1999),
                ("Portrait in Sepia", 2000),
                ("City of the Beasts", 2002),
                ("My Invented Country", 2003),
                ("Zorro", 2005),
                ("Inés of My Soul", 2006),
                ("Island Beneath the Sea", 2009),
                ("Maya's Notebook", 2011),
                ("The Japanese Lover", 2015),
                ("In the Midst of Winter", 2017),
                ("A Long Petal of the Sea", 2019),
                ("Violeta", 2022),
            ),
        ),
    ),
    "Q212801": CuratedAuthor(  # Arundhati Roy
        (NOVELIST, ESSAYIST, WRITER),
        date(1961, 11, 24),
        None,
        _english(
            ("The God of Small Things", 1997),
            ("The End of Imagination", 1998),
            ("The Cost of Living", 1999),
            ("The Algebra of Infinite Justice", 2001),
            ("Field Notes on Democracy", 2009),
            ("Walking with the Comrades", 2011),
            ("Broken Republic", 2011),
            ("Capitalism: A Ghost Story", 2014),
            ("The Ministry of Utmost Happiness", 2017),
            ("My Seditious Heart", 2019),
            ("Azadi", 2020),
        ),
    ),
    "Q35155": CuratedAuthor(  # Thomas Pynchon
        (NOVELIST, WRITER),
        date(1937, 5, 8),
        None,
        _english(
            ("V.", 1963),
            ("The Crying of Lot 49", 1966),
            ("Gravity's Rainbow", 1973),
            ("Slow Learner", 1984),
            ("Vineland", 1990),
            ("Mason & Dixon", 1997),
            ("Mason and Dixon", 1997),
            ("Against the Day", 2006),
            ("Inherent Vice", 2009),
            ("Bleeding Edge", 2013),
        ),
    ),
    "Q208101": CuratedAuthor(  # Joseph Heller
        (NOVELIST, PLAYWRIGHT, WRITER),
        date(1923, 5, 1),
        "12 December 1999",
        _english(
            ("Catch-22", 1961),
            ("We Bombed in New Haven", 1967),
            ("Something Happened", 1974),
            ("Good as Gold", 1979),
            ("God Knows", 1984),
            ("No Laughing Matter", 1986),
            ("Picture This", 1988),
            ("Closing Time", 1994),
            ("Now and Then", 1998),
            ("Portrait of an Artist, as an Old Man", 2000),
        ),
    ),
    "Q76498": CuratedAuthor(  # Michael Ende
        (CHILDRENS_WRITER, WRITER),
        date(1929, 11, 12),
        "28 August 1995",
        (
            ("Die unendliche Geschichte", 1979, "ger"),
            *_english(
                ("Jim Button and Luke the Engine Driver", 1960),
                ("Momo", 1973),
                ("The Neverending Story", 1979),
                ("Mirror in the Mirror", 1984),
                ("Ophelia's Shadow Theatre", 1988),
                ("The Night of Wishes", 1989),
            ),
        ),
    ),
    "Q254240": CuratedAuthor(  # Rosamunde Pilcher
        (NOVELIST, WRITER),
        date(1924, 9, 22),
        "6 February 2019",
        _english(
            ("Sleeping Tiger", 1967),
            ("Another View", 1969),
            ("The End of Summer", 1971),
            ("Snow in April", 1972),
            ("The Empty House", 1973),
            ("The Day of the Storm", 1975),
            ("Under Gemini", 1976),
            ("Wild Mountain Thyme", 1978),
            ("The Carousel", 1982),
            ("Voices in Summer", 1984),
            ("The Shell Seekers", 1987),
            ("September", 1990),
            ("Coming Home", 1995),
            ("Winter Solstice", 2000),
        ),
    ),
    "Q552372": CuratedAuthor(  # Johnston McCulley
        (NOVELIST, WRITER),
        date(1883, 2, 2),
        "23 November 1958",
        _english(
            ("The Curse of Capistrano", 1919),
            ("The Further Adventures of Zorro", 1922),
            ("The Mark of Zorro", 1924),
            ("Zorro Rides Again", 1931),
            ("The Sign of Zorro", 1941),
            ("Zorro's Fight for Life", 1951),
            ("Johnston McCulley's Zorro", 1998),  # a title that holds a person's name (possessive)
        ),
    ),
    "Q6950": CuratedAuthor(  # Tess Gerritsen
        (NOVELIST, WRITER),
        date(1953, 6, 12),
        None,
        _english(
            ("Harvest", 1996),
            ("Life Support", 1997),
            ("Bloodstream", 1998),
            ("Gravity", 1999),
            ("The Surgeon", 2001),
            ("The Apprentice", 2002),
            ("The Sinner", 2003),
            ("Body Double", 2004),
            ("Vanish", 2005),
            ("The Mephisto Club", 2006),
            ("The Bone Garden", 2007),
            ("Ice Cold", 2010),
            ("The Silent Girl", 2011),
            ("Last to Die", 2012),
            ("Die Again", 2014),
            ("Playing with Fire", 2015),
            ("I Know a Secret", 2017),
            ("Listen to Me", 2022),
        ),
    ),
    "Q42972544": CuratedAuthor(  # Ruth Ware
        (NOVELIST, WRITER),
        None,
        None,
        _english(
            ("In a Dark, Dark Wood", 2015),
            ("The Woman in Cabin 10", 2016),
            ("The Lying Game", 2017),
            ("The Death of Mrs. Westaway", 2018),
            ("The Turn of the Key", 2019),
            ("One by One", 2020),
            ("The It Girl", 2022),
            ("Zero Days", 2023),
        ),
    ),
    # Occupations only: KITAB selected these people as writers, but they are best known for
    # something else, which WikiData also records.
    "Q170076": CuratedAuthor((PAINTER, WRITER)),  # Jean Dubuffet
    "Q154260": CuratedAuthor((PAINTER, POET, WRITER)),  # Oskar Kokoschka
    "Q114405": CuratedAuthor((PAINTER, WRITER)),  # Rockwell Kent
    "Q156193": CuratedAuthor((COMPOSER, WRITER)),  # Pierre Boulez
    "Q214477": CuratedAuthor((CHEF, WRITER)),  # Julia Child
    "Q188803": CuratedAuthor((SURGEON, WRITER)),  # Christiaan Barnard
    "Q76749": CuratedAuthor((PHILOSOPHER, WRITER)),  # Edith Stein
    "Q159876": CuratedAuthor((PHILOSOPHER, NOVELIST, WRITER)),  # Julia Kristeva
    "Q61163": CuratedAuthor((PHILOSOPHER, WRITER)),  # Josef Pieper
    "Q203708": CuratedAuthor((POLITICIAN, WRITER)),  # Manuel Azaña
    "Q575610": CuratedAuthor((HISTORIAN, WRITER)),  # Martin Gilbert
    "Q153700": CuratedAuthor((JOURNALIST, WRITER)),  # Oriana Fallaci
    "Q578031": CuratedAuthor((SF_WRITER, ESSAYIST)),  # Jerry Pournelle
    "Q455951": CuratedAuthor((SF_WRITER,)),  # Norman Spinrad
    "Q575345": CuratedAuthor((SF_WRITER, NOVELIST)),  # Alan Dean Foster
    "Q708157": CuratedAuthor((SF_WRITER,)),  # John Ringo
    "Q193018": CuratedAuthor((CHILDRENS_WRITER, JOURNALIST)),  # Gianni Rodari
    "Q5517078": CuratedAuthor((CHILDRENS_WRITER,)),  # Gail Gibbons
    "Q526057": CuratedAuthor((CHILDRENS_WRITER,)),  # Andy Griffiths
    "Q2228698": CuratedAuthor((POET,)),  # Archibald Lampman
    "Q5362284": CuratedAuthor((POET, ESSAYIST)),  # Elizabeth Alexander
}
