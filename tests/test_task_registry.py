"""Evaluation tasks are registered objects (issue 36, kitab/release/task.py): the commands take
their --task names, help and templates from the registry, no code outside it branches on a
task's name, and each task's result table is an annex table with a schema."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from kitab.app.cli import app
from kitab.core.env import PROJECT_ROOT
from kitab.core.errors import BadValue
from kitab.core.ledger import ANNEX_TABLES
from kitab.core.schemas import known_tables
from kitab.release.task import task, task_names, tasks

runner = CliRunner()
# a comparison with a task's name, the way `--task` was once dispatched
_NAME_BRANCH = re.compile(r"""(==|!=)\s*["'](%s)["']|["'](%s)["']\s*(==|!=)""")


def test_the_registry_holds_queries_and_claims_each_with_its_table_and_templates():
    assert task_names() == ("queries", "claims")
    for t in tasks():
        assert t.table in ANNEX_TABLES and t.table in known_tables()
        assert t.template(None) == t.templates[0] and set(t.max_tokens) == set(t.templates)
    assert task("claims").read("**Answer:** False.") is False
    assert task("queries").read("1. Reason: r. Title: Beloved").titles == ["Beloved"]
    with pytest.raises(BadValue, match="use one of queries, claims"):
        task("summaries")
    with pytest.raises(BadValue, match="unknown template 'no-context' \\(--task claims has: claims\\)"):
        task("claims").template("no-context")


@pytest.mark.parametrize(
    "args",
    [
        ["prompts"],
        ["answer", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--out", "o.jsonl"],
        ["evaluate", "--answers", "a.jsonl"],
    ],
)
def test_every_command_takes_its_task_names_from_the_registry(args, tmp_path):
    result = runner.invoke(app, [args[0], "--help"], env={"COLUMNS": "200"})
    assert all(f"{name} (" in result.stdout for name in task_names())
    bad = runner.invoke(app, [*args, "--task", "summaries", "--release", "r", "--warehouse", str(tmp_path)])
    assert bad.exit_code == 2 and "use one of queries, claims" in bad.output, bad.output


def test_no_code_outside_the_registry_branches_on_a_task_name():
    names = "|".join(map(re.escape, task_names()))
    pattern = re.compile(_NAME_BRANCH.pattern % (names, names))
    found = [
        f"{path.relative_to(PROJECT_ROOT)}:{n}"
        for package in ("kitab", "tasks", "flows")
        for path in sorted((PROJECT_ROOT / package).rglob("*.py"))
        if path != PROJECT_ROOT / "kitab" / "release" / "task.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []
