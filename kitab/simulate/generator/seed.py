"""The real rows the generator starts from (``snapshots/seed/``, see its SOURCES.md).

* 98 KITAB author rows (Hugging Face ``microsoft/kitab``, MIT): name, birth year, sitelinks,
  WikiData id, Open Library id.
* 42 Open Library authors and their 100 works from a romance sample (GitHub
  ``EfiLygda/openlibrary-etl-pipeline``, MIT; Open Library data CC0).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kitab.core.env import PROJECT_ROOT

SEED_DIR = PROJECT_ROOT / "snapshots" / "seed"
KITAB_AUTHORS = Path("kitab_hf") / "KITAB-author-metadata.partial.jsonl"
ROMANCE_SAMPLE = Path("ol_etl_romance_sample") / "romance_sample_by_author.json"


@dataclass(frozen=True)
class KitabAuthor:
    name: str
    birth_year: int
    sitelinks: int
    qid: str
    ol_id: str  # "OL31120A"


@dataclass(frozen=True)
class RomanceWork:
    key: str  # "/works/OL18020194W"
    title: str
    first_publish_year: int | None
    edition_count: int


@dataclass(frozen=True)
class RomanceAuthor:
    ol_id: str
    name: str
    birth_year: int | None
    death_year: int | None
    works: tuple[RomanceWork, ...]


def load_kitab_authors(seed_dir: Path = SEED_DIR) -> list[KitabAuthor]:
    """The KITAB rows in file order (by sitelinks, descending, as KITAB sorts them)."""
    rows = []
    with open(seed_dir / KITAB_AUTHORS, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                rows.append(
                    KitabAuthor(
                        row["Author"],
                        row["Birth Year"],
                        row["# of sitelinks"],
                        row["WikiData ID"],
                        row["OpenLibrary ID"],
                    )
                )
    return rows


def load_romance_authors(seed_dir: Path = SEED_DIR) -> list[RomanceAuthor]:
    """The romance-sample authors in file order, each with its real works."""
    data = json.loads((seed_dir / ROMANCE_SAMPLE).read_text(encoding="utf-8"))
    return [
        RomanceAuthor(
            row["author_key"],
            row["author_name"],
            row["birth_year"],
            row["death_year"],
            tuple(RomanceWork(w["key"], w["title"], w["first_publish_year"], w["edition_count"]) for w in row["works"]),
        )
        for row in data["authors"]
    ]
