"""Open Library's dumps as published, for a generated world (part of ``write_published``):
``ol_dump_{authors,works,editions,redirects}_<date>.txt.gz``, JSON with ASCII escapes,
redirects in their own file (one chained), and, with noise, unrelated records around the world."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from kitab.sources.snapshot.format import OL_AUTHORS_FILE, OL_EDITIONS_FILE, OL_REDIRECT, OL_WORKS_FILE, open_text

OL_DATE = "2024-05-31"
SAMPLES = Path(__file__).resolve().parents[3] / "snapshots" / "seed" / "ol_dump_samples"


class DeterministicGzip(gzip.GzipFile):
    """A deterministic gzip (no name, mtime 0) that also closes its file."""

    def __init__(self, path: Path, level: int):
        self._raw = open(path, "wb")
        super().__init__(filename="", mode="wb", fileobj=self._raw, compresslevel=level, mtime=0)

    def close(self) -> None:
        super().close()
        self._raw.close()


def _ascii_line(line: str) -> str:
    """An Open Library dump line as published: the same record, JSON with ASCII escapes."""
    fields = line.rstrip("\n").split("\t")
    fields[4] = json.dumps(json.loads(fields[4]))
    return "\t".join(fields) + "\n"


def write_openlibrary(snapshot: Path, folder: Path, rng: random.Random, noise: bool, level: int) -> dict:
    folder.mkdir()
    names = {
        kind: folder / f"ol_dump_{kind}_{OL_DATE}.txt.gz" for kind in ("authors", "works", "editions", "redirects")
    }
    out = {kind: DeterministicGzip(path, level) for kind, path in names.items()}
    counts = {"ol_redirects": 0, "ol_noise_lines": 0}
    with open_text(snapshot / OL_AUTHORS_FILE) as handle:
        for line in handle:
            if line.startswith(OL_REDIRECT + "\t"):
                fields = line.split("\t")
                record = json.loads(fields[4])
                if noise:  # a chain: old -> mid -> location, where mid is a merged author too
                    mid = record["key"][:-1] + "9A"
                    for key, location in ((record["key"], mid), (mid, record["location"])):
                        hop = dict(record, key=key, location=location)
                        out["redirects"].write(
                            ("\t".join([fields[0], key, *fields[2:4], json.dumps(hop)]) + "\n").encode()
                        )
                    counts["ol_redirects"] += 2
                else:
                    out["redirects"].write(_ascii_line(line).encode())
                    counts["ol_redirects"] += 1
            else:
                out["authors"].write(_ascii_line(line).encode())
    for kind, name in (("works", OL_WORKS_FILE), ("editions", OL_EDITIONS_FILE)):
        with open_text(snapshot / name) as handle:
            for line in handle:
                out[kind].write(_ascii_line(line).encode())
                if noise:  # the records of authors nobody samples: most of the real dumps
                    for copy in range(UNRELATED_COPIES):
                        out[kind].write(_unrelated(_ascii_line(line), copy).encode())
                        counts["ol_noise_lines"] += 1
    if noise:
        counts["ol_noise_lines"] += _ol_noise(out, rng)
    for handle in out.values():
        handle.close()
    return counts


UNRELATED_COPIES = 3  # unrelated works and editions per world one (real dumps: most records reach no sampled author)


def _unrelated(line: str, copy: int) -> str:
    """The same record under keys no sampled author reaches (prefix 6<copy> on every key)."""
    prefix = f"6{copy}"
    for key in ("/authors/OL", "/works/OL", "/books/OL"):
        line = line.replace(key, key + prefix)
    return line


def _ol_noise(out: dict, rng: random.Random) -> int:
    """Unrelated records: the real sample lines, a multi-MB work, work redirects."""
    n = 0
    for sample, kind in (
        ("authors-head-n20.txt", "authors"),
        ("works-head-n25.txt", "works"),
        ("works-tail-n30.txt", "works"),
        ("editions-tail-n20.txt", "editions"),
    ):
        path = SAMPLES / sample
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                out[kind].write((line + "\n").encode())
                n += 1
    big = {
        "key": "/works/OL1999999999W",
        "type": {"key": "/type/work"},
        "title": "Collected notes",
        "description": {"type": "/type/text", "value": "".join(rng.choice("abcdefgh ") for _ in range(3 << 20))},
        "authors": [{"type": {"key": "/type/author_role"}, "author": {"key": "/authors/OL1999999999A"}}],
        "revision": 1,
    }
    out["works"].write(f"/type/work\t{big['key']}\t1\t2020-01-01T00:00:00.000000\t{json.dumps(big)}\n".encode())
    redirect = {"key": "/works/OL1999999998W", "type": {"key": OL_REDIRECT}, "location": big["key"], "revision": 2}
    out["redirects"].write(
        f"{OL_REDIRECT}\t{redirect['key']}\t2\t2020-01-01T00:00:00.000000\t{json.dumps(redirect)}\n".encode()
    )
    return n + 2
