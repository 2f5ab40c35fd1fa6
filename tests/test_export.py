"""Export of a release as a Hugging Face dataset folder, the release report, and the push to
the Hub (against the loopback fake in tests/fake_hub.py: nothing leaves the machine).

The warehouse is built once for the module by the pipeline the refresh flow runs
(flows/pipeline.py, called directly) on the bundled snapshot through the dump source: two
releases, so the card has an earlier release to list.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import re
import secrets
import shutil
from fractions import Fraction
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from kitab.core.outputs import OutputRefused
from kitab.core.warehouse import Warehouse
from kitab.release.export import CONFIG_NAMES, ExportExists, card_configs, export_release
from kitab.release.report import render_report
from tests.releases import dump_release

EARLIER, RELEASE = "2026.01.02-s3", "2026.03.04-s7"
KITAB_QUERY_COLUMNS = [
    "Author",
    "Birth Year",
    "# of sitelinks",
    "constraint_id",
    "constraint_type",
    "constraints",
    "mapped_books",
    "all_books",
    "raw_books",
]
KITAB_AUTHOR_COLUMNS = ["Author", "Birth Year", "# of sitelinks", "WikiData ID", "OpenLibrary ID"]
# config -> (columns, exactly; None: any) and the warehouse view or table it must match
EXPECTED = {
    "one-book-constraints": (
        KITAB_QUERY_COLUMNS + ["query_id", "unsure_books", "prompt"],
        "kitab_one_book_constraints",
    ),
    "two-book-constraints": (
        KITAB_QUERY_COLUMNS + ["query_id", "unsure_books", "prompt"],
        "kitab_two_book_constraints",
    ),
    "author-metadata": (KITAB_AUTHOR_COLUMNS + ["synthetic"], "kitab_author_metadata"),
    "book-metadata": (
        [
            "book_id",
            "author_qid",
            "author",
            "canonical_title",
            "first_year",
            "n_variants",
            "variant_titles",
            "work_keys",
            "has_human_name",
            "human_names",
            "has_city_name",
            "city_names",
            "synthetic",
        ],
        "books",
    ),
    "constraints": (None, "constraints"),
    "rejects": (None, "rejects"),
    "claim-pairs": (None, "claims"),
    "baselines": (None, "baselines"),
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("export") / "warehouse"
    dump_release(root, authors=5, seed=3, release=EARLIER)
    dump_release(root, authors=12, seed=7, release=RELEASE)
    assert Warehouse(root).committed_releases() == [EARLIER, RELEASE]
    return root


@pytest.fixture(scope="module")
def exported(warehouse, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("hf") / RELEASE
    return out, export_release(warehouse, RELEASE, out)


@pytest.fixture
def hub_env(monkeypatch, tmp_path_factory) -> str:
    """A fresh token in HF_TOKEN, and hf_xet's logs (its session is created by the first push in
    this process) in a temp folder instead of ~/.cache/huggingface/xet."""
    token = "hf_kitabtest" + secrets.token_hex(16)
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("HF_XET_CACHE", str(tmp_path_factory.mktemp("xet")))
    return token


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): sha256(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def card_header(folder: Path) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text[4 : text.index("\n---\n", 4)])


# -- the folder loads offline --------------------------------------------------------------
def test_every_config_loads_offline_with_kitab_columns_and_the_views_rows(exported, warehouse, tmp_path):
    import datasets

    assert datasets.config.HF_HUB_OFFLINE  # tests run offline (conftest -> kitab.core.env)
    out, summary = exported
    assert datasets.get_dataset_config_names(str(out)) == list(CONFIG_NAMES)
    with Warehouse(warehouse).connect(release=RELEASE) as con:
        for config, (columns, source) in EXPECTED.items():
            loaded = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "hf-cache"))
            assert list(loaded) == ["test"], config
            test = loaded["test"]
            expected_rows = con.execute(f"SELECT count(*) FROM {source}").fetchall()[0][0]
            assert test.num_rows == expected_rows == summary["rows"][config] > 0, config
            if columns is not None:
                assert test.column_names == columns, config
            else:  # our tables: the warehouse schema, without the hive partition column
                assert test.column_names == [
                    f.name for f in pq.read_schema(Warehouse(warehouse).committed_files(RELEASE)[source])
                ], config
        # the rows are the view's, in the view's order, KITAB's types included
        columns = ", ".join(f'"{c}"' for c in KITAB_QUERY_COLUMNS)
        view = (
            con.sql(f"SELECT {columns}, query_id, unsure_books FROM kitab_one_book_constraints")
            .to_arrow_table()
            .to_pylist()
        )
    one = datasets.load_dataset(str(out), "one-book-constraints", split="test", cache_dir=str(tmp_path / "hf-cache"))
    assert [{k: v for k, v in row.items() if k != "prompt"} for row in one.to_list()] == view
    # no config name: the card's default config, one-book-constraints
    default = datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "hf-cache"))
    assert default.num_rows == one.num_rows and default.column_names == one.column_names
    assert {one.features["Birth Year"].dtype, one.features["constraint_id"].dtype} == {"int64"}


def test_query_configs_list_the_books_each_key_leaves_out_as_unsure(exported, warehouse):
    """Issue 28: unsure_books holds, per query, the canonical titles of queries.unsure_book_ids
    (sorted, as a Python list string like mapped_books); none of them is in mapped_books. The
    kitab layout's JSON rows equal these (test_the_kitab_layout_...)."""
    out, _ = exported
    with Warehouse(warehouse).connect(release=RELEASE) as con:
        expected = dict(
            con.sql(
                "SELECT q.query_id, list_sort(coalesce(list(b.canonical_title) FILTER (WHERE b.book_id IS NOT NULL), "
                "[]::VARCHAR[])) FROM queries q LEFT JOIN books b ON list_contains(q.unsure_book_ids, b.book_id) "
                "GROUP BY q.query_id"
            ).fetchall()
        )
    seen = 0
    for config in ("one-book-constraints", "two-book-constraints"):
        for row in pq.read_table(out / f"data/{config}/test-00000-of-00001.parquet").to_pylist():
            unsure = ast.literal_eval(row["unsure_books"])
            assert unsure == expected[row["query_id"]], row["query_id"]
            assert not set(unsure) & set(ast.literal_eval(row["mapped_books"]))
            seen += len(unsure)
    assert seen > 0  # the release has unsure books in some entity query
    card = (out / "README.md").read_text(encoding="utf-8")  # issue 28 item 7: the card states the key quality
    assert "### Answer-key quality (entity constraints)" in card and "| human-name |" in card


def test_synthetic_flags_mark_the_generated_authors_and_books(exported):
    """The bundled snapshot mixes real KITAB authors with generated ones (ids above 990000000,
    MANIFEST.json synthetic.rule): the last column of author-metadata and book-metadata says which."""
    out, _ = exported

    def generated(record_id):
        return record_id is not None and int(record_id.rstrip("AW").split("OL")[-1].lstrip("Q")) > 990_000_000

    authors = pq.read_table(out / "data/author-metadata/test-00000-of-00001.parquet").to_pylist()
    assert list(authors[0])[-1] == "synthetic"
    assert [a["synthetic"] for a in authors] == [
        generated(a["WikiData ID"]) or generated(a["OpenLibrary ID"]) for a in authors
    ]
    assert {a["synthetic"] for a in authors} == {True, False}  # both kinds in this release
    books = pq.read_table(out / "data/book-metadata/test-00000-of-00001.parquet").to_pylist()
    assert list(books[0])[-1] == "synthetic"
    assert [b["synthetic"] for b in books] == [
        any(generated(k.rsplit("/", 1)[-1]) for k in b["work_keys"]) for b in books
    ]
    assert {b["synthetic"] for b in books} == {True, False}


def test_card_configs_match_the_files_on_disk_exactly(exported):
    out, summary = exported
    header = card_header(out)
    configs = {c["config_name"]: c["data_files"] for c in header["configs"]}
    assert list(configs) == list(CONFIG_NAMES)
    assert all([f["split"] for f in files] == ["test"] for files in configs.values())
    named = sorted(f["path"] for files in configs.values() for f in files)
    on_disk = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p.suffix == ".parquet")
    assert named == on_disk
    assert card_configs((out / "README.md").read_text(encoding="utf-8")) == {
        name: {"test": files[0]["path"]} for name, files in configs.items()
    }
    assert (
        sorted(summary["files"])
        == sorted(tree(out))
        == sorted([*on_disk, "README.md", "provenance.json", "plots/kappa.png", "plots/popularity.png"])
    )


def test_card_states_license_citation_version_provenance_and_earlier_releases(exported, warehouse):
    out, _ = exported
    text = (out / "README.md").read_text(encoding="utf-8")
    header = card_header(out)
    assert header["license"] == "mit"
    assert "2310.15511" in text and "@misc{abdin2023kitab" in text
    ledger = {r["release"]: r for r in Warehouse(warehouse).read_table("releases").to_pylist()}
    assert f"release **`{RELEASE}`**" in text and f"`{EARLIER}`" in text  # earlier release listed
    assert ledger[RELEASE]["code_version"] in text and ledger[RELEASE]["snapshot_id"] in text
    for table, checksum in json.loads(ledger[RELEASE]["checksums"]).items():
        assert checksum in text, table
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["release"] == provenance["hub_tag"] == RELEASE
    assert provenance["earlier_releases"] == [EARLIER]
    for path, info in provenance["files"].items():
        assert sha256(out / path) == info["sha256"], path
        assert info["sha256"] in text, path


def test_constraints_and_rejects_are_the_warehouse_partitions_byte_for_byte(exported, warehouse):
    out, _ = exported
    wh = Warehouse(warehouse)
    checksums = json.loads(wh.read_table("releases", [RELEASE]).to_pylist()[0]["checksums"])
    for table in ("constraints", "rejects"):
        assert sha256(out / f"data/{table}/test-00000-of-00001.parquet") == checksums[table]


def test_export_is_deterministic_atomic_and_refuses_to_overwrite(exported, warehouse, tmp_path):
    out, _ = exported
    before = tree(out)
    again = export_release(warehouse, RELEASE, out)  # same release, same folder: nothing to do
    assert again["written"] is False and tree(out) == before
    elsewhere = tmp_path / "copy"
    assert export_release(warehouse, RELEASE, elsewhere)["written"] is True
    assert tree(elsewhere) == before  # byte-identical: Parquet, PNG, card, provenance

    with pytest.raises(ExportExists):  # another release's export: refused before building
        export_release(warehouse, EARLIER, elsewhere)
    assert tree(elsewhere) == before
    (elsewhere / "README.md").write_text("edited by hand")  # same release, other bytes: refused after building
    with pytest.raises(ExportExists):
        export_release(warehouse, RELEASE, elsewhere)
    assert (elsewhere / "README.md").read_text() == "edited by hand"
    replaced = export_release(warehouse, EARLIER, elsewhere, force=True)
    assert replaced["written"] is True and json.loads((elsewhere / "provenance.json").read_text())["release"] == EARLIER

    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(OutputRefused, match="not an output of `kitab export`"):  # never suggests --overwrite
        export_release(warehouse, RELEASE, other, force=True)
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    (tmp_path / "empty").mkdir()
    assert export_release(warehouse, RELEASE, tmp_path / "empty")["written"] is True
    with pytest.raises(ValueError, match="no committed release"):
        export_release(warehouse, "nope", tmp_path / "nope")
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # temp folders beside --out are always cleaned up


def test_report_renders_the_same_quality_section_as_the_card(exported, warehouse, tmp_path):
    """The report is the card's quality section, then the refresh's stage timings (not in the card)."""
    out, _ = exported
    text = render_report(warehouse, RELEASE, tmp_path / "report")
    card = (out / "README.md").read_text(encoding="utf-8")
    quality, stages = text.split("\n## Refresh stages\n")
    assert text.startswith("## Quality\n") and quality in card and "## Refresh stages" not in card
    recorded = json.loads(Warehouse(warehouse).ledger_row(RELEASE)["stages"])
    assert [r["stage"] for r in recorded] == [
        "start",
        "sample_authors",
        "collect",
        "tag_entities",
        "generate_constraints",
        "sample_queries",
        "publish",
    ]
    for r in recorded:
        assert re.search(rf"^\| (\*\*)?{r['stage']}(\*\*)? \| ", stages, re.MULTILINE), (r, stages)
    assert json.loads((out / "provenance.json").read_text())["ledger"]["stages"] == recorded
    for part in ("Table 2", "![", "plots/kappa.png", "plots/popularity.png", "Rejects by reason", "starts-with"):
        assert part in text
    for png in ("kappa.png", "popularity.png"):
        data = (tmp_path / "report" / "plots" / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and b"Software" not in data
        assert data == (out / "plots" / png).read_bytes()
    assert (tmp_path / "report" / "report.md").read_text(encoding="utf-8").endswith(text)
    assert render_report(warehouse, RELEASE, None) == text  # no out_dir: same text, nothing written


# -- push --------------------------------------------------------------------------------
def test_push_uploads_the_folder_and_tags_the_commit_with_the_release(
    exported, warehouse, tmp_path, monkeypatch, capfd, caplog, hub_env
):
    from huggingface_hub import constants

    from kitab.release.hub import ReleaseAlreadyPushed, push_release
    from tests.fake_hub import FakeHub

    out, _ = exported
    earlier = tmp_path / EARLIER
    export_release(warehouse, EARLIER, earlier)
    token = hub_env
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="huggingface_hub")  # its request log included
    assert constants.HF_HUB_OFFLINE  # kitab's default; the push lifts it for itself only
    repo_id = "kitab-org/kitab"
    with FakeHub(token, max_seconds=60) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)  # the endpoint comes from the environment
        with pytest.raises(ValueError, match="holds release"):
            push_release(out, repo_id, release=EARLIER)
        tampered = tmp_path / "tampered"
        shutil.copytree(earlier, tampered)
        with open(tampered / "data/rejects/test-00000-of-00001.parquet", "ab") as fh:
            fh.write(b"\0")
        with pytest.raises(ValueError, match="changed since the export"):
            push_release(tampered, repo_id, release=EARLIER)
        assert hub.requests == []  # both refused before any request

        first = push_release(earlier, repo_id, release=EARLIER)
        repo = hub.repos[repo_id]
        repo.head.files["data/stale-config/test-00000-of-00001.parquet"] = b"left over"
        result = push_release(out, repo_id, release=RELEASE)
        assert constants.HF_HUB_OFFLINE  # restored

        assert repo.repo_type == "dataset"
        assert repo.tags == {EARLIER: first["commit"], RELEASE: result["commit"]}
        assert result["tag"] == RELEASE and result["commit"] == repo.head.oid
        assert result["commit_url"] == f"{hub.url}/datasets/{repo_id}/commit/{repo.head.oid}"
        assert repo.tag_messages[RELEASE] == f"kitab release {RELEASE}"
        assert repo.head.summary == f"kitab release {RELEASE}"
        pushed = {path: hashlib.sha256(data).hexdigest() for path, data in repo.head.files.items()}
        assert pushed == {**tree(out), ".gitattributes": pushed[".gitattributes"]}  # stale file deleted
        tagged_earlier = repo.resolve(EARLIER).files
        assert json.loads(tagged_earlier["provenance.json"])["release"] == EARLIER

        n_commits = len(repo.commits)
        with pytest.raises(ReleaseAlreadyPushed):
            push_release(out, repo_id, release=RELEASE)
        assert len(repo.commits) == n_commits  # nothing uploaded

        # every request carried the token from the environment
        assert hub.requests and all(r.authorization == f"Bearer {token}" for r in hub.requests)
        paths = {r.path.split("?")[0] for r in hub.requests}
        assert {
            "/api/repos/create",
            f"/api/datasets/{repo_id}/preupload/main",
            f"/api/datasets/{repo_id}/commit/main",
            f"/api/datasets/{repo_id}/tag/{result['commit']}",
        } <= paths

        # a wrong token fails loudly without echoing it
        monkeypatch.setenv("HF_TOKEN", token + "x")
        with pytest.raises(Exception) as failed:
            push_release(tmp_path / EARLIER, "kitab-org/other", release=EARLIER)
        assert token not in str(failed.value)
        monkeypatch.setenv("HF_TOKEN", token)

    captured = capfd.readouterr()
    assert "/commit/main" in caplog.text  # the client's debug log was captured, and checked below
    for where, text in (
        ("stdout", captured.out),
        ("stderr", captured.err),
        ("logs", caplog.text),
        ("result", json.dumps([first, result])),
    ):
        assert token not in text, where
    for folder in (out, earlier):
        for path in folder.rglob("*"):
            assert not path.is_file() or token.encode() not in path.read_bytes(), path
    for commit in repo.commits:
        assert all(token.encode() not in data for data in commit.files.values())


def test_push_without_a_token_refuses_before_any_request(exported, tmp_path, monkeypatch):
    from huggingface_hub import constants

    from kitab.release.hub import push_release
    from tests.fake_hub import FakeHub

    out, _ = exported
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))  # ignore any real login
    with FakeHub("unused", max_seconds=10) as hub:
        with pytest.raises(PermissionError, match="HF_TOKEN"):
            push_release(out, "kitab-org/kitab", release=RELEASE, endpoint=hub.url)
        assert hub.requests == []


def test_a_push_interrupted_before_the_tag_is_completed_by_pushing_again(exported, hub_env):
    from kitab.release.hub import push_release
    from tests.fake_hub import FakeHub

    out, _ = exported
    token = hub_env
    with FakeHub(token, max_seconds=60) as hub:
        hub.fail_next["tag"] = 1  # the commit lands, then the tag request fails
        with pytest.raises(Exception):  # noqa: B017 (whatever the hub client raises for a failed tag)
            push_release(out, "kitab-org/kitab", release=RELEASE, endpoint=hub.url)
        repo = hub.repos["kitab-org/kitab"]
        assert repo.tags == {} and len(repo.commits) == 2
        result = push_release(out, "kitab-org/kitab", release=RELEASE, endpoint=hub.url)
        assert len(repo.commits) == 2  # nothing changed: no second commit, the existing one is tagged
        assert repo.tags == {RELEASE: repo.head.oid} == {RELEASE: result["commit"]}


def _kitab_export_push(warehouse: Path, out: Path, repo_id: str, env: dict):
    """``kitab export --push`` through the real command (a subprocess) with exactly ``env`` for the Hub."""
    import os
    import subprocess

    from tests.test_cli_errors import kitab_cmd

    full = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE"))}
    full.pop("KITAB_DEBUG", None)
    return subprocess.run(
        [
            *kitab_cmd(),
            "export",
            "--release",
            RELEASE,
            "--out",
            str(out),
            "--push",
            repo_id,
            "--warehouse",
            str(warehouse),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**full, **env},
    )


def test_export_push_without_a_token_is_refused_before_the_export_is_written(warehouse, tmp_path):
    """Issue 31: the missing token was found only after the export folder was written."""
    from tests.fake_hub import FakeHub

    with FakeHub("unused", max_seconds=60) as hub:
        env = {"HF_HOME": str(tmp_path / "hf-home"), "HF_ENDPOINT": hub.url}  # no token, no saved login
        result = _kitab_export_push(warehouse, tmp_path / "hf", "kitab-org/kitab", env)
        assert hub.requests == []
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1 and "no Hugging Face token" in lines[0], result.stderr
    assert not (tmp_path / "hf").exists()  # nothing written to --out


def test_a_tag_failure_says_committed_not_tagged_and_rerunning_tags_that_commit(warehouse, tmp_path, hub_env):
    """Issue 31: a push whose tag failed after its commit left main untagged, silently. The error
    says so in one line, and the same command run again tags that commit without a second upload,
    even when main has moved on since; a third run is refused (the release is published)."""
    from tests.fake_hub import Commit, FakeHub

    out, repo_id = tmp_path / "hf", "kitab-org/kitab"
    with FakeHub(hub_env, max_seconds=240) as hub:
        env = {"HF_TOKEN": hub_env, "HF_ENDPOINT": hub.url, "HF_XET_CACHE": str(tmp_path / "xet")}
        hub.fail_next["tag"] = 1  # the commit lands, then the tag request fails
        failed = _kitab_export_push(warehouse, out, repo_id, env)
        repo = hub.repos[repo_id]
        released = repo.head
        lines = failed.stderr.strip().splitlines()
        assert failed.returncode == 1 and len(lines) == 1, failed.stderr
        assert f"committed as {released.oid}, not tagged" in lines[0] and "rerun the same command" in lines[0]
        assert repo.tags == {} and released.summary == f"kitab release {RELEASE}"

        # someone commits to main in between: the release's commit is no longer the head
        files = {**released.files, "NOTES.md": b"a note"}
        repo.commits.append(Commit("f" * 40, released.oid, "add a note", "", files))
        n_commits, uploads = len(repo.commits), sum("/commit/" in r.path for r in hub.requests)

        rerun = _kitab_export_push(warehouse, out, repo_id, env)
        assert rerun.returncode == 0, rerun.stderr
        assert released.oid in rerun.stdout and "earlier push" in rerun.stdout
        assert repo.tags == {RELEASE: released.oid}  # the release's own commit, not main's head
        assert len(repo.commits) == n_commits and sum("/commit/" in r.path for r in hub.requests) == uploads

        third = _kitab_export_push(warehouse, out, repo_id, env)
        lines = third.stderr.strip().splitlines()
        assert third.returncode == 1 and len(lines) == 1 and "already has tag" in lines[0], third.stderr
        assert len(repo.commits) == n_commits
    assert hub_env not in failed.stderr + rerun.stdout + rerun.stderr + third.stderr


def test_kappa_bins_are_exact_at_boundaries():
    """κ = 0.6 (S=2, N=5) is in [0.6, 0.8), κ = 0.2 (S=4, N=5) in [0.2, 0.4): float division
    would put both in the bin below."""
    from kitab.release.bins import bin_index as _bin_index
    from kitab.release.report import _kappa_bin_counts

    assert _bin_index(2, 5, 5) == 3 and _bin_index(4, 5, 5) == 1 and _bin_index(1, 1, 5) == 0
    assert _kappa_bin_counts([(2, 5), (4, 5), (0, 7), (1, 100)]) == [0, 1, 0, 1, 1, 1]
    for n in range(1, 60):
        for s in range(1, n + 1):
            lo, hi = KAPPA_EDGES[_bin_index(s, n, 5)]
            assert lo <= Fraction(n - s, n) and (Fraction(n - s, n) < hi or hi == 1)


KAPPA_EDGES = [(Fraction(i, 5), Fraction(i + 1, 5)) for i in range(5)]


# -- KITAB's own layout -----------------------------------------------------------------------
KITAB_FILES = {
    "one-book-constraints": "data/KITAB-ONE-BOOK-CONSTRAINTS.json",
    "two-book-constraints": "data/KITAB-TWO-BOOK-CONSTRAINTS.json",
    "author-metadata": "data/KITAB-author-metadata.json",
}


def test_the_kitab_layout_writes_kitabs_json_lines_files_that_the_card_names(exported, warehouse, tmp_path):
    import datasets

    from kitab.release.prompts import release_prompts

    parquet_out, _ = exported
    out = tmp_path / "kitab-layout"
    summary = export_release(warehouse, RELEASE, out, layout="kitab")
    configs = card_configs((out / "README.md").read_text(encoding="utf-8"))
    for config, path in KITAB_FILES.items():
        assert configs[config] == {"test": path} and path in summary["files"]
        lines = (out / path).read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines]  # JSON lines, as KITAB's .json files are
        parquet = pq.read_table(parquet_out / f"data/{config}/test-00000-of-00001.parquet").to_pylist()
        assert rows == parquet and len(rows) == summary["rows"][config] > 0, config
        expected = EXPECTED[config][0]
        assert list(rows[0]) == expected, config
    assert card_header(out)["configs"][0] == {
        "config_name": "one-book-constraints",
        "default": True,
        "data_files": [{"split": "test", "path": KITAB_FILES["one-book-constraints"]}],
    }
    # KITAB's code loads by path; datasets by the card (the default config without a name)
    by_path = datasets.load_dataset(
        "json",
        data_files=str(out / KITAB_FILES["two-book-constraints"]),
        split="train",
        cache_dir=str(tmp_path / "hf-cache"),
    )
    assert by_path.column_names == EXPECTED["two-book-constraints"][0]
    default = datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "hf-cache"))
    assert default.num_rows == summary["rows"]["one-book-constraints"]
    # the prompt column is kitab prompts' text (Template 2a) for the query
    prompts = {
        row["query_id"]: row["prompt"] for row in map(json.loads, release_prompts(warehouse, RELEASE, "no-context"))
    }
    for path in (KITAB_FILES["one-book-constraints"], KITAB_FILES["two-book-constraints"]):
        for line in (out / path).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            assert row["prompt"] == prompts[row["query_id"]]
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["layout"] == "kitab" and all(p in provenance["files"] for p in KITAB_FILES.values())
    with pytest.raises(ValueError, match="unknown layout"):
        export_release(warehouse, RELEASE, tmp_path / "other", layout="eureka")


@pytest.mark.parametrize("layout", ["hf", "kitab"])
def test_every_config_of_both_layouts_loads_with_datasets_offline(warehouse, tmp_path, monkeypatch, layout):
    """datasets reads every config of a card with the first config's format (datasets #7101):
    the KITAB layout names JSON lines for every config, so each one loads, with its rows."""
    import datasets

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = tmp_path / layout
    summary = export_release(warehouse, RELEASE, out, layout=layout)
    configs = card_configs((out / "README.md").read_text(encoding="utf-8"))
    assert list(configs) == list(CONFIG_NAMES)
    formats = {Path(path).suffix.replace(".jsonl", ".json") for files in configs.values() for path in files.values()}
    assert len(formats) == 1, formats  # one format per card (.json and .jsonl are both JSON lines)
    for config in CONFIG_NAMES:
        loaded = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "hf-cache"))
        assert list(loaded) == ["test"] and loaded["test"].num_rows == summary["rows"][config] > 0, config
