"""A source is an object: the source kinds' registry (kitab/sources/kinds/), what every kind
answers, and, read from the source, that nothing outside the registry compares a source's name
and no stage or flow probes a client for a capability."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

import pytest

from kitab.core.config import Settings
from kitab.core.env import BUNDLED_SNAPSHOT, PROJECT_ROOT
from kitab.core.errors import BadValue
from kitab.core.params import SOURCES, RefreshParams
from kitab.sources import SOURCE_KINDS, source_kind
from kitab.sources.kinds import BUILTIN
from kitab.sources.kinds.base import SourceKind
from kitab.sources.openlibrary import OpenLibrary
from kitab.sources.services import Sources
from kitab.sources.snapshot.format import read_manifest
from kitab.sources.wikidata import Wikidata

SCANNED = ("kitab", "tasks", "flows")
# A reader of a committed release's ledger, not the composition: the data card says whether a
# release came from the live services (kitab/release/export.py belongs to another part of
# issue 27; it could ask ``source_kind(ledger["source"])`` instead).
KNOWN: set[str] = set()  # none left


def source_name_comparisons(root: Path = PROJECT_ROOT, names=tuple(SOURCE_KINDS)) -> list[str]:
    """``file:line`` of every comparison of a source (an expression naming ``source`` or
    ``kind``) with a source kind's name (``params.source == "dump"``, ``spec.kind != "mirror"``,
    ``source in ("mirror", "dump")``, ``match source: case "live":``) in the product's code
    outside the kinds' own package. (``mode == "live"`` compares something else.)"""
    names = set(names)

    def is_a_source(node: ast.AST) -> bool:
        text = ast.unparse(node)
        return "source" in text or "kind" in text

    def names_a_source(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(names_a_source(e) for e in node.elts)
        return False

    found = []
    for package in SCANNED:
        for path in sorted((root / package).rglob("*.py")):
            if path.is_relative_to(root / "kitab" / "sources" / "kinds"):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Compare):
                    operands = [node.left, *node.comparators]
                    if any(map(names_a_source, operands)) and any(map(is_a_source, operands)):
                        found.append(f"{path.relative_to(root)}:{node.lineno}")
                elif isinstance(node, ast.Match) and is_a_source(node.subject):
                    found += [
                        f"{path.relative_to(root)}:{case.pattern.lineno}"
                        for case in node.cases
                        if isinstance(case.pattern, ast.MatchValue) and names_a_source(case.pattern.value)
                    ]
    return sorted(found, key=lambda at: (at.rsplit(":", 1)[0], int(at.rsplit(":", 1)[1])))


def test_no_comparison_of_a_source_kinds_name_outside_the_registry():
    assert set(source_name_comparisons()) - KNOWN == set()


def test_the_scan_finds_a_comparison(tmp_path):
    """The check above can fail: the composition as it was (7e303d0) compared names 12 times."""
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "pipeline.py").write_text(
        "def collect(params, spec, source, mode):\n"
        '    cpu = params.source == "dump"\n'
        '    if spec.kind != "dump" and source in ("mirror", "dump") and mode == "live":\n'
        "        match source:\n"
        '            case "live":\n'
        "                pass\n"
    )
    assert source_name_comparisons(tmp_path) == [f"flows/pipeline.py:{n}" for n in (2, 3, 3, 5)]


def test_no_capability_probe_in_stages_or_flows():
    probes = [
        f"{path.relative_to(PROJECT_ROOT)}:{n}"
        for package in ("tasks", "flows")
        for path in sorted((PROJECT_ROOT / package).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "hasattr(" in line
    ]
    assert probes == []


# --- the registry ------------------------------------------------------------------------


def test_params_validate_the_registered_names():
    """kitab.core.params validates --source without importing the sources layer: its names
    are the registry's."""
    assert SOURCES == tuple(kind.name for kind in BUILTIN) == ("live", "mirror", "dump")
    assert all(SOURCE_KINDS[kind.name] is kind for kind in BUILTIN)
    with pytest.raises(BadValue, match="expected one of live, mirror, dump"):
        source_kind("ftp")
    with pytest.raises(BadValue, match="expected one of live, mirror, dump"):
        RefreshParams(source="ftp")


def protocol_members(protocol: type) -> set[str]:
    return {n for n in vars(protocol) if not n.startswith("_")} | set(protocol.__annotations__)


@pytest.mark.parametrize("name", SOURCES)
def test_every_kind_answers_every_question(name, tmp_path):
    kind = source_kind(name)
    assert isinstance(kind, SourceKind) and kind.name == name
    for flag in (
        "sends_requests",
        "collect_is_cpu_work",
        "opens_cheaply",
        "reads_snapshot_files",
        "reads_mirror_url",
        "reads_live_services",
    ):
        assert isinstance(getattr(kind, flag), bool), flag
    for mirror_url in (None, "http://127.0.0.1:9"):
        params = RefreshParams(source=name, snapshot=str(BUNDLED_SNAPSHOT), mirror_url=mirror_url, release="r1")
        snapshot = kind.snapshot(params)
        assert snapshot is None or snapshot == BUNDLED_SNAPSHOT
        assert isinstance(kind.starts_mirror(params), bool)
    snapshot_id = read_manifest(BUNDLED_SNAPSHOT)["snapshot_id"]
    scope = kind.cache_scope(snapshot_id=snapshot_id, mirror_url="http://127.0.0.1:9", release="r1")
    assert isinstance(scope, str)
    kind.check_origin(snapshot=BUNDLED_SNAPSHOT, mirror_url="http://127.0.0.1:9")
    settings = Settings(warehouse=tmp_path / "wh", contact="kitab-tests@example.org")
    sources = kind.open(settings, snapshot=BUNDLED_SNAPSHOT, mirror_url="http://127.0.0.1:9", cache_scope=scope)
    try:
        assert isinstance(sources, Sources) and sources.kind == name
        # every client has what its service's protocol declares, the bulk capability included
        for client, protocol in ((sources.wikidata, Wikidata), (sources.openlibrary, OpenLibrary)):
            missing = [m for m in protocol_members(protocol) if not hasattr(client, m)]
            assert missing == [], (name, protocol.__name__)
        assert isinstance(sources.openlibrary.bulk_lookups, bool)
        assert sources.requests_sent() == 0 and set(sources.services()) == {"WikiData", "Open Library"}
    finally:
        sources.close()


def test_what_the_built_in_kinds_answer():
    """The answers the composition used to spell out as string comparisons, now the kinds'."""
    live, mirror, dump = (source_kind(n) for n in ("live", "mirror", "dump"))
    assert [k.sends_requests for k in (live, mirror, dump)] == [True, True, False]
    assert [k.collect_is_cpu_work for k in (live, mirror, dump)] == [False, False, True]
    assert [k.opens_cheaply for k in (live, mirror, dump)] == [True, True, False]
    assert [k.reads_snapshot_files for k in (live, mirror, dump)] == [False, False, True]
    assert [k.reads_live_services for k in (live, mirror, dump)] == [True, False, False]
    assert [k.reads_mirror_url for k in (live, mirror, dump)] == [False, True, False]

    named = RefreshParams(source="mirror", snapshot="snap", mirror_url="http://m")
    bare = RefreshParams(source="mirror")
    assert (mirror.snapshot(named), mirror.snapshot(bare)) == (Path("snap"), None)
    assert (mirror.starts_mirror(named), mirror.starts_mirror(bare)) == (False, True)
    assert live.snapshot(named) is None and dump.snapshot(RefreshParams(source="dump")) == BUNDLED_SNAPSHOT
    assert not live.starts_mirror(bare) and not dump.starts_mirror(bare)

    url_scope = "url-" + hashlib.sha256(b"http://m").hexdigest()[:12]
    assert live.cache_scope(snapshot_id="s", mirror_url=None, release="r") == "r"
    assert mirror.cache_scope(snapshot_id="s", mirror_url="http://m", release="r") == "s"
    assert mirror.cache_scope(snapshot_id=None, mirror_url="http://m", release="r") == url_scope
    assert dump.cache_scope(snapshot_id="s", mirror_url=None, release="r") == "s"
    with pytest.raises(BadValue, match="mirror's URL"):
        mirror.check_origin(snapshot=None, mirror_url=None)
    with pytest.raises(BadValue, match="--snapshot"):
        dump.check_origin(snapshot=None, mirror_url=None)


def test_a_kind_is_registered_once(tmp_path):
    from kitab.sources.kinds import register_source_kind

    class Other(SourceKind):
        name = "dump"

    with pytest.raises(ValueError, match="registered twice"):
        register_source_kind(Other())
    assert register_source_kind(SOURCE_KINDS["dump"]) is SOURCE_KINDS["dump"]  # the same object: fine
