"""Build the frozen word and name lists under tasks/taggers/data/ (run once, by hand).

names-dataset takes ~20 s and ~2 GB to load and counts "The", "Love" and "Time" as first
names, so the taggers never import it: this script takes its per-country *top* names (much
cleaner than the full tables), drops what is a common English word unless the name is
popular in an English-speaking country, and writes small sorted text files that are committed.

    python3 -m venv /tmp/namesenv && /tmp/namesenv/bin/pip install names-dataset==3.3.1
    apt-get install wamerican-small scowl    # SCOWL word lists, size 35 and per level
    /tmp/namesenv/bin/python tools/build_name_lists.py

Neither names-dataset nor the word list is a dependency of kitab; only the output files are.
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "tasks" / "taggers" / "data"
SCOWL_SMALL = Path("/usr/share/dict/american-english-small")
# SCOWL levels 10 and 20: the most frequent words. A given name that is a word only at level 35
# ("peter", "harry", "carol") is read as a name; one at level 10/20 ("grace", "jack") stays ambiguous.
SCOWL_LEVELS = Path("/usr/share/dict/scowl")
FREQUENT_LEVEL_FILES = ("english-words.10", "english-words.20", "american-words.10", "american-words.20")

# Book titles are English: names popular where English is spoken get deeper lists, and only
# they may keep a name that is also a word ("Grace", "Jack"); the tagger then asks for more
# evidence before calling such a word a name.
ENGLISH_SPEAKING = ("US", "GB", "CA", "IE", "ZA", "JM", "NG", "PH", "SG", "MT")
TOP_FIRST_EN, TOP_FIRST_OTHER = 1000, 250  # per gender and country
TOP_LAST_EN, TOP_LAST_OTHER = 1000, 250  # per country
WORD_NAME_MAX_RANK = 500  # a word is kept as a name only if this popular in an English-speaking country


def common_words(path: Path, encoding: str = "utf-8") -> set[str]:
    """Lower-case entries of a SCOWL list: capitalised entries there are proper nouns."""
    return {w for w in path.read_text(encoding=encoding).split() if w.isalpha() and w.islower()}


def is_latin_name(name: str) -> bool:
    """One token of Latin letters (apostrophe and hyphen allowed), at least two letters."""
    letters = [c for c in name if c not in "'-"]
    return len(letters) >= 2 and all(c.isalpha() and "LATIN" in unicodedata.name(c, "") for c in letters)


def select(ranked: list[tuple[str, list[str]]], words: set[str], top_en: int, top_other: int) -> set[str]:
    """ranked: (country, names most frequent first) pairs."""
    kept: set[str] = set()
    for country, names in ranked:
        depth = top_en if country in ENGLISH_SPEAKING else top_other
        for rank, name in enumerate(names[:depth]):
            if not is_latin_name(name):
                continue
            if name.lower() in words and not (country in ENGLISH_SPEAKING and rank < WORD_NAME_MAX_RANK):
                continue
            kept.add(name)
    return kept


def write_list(path: Path, items: set[str]) -> None:
    path.write_text("".join(f"{x}\n" for x in sorted(items)), encoding="utf-8")
    print(f"{path.relative_to(DATA_DIR.parents[2])}: {len(items)} entries, {path.stat().st_size} bytes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=Path, default=SCOWL_SMALL, help="SCOWL size-35 word list")
    parser.add_argument("--levels", type=Path, default=SCOWL_LEVELS, help="SCOWL per-level lists")
    args = parser.parse_args(argv)
    level_files = [args.levels / name for name in FREQUENT_LEVEL_FILES]
    missing = [p for p in [args.words, *level_files] if not p.exists()]
    if missing:
        print(f"missing {', '.join(map(str, missing))}: apt-get install wamerican-small scowl", file=sys.stderr)
        return 2
    from names_dataset import NameDataset  # only in the throwaway venv

    words = common_words(args.words)
    nd = NameDataset()
    top_first = nd.get_top_names(n=max(TOP_FIRST_EN, TOP_FIRST_OTHER), use_first_names=True)
    top_last = nd.get_top_names(n=max(TOP_LAST_EN, TOP_LAST_OTHER), use_first_names=False)
    # first names are ranked per country and gender ("N/A" = gender unknown)
    first_ranked = [(country, names) for country, by_gender in top_first.items() for names in by_gender.values()]
    first = select(first_ranked, words, TOP_FIRST_EN, TOP_FIRST_OTHER)
    last = select(list(top_last.items()), words, TOP_LAST_EN, TOP_LAST_OTHER)

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    write_list(DATA_DIR / "first_names.txt", first)
    write_list(DATA_DIR / "surnames.txt", last)
    write_list(DATA_DIR / "common_words.txt", words)
    frequent = set().union(*(common_words(p, encoding="latin-1") for p in level_files)) & words
    write_list(DATA_DIR / "frequent_words.txt", frequent)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
