"""Issue 31 (half A), through the real ``kitab snapshot from-dumps``: WikiData's ``mul`` labels,
an ``--out`` that never destroys a user's folder or the inputs, bad records counted and skipped,
wrong files and bad options refused in one line before any scan."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
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


# --- 2. the works rule: WDQS's main graph, no scholarly articles ----------------------------------


def _works(rows: dict[str, dict]) -> dict[str, int]:
    return {author: int(row["works"]["value"]) for author, row in rows.items()}


def _named(rows: dict[str, dict]) -> dict[str, tuple]:
    return {
        author: (row["name"]["value"], row["name"]["xml:lang"], row["works"]["value"]) for author, row in rows.items()
    }


def test_scholarly_p50_links_are_not_works_in_the_dump_store_or_the_mirror(published, tmp_path):
    """A snapshot holding scholarly articles (P31 Q13442814, or P13046) by a writer with n main-graph
    works: n + the articles is 301, past the rule; every source still counts n and samples him."""
    world = tmp_path / "world"
    shutil.copytree(published.parent / "world", world)
    before = _works(_mirror_sample(world))
    writer = sorted(before)[0]
    n = before[writer]
    lines = []
    for k in range(301 - n):
        item = f"<http://www.wikidata.org/entity/Q1950000{k:03d}>"
        wdt = "<http://www.wikidata.org/prop/direct/"
        kind = f"{wdt}P31> <http://www.wikidata.org/entity/Q13442814>" if k % 2 else f"{wdt}P13046> <{writer}>"
        lines += [f"{item} {kind} .", f"{item} {wdt}P50> <{writer}> .",
                  f'{item} <http://www.w3.org/2000/01/rdf-schema#label> "A study {k}"@en .']  # fmt: skip
    path = world / "wikidata.nt.gz"
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()) + "".join(x + "\n" for x in lines).encode()))
    for rows in (_sample(world, tmp_path), _mirror_sample(world)):
        assert _works(rows) == before  # the writer is still eligible, with n works
    source = DumpWikidata(world, KitabSettings(warehouse=tmp_path / "wh-titles"))
    try:
        assert source.works_by_titles(["A study 1", "A study 2"]).data["results"]["bindings"] == []
    finally:
        source.close()
    query = sparql("works_by_titles", titles='"A study 1"@en "A study 2"@en')
    assert json.loads(query_json(load_store(world), query))["results"]["bindings"] == []


def test_from_dumps_counts_only_main_graph_works(published, tmp_path):
    """The published dumps carry scholarly articles naming the world's writers (every writer with
    fewer than 10 works gets enough to pass 10, one near 300 enough to pass it) and the real
    scholarly article Q51605722 made to name a writer: the snapshot built from them samples exactly
    the world's writers with the world's counts and names (a `mul`-only one among them: the generator
    labels a few % of people so), through the dump source and the mirror."""
    world = _named(_mirror_sample(published.parent / "world"))
    assert any(lang == "mul" for _, lang, _ in world.values())
    writer = sorted(world)[0].rsplit("/", 1)[1]
    real = json.loads((ENTITIES / "Q51605722.jsonl").read_text())
    assert real["claims"]["P31"][0]["mainsnak"]["datavalue"]["value"]["id"] == "Q13442814"
    value = {"entity-type": "item", "numeric-id": int(writer[1:]), "id": writer}
    snak = {"snaktype": "value", "property": "P50", "datavalue": {"value": value, "type": "wikibase-entityid"}}
    real["claims"]["P50"] = [{"mainsnak": snak, "type": "statement", "rank": "normal"}]
    line = json.dumps(real, separators=(",", ":"), ensure_ascii=False).encode() + b","
    dumps = tmp_path / "dumps"
    shutil.copytree(published, dumps)
    _rewrite(dumps / JSON_FILE, lambda lines: lines[:1] + [line] + lines[1:])
    for name in (JSON_FILE, NT_FILE):
        out = tmp_path / f"out-{name}"
        result = from_dumps(dumps / name, dumps / "openlibrary", out)
        assert result.returncode == 0, result.stderr
        for rows in (_sample(out, tmp_path), _mirror_sample(out)):
            assert _named(rows) == world
        manifest = read_manifest(out)
        assert manifest["filter"]["works_rule"].startswith("main graph")
        assert manifest["kept"]["wikidata"]["scholarly_works_left_out"] > 0


def test_the_bundled_world_has_mul_only_writers_at_a_few_percent():
    """The generator (and so the mirror serving the bundled snapshot) labels a few % of people `mul` only."""
    from kitab.core.env import BUNDLED_SNAPSHOT

    rows = _mirror_sample(BUNDLED_SNAPSHOT)
    mul = [row["name"]["value"] for row in rows.values() if row["name"]["xml:lang"] == "mul"]
    assert 0.01 * len(rows) <= len(mul) <= 0.1 * len(rows), (len(mul), len(rows))


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


# --- 6. the scan's buffers: room checked, one line, removed, stale ones swept --------------------


def _statvfs_with(free: dict[Path, int]):
    """os.statvfs, except that the folders in ``free`` report that many bytes free (a small tmpfs)."""
    real = os.statvfs

    def fake(path):
        st = real(path)
        for folder, n in free.items():
            if Path(path) == folder:
                return os.statvfs_result((4096, 4096, st.f_blocks, n // 4096, n // 4096, *tuple(st)[5:]))
        return st

    return fake


def test_a_small_buffer_place_falls_back_and_no_room_anywhere_is_one_line(tmp_path, monkeypatch):
    from kitab.sources.from_dumps import scan as scan_module

    shm, parts = tmp_path / "shm", tmp_path / "parts"
    shm.mkdir()
    parts.mkdir()
    monkeypatch.setattr(scan_module.os, "statvfs", _statvfs_with({shm: 1 << 20}))  # a 1 MB /dev/shm
    slots = scan_module.Slots(3, 1 << 20, parts, shm=shm)
    try:
        assert slots.folder.parent == parts and len(list(slots.folder.iterdir())) == 3
    finally:
        slots.close()
    assert not slots.folder.exists()
    monkeypatch.setattr(scan_module.os, "statvfs", _statvfs_with({shm: 1 << 20, parts: 2 << 20}))
    with pytest.raises(scan_module.BufferSpaceError) as refused:
        scan_module.Slots(3, 1 << 20, parts, shm=shm)
    message = str(refused.value)
    assert "\n" not in message and str(shm) in message and str(parts) in message and "3 MB" in message
    assert list(shm.iterdir()) == [] and list(parts.iterdir()) == []


def test_stale_slot_folders_of_a_dead_pid_are_swept(tmp_path):
    from kitab.sources.from_dumps.scan import SLOTS_PREFIX, Slots

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)  # exited: its pid is free (reuse within the test is unlikely)
    shm, parts = tmp_path / "shm", tmp_path / "parts"
    shm.mkdir()
    parts.mkdir()
    stale = [shm / f"{SLOTS_PREFIX}{dead_pid}-abc", parts / f"{SLOTS_PREFIX}{dead_pid}-def"]
    alive = shm / f"{SLOTS_PREFIX}{os.getppid()}-xyz"  # a live process's: kept
    for folder in (*stale, alive):
        folder.mkdir()
        (folder / "slot-0").write_bytes(b"x" * 1000)
    slots = Slots(2, 4096, parts, shm=shm)
    slots.close()
    assert not any(p.exists() for p in stale) and alive.exists()


def test_a_terminated_scan_removes_its_buffers(tmp_path):
    """SIGTERM while the slots exist (no other handler): the folder goes, the process still dies of it."""
    shm = tmp_path / "shm"
    shm.mkdir()
    code = (
        "import sys, time; from pathlib import Path; from kitab.sources.from_dumps.scan import Slots\n"
        f"s = Slots(2, 1 << 20, Path({str(tmp_path)!r}), shm=Path({str(shm)!r}))\n"
        "print(s.folder, flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    folder = Path(proc.stdout.readline().strip())
    assert folder.is_dir() and len(list(folder.iterdir())) == 2
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM
    assert not folder.exists()


# --- 6. kill -9 and rerun: the same snapshot, byte for byte, MANIFEST.json included ---------------


def _from_dumps_cmd(published: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "kitab.app.cli", "snapshot", "from-dumps", "--wikidata", str(published / JSON_FILE),
        "--openlibrary", str(published / "openlibrary"), "--out", str(out), "--workers", "0", "--chunk-mb", "1",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def uninterrupted(published, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("uninterrupted") / "snap"
    result = subprocess.run(_from_dumps_cmd(published, out), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.parametrize("scan, finished", [("wikidata", 12), ("ol-editions", 1)])
def test_a_run_killed_mid_scan_and_rerun_writes_the_same_manifest_bytes(
    published, uninterrupted, tmp_path, scan, finished
):
    """Issue 31: after kill -9 mid-scan and a rerun the data was identical but MANIFEST.json's
    bytes differed (the resumed chunks' counts in another order). The run is killed once
    ``finished`` chunks of ``scan`` are done (1 MB chunks: the WikiData dump has ~80), rerun
    the same way (with --overwrite when the killed run left a folder of its own)."""
    out = tmp_path / "snap"
    cmd = _from_dumps_cmd(published, out)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if len(list((tmp_path / "snap.parts" / scan).glob("*.done.json"))) >= finished:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "the run ended before it could be killed mid-scan"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert not (out / "MANIFEST.json").exists() and any((tmp_path / "snap.parts" / scan).glob("*.done.json"))
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if rerun.returncode != 0 and "--overwrite" in rerun.stderr:
        rerun = subprocess.run([*cmd, "--overwrite"], capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert (out / "MANIFEST.json").read_bytes() == (uninterrupted / "MANIFEST.json").read_bytes()
    for name in read_manifest(uninterrupted)["checksums"]:
        assert (out / name).read_bytes() == (uninterrupted / name).read_bytes(), name
