"""An entity kind is one registered object (tasks/entities/registry.py), and a new one goes the
real way: a kind with its tagger and its measured classes (tests/entity_colour.py: "colour",
a title names a colour), selected by the run's taggers configuration like any other, through
the pipeline on the bundled snapshot: tag -> book_states -> constraints -> publish -> export.

The kind lives in an importable module and is selected as ``tests.entity_colour:colour_v1``:
the constrain and tag steps run in spawned worker processes (several batches), and each
imports the module from the selection it is given, so the kind registered only in this test's
process would not be enough; the tagger writes its process id to a file to show where it ran."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import duckdb
import pytest

from kitab.core.errors import BadValue
from tasks.constraints import constraints_probe, entity_kinds, parse_criterion, spec_type
from tasks.entities import registry as kinds_registry
from tasks.taggers import registry as tagger_registry
from tests.releases import dump_release, run_sql_check

MODULE = "tests.entity_colour"
SELECTION = f"human_v6,city_v6,{MODULE}:colour_v1"
RELEASE = "colour"
WORD = re.compile(r"\b(Red|Blue|Green|Black|White|Yellow|Purple|Scarlet|Golden|Grey|Gray)\b")


def _forget_colour() -> None:
    kinds_registry.unregister_kind("colour")
    tagger_registry.TAGGERS.pop("colour_v1", None)
    sys.modules.pop(MODULE, None)


@pytest.fixture(scope="module")
def colour_release(tmp_path_factory):
    """The bundled dump's release with the colour kind selected, in batches of 4 authors (so
    the CPU steps go to the worker processes); the colour kind is forgotten afterwards."""
    root = tmp_path_factory.mktemp("colour") / "warehouse"
    pids = tmp_path_factory.mktemp("pids") / "pids.txt"
    saved = {k: os.environ.get(k) for k in ("KITAB_TEST_COLOUR_PIDS", "KITAB_WORKERS")}
    os.environ["KITAB_TEST_COLOUR_PIDS"] = str(pids)  # inherited by the spawned workers
    os.environ["KITAB_WORKERS"] = "2"  # a pool of worker processes even on a one-core machine
    try:
        # the colour kind's classes are counted on no labelled titles: its stated errors are no-credit
        # highs, so the key-error bound (tested in test_key_error.py) would leave out all its queries
        dump_release(root, authors=16, seed=42, release=RELEASE, taggers=SELECTION, batch_size=4, max_key_error=1.0)
        yield root, {int(p) for p in pids.read_text().split()}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _forget_colour()


def _rows(root, table: str, where: str = "true") -> list[dict]:
    files = sorted(str(p) for p in (root / "tables" / table).rglob("*.parquet"))
    return duckdb.sql(f"SELECT * FROM read_parquet({files!r}) WHERE {where}").to_arrow_table().to_pylist()


def test_the_colour_kind_is_tagged_in_the_worker_processes(colour_release):
    _, pids = colour_release
    assert pids and pids - {os.getpid()}, "the colour tagger never ran in a worker process"


def test_a_new_kinds_books_are_decided_and_its_constraints_released_with_real_keys(colour_release):
    root, _ = colour_release
    books = _rows(root, "books")
    variants = _rows(root, "title_variants")
    titles = {b["book_id"]: [b["canonical_title"]] for b in books}
    for v in variants:
        titles[v["book_id"]].append(v["title"])
    truth = {b: any(WORD.search(t or "") for t in ts) for b, ts in titles.items()}
    assert sum(truth.values()) >= 3  # the drawn authors have colour titles to find

    # book_states: every book has a colour state, decided by its measured, low-risk classes
    states = {r["book_id"]: r for r in _rows(root, "book_entities", "kind = 'colour'")}
    assert set(states) == set(truth)
    assert {b: s["state"] for b, s in states.items()} == {b: "yes" if t else "no" for b, t in truth.items()}
    assert all(s["evidence"] in ("title:listed", "title:plain") for s in states.values())

    # constraints: colour_name present / absent per author, keyed by the books' states
    rows = _rows(root, "constraints", "constraint_type = 'colour_name'")
    authors = {b["author_qid"] for b in books}
    assert {r["author_qid"] for r in rows} == authors  # every author: none rejected as mostly unsure
    for r in rows:
        mine = [b["book_id"] for b in books if b["author_qid"] == r["author_qid"]]
        present = r["constraint_id"].endswith(":colour_name:present")
        assert r["constraint_id"] == f"{r['author_qid']}:colour_name:{'present' if present else 'absent'}"
        assert sorted(r["mapped_book_ids"]) == sorted(b for b in mine if truth[b] == present)
        assert r["entity_kind"] == "colour" and r["unsure_book_ids"] == []
        assert (
            r["text"]
            == f"Book {'contains' if present else 'doesn' + chr(39) + 't contain'} a colour name in its title."
        )
    assert not _rows(root, "rejects", "reason = 'entity_books_mostly_unsure'")
    # the kind's constraints parse back (what evaluation reads)
    assert parse_criterion("Book contains a colour name in its title.") == spec_type("colour_name")(True)

    # human and city are there as before
    kinds = {r["kind"] for r in _rows(root, "book_entities")}
    assert kinds == {"human", "city", "colour"}


def test_the_export_has_the_new_kinds_columns_after_kitabs_own(colour_release, tmp_path):
    import pyarrow.parquet as pq

    from kitab.release.export import export_release

    root, _ = colour_release
    out = tmp_path / "export"
    export_release(root, RELEASE, out)
    table = pq.read_table(out / "data" / "book-metadata" / "test-00000-of-00001.parquet")
    names = table.column_names
    at = names.index("has_human_name")
    assert names[at : at + 6] == [
        "has_human_name",
        "human_names",
        "has_city_name",
        "city_names",
        "has_colour_name",
        "colour_names",
    ]
    states = {r["book_id"]: r["state"] for r in _rows(root, "book_entities", "kind = 'colour'")}
    rows = table.to_pylist()
    assert {r["book_id"]: r["has_colour_name"] for r in rows} == {b: s == "yes" for b, s in states.items()}
    assert all(WORD.fullmatch(n) for r in rows for n in r["colour_names"])
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "`has_colour_name` / `colour_names`" in card and "human, city and colour names" in card


def test_the_probe_takes_any_kind():
    import tests.entity_colour  # noqa: F401  (registers the kind and its tagger)

    try:
        [tagger] = tagger_registry.make_taggers((f"{MODULE}:colour_v1",))
        lines = ["The Red Hour (2001)", "Jazz (1992)", "Sula (1973)"]
        found = {
            t: bool(s)
            for t, s in zip(["The Red Hour", "Jazz", "Sula"], tagger.tag_many(["The Red Hour", "Jazz", "Sula"]))
        }
        out = list(constraints_probe(lines, taggers={"colour": found.get}))
        assert any('"type": "colour_name"' in line for line in out)
    finally:
        _forget_colour()


def test_without_the_module_there_is_no_colour_kind():
    _forget_colour()
    assert "colour" not in entity_kinds()
    assert "colour_v1" not in tagger_registry.TAGGERS
    with pytest.raises(BadValue, match="unknown tagger colour_v1"):
        tagger_registry.selected_versions("colour_v1")
    with pytest.raises(BadValue, match="cannot import tests.no_such_kind"):
        tagger_registry.selected_versions("tests.no_such_kind:colour_v1")
    with pytest.raises(ValueError, match="unknown constraint type 'colour_name'"):
        spec_type("colour_name")


def test_a_kind_registers_only_with_measured_classes():
    from tasks.entities.registry import EntityKind, EvidenceClass

    with pytest.raises(ValueError, match="no measured 'plain' class"):
        EntityKind("mood", "mood word", 95, ("mood_v1",), "mood_v1", (), span_class=lambda d: "x")
    with pytest.raises(ValueError, match="errors 3 of 2 titles"):
        EvidenceClass("plain", "no", 3, 2, False)


def test_kitab_tag_and_constraints_take_the_selected_kinds():
    """``kitab tag`` prints a state per selected kind; ``kitab constraints --kinds`` takes any
    registered kind (``--human`` / ``--city`` stay as the README's aliases)."""
    import json

    from typer.testing import CliRunner

    from kitab.app.cli import app

    runner = CliRunner()
    try:
        result = runner.invoke(app, ["tag", "--taggers", SELECTION, "The Red Hour", "Jazz"])
        assert result.exit_code == 0, result.output
        red, jazz = [json.loads(line) for line in result.stdout.splitlines()]
        assert (red["colour"], red["colour_names"], jazz["colour"]) == ("yes", ["Red"], "no")
        assert {"human", "city"} <= set(red)
        result = runner.invoke(
            app,
            ["constraints", "--kinds", "colour", "--taggers", SELECTION],
            input="The Red Hour (2001)\nJazz (1992)\n",
        )
        assert result.exit_code == 0, result.output
        types = {json.loads(line)["type"] for line in result.stdout.splitlines()}
        assert "colour_name" in types and "human_name" not in types
        result = runner.invoke(app, ["constraints", "--kinds", "mood"], input="Jazz (1992)\n")
        assert isinstance(result.exception, BadValue) and "unknown entity kind 'mood'" in str(result.exception)
    finally:
        _forget_colour()


def test_the_model_prompt_is_made_from_the_kinds_clauses_and_is_v1_to_the_byte():
    """The cache keys of every model answer include the prompt: made from human's and city's
    clauses, it must stay the text v1 was asked with."""
    from tasks.taggers.model import KINDS, PROMPT

    v1 = (
        "You tag book titles. For each numbered title, list every human name in it (a person's given "
        "name, surname or full name, real or fictional, including a character's single name such as "
        "'Emma' or 'Gatsby'; not the honorific, so 'Mrs Dalloway' gives 'Dalloway'; not words that "
        "only happen to be names, roles, or places named after people such as 'Peyton Place') and "
        "every city name in it (a city or town used as a place, such as 'Venice' in 'Death in "
        "Venice'; not countries, states or regions, not demonyms, not a city inside a person's name "
        "such as 'Jack London'). Copy each name exactly as it is written in the title. Answer with "
        'one JSON object and nothing else: {"titles": [{"n": 1, "human": [...], "city": [...]}, ...]} '
        "with one entry per title, in order."
    )
    assert (PROMPT, KINDS) == (v1, ("human", "city"))


def test_the_report_gives_the_new_kinds_key_quality_before_any_evaluation(colour_release):
    """Key quality is the release's (its keys and their books' states), so `kitab report
    --output json` has it for every tagged kind, the new one included, with no model evaluated."""
    from kitab.core.warehouse import Warehouse
    from kitab.release.leaderboard import leaderboard

    root, _ = colour_release
    tagger_registry.selected_versions(SELECTION)  # the kind's module, as the run selected it
    with Warehouse(root).connect(release=RELEASE) as con:
        board = leaderboard(con, RELEASE)
    assert board["evaluations"] == []
    quality = board["key_quality"]
    assert {q["kind"] for q in quality.values()} == {"human", "city", "colour"}
    colour = quality["colour-name"]
    assert colour["queries"] > 0 and 0.0 <= colour["unsure_share"] <= 1.0 and colour["wrong_key"] is not None


# The entity-states data test in one pass, each constraint's lists copied onto every book of its
# author: the reference the two-pass form (sql/tests/constraints_entity_states_agree.sql, issue
# 41: ~1 GB at 10,000 writers in this form) must return the same rows as, damaged or not.
ONE_PASS_AGREE = """
with c as (
    select release, author_qid, constraint_id, entity_kind, mapped_book_ids, unsure_book_ids,
           json_extract(spec, '$.present')::boolean as present
    from constraints where entity_kind is not null
),
pairs as (
    select c.*, b.book_id, e.state
    from c
    join books b on b.release = c.release and b.author_qid = c.author_qid
    left join book_entities e on e.release = c.release and e.book_id = b.book_id and e.kind = c.entity_kind
)
select release, constraint_id, book_id, coalesce(state, 'missing') as problem
from pairs
where state is null
   or list_contains(mapped_book_ids, book_id) <> (state = case when present then 'yes' else 'no' end)
   or list_contains(unsure_book_ids, book_id) <> (state = 'unsure')
"""


def test_the_entity_states_data_test_reads_every_kind_and_catches_each_damage_as_the_one_pass_form(colour_release):
    root, _ = colour_release
    agree = Path(__file__).resolve().parents[1] / "sql" / "tests" / "constraints_entity_states_agree.sql"
    con = duckdb.connect()
    tables = {
        t: con.sql(
            f"SELECT * FROM read_parquet('{root}/tables/{t}/*/*.parquet', hive_partitioning = true)"
        ).to_arrow_table()
        for t in ("constraints", "books", "book_entities")
    }
    assert {r["entity_kind"] for r in tables["constraints"].to_pylist()} >= {"human", "city", "colour"}
    one = "(SELECT min(constraint_id) FROM constraints WHERE entity_kind = 'colour' AND len(mapped_book_ids) > 0)"
    state = "(SELECT min(book_id) FROM book_entities WHERE kind = 'colour' AND state = 'yes')"
    damaged = {
        None: False,
        "a mapped book dropped": f"UPDATE constraints SET mapped_book_ids = mapped_book_ids[2:] WHERE constraint_id = {one}",
        "a mapped book listed as unsure too": "UPDATE constraints SET unsure_book_ids = "
        f"list_append(unsure_book_ids, mapped_book_ids[1]) WHERE constraint_id = {one}",
        "a state missing": f"DELETE FROM book_entities WHERE kind = 'colour' AND book_id = {state}",
        "a state flipped": f"UPDATE book_entities SET state = 'no' WHERE kind = 'colour' AND book_id = {state}",
        "a second, other state": "INSERT INTO book_entities BY NAME (SELECT * REPLACE ('unsure' AS state) "
        f"FROM book_entities WHERE kind = 'colour' AND book_id = {state})",
        "another author's book mapped (not a disagreement of the author's books)": "UPDATE constraints SET "
        "mapped_book_ids = list_append(mapped_book_ids, 'not-a-book') WHERE entity_kind IS NOT NULL",
    }
    for what, mutate in damaged.items():
        rows = sorted(run_sql_check(agree, tables, mutate))
        assert rows == sorted(run_sql_check(ONE_PASS_AGREE, tables, mutate)), what
        assert bool(rows) == (what is not None and not what.startswith("another")), (what, rows)
