"""Issue 22: what a new user meets in the first hour, through the real `kitab` command (a
subprocess of the installed console script) against one demo release built by `kitab demo`.

One module, one demo (~15 s): the README's and docs' SQL, one meaning per table name, the
output formats, export, describe / test / sql --file, the report's κ plot."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from kitab.core.env import PROJECT_ROOT

KITAB = str(Path(sys.executable).with_name("kitab"))
DOCS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").rglob("*.md"))]


def kitab(
    *args: str, check: bool = True, env: dict | None = None, timeout: float = 300, stdin: str | None = None
) -> subprocess.CompletedProcess:
    run_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}  # None: unset
    run_env.pop("KITAB_DEBUG", None)
    done = subprocess.run([KITAB, *args], capture_output=True, text=True, env=run_env, timeout=timeout, input=stdin)
    if check:
        assert done.returncode == 0, f"kitab {' '.join(args)}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return done


def kitab_in_process(*args: str) -> tuple[int, str, str]:
    """The same command in this process (typer's runner): the bulk of the queries, without a
    Python start each (~2 s); what is about a process's output (exit code, stderr lines, bytes)
    runs the console script."""
    from typer.testing import CliRunner

    from kitab.app.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def sql_json(warehouse: Path, query: str, *extra: str) -> list[dict]:
    code, out, err = kitab_in_process("sql", query, "--warehouse", str(warehouse), "--output", "json", *extra)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def demo_wh(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("first-hour") / "warehouse"
    # as a person runs it: no PREFECT_HOME of the tests' (conftest), so the CLI points Prefect's
    # home at the warehouse's .prefect, where a Prefect server the demo started would keep its database
    done = kitab("demo", "--warehouse", str(root), env={"PREFECT_HOME": None})
    assert "release demo" in done.stdout
    return root


# -- 1. every SQL snippet in README.md and docs/ runs against the demo release -----------------
def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(info string, body) of every ``` fenced block."""
    return re.findall(r"^```([^\n]*)\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def _kitab_sql_commands(body: str) -> list[list[str]]:
    """Each `kitab sql "…" [options]` command of a shell block, its quoted query possibly over
    several lines, as argv after `sql`."""
    commands, lines, i = [], body.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        at = line.find("kitab sql ")
        if at < 0 or line.lstrip().startswith("#"):
            i += 1
            continue
        text = line[at:]
        while True:
            try:
                argv = shlex.split(text, comments=True)
                break
            except ValueError:  # the quoted query goes on on the next line
                i += 1
                text += "\n" + lines[i]
        commands.append(argv[2:])
        i += 1
    return commands


def sql_snippets() -> list[tuple[str, list[str]]]:
    found = []
    for path in DOCS:
        for _info, body in _fenced_blocks(path.read_text(encoding="utf-8")):
            for argv in _kitab_sql_commands(body):
                found.append((f"{path.relative_to(PROJECT_ROOT)}: {argv[0][:60]}", argv))
    return found


def snippet_files() -> list[str]:
    """The docs' `printf … > FILE` lines: the files their `kitab sql --file` snippets read."""
    return [
        line.strip()
        for path in DOCS
        for _, body in _fenced_blocks(path.read_text(encoding="utf-8"))
        for line in body.splitlines()
        if re.match(r"^printf '[^']*' > [\w.-]+$", line.strip())
    ]


def _for_demo(argv: list[str], warehouse: Path) -> list[str]:
    """A documented command pointed at the demo: any --release value becomes `demo`, any
    --warehouse the test's."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in ("--release", "--warehouse"):
            i += 2
            continue
        out.append(argv[i])
        i += 1
    scoped = "--release" in argv
    return [*out, *(["--release", "demo"] if scoped else []), "--warehouse", str(warehouse)]


def test_the_docs_have_sql_snippets_to_check():
    snippets = sql_snippets()
    assert len(snippets) >= 10, snippets  # the parser found them (README: 7, docs/evaluate.md: 4, ...)
    assert any("width" in " ".join(a) or "sitelinks" in " ".join(a) for _, a in snippets)


def test_every_kitab_sql_snippet_in_readme_and_docs_runs_on_the_demo(demo_wh, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the snippets' own files are written, as a reader would
    for line in snippet_files():
        subprocess.run(line, shell=True, check=True)
    failures = []
    for where, argv in sql_snippets():
        code, _, err = kitab_in_process("sql", *_for_demo(argv, demo_wh))
        if code != 0:
            failures.append(f"{where}: {err.strip()}")
    assert not failures, "\n".join(failures)
    # and one through the console script, as a person types it
    assert kitab("sql", *_for_demo(sql_snippets()[0][1], demo_wh)).returncode == 0


# -- 2. one meaning per table name ---------------------------------------------------------------
def test_authors_are_the_released_authors_and_sampled_authors_every_sampled_one(demo_wh):
    released = sql_json(demo_wh, "select count(*) as n from released_authors")[0]["n"]
    # --authors 40 means 40 released (issue 30): the sample draws on until 40 pass every stage
    assert sql_json(demo_wh, "select count(*) as n from authors")[0]["n"] == released == 40
    drawn = sql_json(demo_wh, "select count(*) as n from sampled_authors")[0]["n"]
    rejected = sql_json(demo_wh, "select count(distinct record_id) as n from rejects where record_kind = 'author'")[0][
        "n"
    ]
    assert drawn > released and drawn == released + rejected
    # the ledger's own count of the release's authors agrees
    counts = json.loads(sql_json(demo_wh, "select counts from releases")[0]["counts"])
    assert counts["released_authors"] == released
    missing = sql_json(demo_wh, "select qid from released_authors except select qid from authors")
    assert missing == []


def test_released_sets_look_disjoint_the_obvious_way(demo_wh, tmp_path):
    """A second release that may draw again the writers the first rejected (--redraw-rejected;
    by default they are not drawn again: tests/test_release_fixed.py): writers sampled in both
    are in sampled_authors twice, never in authors."""
    from kitab.app.runs import run_refresh
    from kitab.core.env import BUNDLED_SNAPSHOT

    root = tmp_path / "wh"
    shutil.copytree(demo_wh, root)
    run_refresh(
        source="dump",
        snapshot=BUNDLED_SNAPSHOT,
        authors=40,
        seed=7,
        release="second",
        warehouse=root,
        direct=True,
        redraw_rejected=True,
    )
    twice = "select qid from {} group by qid having count(distinct release) > 1"
    assert sql_json(root, twice.format("sampled_authors")), "no writer sampled twice: the check below proves nothing"
    assert sql_json(root, twice.format("authors")) == []
    assert (
        sql_json(root, "select count(*) as n from authors")[0]["n"]
        == sql_json(root, "select count(*) as n from released_authors")[0]["n"]
    )


def test_the_view_migration_rewrites_no_data(demo_wh, tmp_path):
    """A warehouse whose catalog (kitab.duckdb, for other tools) has the old views: the first
    read rebuilds the views; no Parquet file or ledger row changes."""
    root = tmp_path / "wh"
    shutil.copytree(demo_wh, root)
    before = {p: p.read_bytes() for p in sorted((root / "tables").rglob("*")) if p.is_file()}
    (root / "kitab.duckdb").unlink()
    old = duckdb.connect(str(root / "kitab.duckdb"))  # the catalog as the old code left it
    old.execute("CREATE VIEW authors AS SELECT 'Q1' AS qid")
    old.execute("CREATE TABLE kitab_catalog AS SELECT ? AS root", [root.as_posix()])
    old.close()
    kitab("sql", "select 1", "--warehouse", str(root))
    after = {p: p.read_bytes() for p in sorted((root / "tables").rglob("*")) if p.is_file()}
    assert after == before
    con = duckdb.connect(str(root / "kitab.duckdb"), read_only=True)
    try:
        assert con.execute("select count(*) from authors").fetchall() == [(40,)]
        assert con.execute("select count(*) from sampled_authors").fetchall()[0][0] > 40
    finally:
        con.close()


# -- 3. the demo: no Prefect server ----------------------------------------------------------------
def test_the_demo_starts_no_prefect_server(demo_wh):
    """The demo runs the pipeline in process on the local runner: no Prefect database or
    server was made in its Prefect home, the warehouse's .prefect (the demo ran without the
    tests' PREFECT_HOME: see demo_wh). The CLI's refresh and the scheduled one keep Prefect."""
    prefect_home = demo_wh / ".prefect"
    assert prefect_home.is_dir()  # the home the CLI set: where Prefect's server would write
    assert not any(prefect_home.rglob("*.db")), sorted(prefect_home.rglob("*"))


# -- 5. CLI details ------------------------------------------------------------------------------
def test_version():
    from importlib.metadata import version

    done = kitab("--version")
    assert done.stdout.strip() == f"kitab {version('kitab')}"


def test_output_json_is_an_array_and_jsonl_json_lines(demo_wh):
    query = "select qid, sitelinks from authors order by qid limit 3"
    as_json = json.loads(kitab("sql", query, "--warehouse", str(demo_wh), "--output", "json").stdout)
    assert isinstance(as_json, list) and len(as_json) == 3 and set(as_json[0]) == {"qid", "sitelinks"}
    lines = kitab("sql", query, "--warehouse", str(demo_wh), "--output", "jsonl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == as_json
    empty = kitab("sql", "select 1 as a where false", "--warehouse", str(demo_wh), "--output", "json").stdout
    assert json.loads(empty) == []


def test_csv_output_has_lf_line_ends(demo_wh):
    out = subprocess.run(
        [
            KITAB,
            "sql",
            "select qid, name from authors order by qid limit 3",
            "--warehouse",
            str(demo_wh),
            "--output",
            "csv",
        ],
        capture_output=True,
        check=True,
    ).stdout
    assert b"\r" not in out and out.count(b"\n") == 4 and out.startswith(b"qid,name\n")


def test_export_onto_a_users_folder_is_one_line_and_never_replaced(demo_wh, tmp_path):
    """The output-path rule (kitab/core/outputs.py): a folder kitab did not write is never
    replaced, --overwrite or not, and the error does not suggest --overwrite."""
    out = tmp_path / "hf"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    for extra in ((), ("--overwrite",)):
        done = kitab("export", "--release", "demo", "--out", str(out), *extra, "--warehouse", str(demo_wh), check=False)
        assert done.returncode == 1 and done.stderr.count("\n") == 1 and done.stderr.startswith("kitab: error: ")
        assert "--overwrite" not in done.stderr and "choose a new or empty folder" in done.stderr
        assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    (out / "notes.txt").unlink()
    kitab("export", "--release", "demo", "--out", str(out), "--warehouse", str(demo_wh))
    assert (out / "README.md").is_file()


def test_serve_checks_its_prefect_server(tmp_path):
    from kitab.app.processes import free_port

    api = f"http://127.0.0.1:{free_port()}/api"  # a port nothing listens on
    done = kitab("serve", "--warehouse", str(tmp_path / "wh"), check=False, timeout=60, env={"PREFECT_API_URL": api})
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("kitab: error: ") and api in done.stderr
    unset = kitab("serve", "--warehouse", str(tmp_path / "wh"), check=False, timeout=60, env={"PREFECT_API_URL": ""})
    assert unset.returncode == 1 and unset.stderr.startswith("kitab: error: ") and "PREFECT_API_URL" in unset.stderr


# -- 6. describe, test, sql --file -------------------------------------------------------------
def _views(warehouse: Path) -> list[str]:
    return [
        r["view_name"]
        for r in sql_json(
            warehouse, "select view_name from duckdb_views() where not internal and schema_name = 'main' order by 1"
        )
    ]


def test_describe_lists_every_table_and_view_with_its_description(demo_wh):
    listed = json.loads(kitab("describe", "--warehouse", str(demo_wh), "--output", "json").stdout)
    views = _views(demo_wh)
    assert {"authors", "sampled_authors", "kitab_one_book_constraints", "books_per_author"} <= set(views)
    assert [r["name"] for r in listed] == views
    assert all(r["description"].strip() and r["kind"] in ("table", "view") for r in listed), listed
    assert "released" in next(r for r in listed if r["name"] == "authors")["description"]
    human = kitab("describe", "--warehouse", str(demo_wh)).stdout
    assert all(view in human for view in views)


@pytest.mark.parametrize("view", ["authors", "kitab_one_book_constraints"])
def test_describe_a_table_gives_every_column_a_type_and_a_description(demo_wh, view):
    rows = json.loads(kitab("describe", view, "--warehouse", str(demo_wh), "--output", "json").stdout)
    columns = [r["column_name"] for r in sql_json(demo_wh, f'describe "{view}"')]
    assert [r["column"] for r in rows] == columns
    undescribed = [r["column"] for r in rows if not (r["description"] or "").strip()]
    assert not undescribed, f"{view}: no description for {undescribed}"
    assert all(r["type"] for r in rows)


def test_every_view_has_a_schema_file_describing_its_columns(demo_wh):
    """schemas/ (tables) and schemas/views/ (staging and marts) cover every view, column for
    column, and describe no column a view does not have (in process: one connection)."""
    from kitab.core.describe import describe_view, list_views
    from kitab.core.schemas import view_docs
    from kitab.core.warehouse import Warehouse

    with Warehouse(demo_wh).connect() as con:
        views = [name for name, _, _ in list_views(con)]
        assert len(views) >= 20
        for view in views:
            rows = describe_view(con, view)
            assert all(description.strip() for _, _, description in rows), (view, rows)
            assert set(view_docs()[view]["columns"]) <= {column for column, _, _ in rows}, view


def test_describe_an_unknown_table_is_one_line(demo_wh):
    done = kitab("describe", "nope", "--warehouse", str(demo_wh), check=False)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "nope" in done.stderr


def test_kitab_test_runs_the_data_tests_and_fails_on_bad_rows(demo_wh, tmp_path):
    tests = sorted(p.stem for p in (PROJECT_ROOT / "sql" / "tests").glob("*.sql"))
    out = kitab("test", "--warehouse", str(demo_wh)).stdout
    for name in tests:
        assert re.search(rf"\b{name}\b.*\bpass", out), f"{name} not reported as passing:\n{out}"
    assert f"{len(tests)} of {len(tests)}" in out
    kitab("test", "--release", "demo", "--warehouse", str(demo_wh))

    root = tmp_path / "wh"  # a copy whose books file got a duplicated row
    shutil.copytree(demo_wh, root)
    books = next((root / "tables" / "books" / "release=demo").glob("part-*.parquet"))
    table = pq.read_table(books)
    import pyarrow as pa

    # committed as a (buggy) publish would: under its content name, in the ledger row and the
    # stamps; a file changed behind the ledger's back is damage, which fails reads instead
    from kitab.core.files import sha256_file
    from kitab.core.ledger import table_file_name
    from kitab.core.release_commit import commit
    from kitab.core.warehouse import Warehouse

    wh = Warehouse(root)
    bad = books.with_name("bad.tmp")
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), bad)
    sha = sha256_file(bad)
    bad.rename(books.with_name(table_file_name(sha)))
    books.unlink()
    row = wh.ledger_row("demo")
    sums, counts = json.loads(row["checksums"]), json.loads(row["counts"])
    sums["books"], counts["books"] = sha, counts["books"] + 1
    commit(
        wh, "demo", {**row, "checksums": json.dumps(sums, sort_keys=True), "counts": json.dumps(counts, sort_keys=True)}
    )
    wh.stamp("demo")
    done = kitab("test", "--warehouse", str(root), check=False)
    assert done.returncode == 1
    assert re.search(r"books_unique_id.*\bfail", done.stdout), done.stdout


def test_sql_file_makes_one_named_file_a_view_and_nothing_else(demo_wh, tmp_path):
    qids = [r["qid"] for r in sql_json(demo_wh, "select qid from authors order by qid limit 4")]
    exclude = tmp_path / "exclude.csv"
    exclude.write_text("qid\n" + "\n".join(qids) + "\n")
    rows = sql_json(
        demo_wh,
        "select count(*) as n from authors where qid not in (select qid from exclude)",
        "--file",
        f"exclude={exclude}",
    )
    assert rows == [{"n": 40 - 4}]
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"query_id": "q1", "response": "x"}\n')
    assert sql_json(demo_wh, "select count(*) as n from answers", "--file", f"answers={answers}") == [{"n": 1}]
    # still read-only: neither another file, nor the named one by path, nor writing
    other = tmp_path / "other.csv"
    other.write_text("a\n1\n")
    done = kitab(
        "sql",
        f"select * from read_csv('{other}')",
        "--file",
        f"exclude={exclude}",
        "--warehouse",
        str(demo_wh),
        check=False,
    )
    assert done.returncode == 1 and done.stderr.startswith("kitab: error: ") and done.stderr.count("\n") == 1
    for query in (
        "select * from read_csv('/etc/passwd')",
        f"copy (select 1) to '{tmp_path / 'out.csv'}'",
        f"select * from read_csv('{exclude}') union all select * from read_csv('{other}')",
    ):
        code, _, err = kitab_in_process("sql", query, "--file", f"exclude={exclude}", "--warehouse", str(demo_wh))
        assert code == 1 and err.startswith("kitab: error: "), (query, err)
    assert not (tmp_path / "out.csv").exists()
    for bad in ("authors=" + str(exclude), "1x=" + str(exclude), "nofile=" + str(tmp_path / "missing.csv"), "plain"):
        code, _, err = kitab_in_process("sql", "select 1", "--file", bad, "--warehouse", str(demo_wh))
        assert code == 1 and err.startswith("kitab: error: ") and err.count("\n") == 1, (bad, err)


# -- 7. the κ plot -------------------------------------------------------------------------------
def test_the_kappa_plot_has_a_bar_of_its_own_for_unsatisfiable_queries(demo_wh, tmp_path):
    from kitab.release.report import kappa_histogram

    unsatisfiable = sql_json(
        demo_wh,
        "select count(*) filter (where not satisfiable) as n, n_constraints "
        "from queries group by all order by n_constraints",
    )
    assert unsatisfiable[0]["n"] > 0  # the demo has some: the bar is not trivially empty
    bars = kappa_histogram([(0, 5), (1, 50), (5, 5), (4, 5)])
    assert bars[-1] == ("κ = 1 (unsatisfiable)", 1)  # (0, 5): S = 0
    assert sum(n for _, n in bars) == 4 and bars[-2][1] == 1  # κ = 0.98: the last κ < 1 bar
    kitab("report", "--release", "demo", "--out", str(tmp_path / "r"), "--warehouse", str(demo_wh))
    md = (tmp_path / "r" / "report.md").read_text()
    one = unsatisfiable[0]["n"]
    assert re.search(rf"κ = 1 \(unsatisfiable\)[^\n]*\b{one}\b", md)
    assert (tmp_path / "r" / "plots" / "kappa.png").stat().st_size > 1000
