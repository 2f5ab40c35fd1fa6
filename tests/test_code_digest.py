"""The code digest keys the resumable refresh's step cache (kitab/core/workdir.py): it must
change with the code that shapes a release's data and with nothing else."""

from __future__ import annotations

import shutil

import pytest

from kitab.core.env import PROJECT_ROOT
from kitab.core.version import code_digest, tree_digest


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the project's code, SQL and schemas to edit."""
    root = tmp_path_factory.mktemp("tree")
    for folder in ("kitab", "tasks", "flows", "sql", "schemas"):
        shutil.copytree(PROJECT_ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_digest_of_this_checkout_is_its_tree_digest():
    assert code_digest() == tree_digest(PROJECT_ROOT)


@pytest.mark.parametrize(
    "path, changes",
    [
        ("kitab/app/cli.py", False),  # a CLI wording
        ("kitab/app/progress_display.py", False),
        ("flows/progress_text.py", False),  # a progress sentence
        ("kitab/release/report.py", False),  # a reader of committed releases
        ("kitab/simulate/mirror/server.py", False),
        ("tasks/text.py", True),  # a stage's logic
        ("tasks/taggers/data/README.md", False),
        ("kitab/core/warehouse.py", True),
        ("kitab/sources/http.py", True),
        ("sql/tests/books_unique_id.sql", True),
    ],
)
def test_only_code_that_shapes_data_changes_the_digest(tree, path, changes):
    before = tree_digest(tree)
    file = tree / path
    original = file.read_bytes()
    try:
        file.write_bytes(original + b"\n-- a changed line\n")
        assert (tree_digest(tree) != before) is changes
    finally:
        file.write_bytes(original)
    assert tree_digest(tree) == before
