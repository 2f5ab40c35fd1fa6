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
from tests.browser import chromium_path, dom
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
    return chromium_path()


@pytest.fixture(scope="module")
def page(warehouse, models, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    result = runner.invoke(app, ["report", "--release", RELEASE, "--html", str(path), "--warehouse", str(warehouse)])
    assert result.exit_code == 0, result.output
    assert not list(path.parent.glob("*.tmp*"))  # written through a temp file, then renamed
    return path


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
    # the title's markup stayed text: no element of it in the DOM the browser built, nor in the
    # page or the rows' files, where it is JSON with < > & written as \u003c \u003e \u0026
    assert '<b id="pwned">' not in html
    written = [page, *page.parent.joinpath(f"{page.stem}_files").glob("*.js")]
    assert all('id="pwned"' not in p.read_text() for p in written)
    assert any(json.dumps(INVENTED).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
               in p.read_text() for p in written)  # fmt: skip
    # and the raw answer the evaluations table keeps for it, so a person can see why it scored so
    last_line = response.strip().splitlines()[-1]
    assert html_escape(last_line, quote=False) in row


# -- the page at 20 models (issue 38) ---------------------------------------------------------
LONG_TITLE = "Aa" * 1500  # 3,000 characters, no space to break at
ODD_MODEL = "odd|model \u202eevil"  # a | for report.md's table, a right-to-left override for the page
RLO_TITLE = "\u202eevil"  # shown with the override, "evil" would read "live"


@pytest.fixture(scope="module")
def many(warehouse, models, tmp_path_factory) -> tuple[Path, Path]:
    """A copy of the release with 20 evaluations: the 5 above, 14 more (perfect with a seeded
    share of titles dropped) and ODD_MODEL, which lists LONG_TITLE and RLO_TITLE on every query.
    Returns (warehouse, page)."""
    root = tmp_path_factory.mktemp("many")
    copy = Path(shutil.copytree(warehouse, root / "warehouse"))
    perfect = models["perfect"]
    extra = {f"m{i:02d}": {q: [t for t in ts if random.Random(f"{i}{q}{t}").random() < 0.8] for q, ts in perfect.items()}
             for i in range(14)}  # fmt: skip
    extra[ODD_MODEL] = {q: [*ts, LONG_TITLE, RLO_TITLE] for q, ts in perfect.items()}
    for i, (model, answers) in enumerate(extra.items()):
        path = root / f"extra{i}.jsonl"
        path.write_text(
            "".join(json.dumps({"query_id": q, "response": answer_text(t)}) + "\n" for q, t in answers.items())
        )
        evaluate_release(copy, RELEASE, path, model=model)
    page = root / "html" / "report.html"
    result = runner.invoke(app, ["report", "--release", RELEASE, "--html", str(page), "--warehouse", str(copy)])
    assert result.exit_code == 0, result.output
    return copy, page


def test_the_page_at_20_models_keeps_its_rows_beside_it_and_loads_them_when_shown(chromium, page, many, models):
    _, big = many
    files = sorted(big.parent.joinpath("report_files").glob("model-*.js"))
    assert len(files) == 20
    # the page carries the plots, the tables and each query once; every model's rows (titles,
    # raw answers) are in its file: a model adds ~42 KB (taller plots, table rows), not its rows
    assert big.stat().st_size <= 5_000_000
    assert big.stat().st_size - page.stat().st_size < 15 * 60_000, (big.stat().st_size, page.stat().st_size)
    raw = json.dumps("Output:\n")[1:-1]  # every answer's start, as the rows' JSON holds it
    assert raw not in big.read_text() and all(raw in f.read_text() for f in files)
    html, log = dom(chromium, big, "#model=m03")
    assert ":CONSOLE" not in log and "data-errors=" not in html
    n = len(models["perfect"])
    assert shown(html) == n == len(visible_rows(html))
    assert all('data-model="m03"' in r for r in visible_rows(html))
    html, _ = dom(chromium, big, "#model=*")  # every model: all 20 files loaded
    assert shown(html) == 20 * n


# measured in the browser: the page in an iframe, read by a script beside it (Chromium lets a
# file:// page read another only with --allow-file-access-from-files)
HARNESS = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="%s" style="width:1200px;height:900px;border:0"></iframe>
<script>
var f = document.getElementById("f");
var timer = setInterval(function () {
  var doc = f.contentDocument, shown = doc && doc.getElementById("shown");
  if (!shown || !shown.dataset.shown) { return; }
  clearInterval(timer);
  var out = {shown: Number(shown.dataset.shown), scrollWidth: doc.documentElement.scrollWidth,
             clientWidth: doc.documentElement.clientWidth, evil: [], widest: 0};
  doc.querySelectorAll("#query-table tr.q").forEach(function (tr) {
    if (!tr.hidden) { out.widest = Math.max(out.widest, tr.getBoundingClientRect().right); }
  });
  doc.querySelectorAll("li").forEach(function (li) {
    var text = li.firstChild, at = li.textContent.indexOf("evil");
    var tr = li.closest("tr.q");
    if (!text || at < 0 || !tr || tr.hidden) { return; }
    var r = doc.createRange(), x = [];
    for (var i = 0; i < 4; i++) { r.setStart(text, at + i); r.setEnd(text, at + i + 1); x.push(r.getBoundingClientRect().left); }
    out.evil.push({text: li.textContent, x: x});
  });
  document.body.setAttribute("data-result", JSON.stringify(out));
}, 100);
</script></body></html>"""


def measured(chromium: str, page: Path, hash_: str) -> dict:
    harness = page.parent / "harness.html"
    harness.write_text(HARNESS % (page.name + hash_))
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
         "--window-size=1200,900", "--virtual-time-budget=20000", "--dump-dom", harness.as_uri()],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'data-result="([^"]*)"', done.stdout)
    assert found, done.stdout[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_a_3000_character_title_wraps_and_a_right_to_left_override_shows_as_text(chromium, many):
    from urllib.parse import quote

    from kitab.release.markup import neutral_bidi

    _, big = many
    shown_as = neutral_bidi(ODD_MODEL)
    assert shown_as == "odd|model [U+202E]evil"
    out = measured(chromium, big, "#model=" + quote(shown_as))
    assert out["shown"] > 0
    # no horizontal scroll: the 3,000-character title and the wide tables stay inside the window
    assert out["scrollWidth"] <= out["clientWidth"] <= 1200 and out["widest"] <= out["clientWidth"], out
    # the RLO title, listed in every row, is drawn as its text, left to right: e, v, i, l
    assert len(out["evil"]) == out["shown"]
    for item in out["evil"]:
        assert item["x"] == sorted(item["x"]) and len(set(item["x"])) == 4, item  # drawn "live": x falls
        assert item["text"] == "[U+202E]evil", item


def test_report_md_escapes_a_pipe_and_shows_a_bidi_control_in_a_model_name(many):
    copy, _ = many
    result = runner.invoke(app, ["report", "--release", RELEASE, "--warehouse", str(copy)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(x for x in lines if x.startswith("| # | model |"))
    row = next(x for x in lines if "odd" in x and x.startswith("| "))
    assert "odd\\|model [U+202E]evil" in row  # the | escaped, the override shown, as on the page
    columns = lambda line: len(re.split(r"(?<!\\)\|", line))  # noqa: E731
    assert columns(row) == columns(header)
