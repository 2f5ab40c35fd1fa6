"""Write a generated world as the public dumps are published (``kitab snapshot generate --format published``).

From a generated snapshot folder (the world) this writes, into ``out``:

* ``latest-all.json.gz`` — WikiData's JSON dump: ``[``, one entity a line ending in ``,``, ``]``;
  statements with ranks, ids and datatypes; empty maps as ``[]``; sitelinks as a map whose size
  is the count; year-precision dates as ``+YYYY-00-00T00:00:00Z`` with precision 9;
* ``latest-all.nt.gz`` — the full N-Triples flavour: pure ASCII (``\\uXXXX``, ``\\UXXXXXXXX``),
  labels three times, ``p:``/``ps:`` statement nodes beside the ``wdt:`` triples, and the
  sitelink count on the data node ``Special:EntityData/Q…``, not on the item;
* ``latest-truthy.nt.gz`` (only when asked) — ``wdt:`` and labels, no sitelinks, as published;
* ``openlibrary/ol_dump_{authors,works,editions,redirects}_<date>.txt.gz`` — JSON with ASCII
  escapes, redirects in their own file (one chained: a P648 naming a merged author must follow
  two hops).

Noise real dumps carry, added around the world without changing what it samples: a majority of
non-author items (scholarly articles, each with many P50 researchers, who are humans with
another occupation), unrelated Open Library records (the real lines in
``snapshots/seed/ol_dump_samples/`` among them), a multi-MB WikiData item and a multi-MB Open
Library record, invalid and unknown birth dates, astral-plane labels, work redirects.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from kitab.core.files import atomic_dir
from kitab.simulate.generator.published_openlibrary import DeterministicGzip, write_openlibrary
from kitab.sources.ntriples import nt_unescape
from kitab.sources.snapshot.format import (
    WD,
    WDT,
    WIKIDATA_FILE,
    open_text,
    read_manifest,
)

DUMP_DATE = "2024-06-01"  # the generated world's as-of date
JSON_FILE, NT_FILE, TRUTHY_FILE = "latest-all.json.gz", "latest-all.nt.gz", "latest-truthy.nt.gz"

XSD = "http://www.w3.org/2001/XMLSchema#"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SKOS_PREF = "http://www.w3.org/2004/02/skos/core#prefLabel"
SCHEMA_NAME = "http://schema.org/name"
SITELINKS = "http://wikiba.se/ontology#sitelinks"
DATA_NODE = "https://www.wikidata.org/wiki/Special:EntityData/"
P, PS = "http://www.wikidata.org/prop/", "http://www.wikidata.org/prop/statement/"
STATEMENT = "http://www.wikidata.org/entity/statement/"
RANK = "http://wikiba.se/ontology#rank"
NOISE_BASE = 1_900_000_000  # noise item numbers: far above the world's generated ids
SCHOLARLY_BASE = NOISE_BASE - 100_000  # scholarly articles naming the world's writers; noise from here up
SCHOLARLY_ARTICLE, RESEARCHER = 13442814, 1650915
SITES = [
    f"{code}wiki"
    for code in (
        "en",
        "de",
        "fr",
        "es",
        "it",
        "nl",
        "pl",
        "ru",
        "ja",
        "zh",
        "pt",
        "sv",
        "uk",
        "ca",
        "fa",
        "ar",
        "cs",
        "fi",
        "he",
        "hu",
        "ko",
        "no",
        "ro",
        "tr",
        "vi",
    )
]
ASTRAL = "\U0001d50a\U0001d52c\U0001d531\U0001d525\U0001d526\U0001d520 \U0001f4da"


# --- reading the world ----------------------------------------------------------------------


def world_entities(snapshot: Path) -> Iterator[dict]:
    """The snapshot's WikiData triples grouped into entities: {id, label, claims: {P: [values]}, sitelinks}."""
    with open_text(snapshot / WIKIDATA_FILE) as handle:
        for subject, lines in itertools.groupby(handle, key=lambda line: line.split(" ", 1)[0]):
            entity = {"id": subject[len(WD) + 1 : -1], "label": None, "lang": "en", "claims": {}, "sitelinks": 0}
            for line in lines:
                _, predicate, rest = line.rstrip("\n").split(" ", 2)
                obj = rest[:-2]
                if predicate == f"<{RDFS_LABEL}>":
                    entity["label"] = nt_unescape(obj[1 : obj.rindex('"@')])
                    entity["lang"] = obj[obj.rindex('"@') + 2 :]  # en, or mul (spec.person_label_lang)
                elif predicate == f"<{SITELINKS}>":
                    entity["sitelinks"] = int(obj[1 : obj.index('"', 1)])
                elif predicate.startswith(f"<{WDT}"):
                    pid = predicate[len(WDT) + 1 : -1]
                    if obj.startswith(f"<{WD}"):
                        value = ("item", obj[len(WD) + 1 : -1])
                    elif obj.endswith(f"<{XSD}dateTime>"):
                        value = ("time", obj[1 : obj.index('"', 1)])
                    else:
                        value = ("string", nt_unescape(obj[1:-1]))
                    entity["claims"].setdefault(pid, []).append(value)
            yield entity


# --- noise ----------------------------------------------------------------------------------


def _counting_works(entities: Iterator[dict], works_of: dict[str, int]) -> Iterator[dict]:
    for entity in entities:
        for kind, author in entity["claims"].get("P50", []):
            if kind == "item":
                works_of[author] = works_of.get(author, 0) + 1
        yield entity


def scholarly_entities(rng: random.Random, works_of: dict[str, int]) -> Iterator[dict]:
    """Scholarly articles naming the world's writers in P50, as many writers' items have: in WDQS's
    scholarly graph since the split, so no source counts them as works (the works rule,
    kitab.core.params.WORKS_RULE). A writer with fewer than 10 works gets enough to reach 10-14,
    one with 290 or more enough to pass 300, one in ten of the rest 1-5; every third is marked by
    P13046 (publication type of scholarly work) instead of its P31."""
    k = 0
    for author in sorted(works_of, key=lambda q: int(q[1:])):
        n = works_of[author]
        extra = 10 - n + rng.randint(0, 4) if n < 10 else (rng.randint(1, 5) if rng.random() < 0.1 else 0)
        extra = 301 - n + rng.randint(0, 4) if 290 <= n <= 300 else extra
        for _ in range(extra):
            claims = {"P31": [("item", f"Q{SCHOLARLY_ARTICLE}")], "P50": [("item", author)]}
            if k % 3 == 2:
                claims = {"P31": [("item", "Q47461344")], "P13046": [("item", f"Q{SCHOLARLY_ARTICLE}")]}
                claims["P50"] = [("item", author)]
            yield {"id": f"Q{SCHOLARLY_BASE + k}", "label": f"A study of case {k}", "sitelinks": 0, "claims": claims}
            k += 1


def noise_entities(rng: random.Random, n_articles: int, n_researchers: int) -> Iterator[dict]:
    """Researchers and the scholarly articles that name them in P50: most of the dump, none sampled."""
    researchers = [f"Q{NOISE_BASE + i}" for i in range(n_researchers)]
    for i, qid in enumerate(researchers):
        year = rng.randint(1900, 1995)
        yield {
            "id": qid,
            "label": ASTRAL if i == 0 else f"Researcher {i}",
            "sitelinks": rng.randint(0, 3),
            "claims": {
                "P31": [("item", "Q5")],
                "P106": [("item", f"Q{RESEARCHER}")],
                "P569": [("time", f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T00:00:00Z")],
            },
        }
    # Writers no work names (so never sampled) with the birth dates the dumps carry: an invalid
    # one (month 13) and an unknown value.
    for k, birth in enumerate([("time", "1980-13-45T00:00:00Z"), ("somevalue", None)]):
        yield {
            "id": f"Q{NOISE_BASE - 1 - k}",
            "label": f"Odd date author {k}",
            "sitelinks": 1,
            "claims": {"P31": [("item", "Q5")], "P106": [("item", "Q36180")], "P569": [birth]},
        }
    for i in range(n_articles):
        qid = f"Q{NOISE_BASE + n_researchers + i}"
        authors = rng.sample(researchers, min(len(researchers), rng.randint(3, 25)))
        yield {
            "id": qid,
            "label": f"On the {rng.choice(['structure', 'dynamics', 'origin'])} of sample {i}",
            "sitelinks": 0,
            "claims": {"P31": [("item", f"Q{SCHOLARLY_ARTICLE}")], "P50": [("item", a) for a in authors]},
        }
    # Everything else the dump holds (places, taxa, streets, categories): no P50, no P106; the
    # real dump has more of these than of anything else.
    for i in range(n_articles):
        qid = f"Q{NOISE_BASE + n_researchers + n_articles + 1 + i}"
        yield {
            "id": qid,
            "label": f"Place {i}",
            "sitelinks": rng.randint(0, 5),
            "claims": {
                "P31": [("item", f"Q{rng.choice([486972, 16521, 79007, 4167836])}")],
                "P17": [("item", f"Q{rng.randint(1, 300)}")],
            },
        }
    # One multi-MB item: an article with thousands of author statements
    qid = f"Q{NOISE_BASE + n_researchers + 2 * n_articles + 1}"
    yield {
        "id": qid,
        "label": "A very large collaboration",
        "sitelinks": 0,
        "claims": {
            "P31": [("item", f"Q{SCHOLARLY_ARTICLE}")],
            "P50": [("item", researchers[k % len(researchers)]) for k in range(6000)],
        },
    }


# --- JSON dump ------------------------------------------------------------------------------


def _snak(pid: str, value: tuple) -> dict:
    kind, data = value
    if kind == "somevalue":
        return {"snaktype": "somevalue", "property": pid, "datatype": "time"}
    if kind == "item":
        number = int(data[1:])
        return {
            "snaktype": "value",
            "property": pid,
            "datavalue": {
                "value": {"entity-type": "item", "numeric-id": number, "id": data},
                "type": "wikibase-entityid",
            },
            "datatype": "wikibase-item",
        }
    if kind == "time":
        year, month, day = data[:4], data[5:7], data[8:10]
        precision = 9 if data[5:10] == "01-01" else 11
        if precision == 9:
            month = day = "00"
        return {
            "snaktype": "value",
            "property": pid,
            "datavalue": {
                "value": {
                    "time": f"+{year}-{month}-{day}T00:00:00Z",
                    "timezone": 0,
                    "before": 0,
                    "after": 0,
                    "precision": precision,
                    "calendarmodel": "http://www.wikidata.org/entity/Q1985727",
                },
                "type": "time",
            },
            "datatype": "time",
        }
    return {
        "snaktype": "value",
        "property": pid,
        "datavalue": {"value": data, "type": "string"},
        "datatype": "external-id",
    }


LANGUAGES = [
    "en",
    "de",
    "fr",
    "es",
    "it",
    "nl",
    "pl",
    "ru",
    "ja",
    "zh",
    "pt",
    "sv",
    "ca",
    "cs",
    "fi",
    "hu",
    "ko",
    "ro",
    "tr",
    "uk",
    "vi",
    "ar",
    "he",
    "fa",
    "id",
    "da",
    "nb",
    "sk",
    "sl",
    "sr",
    "eo",
    "eu",
    "gl",
]


def _other_claims(entity: dict, rng: random.Random) -> dict:
    """The statements real items carry besides the ones kitab reads (with references), so the
    JSON lines have the real dump's size: ~10 KB an item on average (1.4 TB / 110 M items)."""
    number = int(entity["id"][1:])
    claims = entity["claims"]
    extra: dict[str, list] = {}

    def item(pid: str, target: int) -> None:
        extra.setdefault(pid, []).append(("item", f"Q{target}"))

    def string(pid: str, text: str) -> None:
        extra.setdefault(pid, []).append(("string", text))

    if "P50" in claims:  # a work or article: citations, author name strings, identifiers
        for _ in range(rng.randint(3, 30)):
            item("P2860", rng.randint(1, 10**8))  # cites work
        for k in range(rng.randint(0, 12)):
            string("P2093", f"A. N. Other {k}")  # author name string
        string("P356", f"10.{rng.randint(1000, 9999)}/J.{number}")  # DOI
        item("P1433", rng.randint(1, 10**7))  # published in
        string("P698", str(number % 10**8))  # PubMed id
    elif "P17" in claims:  # a place or another thing: location, identifiers, a category
        for pid in ("P131", "P47", "P421", "P1082", "P190"):
            for _ in range(rng.randint(1, 6)):
                item(pid, rng.randint(1, 10**7))
        for pid in ("P373", "P646", "P1566", "P214", "P402", "P6766"):
            string(pid, f"{pid}-{number}")
    elif "P569" in claims:  # a person: the usual biographical statements
        for pid in ("P21", "P27", "P19", "P20", "P735", "P734", "P1412", "P69", "P166", "P463"):
            for _ in range(rng.randint(1, 3)):
                item(pid, rng.randint(1, 10**6))
        for pid in ("P214", "P213", "P244", "P227", "P268", "P269", "P906", "P1006", "P7859"):
            string(pid, f"{pid}-{number}")
    return extra


def _reference(rng: random.Random) -> list:
    return [
        {
            "hash": f"{rng.getrandbits(160):040x}",
            "snaks": {
                "P248": [
                    {
                        "snaktype": "value",
                        "property": "P248",
                        "datavalue": {
                            "value": {"entity-type": "item", "numeric-id": 5375741, "id": "Q5375741"},
                            "type": "wikibase-entityid",
                        },
                        "datatype": "wikibase-item",
                    }
                ]
            },
            "snaks-order": ["P248"],
        }
    ]


def json_entity(entity: dict, rng: random.Random, realistic: bool = True) -> dict:
    claims: dict = {}
    extra = _other_claims(entity, rng) if realistic else {}
    for pid, values in [*entity["claims"].items(), *extra.items()]:
        statements = []
        for k, value in enumerate(values):
            statement = {
                "mainsnak": _snak(pid, value),
                "type": "statement",
                "id": f"{entity['id']}${rng.getrandbits(64):016X}-{k}",
                "rank": "normal",
            }
            if realistic and rng.random() < 0.5:
                statement["references"] = _reference(rng)
            statements.append(statement)
        if pid == "P569" and values and values[0][0] == "time" and rng.random() < 0.05:
            # a deprecated wrong date beside the right one: truthy readers must ignore it
            statements.append(
                {
                    "mainsnak": _snak(pid, ("time", "1700-01-01T00:00:00Z")),
                    "type": "statement",
                    "id": f"{entity['id']}$dep",
                    "rank": "deprecated",
                }
            )
        claims[pid] = statements
    label = entity["label"]
    languages = LANGUAGES[: rng.randint(3, 20)] if realistic and label is not None else ["en"]
    if entity.get("lang", "en") != "en":  # a `mul` name: no `en` label at all, as WikiData publishes it
        languages = [entity["lang"] if lang == "en" else lang for lang in languages]
    labels = {lang: {"language": lang, "value": label} for lang in languages} if label is not None else []
    descriptions = (
        {lang: {"language": lang, "value": f"item {entity['id']} ({lang})"} for lang in languages[:8]}
        if realistic
        else []
    )
    return {
        "type": "item",
        "id": entity["id"],
        "labels": labels,
        "descriptions": descriptions,
        "aliases": [],
        "claims": claims or [],
        "sitelinks": {
            site: {"site": site, "title": label or entity["id"], "badges": []} for site in _sites(entity["sitelinks"])
        }
        or [],
        "lastrevid": 1000 + int(entity["id"][1:]) % 100000,
    }


def _sites(count: int) -> list[str]:
    return [SITES[i] if i < len(SITES) else f"x{i}wiki" for i in range(count)]


# --- N-Triples ------------------------------------------------------------------------------


def nt_escape(text: str) -> str:
    """N-Triples as the WikiData dumps write it: pure ASCII, upper-case hex escapes."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04X}")
        else:
            out.append(f"\\U{code:08X}")
    return "".join(out)


def _nt_value(value: tuple) -> str | None:
    kind, data = value
    if kind == "item":
        return f"<{WD}{data}>"
    if kind == "time":
        return f'"{data}"^^<{XSD}dateTime>'
    if kind == "somevalue":
        return None
    return f'"{nt_escape(data)}"'


def nt_lines(entity: dict, rng: random.Random, truthy: bool) -> list[str]:
    qid = entity["id"]
    item = f"<{WD}{qid}>"
    lines = []
    if not truthy:
        node = f"<{DATA_NODE}{qid}>"
        lines += [
            f"{node} <http://schema.org/about> {item} .",
            f'{node} <http://schema.org/version> "{1000 + int(qid[1:]) % 100000}"^^<{XSD}integer> .',
            f'{node} <{SITELINKS}> "{entity["sitelinks"]}"^^<{XSD}integer> .',
            f"{item} <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://wikiba.se/ontology#Item> .",
        ]
    if entity["label"] is not None:
        text = f'"{nt_escape(entity["label"])}"@{entity.get("lang", "en")}'
        lines.append(f"{item} <{RDFS_LABEL}> {text} .")
        if not truthy:
            lines += [f"{item} <{SKOS_PREF}> {text} .", f"{item} <{SCHEMA_NAME}> {text} ."]
    for pid, values in entity["claims"].items():
        for value in values:
            term = _nt_value(value)
            if term is None:  # an unknown value: a blank node, as the dumps write it
                term = f"_:{rng.getrandbits(64):016x}"
            lines.append(f"{item} <{WDT}{pid}> {term} .")
            if not truthy:
                node = f"<{STATEMENT}{qid}-{rng.getrandbits(64):016x}>"
                lines += [
                    f"{item} <{P}{pid}> {node} .",
                    f"{node} <{PS}{pid}> {term} .",
                    f"{node} <{RANK}> <http://wikiba.se/ontology#NormalRank> .",
                ]
    return lines


# --- writing --------------------------------------------------------------------------------


def write_published(
    snapshot: str | Path,
    out: str | Path,
    *,
    seed: int = 1,
    truthy: bool = False,
    noise: bool = True,
    compresslevel: int = 6,
) -> dict:
    """Write the published-format dumps of the world in ``snapshot`` into ``out`` (atomically); returns counts."""
    snapshot = Path(snapshot)
    manifest = read_manifest(snapshot)
    rng = random.Random(seed)
    counts = {"entities": 0, "noise_entities": 0}
    with atomic_dir(out) as folder:
        json_out = DeterministicGzip(folder / JSON_FILE, compresslevel)
        nt_out = DeterministicGzip(folder / NT_FILE, compresslevel)
        truthy_out = DeterministicGzip(folder / TRUTHY_FILE, compresslevel) if truthy else None
        header = (
            f"<http://wikiba.se/ontology#Dump> <http://schema.org/dateModified> "
            f'"{DUMP_DATE}T00:00:00Z"^^<{XSD}dateTime> .\n'
        )
        for handle in (nt_out, truthy_out):
            if handle:
                handle.write(header.encode())
        json_out.write(b"[\n")
        n_world = manifest.get("counts", {}).get("wd_people", 100) + manifest.get("counts", {}).get("wd_works", 0)
        works_of: dict[str, int] = {}  # main-graph works per P50 author, filled as the world streams by
        stream = _counting_works(world_entities(snapshot), works_of)
        if noise:
            # after the world: scholarly articles naming its writers, which the works rule must not count
            stream = itertools.chain(stream, scholarly_entities(random.Random(seed + 3), works_of))
            n_articles = max(20, n_world)  # more non-author items than the world has items
            stream = itertools.chain(
                stream, noise_entities(random.Random(seed + 1), n_articles, max(30, n_articles // 10))
            )
        first = True
        for entity in stream:
            counts["noise_entities" if int(entity["id"][1:]) >= SCHOLARLY_BASE else "entities"] += 1
            line = json.dumps(json_entity(entity, rng), ensure_ascii=False, separators=(",", ":"))
            json_out.write((b"" if first else b",\n") + line.encode())
            first = False
            nt_out.write("".join(line + "\n" for line in nt_lines(entity, rng, truthy=False)).encode())
            if truthy_out:
                truthy_out.write("".join(line + "\n" for line in nt_lines(entity, rng, truthy=True)).encode())
        json_out.write(b"\n]\n")
        for handle in (json_out, nt_out, truthy_out):
            if handle:
                handle.close()
        counts.update(
            write_openlibrary(snapshot, folder / "openlibrary", random.Random(seed + 2), noise, compresslevel)
        )
        # as a download keeps the server's Last-Modified: the file's date is the dump's date
        stamp = datetime.fromisoformat(DUMP_DATE).replace(tzinfo=UTC).timestamp()
        for path in folder.rglob("*.gz"):
            os.utime(path, (stamp, stamp))
    return counts
