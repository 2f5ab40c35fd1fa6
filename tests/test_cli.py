"""The command line as a person uses it: probes on stdin, SQL over the catalog."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kitab.app.cli import app
from kitab.core.warehouse import Warehouse
from tasks.publish import publish
from tests.test_warehouse import tables

runner = CliRunner()


def run(*args: str, stdin: str | None = None) -> list[dict]:
    result = runner.invoke(app, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_dedup_probe_explains_clusters():
    out = run(
        "dedup",
        stdin="One Hundred Years of Solitude (1967)\n100 Years of Solitude (1970)\nJazz (1992)\n"
        "Jazz Age Stories (1921)\n",
    )
    merged = next(c for c in out if "One Hundred Years of Solitude" in c["variants"])
    assert merged["first_year"] == 1967 and "100 Years of Solitude" in merged["variants"]
    assert {"Jazz"} in [set(c["variants"]) for c in out]  # a bare word does not swallow a longer title


def test_tag_probe_args_and_stdin():
    out = run("tag", "Reading Lolita in Tehran", "A Tale of Two Cities")
    assert out[0]["city_names"] == ["Tehran"] and out[1] == {
        "title": "A Tale of Two Cities",
        "human_names": [],
        "city_names": [],
        "human": "no",
        "city": "no",
    }
    assert run("tag", stdin="Death in Venice\n")[0]["city_names"] == ["Venice"]


def test_constraints_probe_lists_every_candidate_with_kappa():
    out = run("constraints", "--human", stdin="Beloved (1987)\nJazz (1992)\nSula (1973)\nThe Bluest Eye (1970)\n")
    b = next(c for c in out if c["spec"] == {"type": "starts_with", "letter": "b"})
    assert sorted(b["mapped_titles"]) == ["Beloved", "The Bluest Eye"] and b["kappa"] == 0.5
    assert any(c["type"] == "human_name" for c in out) and not any(c["type"] == "city_name" for c in out)


def test_sql_answers_from_the_catalog(tmp_path):
    publish(
        Warehouse(tmp_path),
        "r",
        tables(["Q1", "Q2"]),
        seed=1,
        source="dump",
        snapshot_id="s",
        n_authors_requested=2,
        requests_made=0,
    )
    out = run("sql", "--warehouse", str(tmp_path), "--output", "jsonl", "select count(*) as n from authors")
    assert out == [{"n": 2}]
    result = runner.invoke(app, ["sql", "--warehouse", str(tmp_path), "select * from nope"])
    assert result.exit_code != 0


def test_snapshot_manifest_makes_a_folder_of_dump_files_a_snapshot(tmp_path):
    """`kitab snapshot manifest DIR`: what turns real dump files into a snapshot --source dump reads."""
    import shutil

    from kitab.core.config import Settings
    from kitab.core.env import BUNDLED_SNAPSHOT
    from kitab.sources import open_sources
    from kitab.sources.snapshot.format import DATA_FILES, read_manifest

    folder = tmp_path / "dumps"
    folder.mkdir()
    for name in DATA_FILES:
        shutil.copy(BUNDLED_SNAPSHOT / name, folder / name)
    result = runner.invoke(app, ["snapshot", "manifest", str(folder), "--as-of", "2024-06-30"])
    assert result.exit_code == 0, result.output
    manifest = read_manifest(folder)
    assert manifest["snapshot_id"].startswith("dump-") and manifest["created_at"] == "2024-06-30T00:00:00Z"
    assert manifest["checksums"] == read_manifest(BUNDLED_SNAPSHOT)["checksums"]
    sources = open_sources("dump", Settings(warehouse=tmp_path / "wh"), snapshot=folder)
    try:  # the same files answer as the bundled snapshot does
        rows = sources.wikidata.candidate_authors(from_year=1925, to_year=1950, min_works=10, max_works=300)
        assert rows.data["results"]["bindings"]
    finally:
        sources.close()


def test_every_command_group_is_registered_and_every_command_answers_help():
    """A module in kitab/app/commands/ is a group only once GROUPS names it: one forgotten
    line would drop its commands silently."""
    import pkgutil

    import kitab.app.commands as commands

    modules = {m.name for m in pkgutil.iter_modules(commands.__path__)} - {"common"}
    assert {g.__name__.rsplit(".", 1)[1] for g in commands.GROUPS} == modules
    names = {c.name or c.callback.__name__ for g in commands.GROUPS for c in g.app.registered_commands}
    assert {"sql", "describe", "test", "refresh", "demo", "serve", "export", "evaluate", "tag"} <= names
    for name in sorted(names) + ["mirror", "snapshot"]:
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0 and "Usage: " in result.output, (name, result.output)
