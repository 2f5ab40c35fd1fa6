"""Generate a snapshot: the seed rows, curated facts, deliberate edge cases, and seeded filler.

``generate_snapshot(out_dir, seed, n_authors)`` writes a snapshot folder (see
``docs/snapshot.md``) whose WikiData part has exactly ``n_authors`` candidate authors (human,
writer or a subclass, born 1850 or later, 10-300 works with P50) plus the deliberate failures.
Authors come in a fixed order: the case authors and the KITAB authors they use, the other
KITAB rows, the romance-sample authors, then generated fillers; a smaller ``n_authors`` cuts
that list short, a larger one adds fillers. Each author draws from its own random stream,
so the same seed and ``n_authors`` give byte-identical files, and a larger snapshot starts
with the same authors as a smaller one.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

from kitab.core.files import atomic_dir, sha256_file
from kitab.simulate.generator import curated
from kitab.simulate.generator.cases import KITAB_CASE_AUTHORS, build_cases
from kitab.simulate.generator.emit import SnapshotWriter, emit_author, emit_ontology, emit_record_items
from kitab.simulate.generator.seed import load_kitab_authors, load_romance_authors
from kitab.simulate.generator.spec import (
    CURATED,
    REAL,
    SYNTHETIC_ID_BASE,
    AuthorSpec,
    Ids,
    filler_specs,
    is_candidate,
    kitab_spec,
    rng_for,
    romance_specs,
)
from kitab.sources.snapshot.format import (
    DATA_FILES,
    MANIFEST_FILE,
    OL_AUTHOR,
    OL_EDITION,
    OL_REDIRECT,
    OL_WORK,
    manifest_bytes,
)

GENERATOR_VERSION = "2"  # 2: cross-author unique titles, variant works
# The snapshot's as-of date: fixed (after the newest seed record), never the wall clock, so
# regeneration is byte-identical. Record timestamps and "future" years are relative to it.
CREATED_AT = datetime(2024, 6, 1)

SOURCES = {
    "kitab_authors": {
        "what": "98 real KITAB author rows: name, birth year, WikiData sitelinks, WikiData id, Open Library id",
        "from": "Hugging Face dataset microsoft/kitab, data/KITAB-author-metadata.json (viewer rows); "
        "snapshots/seed/kitab_hf/",
        "license": "MIT (dataset card); WikiData facts CC0",
    },
    "ol_romance_sample": {
        "what": "42 real Open Library authors (key, name, birth/death year) and their 100 real works "
        "(key, title, first publish year, edition count) from a romance subject sample",
        "from": "GitHub EfiLygda/openlibrary-etl-pipeline, data/sample/*.csv; snapshots/seed/ol_etl_romance_sample/",
        "license": "MIT (repository); Open Library data CC0",
    },
    "curated": {
        "what": "WikiData's class/occupation ids and labels used here; for some KITAB authors birth/death dates, "
        "occupations and well-known titles with first-publication years",
        "from": "public knowledge, written down in kitab/simulate/generator/curated.py (may contain small errors)",
        "license": "CC0",
    },
    "generated": {
        "what": "everything else: synthetic people, titles, WikiData items, Open Library records, editions, "
        "revisions and timestamps",
        "from": "kitab.simulate.generator.generate (seeded)",
        "license": "CC0",
    },
}


def generate_snapshot(out_dir: str | Path, seed: int, n_authors: int, *, both_labels: bool = False) -> dict:
    """Write a snapshot folder atomically and return its manifest. ``both_labels`` (tests): some
    people and characters labelled in English also get a different `mul` label (emit.py's
    has_both_labels); off, the snapshot is byte for byte what it always was."""
    ids = Ids()
    kitab = {row.qid: kitab_spec(row, seed, ids) for row in load_kitab_authors()}
    case_specs, cases = build_cases(ids, kitab, CREATED_AT.year)
    fixed = case_specs + [kitab[qid] for qid in KITAB_CASE_AUTHORS]
    romance = romance_specs(load_romance_authors(), seed, ids)
    used_names = {spec.name for spec in [*fixed, *kitab.values(), *romance]}
    rest = itertools.chain(
        (spec for qid, spec in kitab.items() if qid not in KITAB_CASE_AUTHORS),
        romance,
        filler_specs(seed, ids, used_names),
    )
    # WikiData works some case book credits to another author count for that author too.
    borrowed = Counter(b.wd_author for spec in fixed for b in spec.books if b.wd_author and b.in_wikidata)

    emitted: list[AuthorSpec] = []  # only non-filler specs are kept, for the manifest's id lists
    with atomic_dir(out_dir) as folder:
        writer = SnapshotWriter(folder)
        writer.both_labels = both_labels
        emit_ontology(writer)
        for spec in _selection(fixed, rest, n_authors, borrowed):
            emit_author(writer, ids, spec, rng_for(seed, spec.slot), CREATED_AT)
            if not spec.slot.startswith("filler-"):
                emitted.append(spec)
        emit_record_items(writer, ids)
        writer.close()
        manifest = _manifest(folder, seed, n_authors, ids, emitted, cases, writer.counts)
        (folder / MANIFEST_FILE).write_bytes(manifest_bytes(manifest))
    return manifest


def _selection(
    fixed: list[AuthorSpec], rest: Iterable[AuthorSpec], n_authors: int, borrowed: Counter
) -> Iterator[AuthorSpec]:
    """``fixed`` in full, then ``rest`` until exactly ``n_authors`` candidates have been given."""
    candidates = sum(is_candidate(spec, spec.wd_works + borrowed[spec.qid]) for spec in fixed)
    if n_authors < candidates:
        raise ValueError(f"n_authors must be at least {candidates} (the edge-case candidates), got {n_authors}")
    yield from fixed
    for spec in rest:
        if candidates == n_authors:
            return
        candidates += is_candidate(spec, spec.wd_works)
        yield spec


def _bare(key: str) -> str:
    return key.rsplit("/", 1)[-1]


def _manifest(
    folder: Path, seed: int, n_authors: int, ids: Ids, emitted: list[AuthorSpec], cases: dict, counts: Counter
) -> dict:
    checksums = {name: sha256_file(folder / name) for name in DATA_FILES}
    digest = hashlib.sha256("".join(f"{name}:{checksums[name]}\n" for name in DATA_FILES).encode()).hexdigest()
    # Romance-sample authors are REAL on Open Library but have generated QIDs.
    real_qids = [s.qid for s in emitted if s.origin == REAL and int(s.qid[1:]) <= SYNTHETIC_ID_BASE]
    return {
        "snapshot_id": f"kitab-s{seed}-n{n_authors}-{digest[:12]}",
        "created_at": CREATED_AT.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seed": seed,
        "n_authors": n_authors,
        "generator": {"module": __name__, "version": GENERATOR_VERSION},
        "sources": SOURCES,
        "synthetic": {
            "rule": f"an id whose number is above {SYNTHETIC_ID_BASE} was generated; every smaller id is a real "
            "WikiData or Open Library id",
            "generated_id_ranges": ids.ranges(),
            "real": {
                "note": "real ids; the records' names and birth years come from the seed rows (or are curated), "
                "their other fields (revisions, timestamps, alternate names, editions) are generated",
                "qids": real_qids,
                "ol_authors": [_bare(s.ol_key) for s in emitted if s.origin == REAL and s.ol_key],
                "ol_works": [_bare(b.key) for s in emitted for b in s.books if b.origin == REAL],
            },
            "curated": {
                "note": "facts written down from public knowledge (see sources.curated); the works' ids are generated",
                "qids": sorted(curated.LABELS) + [q for q in real_qids if q in curated.AUTHORS],
                "ol_works": [_bare(b.key) for s in emitted for b in s.books if b.origin == CURATED],
            },
        },
        "cases": cases,
        "checksums": checksums,
        "counts": {
            "candidates": n_authors,
            "wd_people": counts["wd_people"],
            "wd_works": counts["wd_works"],
            "triples": counts["triples"],
            "ol_authors": counts[OL_AUTHOR],
            "ol_redirects": counts[OL_REDIRECT],
            "ol_works": counts[OL_WORK],
            "ol_editions": counts[OL_EDITION],
            "bytes": sum((folder / name).stat().st_size for name in DATA_FILES),
        },
    }


def main(seed: int, authors: int, out: str | Path, shown: str | Path | None = None) -> dict:
    """CLI entry (``kitab snapshot generate --seed S --authors N --out DIR``): generate and print a
    summary (``shown``: the folder to name, when ``out`` is a temp folder moved there after)."""
    manifest = generate_snapshot(out, seed, authors)
    counts = manifest["counts"]
    print(f"snapshot {manifest['snapshot_id']} -> {shown or out}")
    print(
        f"  WikiData: {counts['wd_people']} people ({counts['candidates']} candidates), "
        f"{counts['wd_works']} works, {counts['triples']} triples"
    )
    print(
        f"  Open Library: {counts['ol_authors']} authors (+{counts['ol_redirects']} redirects), "
        f"{counts['ol_works']} works, {counts['ol_editions']} editions"
    )
    print(f"  cases: {len(manifest['cases'])} ({', '.join(manifest['cases'])})")
    print(f"  size: {counts['bytes'] / 1e6:.2f} MB (data files, gzip)")
    return manifest
