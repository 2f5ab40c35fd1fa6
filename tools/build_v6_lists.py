"""Build the two lists human_v6 / city_v6 add under tasks/taggers/data/ (run once, by hand).

Both come from Princeton WordNet 3.0, as Debian's `wordnet-base` package installs it
(/usr/share/wordnet/data.{noun,verb,adj,adv}; WordNet 3.0 licence, see the data README).
WordNet knows which capitalised words name people, and which name places that are no city:
knowledge no name list or letter model has ("Faust", "Hamlet" and "Burr" are people; "Arcadia"
is a region, "Atlantis" an imaginary place, "Salvador" El Salvador).

- wordnet_people.txt: capitalised one-word lemmas that WordNet knows only as people (every
  sense, in any part of speech, is in noun.person) and at least once as a named individual
  (an instance: "Faust", "Hamlet"; not "Dubliner" or "Quaker", which are kinds of people, nor
  "Fahrenheit", which is also an adjective).
- wordnet_not_cities.txt: names of GeoNames cities (>= 1,000 inhabitants, the tagger's own
  index) that WordNet knows as a place or an imagined one, but never as an instance of a city,
  town, village, port, capital, municipality or city state ("Arcadia", a region; "Atlantis",
  "Eden"; not "Orlando", "Troy" or "Edinburgh", nor "York", which WordNet knows only as a dynasty).

    apt-get install wordnet-base
    .venv/bin/python tools/build_v6_lists.py [--wordnet /usr/share/wordnet]

WordNet is no dependency of kitab; only the output files are (sorted, deterministic).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA_DIR = ROOT / "tasks" / "taggers" / "data"
PERSON_LEXFILE = 18  # noun.person (WordNet's lexnames)
# the synsets whose instances (and their kinds') are cities: lemma heads of WordNet nouns
CITY_KINDS = frozenset(
    {
        "city",
        "town",
        "village",
        "port",
        "municipality",
        "capital",
        "national_capital",
        "state_capital",
        "provincial_capital",
        "metropolis",
        "urban_center",
        "city_state",
    }
)
# a name WordNet knows as a place (noun.location) or an imagined one (noun.cognition: "Atlantis",
# "Eden") that is no city is another place; one it knows only as a person, battle or dynasty
# ("Stockton", "Salerno", "York") says nothing about the town, which WordNet may simply not list
PLACE_LEXFILES = frozenset({9, 15})


class Synset:
    __slots__ = ("hypernyms", "instance", "lexfile", "words")

    def __init__(self, lexfile: int, words: list[str], hypernyms: list[str], instance: bool) -> None:
        self.lexfile, self.words, self.hypernyms, self.instance = lexfile, words, hypernyms, instance


def read_data(path: Path) -> dict[str, Synset]:
    """One WordNet data.<pos> file: offset -> synset (lexicographer file, lemmas, hypernyms)."""
    out = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):  # the licence header
            continue
        fields = line.split("|")[0].split()
        offset, lexfile, count = fields[0], int(fields[1]), int(fields[3], 16)
        words = [fields[4 + 2 * i].split("(")[0] for i in range(count)]  # "Faust(a)": adjective markers
        k = 4 + 2 * count
        hypernyms, instance = [], False
        for j in range(int(fields[k])):
            symbol, target, pos = fields[k + 1 + 4 * j], fields[k + 2 + 4 * j], fields[k + 3 + 4 * j]
            if symbol in ("@", "@i") and pos == "n":
                hypernyms.append(target)
                instance |= symbol == "@i"
        out[offset] = Synset(lexfile, words, hypernyms, instance)
    return out


def proper_nouns(wordnet: Path) -> tuple[dict[str, Synset], dict[str, list[tuple[str, str]]]]:
    """The noun synsets, and every capitalised lemma -> its (part of speech, offset) senses."""
    nouns = read_data(wordnet / "data.noun")
    senses: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for pos in ("noun", "verb", "adj", "adv"):
        synsets = nouns if pos == "noun" else read_data(wordnet / f"data.{pos}")
        for offset, synset in synsets.items():
            for word in synset.words:
                if word[:1].isupper():
                    senses[word.replace("_", " ")].append((pos, offset))
    return nouns, senses


def people(nouns: dict[str, Synset], senses: dict[str, list[tuple[str, str]]]) -> list[str]:
    found = []
    for word, ws in senses.items():
        if " " in word or "-" in word or not word.isalpha():
            continue
        if all(pos == "noun" and nouns[o].lexfile == PERSON_LEXFILE for pos, o in ws) and any(
            nouns[o].instance for _, o in ws
        ):
            found.append(word)
    return sorted(found)


def not_cities(nouns: dict[str, Synset], senses: dict[str, list[tuple[str, str]]], city_keys) -> list[str]:
    from tasks.taggers.gazetteers import norm

    kinds = {o for o, s in nouns.items() if s.words[0].lower() in CITY_KINDS}
    memo: dict[str, bool] = {}

    def is_city(offset: str) -> bool:  # hypernyms form a DAG (WordNet is ~20 levels deep)
        if offset not in memo:
            memo[offset] = any(h in kinds or is_city(h) for h in nouns[offset].hypernyms)
        return memo[offset]

    found = set()
    for word, ws in senses.items():
        noun_senses = [o for pos, o in ws if pos == "noun"]
        key = norm(word)
        if (
            key in city_keys
            and any(nouns[o].lexfile in PLACE_LEXFILES for o in noun_senses)
            and not any(nouns[o].instance and is_city(o) for o in noun_senses)
        ):
            found.add(word)
    return sorted(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wordnet", type=Path, default=Path("/usr/share/wordnet"), help="WordNet 3.0 dict folder")
    args = parser.parse_args()
    if not (args.wordnet / "data.noun").exists():
        raise SystemExit(f"{args.wordnet}/data.noun not found: apt-get install wordnet-base")
    from kitab.core.files import write_bytes
    from tasks.taggers.gazetteers import _city_index

    nouns, senses = proper_nouns(args.wordnet)
    header = "# Princeton WordNet 3.0 (WordNet 3.0 licence, Copyright 2006 by Princeton University), via tools/build_v6_lists.py: "
    outputs = {
        "wordnet_people.txt": (
            "capitalised lemmas known only as people, at least once a named individual",
            people(nouns, senses),
        ),
        "wordnet_not_cities.txt": (
            "GeoNames city names WordNet knows as another place, never as a city",
            not_cities(nouns, senses, _city_index().keys()),
        ),
    }
    for name, (what, rows) in outputs.items():
        write_bytes(DATA_DIR / name, (header + what + "\n" + "".join(f"{w}\n" for w in rows)).encode("utf-8"))
        print(f"{name}: {len(rows)}")


if __name__ == "__main__":
    main()
