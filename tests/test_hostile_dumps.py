"""Issue 31 (half A), through the real ``kitab snapshot from-dumps``: WikiData's ``mul`` labels,
an ``--out`` that never destroys a user's folder or the inputs, bad records counted and skipped,
wrong files and bad options refused in one line before any scan."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from kitab.core.config import Settings as KitabSettings
from kitab.simulate.generator.generate import generate_snapshot
from kitab.simulate.generator.published import JSON_FILE, NT_FILE, write_published
from kitab.simulate.mirror.rdfstore import load_store, query_json
from kitab.sources.dump.wikidata import DumpWikidata
from kitab.sources.from_dumps.wikidata import json_chunk
from kitab.sources.queries import sparql
from kitab.sources.snapshot.format import read_manifest

ENTITIES = Path(__file__).parent / "data" / "wikidata_entities"
WINDOWS = [(1850, 1900), (1900, 1950), (1950, 2000), (2000, 2030)]


def kitab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kitab.app.cli", *args], capture_output=True, text=True, timeout=600)


def from_dumps(wikidata: Path, openlibrary: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return kitab(
        "snapshot", "from-dumps", "--wikidata", str(wikidata), "--openlibrary", str(openlibrary),
        "--out", str(out), "--workers", "0", *extra,
    )  # fmt: skip


def errors(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("hostile-dumps")
    generate_snapshot(base / "world", 5, 40)
    write_published(base / "world", base / "dumps", seed=5)
    return base / "dumps"


def _rewrite(path: Path, edit) -> None:
    lines = gzip.open(path, "rb").read().split(b"\n")
    with gzip.open(path, "wb") as out:
        out.write(b"\n".join(edit(lines)))


def _sample(snapshot: Path, tmp_path: Path) -> dict[str, dict]:
    source = DumpWikidata(snapshot, KitabSettings(warehouse=tmp_path / f"wh-{snapshot.name}"))
    try:
        rows = {}
        for start, end in WINDOWS:
            answer = source.candidate_authors(from_year=start, to_year=end, min_works=10, max_works=300)
            rows.update({r["author"]["value"]: r for r in answer.data["results"]["bindings"]})
        return rows
    finally:
        source.close()


def _mirror_sample(snapshot: Path) -> dict[str, dict]:
    store = load_store(snapshot)  # what the mirror's /sparql answers with
    rows = {}
    for start, end in WINDOWS:
        query = sparql("candidate_authors", from_year=start, to_year=end, min_works=10, max_works=300)
        rows.update({r["author"]["value"]: r for r in json.loads(query_json(store, query))["results"]["bindings"]})
    return rows


# --- 1. labels as published today: en, else mul ----------------------------------------------


def test_real_q42_has_only_a_mul_label_and_the_reader_keeps_it(tmp_path):
    line = (ENTITIES / "Q42.jsonl").read_bytes().strip()
    ctx = {"occupations": {36180, 6625963, 214917, 18844224}, "min_birth_year": 1850, "max_year": 2026}
    ctx["max_record"] = 1 << 24
    counts = json_chunk(b"[\n" + line + b",\n]\n", ctx, tmp_path, 0)
    import pyarrow.parquet as pq

    table = pq.read_table(next(tmp_path.glob("part-*.parquet"))).to_pylist()
    labels = [row["o"] for row in table if row["p"] == "label"]
    assert labels == ['"Douglas Adams"@mul'] and counts["candidate_humans"] == 1


@pytest.mark.parametrize("name", [JSON_FILE, NT_FILE])
def test_a_writer_with_only_a_mul_label_is_sampled_under_that_name(published, tmp_path, name):
    base = read_manifest  # noqa: F841 - keeps the import honest for readers of the snapshot
    dumps = tmp_path / "dumps"
    shutil.copytree(published, dumps)
    first = _sample_first_author(published, tmp_path)
    qid, label = first
    if name == JSON_FILE:
        needle = f'"id":"{qid}"'.encode()

        def edit(lines):
            out = []
            for line in lines:
                if needle in line.replace(b" ", b""):
                    entity = json.loads(line.rstrip(b","))
                    entity["labels"] = {"mul": {"language": "mul", "value": label}, "de": entity["labels"]["de"]}
                    line = json.dumps(entity, separators=(",", ":"), ensure_ascii=False).encode() + (
                        b"," if line.endswith(b",") else b""
                    )
                out.append(line)
            return out
    else:
        subject = f"<http://www.wikidata.org/entity/{qid}> ".encode()

        def edit(lines):
            return [line.replace(b'"@en .', b'"@mul .') if line.startswith(subject) else line for line in lines]

    _rewrite(dumps / name, edit)
    result = from_dumps(dumps / name, dumps / "openlibrary", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    iri = f"http://www.wikidata.org/entity/{qid}"
    for rows in (_sample(tmp_path / "out", tmp_path), _mirror_sample(tmp_path / "out")):
        assert rows[iri]["name"] == {"type": "literal", "value": label, "xml:lang": "mul"}


def _sample_first_author(published: Path, tmp_path: Path) -> tuple[str, str]:
    """A sampled writer of the unmodified dumps (qid, English label)."""
    out = tmp_path / "plain"
    assert from_dumps(published / JSON_FILE, published / "openlibrary", out).returncode == 0
    rows = _sample(out, tmp_path)
    first = sorted(rows)[0]
    assert rows[first]["name"]["xml:lang"] == "en"
    return first.rsplit("/", 1)[1], rows[first]["name"]["value"]


# --- 3. --out never destroys ------------------------------------------------------------------


def test_out_on_a_users_folder_or_an_input_is_refused_and_nothing_is_deleted(published, tmp_path):
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "chapter1.tex").write_text("years of work")
    dumps = tmp_path / "dumps"
    shutil.copytree(published, dumps)
    before = sorted(p.name for p in (dumps / "openlibrary").iterdir())
    for out in (thesis, dumps / "openlibrary", dumps, dumps / "openlibrary" / "snap"):
        result = from_dumps(dumps / JSON_FILE, dumps / "openlibrary", out)
        assert result.returncode != 0 and len(errors(result)) == 1, result.stderr
        assert str(out.resolve()) in errors(result)[0]
    assert (thesis / "chapter1.tex").read_text() == "years of work"
    assert sorted(p.name for p in (dumps / "openlibrary").iterdir()) == before
    assert (dumps / JSON_FILE).stat().st_size == (published / JSON_FILE).stat().st_size


def test_own_output_is_replaced_only_with_overwrite(published, tmp_path):
    out = tmp_path / "snap"
    assert from_dumps(published / JSON_FILE, published / "openlibrary", out).returncode == 0
    again = from_dumps(published / JSON_FILE, published / "openlibrary", out)
    assert again.returncode != 0 and "--overwrite" in errors(again)[0] and len(errors(again)) == 1
    assert from_dumps(published / JSON_FILE, published / "openlibrary", out, "--overwrite").returncode == 0
    assert read_manifest(out)["snapshot_id"].startswith("dump-")


# --- 4. bad records counted, wrong files refused ------------------------------------------------


def test_bad_records_are_counted_by_reason_and_the_snapshot_is_built(published, tmp_path):
    dumps = tmp_path / "dumps"
    shutil.copytree(published, dumps)
    bad = [
        b'{"type":"item","id":"Q7","labels":{"en":{"value":"bad \xff\xfe utf8"}},"claims":{"P50":[]}},',
        b'{"type":"item","id":"Q8","x":' + b"[" * 200_000 + b"]" * 200_000 + b',"claims":{"P50":[]}},',
        b'{"type":"item","id":"Q99999999999999999999999","claims":{"P50":[]}},',
        b'{"type":"item","id":"Q9","claims":{"P50":[{"mainsnak":{"datavalue":{"value":"str"}}}]}},',
    ]
    _rewrite(dumps / JSON_FILE, lambda lines: lines[:2] + bad + lines[2:])
    works = next((dumps / "openlibrary").glob("ol_dump_works_*"))
    _rewrite(works, lambda lines: lines[:1] + [lines[1].replace(b'"title": "', b'"title": "\xff')] + lines[1:])
    result = from_dumps(dumps / JSON_FILE, dumps / "openlibrary", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    skipped = read_manifest(tmp_path / "out")["skipped"]
    for reason in ("decode", "depth", "range", "type"):
        assert skipped[f"wikidata:{reason}"] == 1, skipped


@pytest.mark.parametrize("content", [b"", b"<html>404</html>", b"\x1f\x8b" + b"junk" * 10, "html.gz"])
def test_a_wrong_works_file_is_refused_before_any_scan_in_one_line(published, tmp_path, content):
    dumps = tmp_path / "dumps"
    shutil.copytree(published, dumps)
    works = next((dumps / "openlibrary").glob("ol_dump_works_*"))
    if content == "html.gz":
        works.write_bytes(gzip.compress(b"<!DOCTYPE html><html>Not found</html>\n"))
    else:
        works.write_bytes(content)
    result = from_dumps(dumps / JSON_FILE, dumps / "openlibrary", tmp_path / "out")
    assert result.returncode != 0 and len(errors(result)) <= 2, result.stderr
    assert str(works) in errors(result)[0] and "scanning" not in result.stdout
    assert not (tmp_path / "out").exists()


# --- 5. options checked before the first byte --------------------------------------------------


@pytest.mark.parametrize(
    "extra, word",
    [(("--memory-limit", "banana"), "--memory-limit"), (("--as-of", "2024-13-45"), "--as-of")],
)
def test_bad_options_fail_before_any_scan(published, tmp_path, extra, word):
    result = from_dumps(published / JSON_FILE, published / "openlibrary", tmp_path / "out", *extra)
    assert result.returncode != 0 and len(errors(result)) == 1 and word in errors(result)[0], result.stderr
    assert "scanning" not in result.stdout


def test_out_dot_is_refused_and_a_quote_in_out_works(published, tmp_path):
    dot = subprocess.run(
        [sys.executable, "-m", "kitab.app.cli", "snapshot", "from-dumps", "--wikidata", str(published / JSON_FILE),
         "--openlibrary", str(published / "openlibrary"), "--out", ".", "--workers", "0"],
        capture_output=True, text=True, cwd=published,
    )  # fmt: skip
    assert dot.returncode != 0 and len(errors(dot)) == 1, dot.stderr
    quoted = tmp_path / "it's here"
    result = from_dumps(published / JSON_FILE, published / "openlibrary", quoted)
    assert result.returncode == 0, result.stderr
    assert Counter(p.name for p in quoted.iterdir())["MANIFEST.json"] == 1
