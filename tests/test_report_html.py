"""Intervals and the HTML report on a real release (the pipeline on the bundled snapshot, ~20 s):

- the perfect model's interval is [1, 1] on every all-correct cell;
- two synthetic models built to differ by 0.05 all-correct are told apart by the paired
  comparison (``kitab report --compare``), two identical ones are not;
- ``kitab report --html`` writes one self-contained page that opens in headless Chromium
  (Debian's ``chromium``; ``make browser`` installs it, .ci/run calls it) with no console
  message, whose filters (driven through the URL hash) show the rows they should, and whose
  row for one query shows what the evaluations table holds.
"""

from __future__ import annotations

import ast
import json
import os
import random
import re
import shutil
import subprocess
from html import escape as html_escape
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kitab.app.cli import app
from kitab.core.warehouse import Warehouse
from kitab.release.evaluation.run import evaluate_release
from kitab.release.intervals import differs
from kitab.release.leaderboard import comparison, leaderboard
from tests.releases import dump_release

RELEASE = "2026.11.23-s12"
# an invented title that is also markup: the page must show it as text (escaped), never run it
INVENTED = 'Zqxv </li><b id="pwned">Wjkp</b> & "Yfgh" > 1'
runner = CliRunner()


def answer_text(titles: list[str]) -> str:
    lines = "".join(f"{n}. Reason: It satisfies the criteria. Title: {t}\n" for n, t in enumerate(titles, 1))
    return f"Output:\n{lines}"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    return dump_release(tmp_path_factory.mktemp("report-html") / "warehouse", authors=30, seed=12, release=RELEASE)


@pytest.fixture(scope="module")
def models(warehouse, tmp_path_factory) -> dict[str, dict[str, list[str]]]:
    """model -> {query_id: the titles it answers}: perfect; a (perfect but an invented title
    added on a seeded 20% of queries); b (a, and another 5% of all queries wrong the same
    way); a-copy (a's answers again); empty (nothing listed)."""
    with Warehouse(warehouse).connect(release=RELEASE) as con:
        mapped = {
            q: ast.literal_eval(m)
            for q, m in con.execute(
                "SELECT query_id, mapped_books FROM kitab_book_constraints ORDER BY query_id"
            ).fetchall()
        }
    ids = sorted(mapped)
    rng = random.Random(12)
    shuffled = rng.sample(ids, len(ids))
    wrong_a = set(shuffled[: len(ids) // 5])
    extra = set(shuffled[len(ids) // 5 : len(ids) // 5 + round(0.05 * len(ids))])
    out = {
        "perfect": dict(mapped),
        "a": {q: [*mapped[q], INVENTED] if q in wrong_a else mapped[q] for q in ids},
        "b": {q: [*mapped[q], INVENTED] if q in wrong_a | extra else mapped[q] for q in ids},
        "empty": {q: [] for q in ids},
    }
    out["a-copy"] = out["a"]
    folder = tmp_path_factory.mktemp("answers")
    for model, answers in out.items():
        path = folder / f"{model}.jsonl"
        path.write_text(
            "".join(json.dumps({"query_id": q, "response": answer_text(t)}) + "\n" for q, t in answers.items())
        )
        evaluate_release(warehouse, RELEASE, path, model=model)
    return out


def test_the_perfect_model_has_the_interval_1_1_everywhere(warehouse, models):
    with Warehouse(warehouse).connect(release=RELEASE) as con:
        board = leaderboard(con, RELEASE)
    (perfect,) = [e for e in board["evaluations"] if e["model"] == "perfect"]
    cells = [perfect["overall"], *perfect["by_size"].values(), *(b for bins in perfect["by"].values() for b in bins)]
    assert len(cells) > 15
    for cell in cells:
        assert (cell["all_correct"], *cell["all_correct_ci"]) == (1.0, 1.0, 1.0)
        # completeness is undefined on unsatisfiable queries (nothing to complete): a bin of only
        # those has none; every bin with a satisfiable query has it at [1, 1]
        if cell["completeness"] is not None:
            assert (cell["completeness"], *cell["completeness_ci"]) == (1.0, 1.0, 1.0)
    assert (perfect["overall"]["completeness"], *perfect["overall"]["completeness_ci"]) == (1.0, 1.0, 1.0)
    # a model that gets things wrong has an interval of some width around its value
    (a,) = [e for e in board["evaluations"] if e["model"] == "a"]
    low, high = a["overall"]["all_correct_ci"]
    assert low < a["overall"]["all_correct"] < high and high - low > 0.01


def test_five_points_apart_are_told_apart_and_identical_models_are_not(warehouse, models):
    with Warehouse(warehouse).connect(release=RELEASE) as con:
        apart = comparison(con, RELEASE, "a", "b")["difference"]["all"]["all_correct"]
        same = comparison(con, RELEASE, "a", "a-copy")["difference"]["all"]["all_correct"]
    n = len(models["a"])
    assert apart["value"] == pytest.approx(round(0.05 * n) / n) and apart["low"] > 0 and differs(apart)
    assert (same["value"], same["low"], same["high"]) == (0.0, 0.0, 0.0) and not differs(same)
    result = runner.invoke(
        app, ["report", "--release", RELEASE, "--compare", "a", "b", "--warehouse", str(os.fspath(warehouse))]
    )
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith("| all | all_correct |"))
    assert line.endswith("| yes |")
    result = runner.invoke(
        app, ["report", "--release", RELEASE, "--compare", "a", "nobody", "--warehouse", str(warehouse)]
    )
    assert result.exit_code == 1 and "no evaluation 'nobody'" in result.output


# -- the page in a real browser ---------------------------------------------------------------
@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run runs `make browser` before the tests")
        pytest.skip("Debian's chromium is not installed: `make browser` (as root) installs it")
    return path


@pytest.fixture(scope="module")
def page(warehouse, models, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    result = runner.invoke(app, ["report", "--release", RELEASE, "--html", str(path), "--warehouse", str(warehouse)])
    assert result.exit_code == 0, result.output
    assert not list(path.parent.glob("*.tmp*"))  # written through a temp file, then renamed
    return path


def dom(chromium: str, page: Path, hash_: str = "") -> tuple[str, str]:
    """The page's DOM after its script ran (and the filters in ``hash_`` applied), and
    Chromium's log (console messages show as ``:CONSOLE``)."""
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.as_uri() + hash_,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def shown(html: str) -> int:
    return int(re.search(r'id="shown"[^>]*data-shown="(\d+)"', html).group(1))


def visible_rows(html: str) -> list[str]:
    return [m for m in re.findall(r"<tr class=\"q\"[^>]*>", html) if " hidden" not in m]


def test_the_page_is_self_contained_and_renders_without_console_messages(chromium, page, models):
    text = page.read_text()
    assert not re.search(r"(src|href)=\"(https?:)?//", text)  # nothing fetched at view time
    assert text.count("data:image/png;base64,") >= 6  # 2 quality plots + 4 leaderboard plots
    html, log = dom(chromium, page)
    assert ":CONSOLE" not in log, [x for x in log.splitlines() if ":CONSOLE" in x]
    assert "data-errors=" not in html
    assert "Leaderboard, release" in html and "Quality" in html and "[1.000, 1.000]" in html
    total = sum(len(m) for m in models.values())
    assert shown(html) == total == len(visible_rows(html))


def test_the_filters_show_what_they_say_and_a_row_shows_what_the_evaluations_table_holds(
    chromium, page, models, warehouse
):
    with Warehouse(warehouse).connect(release=RELEASE) as con:
        n_unsatisfiable = con.execute("SELECT count(*) FROM queries WHERE n_mapped = 0").fetchone()[0]
        query_id, titles, kinds, response = con.execute(
            "SELECT query_id, model_titles, match_kinds, response FROM evaluations WHERE model = 'b' AND NOT all_correct "
            "AND n_mapped > 0 ORDER BY query_id LIMIT 1"
        ).fetchone()
    # the empty model is all correct exactly on the unsatisfiable queries
    html, log = dom(chromium, page, "#model=empty&outcome=all-correct")
    assert shown(html) == n_unsatisfiable == len(visible_rows(html)) and ":CONSOLE" not in log
    assert all('data-model="empty"' in row and 'data-outcome="all-correct"' in row for row in visible_rows(html))
    # b's wrong rows of one constraint type
    html, _ = dom(chromium, page, "#model=b&type=starts-with&outcome=wrong")
    rows = visible_rows(html)
    assert rows and all('data-model="b"' in r and "starts-with" in r and "wrong" in r for r in rows)
    # one query's row read back: the titles the evaluations table holds, each marked
    html, _ = dom(chromium, page, "#model=b&outcome=wrong")
    start = html.index(f'data-query="{query_id}" data-model="b"')
    row = html[start : html.index("</tr>", start)]
    assert " hidden" not in html[html.rindex("<tr", 0, start) : start]
    listed = re.findall(r'<li class="(t-[a-z]+)"[^>]*>([^<]*)</li>', row)
    # (the DOM as Chromium serialises it: text escapes &, < and >, and keeps ")
    assert [t for _, t in listed] == [html_escape(t, quote=False) for t in titles]
    assert INVENTED in titles and any(c in INVENTED for c in '<>"')
    assert dict((t, c) for c, t in listed)[html_escape(INVENTED, quote=False)] == "t-nfa" and kinds[-1] == "none"
    assert all(c == "t-ok" for c, t in listed if t != html_escape(INVENTED, quote=False))
    # the title's markup stayed text: no element of it in the page or in the DOM the browser built
    assert '<b id="pwned">' not in html and 'id="pwned"' not in page.read_text()
    assert html_escape(INVENTED) in page.read_text()  # as written: &lt; &gt; &quot; &amp;
    # and the raw answer the evaluations table keeps for it, so a person can see why it scored so
    last_line = response.strip().splitlines()[-1]
    assert html_escape(last_line, quote=False) in row
