"""Word lists and the title/name makers for generated (synthetic) records.

Titles follow a handful of common English book-title shapes, with a share that carries a
person's name or a real city (so the name/city constraints have something to find) and a
share in Spanish, French or German (so language cleaning has something to do).
"""

from __future__ import annotations

import random

# Spelled out so date strings never depend on the process locale.
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
FIRST_NAMES = tuple(
    """
    Ada Adrian Agnes Alan Alice Amara Amos Anders Anita Arthur Astrid Beatrice Benedict Bernard Bianca
    Camille Carlos Caroline Cecil Chidi Clara Colin Cora Daniel Delia Desmond Dora Edith Edmund Elena
    Elias Eliza Emeka Emil Esther Eva Felix Fiona Frances Gareth Greta Guy Hannah Harriet Hector Helena
    Hugo Ida Imogen Irene Isaac Ivan Jane Jasper Joan Jonah Julian June Karin Keiko Kofi Lars Leonora
    Lionel Lucia Lydia Magnus Malcolm Margot Marian Martin Maud Maya Miriam Nadia Nathan Nell Nina Noel
    Olive Oscar Owen Pauline Philip Priya Quentin Rafael Rena Rhys Rosa Rupert Ruth Samuel Selma Silas
    Sofia Stella Tamsin Theo Tobias Ursula Vera Victor Viola Walter Wilhelmina Yusuf Zora
    """.split()
)
LAST_NAMES = tuple(
    """
    Abbott Achebe Adeyemi Albright Ashworth Bailey Barros Bellamy Bergström Blackwood Brennan Calloway
    Carvalho Castellanos Chandler Cho Costa Crane Dalton Delacroix Dvořák Ellison Eriksen Farrow
    Fennimore Fitzgerald Fontaine Galloway Garrido Gallagher Greer Halloran Hartmann Haverford Holm
    Ibáñez Iwasaki Jablonski Jansen Kavanagh Kealey Kowalczyk Lachance Larkspur Lefèvre Lindqvist Lowell
    Maddox Marchetti Mbeki Merriweather Moreau Müller Nakamura Navarro Njoroge Nyström O'Callaghan
    Okafor Ødegaard Pemberton Pereira Quigley Radcliffe Ramírez Ravensworth Reyes Rinaldi Rosenthal
    Sandoval Schröder Sinclair Soto Strand Sutcliffe Takahashi Thornbury Underhill Valdés Vance Varga
    Vogel Wainwright Whitlock Winslow Yilmaz Zamora Zielinski
    """.split()
)
CITIES = (
    "Berlin",
    "Bombay",
    "Boston",
    "Buenos Aires",
    "Cairo",
    "Calcutta",
    "Chicago",
    "Dublin",
    "Havana",
    "Istanbul",
    "Kyoto",
    "Lagos",
    "Lisbon",
    "London",
    "Madrid",
    "Marseille",
    "Montreal",
    "Nairobi",
    "Naples",
    "Oslo",
    "Paris",
    "Prague",
    "Rome",
    "Shanghai",
    "Sydney",
    "Tangier",
    "Toronto",
    "Venice",
    "Vienna",
)
ADJECTIVES = tuple(
    """
    Amber Ancient Ashen Autumn Bitter Black Blind Blue Borrowed Brave Bright Broken Burning Careless
    Cold Copper Crimson Crooked Cruel Dark Dear Deep Distant Drowned Dusty Early Eastern Empty Endless
    Evening Faded Fallen False Far Final First Flooded Foreign Forgotten Frozen Gentle Ghostly Glass
    Golden Gray Green Half Hidden High Hollow Holy Hungry Idle Invisible Iron Ivory Last Late Lonely
    Long Lost Lucky Marble Midnight Misty Narrow Northern Old Painted Pale Paper Patient Quiet Rainy Red
    Restless Rusted Sacred Salt Savage Scarlet Second Secret Shattered Silent Silver Sleeping Slow Small
    Southern Spring Stolen Stone Strange Summer Sunken Sweet Tender Thin Tired Troubled True Velvet
    Wandering Western Whispering White Wicked Wild Winter Wooden Young
    """.split()
)
NOUNS = tuple(
    """
    Anchor Angel Apple Archive Arrow Ashes Attic Balcony Bell Bird Blade Boat Bone Border Bread Bridge
    Brother Candle Canyon Captain Castle Cathedral Cellar Chapel Child Circus Cliff Clock Cloud Coast
    Compass Cottage Country Crown Dancer Daughter Desert Doctor Door Dream Drum Dust Echo Empire Evening
    Exile Falcon Farm Feast Ferry Field Fire Flag Flood Forest Fountain Frontier Garden Gate Ghost
    Glacier Guest Harbor Harvest Hawk Heart Heir Highway Hill Horse Hour House Hunter Island Journey
    Judge Key Kingdom Kitchen Ladder Lake Lantern Letter Library Lighthouse Lion Machine Map Market
    Meadow Memory Mill Mirror Moon Morning Mountain Music Night Ocean Orchard Orphan Painter Palace
    Passage Pilgrim Planet Poet Prisoner Promise Queen Rain Raven Reef Rider River Road Rose Sailor
    Scholar Sea Season Shadow Ship Shore Silence Singer Sister Sky Soldier Song Spring Star Station
    Stone Storm Stranger Street Sun Sword Teacher Temple Thief Thread Throne Tide Tower Traveler Tree
    Valley Village Violin Voyage Wall War Watchman Water Wave Well Widow Wind Window Winter Witness Wolf
    Wood Year
    """.split()
)
GERUNDS = tuple(
    """
    Crossing Finding Leaving Keeping Burning Chasing Remembering Waking Building Counting Drawing
    Following Guarding Hearing Losing Mending Naming Reading Saving Watching
    """.split()
)
NUMBERS = ("Two", "Three", "Seven", "Twelve", "Forty", "100", "A Thousand")
SUBTITLES = ("A Novel", "A Memoir", "Stories", "A Mystery", "Poems", "An Essay", "A Romance")

# Non-English titles: (language code as Open Library writes it, title shapes, words).
FOREIGN = {
    "spa": (
        ("La casa de los {0}", "El {1} de {2}", "Los {0} del invierno", "Cien noches en {2}"),
        ("espejos", "silencios", "naranjos", "relojes"),
        ("jardín", "puerto", "retrato", "viaje"),
        ("Sevilla", "Lima", "Bogotá", "Valparaíso"),
    ),
    "fre": (
        ("Le {1} de {2}", "Les {0} de l'hiver", "La nuit des {0}", "Un été à {2}"),
        ("miroirs", "oiseaux", "ombres", "lettres"),
        ("jardin", "voyage", "silence", "portrait"),
        ("Lyon", "Nantes", "Bordeaux", "Genève"),
    ),
    "ger": (
        ("Die Nacht der {0}", "Der {1} von {2}", "Das Haus der {0}", "Ein Sommer in {2}"),
        ("Spiegel", "Schatten", "Vögel", "Briefe"),
        ("Garten", "Fluss", "Spiegel", "Winter"),
        ("Hamburg", "Leipzig", "Zürich", "Bremen"),
    ),
}


def plural(noun: str) -> str:
    """English plural of the word lists' nouns (Country -> Countries, Glass -> Glasses, Wolf -> Wolves)."""
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("f"):
        return noun[:-1] + "ves"
    return noun + "s"


def english_title(rng: random.Random) -> str:
    """A plausible English book title; about one in six has a person's or a city's name."""
    adj, noun, other = rng.choice(ADJECTIVES), rng.choice(NOUNS), rng.choice(NOUNS)
    first, last, city = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES), rng.choice(CITIES)
    shapes = (
        (20, f"The {adj} {noun}"),
        (10, f"{adj} {noun}"),
        (8, f"The {noun} of {plural(other)}"),
        (6, f"A {noun} for {adj} {plural(other)}" if adj[0] not in "AEIOU" else f"The {noun} of {adj} {plural(other)}"),
        (6, f"{rng.choice(GERUNDS)} the {noun}"),
        (5, noun),
        (5, f"{rng.choice(NUMBERS)} {plural(noun)}"),
        (5, f"The {noun} and the {other}" if noun != other else f"The {noun}"),
        (4, f"{noun} & {other}" if noun != other else f"{adj} {noun}"),
        (4, f"{first}'s {noun}"),
        (3, f"The {noun} of {first} {last}"),
        (2, f"{first} {last}"),
        (4, f"Letters from {city}"),
        (3, f"A {noun} in {city}"),
        (3, f"The {city} {noun}"),
    )
    return rng.choices([s for _, s in shapes], weights=[w for w, _ in shapes])[0]


# Works WikiData knows but Open Library does not (poems, essays, lectures): shapes that
# no generated Open Library title uses, so a WikiData-only item never makes another
# author's book look misattributed by accident (the planted case does that on purpose).
SHORT_WORK_SHAPES = (
    "Ode to the {adj} {noun}",
    "Essay on the {noun}",
    "Lecture on the {adj} {noun}",
    "Sonnet for the {noun}",
    "Elegy for a {adj} {noun}",
    "Notes on the {adj} {noun}",
)


def short_work_title(rng: random.Random) -> str:
    """A title for a WikiData-only work (never an Open Library title shape)."""
    return rng.choice(SHORT_WORK_SHAPES).format(adj=rng.choice(ADJECTIVES), noun=rng.choice(NOUNS))


def foreign_title(rng: random.Random) -> tuple[str, str]:
    """A Spanish, French or German title and its Open Library language code."""
    language = rng.choice(sorted(FOREIGN))
    shapes, plurals, singulars, places = FOREIGN[language]
    return rng.choice(shapes).format(rng.choice(plurals), rng.choice(singulars), rng.choice(places)), language


def person_name(rng: random.Random) -> str:
    """A synthetic author name; one in five has a middle initial."""
    middle = f" {rng.choice('ABCDEFGHJKLMNPRSTW')}." if rng.random() < 0.2 else ""
    return f"{rng.choice(FIRST_NAMES)}{middle} {rng.choice(LAST_NAMES)}"
