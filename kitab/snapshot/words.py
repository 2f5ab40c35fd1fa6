"""Word lists and the title/name makers for generated (synthetic) records.

Titles follow a handful of common English book-title shapes, with a share that carries a
person's name or a real city (so the name/city constraints have something to find) and a
share in Spanish, French or German (so language cleaning has something to do).
"""
from __future__ import annotations

import random

# Spelled out so date strings never depend on the process locale.
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
FIRST_NAMES = (
    "Ada", "Adrian", "Agnes", "Alan", "Alice", "Amara", "Amos", "Anders", "Anita", "Arthur", "Astrid",
    "Beatrice", "Benedict", "Bernard", "Bianca", "Camille", "Carlos", "Caroline", "Cecil", "Chidi", "Clara",
    "Colin", "Cora", "Daniel", "Delia", "Desmond", "Dora", "Edith", "Edmund", "Elena", "Elias", "Eliza",
    "Emeka", "Emil", "Esther", "Eva", "Felix", "Fiona", "Frances", "Gareth", "Greta", "Guy", "Hannah",
    "Harriet", "Hector", "Helena", "Hugo", "Ida", "Imogen", "Irene", "Isaac", "Ivan", "Jane", "Jasper",
    "Joan", "Jonah", "Julian", "June", "Karin", "Keiko", "Kofi", "Lars", "Leonora", "Lionel", "Lucia",
    "Lydia", "Magnus", "Malcolm", "Margot", "Marian", "Martin", "Maud", "Maya", "Miriam", "Nadia", "Nathan",
    "Nell", "Nina", "Noel", "Olive", "Oscar", "Owen", "Pauline", "Philip", "Priya", "Quentin", "Rafael",
    "Rena", "Rhys", "Rosa", "Rupert", "Ruth", "Samuel", "Selma", "Silas", "Sofia", "Stella", "Tamsin",
    "Theo", "Tobias", "Ursula", "Vera", "Victor", "Viola", "Walter", "Wilhelmina", "Yusuf", "Zora",
)
LAST_NAMES = (
    "Abbott", "Achebe", "Adeyemi", "Albright", "Ashworth", "Bailey", "Barros", "Bellamy", "Bergström",
    "Blackwood", "Brennan", "Calloway", "Carvalho", "Castellanos", "Chandler", "Cho", "Costa", "Crane",
    "Dalton", "Delacroix", "Dvořák", "Ellison", "Eriksen", "Farrow", "Fennimore", "Fitzgerald", "Fontaine",
    "Galloway", "Garrido", "Gallagher", "Greer", "Halloran", "Hartmann", "Haverford", "Holm", "Ibáñez",
    "Iwasaki", "Jablonski", "Jansen", "Kavanagh", "Kealey", "Kowalczyk", "Lachance", "Larkspur", "Lefèvre",
    "Lindqvist", "Lowell", "Maddox", "Marchetti", "Mbeki", "Merriweather", "Moreau", "Müller", "Nakamura",
    "Navarro", "Njoroge", "Nyström", "O'Callaghan", "Okafor", "Ødegaard", "Pemberton", "Pereira", "Quigley",
    "Radcliffe", "Ramírez", "Ravensworth", "Reyes", "Rinaldi", "Rosenthal", "Sandoval", "Schröder",
    "Sinclair", "Soto", "Strand", "Sutcliffe", "Takahashi", "Thornbury", "Underhill", "Valdés", "Vance",
    "Varga", "Vogel", "Wainwright", "Whitlock", "Winslow", "Yilmaz", "Zamora", "Zielinski",
)
CITIES = (
    "Berlin", "Bombay", "Boston", "Buenos Aires", "Cairo", "Calcutta", "Chicago", "Dublin", "Havana",
    "Istanbul", "Kyoto", "Lagos", "Lisbon", "London", "Madrid", "Marseille", "Montreal", "Nairobi", "Naples",
    "Oslo", "Paris", "Prague", "Rome", "Shanghai", "Sydney", "Tangier", "Toronto", "Venice", "Vienna",
)
ADJECTIVES = (
    "Bitter", "Borrowed", "Bright", "Broken", "Burning", "Crimson", "Dark", "Distant", "Endless", "Forgotten",
    "Gentle", "Glass", "Golden", "Hidden", "Hollow", "Invisible", "Iron", "Last", "Lost", "Northern",
    "Painted", "Paper", "Quiet", "Restless", "Salt", "Savage", "Secret", "Silent", "Summer", "Velvet", "Wild",
    "Winter",
)
NOUNS = (
    "Bridge", "Clock", "Country", "Crown", "Daughter", "Doctor", "Dream", "Empire", "Field", "Fire",
    "Frontier", "Garden", "Ghost", "Harbor", "Harvest", "Hour", "House", "Hunter", "Island", "Kingdom",
    "Lantern", "Letter", "Machine", "Map", "Memory", "Mirror", "Morning", "Night", "Orchard", "Orphan",
    "Promise", "River", "Road", "Season", "Shadow", "Shore", "Silence", "Song", "Storm", "Stranger", "Tide",
    "Voyage", "Widow", "Witness", "Year",
)
GERUNDS = ("Crossing", "Finding", "Leaving", "Keeping", "Burning", "Chasing", "Remembering", "Waking")
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


def english_title(rng: random.Random) -> str:
    """A plausible English book title; about one in six has a person's or a city's name."""
    adj, noun, other = rng.choice(ADJECTIVES), rng.choice(NOUNS), rng.choice(NOUNS)
    first, last, city = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES), rng.choice(CITIES)
    shapes = (
        (20, f"The {adj} {noun}"),
        (10, f"{adj} {noun}"),
        (8, f"The {noun} of {other}s"),
        (6, f"A {noun} for {adj} {other}s" if adj[0] not in "AEIOU" else f"The {noun} of {adj} {other}s"),
        (6, f"{rng.choice(GERUNDS)} the {noun}"),
        (5, noun),
        (5, f"{rng.choice(NUMBERS)} {noun}s"),
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


def foreign_title(rng: random.Random) -> tuple[str, str]:
    """A Spanish, French or German title and its Open Library language code."""
    language = rng.choice(sorted(FOREIGN))
    shapes, plurals, singulars, places = FOREIGN[language]
    return rng.choice(shapes).format(rng.choice(plurals), rng.choice(singulars), rng.choice(places)), language


def person_name(rng: random.Random) -> str:
    """A synthetic author name; one in five has a middle initial."""
    middle = f" {rng.choice('ABCDEFGHJKLMNPRSTW')}." if rng.random() < 0.2 else ""
    return f"{rng.choice(FIRST_NAMES)}{middle} {rng.choice(LAST_NAMES)}"
