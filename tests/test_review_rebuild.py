"""The review loop keeps the release (issue 37): release A, then B, then review labels that flip
some of A's states, then A rebuilt. Without --replace the rebuild is refused before any work,
naming the review labels; with it, A's authors, works and books are the same, and the rows that
differ are the labelled books' states and the constraints, queries and claims of their authors.
The run summary and `kitab releases --history` say what changed and why."""

from __future__ import annotations

import csv
import json

import duckdb
import pyarrow.compute as pc
from typer.testing import CliRunner

from kitab.app.cli import app
from kitab.core.release_commit import PROVENANCE_TABLES, commit
from kitab.core.warehouse import Warehouse
from tasks.publish import excluded_releases
from tasks.sample_authors import sample_authors
from tests.releases import dump_release

runner = CliRunner()
AUTHORS, SEED = 40, 42


def kitab(*args) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def _tables(wh, release) -> dict:
    w = Warehouse(wh)
    return {t: w.read_table(t, [release]) for t in json.loads(w.ledger_row(release)["checksums"])}


def _differing(before, after) -> list[dict]:
    """The rows of ``before`` not in ``after`` and the reverse (whole rows, as multisets)."""
    con = duckdb.connect()
    con.register("old", before)
    con.register("new", after)
    sql = "(SELECT * FROM old EXCEPT ALL SELECT * FROM new) UNION ALL (SELECT * FROM new EXCEPT ALL SELECT * FROM old)"
    return con.sql(sql).to_arrow_table().to_pylist()


def test_rebuild_after_review_import_keeps_the_authors_and_changes_only_what_the_labels_decide(tmp_path):
    wh = tmp_path / "wh"
    dump_release(wh, authors=AUTHORS, seed=SEED, release="A")
    before = _tables(wh, "A")
    dump_release(wh, authors=AUTHORS, seed=SEED + 1, release="B")

    # the reviewer flips twelve of A's (book, kind) states: six unsure -> yes, three yes -> no,
    # three no -> yes
    with Warehouse(wh).connect(release="A") as con:
        rows = con.execute(
            "SELECT e.book_id, b.canonical_title, a.name, e.kind, e.state, e.author_qid FROM book_entities e "
            "JOIN books b USING (release, book_id) JOIN authors a ON a.release = e.release AND a.qid = e.author_qid "
            "WHERE e.release = 'A' ORDER BY e.book_id, e.kind"
        ).fetchall()
    picked = [r for state, k in (("unsure", 6), ("yes", 3), ("no", 3)) for r in [r for r in rows if r[4] == state][:k]]
    n = len(picked)
    flip = {"unsure": "yes", "yes": "no", "no": "yes"}
    labels = tmp_path / "labels.csv"
    with labels.open("w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["title", "author", "kind", "label"])
        out.writerows([title, author, kind, flip[state]] for _, title, author, kind, state, _ in picked)
    assert f"{n} labels imported" in kitab("review", "import", labels, "--warehouse", wh)
    said = f"review labels changed ({n} labels since the last build: {n} new)"

    common = ("--source", "dump", "--authors", AUTHORS, "--seed", SEED, "--release", "A", "--warehouse", wh)
    refused = runner.invoke(app, ["refresh", *map(str, common), "--runner", "local", "--quiet"])
    message = str(refused.exception)
    assert refused.exit_code != 0 and said in message
    assert "--replace" in message and message.count("\n") <= 1
    assert not (wh / ".work" / "A").exists()  # refused before the pipeline ran a step

    summary = json.loads(kitab("refresh", *common, "--runner", "local", "--quiet", "--json", "--replace"))
    after = _tables(wh, "A")
    # the same sample: A's row's own exclusions (none: it came first), not B made since
    assert summary["excluded_releases"] == [] and summary["authors"]["drawn"] == before["authors"].num_rows
    assert after["released_authors"] == before["released_authors"]
    for table in ("books", "title_variants", "title_entities"):
        assert after[table] == before[table], table
    # rejects: the same, but the key-error bound's (issue 37), which the labels' states move
    bound = "key_error_over_bound"
    assert after["rejects"].filter(pc.field("reason") != bound) == before["rejects"].filter(pc.field("reason") != bound)
    for table in PROVENANCE_TABLES:  # the same rows but their fetch times
        assert after[table].drop(["fetched_at"]) == before[table].drop(["fetched_at"]), table

    # the states that differ are exactly the labelled ones, each now its label
    changed = _differing(before["book_entities"], after["book_entities"])
    assert {(r["book_id"], r["kind"]) for r in changed} == {(r[0], r[3]) for r in picked}
    now = {(r["book_id"], r["kind"]): r for r in after["book_entities"].to_pylist()}
    assert all(now[r[0], r[3]]["state"] == flip[r[4]] for r in picked)
    # what follows from them: only the labelled books' authors' constraints, queries and claims
    labelled_authors = {r[5] for r in picked}
    for table in ("constraints", "queries"):
        rows = _differing(before[table], after[table])
        assert rows and {r["author_qid"] for r in rows} <= labelled_authors, table  # changed, only theirs
    moved = _differing(before["rejects"], after["rejects"])
    assert {r["author_qid"] for r in moved} <= labelled_authors and {r["reason"] for r in moved} <= {bound}
    # claims: the labelled authors' pairs are redrawn; another author's pair is never redrawn, at
    # most taken in or left out where a stratum's quota moved with its candidate count
    rows = _differing(before["claims"], after["claims"])
    assert {r["author_qid"] for r in rows} & labelled_authors
    others = [r for r in rows if r["author_qid"] not in labelled_authors]
    old_ids, new_ids = ({r["pair_id"] for r in t["claims"].to_pylist()} for t in (before, after))
    assert all((r["pair_id"] in old_ids) != (r["pair_id"] in new_ids) for r in others)
    assert len({r["pair_id"] for r in others}) <= len({r["constraint_type"] for r in rows})

    rebuilt = summary["rebuilt"]
    assert rebuilt["because"] == [said]
    assert rebuilt["tables"]["book_entities"] == {"removed": n, "added": n}
    assert "released_authors" not in rebuilt["tables"] and "books" not in rebuilt["tables"]
    row = Warehouse(wh).ledger_row("A")
    assert len(json.loads(row["review_labels"])) == n and json.loads(row["excluded_releases"]) == []
    history = kitab("releases", "--history", "--warehouse", wh)
    line = next(x for x in history.splitlines() if x.startswith("A\tcurrent"))
    # (the validity battery's baselines follow from the redrawn claims and queries: listed first)
    assert f"changed: {said}: baselines -" in line and f", book_entities -{n}/+{n}, claims -" in line
    assert "released authors the same" in line

    # the same command again: the labels are the row's now, nothing differs, A stands
    again = json.loads(kitab("refresh", *common, "--runner", "local", "--quiet", "--json"))
    assert again["unchanged"] and again["rebuilt"] is None

    # a ledger from before excluded_releases was recorded: the releases first made before it
    for release in ("A", "B"):
        commit(Warehouse(wh), release, {**Warehouse(wh).ledger_row(release), "excluded_releases": None})
    assert excluded_releases(Warehouse(wh), "A") == [] and excluded_releases(Warehouse(wh), "B") == ["A"]


def test_authors_released_since_are_skipped_without_moving_any_other():
    candidates = [{"qid": f"Q{i}", "name": f"Author {i}"} for i in range(1, 60)]
    order = [c["qid"] for c in sample_authors(candidates, n=10, seed=3, exclude_qids=set()).tables["order"]]
    taken = {order[2], order[7]}
    skipped = sample_authors(
        candidates,
        n=10,
        seed=3,
        exclude_qids=set(),
        skip_qids=frozenset({order[2]}),
        skip_names=frozenset({"author " + order[7][1:]}),
    )
    assert [c["qid"] for c in skipped.tables["order"]] == [q for q in order if q not in taken]
    assert skipped.stats["skipped_released_since"] == 2 and skipped.stats["eligible"] == len(order) - 2
