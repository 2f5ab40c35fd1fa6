"""Every reject reason is reached (issue 39 item 7). tasks.base.REASONS is the one list of the
reasons the code can give a rejects row: an AST walk over kitab/, tasks/ and flows/ finds every
``reject(...)`` call and checks the reason it passes (a literal, a module constant, or, at the
few call sites that pass a variable, the reasons listed for that site below) is in the list; and
the list must equal what this module produces: most through the real pipeline (one refresh of a
snapshot crafted to hit them, on the local runner), the rest by the pure stage function fed a
row of that release (where no snapshot reaches the branch: a duplicate works row, a source that
does not answer, ...). A new reason without a test fails here."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from kitab.core.env import BUNDLED_SNAPSHOT, PROJECT_ROOT
from kitab.sources.snapshot.format import OL_WORKS_FILE, deterministic_gzip, iter_ol_dump, ol_dump_line, read_manifest
from kitab.sources.snapshot.manifest import write_manifest
from tasks.base import REASONS
from tests.releases import dump_release
from tests.test_constrain_unsure import SHAPES, coined

# call sites passing a variable as the reason: (file, enclosing function) -> the reasons it carries
VARIABLE_REASONS = {
    ("tasks/clean_books.py", "drop"): {
        "duplicate_row",
        "unknown_author",
        "title_too_long",
        "empty_title",
        "title_is_author_name",
        "more_than_two_authors",
        "not_english_tagged",
        "not_english_detected",
        "language_unknown",
        "wikidata_other_author",
    },
    ("tasks/match_openlibrary.py", "match_author"): {"no_openlibrary_match", "birth_year_mismatch"},
}
# produced through the real pipeline by the crafted release below (the others: the pure function)
THROUGH_PIPELINE = {
    "not_english_tagged",
    "not_english_detected",
    "empty_title",
    "title_too_long",
    "title_is_author_name",
    "more_than_two_authors",
    "wikidata_other_author",
    "author_below_min_books",
    "entity_books_mostly_unsure",
    "key_error_over_bound",
}


def _constants(tree: ast.Module) -> dict[str, str]:
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _own_nodes(func: ast.AST):
    """The nodes of ``func``'s body, not those of the functions defined inside it."""
    todo = list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def reasons_in_code() -> tuple[set[str], set[tuple[str, str]]]:
    """(the reasons the reject() calls pass, the call sites that pass a variable)."""
    files = [p for top in ("kitab", "tasks", "flows") for p in sorted((PROJECT_ROOT / top).rglob("*.py"))]
    trees = {p.relative_to(PROJECT_ROOT).as_posix(): ast.parse(p.read_text()) for p in files}
    constants = {name: value for tree in trees.values() for name, value in _constants(tree).items()}
    found, variable_sites = set(), set()
    for path, tree in trees.items():
        for func in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            for call in _own_nodes(func):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "reject"):
                    continue
                arg = call.args[1] if len(call.args) > 1 else next(k.value for k in call.keywords if k.arg == "reason")
                if isinstance(arg, ast.Constant):
                    found.add(arg.value)
                elif isinstance(arg, ast.Name) and arg.id in constants and arg.id.isupper():
                    found.add(constants[arg.id])
                else:
                    variable_sites.add((path, func.name))
    return found, variable_sites


def test_the_code_passes_only_registered_reasons():
    found, variable_sites = reasons_in_code()
    assert variable_sites == set(VARIABLE_REASONS), "a reject() call passes a variable: list its reasons here"
    for reasons in VARIABLE_REASONS.values():
        found |= reasons
    assert found <= set(REASONS), found - set(REASONS)
    assert set(REASONS) <= found, f"registered but passed nowhere: {set(REASONS) - found}"


def crafted_snapshot(folder: Path) -> Path:
    """The bundled snapshot with, per Open Library author (by key): odd ones, every title a
    coined capitalised word the human tagger cannot decide (their entity constraints are mostly
    unsure); even ones, their first three works made a 1,200-character title, the author's own
    name, and a work of four authors."""
    for path in BUNDLED_SNAPSHOT.iterdir():
        if path.name != OL_WORKS_FILE and path.is_file():
            shutil.copy2(path, folder / path.name)
    names = {}
    for _, key, _, _, record in iter_ol_dump(BUNDLED_SNAPSHOT / "ol_dump_authors.txt.gz"):
        names[key] = record.get("name")
    seen: dict[str, int] = {}
    with deterministic_gzip(folder / OL_WORKS_FILE) as out:
        for i, (record_type, key, revision, modified, record) in enumerate(
            iter_ol_dump(BUNDLED_SNAPSHOT / OL_WORKS_FILE)
        ):
            authors = record.get("authors") or []
            first = authors[0]["author"]["key"] if authors else ""
            number = int("".join(c for c in first if c.isdigit()) or 0)
            nth = seen[first] = seen.get(first, -1) + 1
            if record.get("title") and number % 2:
                record = {**record, "title": SHAPES[i % len(SHAPES)].format(coined(i))}
            elif record.get("title") and nth == 0:
                record = {**record, "title": "The Long Title " * 80}
            elif record.get("title") and nth == 1 and names.get(first):
                record = {**record, "title": names[first]}
            elif nth == 2:
                extra = [
                    {"author": {"key": f"/authors/OL99999{n}A"}, "type": {"key": "/type/author_role"}}
                    for n in (1, 2, 3)
                ]
                record = {**record, "authors": authors + extra}
            out.write(ol_dump_line(record_type, key, revision, modified, record) + "\n")
    write_manifest(folder, as_of=read_manifest(BUNDLED_SNAPSHOT)["created_at"])
    return folder


@pytest.fixture(scope="module")
def crafted_release(tmp_path_factory) -> Path:
    snapshot = crafted_snapshot(tmp_path_factory.mktemp("crafted_snapshot"))
    return dump_release(tmp_path_factory.mktemp("crafted"), authors=40, seed=42, release="crafted", snapshot=snapshot)


def _rows(root: Path, sql: str) -> list[tuple]:
    from kitab.core.warehouse import Warehouse

    with Warehouse(root).connect() as db:
        return db.execute(sql).fetchall()


def through_pipeline(root: Path) -> set[str]:
    return {reason for (reason,) in _rows(root, "select distinct reason from rejects")}


def through_pure_functions(root: Path, scratch: Path) -> set[str]:
    """The reasons no snapshot reaches, each from its stage function fed rows of the release."""
    from kitab.core.warehouse import Warehouse
    from kitab.sources.http import SourceUnavailable
    from tasks.clean_books import clean_books
    from tasks.fetch_works import source_unavailable
    from tasks.generate_constraints import generate_constraints
    from tasks.match_openlibrary import choose_by_name_and_birth_year
    from tasks.sample_authors import sample_authors

    wh = Warehouse(root)
    authors = wh.read_table("authors", ["crafted"]).to_pylist()
    works = [dict(w) for w in wh.read_table("works_raw", ["crafted"]).to_pylist()]
    author = next(a for a in authors if a.get("ol_author_key"))
    work = next(w for w in works if w["author_qid"] == author["qid"])
    produced = []
    # a works row twice, one of an author the run does not know, one untagged name-only title
    # of an author without English evidence
    stranger = {**work, "author_qid": "Q1", "work_key": "OL1W"}
    name_only = {**work, "work_key": "OL2W", "title": "Nostromo", "languages": [], "subtitle": None}
    lonely = {**author, "qid": "Q2", "name": "Anon", "ol_name": None}
    result = clean_books(
        [work, work, stranger, {**name_only, "author_qid": "Q2"}],
        [author, lonely],
        lambda titles: [],
        today_year=2026,
    )
    produced += [r["reason"] for r in result.rejects]
    candidate = {"qid": "Q3", "name": None, "birth_year": 1900, "sitelinks": 1, "wd_work_count": 5}
    produced += [r["reason"] for r in sample_authors([candidate], n=1, seed=1, exclude_qids=set()).rejects]
    books = wh.read_table("books", ["crafted"]).to_pylist()
    produced += [r["reason"] for r in generate_constraints([], books[:1], {}, kinds=()).rejects]
    failed = SourceUnavailable("http://127.0.0.1/search.json", 503, 5, "HTTP 503")
    produced += [r["reason"] for r in source_unavailable(author, "fetch_works", failed).rejects]
    doc = {"key": f"/authors/{author['ol_author_key']}", "name": author["name"], "birth_date": "1"}
    produced += [choose_by_name_and_birth_year([doc], author["name"], author["birth_year"])[1]]
    produced += [choose_by_name_and_birth_year([doc], "Nobody At All", 1900)[1]]
    return set(produced) | through_the_mirror(author, scratch)


def through_the_mirror(author: dict, scratch: Path) -> set[str]:
    """Open Library's three: the real client against the local mirror of the bundled snapshot
    (an Open Library author released before; an author key without works; an answer whose
    first work lost its key, the only one fed a changed answer)."""
    import dataclasses

    from kitab.core.config import Settings
    from kitab.simulate.mirror.server import Mirror
    from kitab.sources import source_kind
    from tasks.fetch_works import collect_author, fetch_author_works

    sampled = {**author, "wd_ol_ids": (author.get("wd_ol_id") or "").split()}
    with Mirror(BUNDLED_SNAPSHOT) as mirror:
        settings = Settings(warehouse=scratch)  # its HTTP cache
        ol = source_kind("mirror").open(settings, snapshot=None, mirror_url=mirror.url, cache_scope=None).openlibrary
        produced = [r["reason"] for r in collect_author(sampled, ol, frozenset({author["ol_author_key"]})).rejects]
        produced += [r["reason"] for r in fetch_author_works({**author, "ol_author_key": "OL1A"}, ol).rejects]

        class KeyLost:
            source = ol.source

            def works_pages(self, key):
                for fetched in ol.works_pages(key):
                    docs = [dict(d) for d in fetched.data.get("docs", [])]
                    docs[0].pop("key", None)
                    yield dataclasses.replace(fetched, data={**fetched.data, "docs": docs})

        produced += [r["reason"] for r in fetch_author_works(author, KeyLost()).rejects]
    return set(produced)


def test_every_registered_reason_is_produced(crafted_release, tmp_path):
    piped = through_pipeline(crafted_release)
    assert THROUGH_PIPELINE <= piped, f"the crafted release no longer reaches {THROUGH_PIPELINE - piped}"
    produced = piped | through_pure_functions(crafted_release, tmp_path)
    assert produced <= set(REASONS), produced - set(REASONS)
    assert set(REASONS) <= produced, f"no test produces {sorted(set(REASONS) - produced)}"
