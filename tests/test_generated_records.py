"""The generated Open Library works' own records (kitab/simulate/generator/records.py) carry
subject_people / subject_places at the real dump's rates (issue 37: people 3-8%, places
10-25% of works; the dump's first 1,000 works, ../shared/data/ol_dump_samples/works-head-n1000.txt,
have 3.2% / 10.2%), over all works and over the real and curated titles alone."""

from __future__ import annotations

import gzip
import json
import re

from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.simulate.generator.spec import SYNTHETIC_ID_BASE

PEOPLE, PLACES = (0.03, 0.08), (0.10, 0.25)


def _works() -> list[dict]:
    with gzip.open(BUNDLED_SNAPSHOT / "ol_dump_works.txt.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line.split("\t")[4]) for line in f]
    return [r for r in rows if r["type"]["key"] == "/type/work"]


def _rates(works: list[dict]) -> tuple[float, float]:
    return (
        sum(bool(w.get("subject_people")) for w in works) / len(works),
        sum(bool(w.get("subject_places")) for w in works) / len(works),
    )


def test_record_rates_match_the_dump_overall_and_for_well_known_titles():
    manifest = json.loads((BUNDLED_SNAPSHOT / "MANIFEST.json").read_text(encoding="utf-8"))
    curated = {f"/works/{k}" for k in manifest["synthetic"]["curated"]["ol_works"]}
    works = _works()
    known = [w for w in works if w["key"] in curated or int(re.sub(r"\D", "", w["key"])) < SYNTHETIC_ID_BASE]
    assert len(works) > 4000 and len(known) > 200
    for group in (works, known):
        people, places = _rates(group)
        assert PEOPLE[0] <= people <= PEOPLE[1], f"{len(group)} works: {people:.1%} with subject_people"
        assert PLACES[0] <= places <= PLACES[1], f"{len(group)} works: {places:.1%} with subject_places"
