"""``kitab site build`` on two small releases scored for both tasks (tests/site_fixture.py), read
back as files and in headless Chromium (Debian's ``chromium``, as tests/test_report_html.py):
the index names every model and release, the filter hides and shows rows, every link between
pages resolves, no console message, a failed model shows failed with its reason, names are
text; the output rule (a rebuild replaces the site, never anything else; ``<warehouse>/site``
and no other folder of a warehouse)."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from typer.testing import CliRunner

from kitab.app.cli import app
from kitab.core.outputs import MANIFEST
from kitab.core.warehouse import Warehouse
from kitab.release.site import build_site
from kitab.release.site.pages import slug
from tests.browser import chromium_path, dom
from tests.output_path_cases import tree_digest, user_folder
from tests.site_fixture import DOWN_REASON, NEW, ODD, OLD, site_warehouse

runner = CliRunner()
MODELS = ("perfect", "fixed-wrong", ODD, "down")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    return site_warehouse(tmp_path_factory.mktemp("site") / "wh")


@pytest.fixture(scope="module")
def site(warehouse) -> Path:
    result = runner.invoke(app, ["site", "build", "--warehouse", str(warehouse)])
    assert result.exit_code == 0, result.output
    assert "7 pages, 2 releases" in result.stdout
    return warehouse / "site"


def pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_every_page_is_written_with_its_manifest_and_nothing_else(site):
    names = {p.relative_to(site).as_posix() for p in pages(site)}
    assert names == {
        "index.html",
        *(f"releases/{slug(r)}.html" for r in (OLD, NEW)),
        *(f"models/{slug(m)}.html" for m in MODELS),
    }
    assert (site / MANIFEST).is_file() and not list(site.parent.glob(".site*"))  # the temp folder swapped in
    for page in pages(site):
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"(src|href)=\"(https?:)?//", text)  # nothing fetched: opens from disk


def test_names_are_text_never_markup(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "<b>odd" not in index and "\u202e" not in index
    assert html_lib.escape("<b>odd|name</b>[U+202E]") in index
    model = (site / "models" / f"{slug(ODD)}.html").read_text(encoding="utf-8")
    assert "<b>odd" not in model and "\u202e" not in model


def test_the_index_shows_the_latest_release_with_floors_costs_and_the_failed_model(site, warehouse):
    index = (site / "index.html").read_text(encoding="utf-8")
    latest = index.split('id="releases"')[0]
    assert f">{NEW}</a>" in latest and "best no-knowledge baseline" in latest and "perfect model" in latest
    assert "key error:" in latest and "chance 0.25" in latest  # the ceilings and the claim chance level
    # down failed on both tasks: a failed row in each leaderboard and in the costs, with its reason
    assert latest.count(f"failed: {html_lib.escape(DOWN_REASON)}") == 2
    assert latest.count('<tr class="failed" data-model="down">') == 4
    # model_runs' costs: perfect's run of the queries sent one request per query of the release
    with Warehouse(warehouse).connect(release=NEW) as con:
        (queries,) = con.execute("SELECT count(*) FROM queries").fetchone()
    costs = latest.split('id="costs"')[1]
    (row,) = re.findall(r'<tr class="" data-model="perfect"><td>queries</td>(.*?)</tr>', costs)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells[1:9] == ["scored", "", "served-7", f"{queries:,}", f"{queries:,}", f"{queries:,}", "0", "12,345"]


def test_model_pages_show_every_release_and_the_differences_or_say_there_is_one(site):
    perfect = (site / "models" / f"{slug('perfect')}.html").read_text(encoding="utf-8")
    assert perfect.index(f">{OLD}</a>") < perfect.index(f">{NEW}</a>")  # by release date
    assert "two-sample bootstrap" in perfect
    # perfect scores 1 on both releases: every difference is 0 with the interval [0, 0]
    rows = re.findall(r"<tr class=\"\">(.*?)</tr>", perfect.split('id="differences"')[1])
    assert len(rows) == 4 and all('+0.000 <span class="ci">[+0.000, +0.000]</span>' in r for r in rows)
    # the odd model knew every key of the older release and half of the newer's: told apart
    odd = (site / "models" / f"{slug(ODD)}.html").read_text(encoding="utf-8").split('id="differences"')[1]
    (row,) = re.findall(r"<tr class=\"\">(<td>queries: all correct</td>.*?)</tr>", odd)
    value, low, high = (
        float(x) for x in re.search(r"([+-][\d.]+) <span class=\"ci\">\[([+-][\d.]+), ([+-][\d.]+)\]", row).groups()
    )
    assert 0.4 < low < value < high < 0.6 and "<td>yes</td><td>better on the older</td>" in row
    (row,) = re.findall(r"<tr class=\"\">(<td>claims: pair accuracy</td>.*?)</tr>", odd)
    assert "<td>no</td>" in row  # always True on both: no difference
    down = (site / "models" / f"{slug('down')}.html").read_text(encoding="utf-8")
    assert 'id="one-release"' in down and "no release only" in down and html_lib.escape(DOWN_REASON) in down


def test_a_release_page_shows_its_card_numbers_and_only_its_own_runs(site, warehouse):
    with Warehouse(warehouse).connect(release=OLD) as con:
        authors, queries, claims = con.execute(
            "SELECT (SELECT count(*) FROM released_authors), (SELECT count(*) FROM queries), "
            "(SELECT count(*) FROM claims)"
        ).fetchone()
    old = (site / "releases" / f"{slug(OLD)}.html").read_text(encoding="utf-8")
    card = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", old))
    assert (card["authors"], card["queries"], card["claim pairs"]) == (str(authors), str(queries), str(claims // 2))
    assert 'data-model="down"' not in old and "best no-knowledge baseline" in old  # down ran on the newer only
    index = (site / "index.html").read_text(encoding="utf-8").split('id="releases"')[1]
    assert index.index(f">{NEW}</a>") < index.index(f">{OLD}</a>")  # newest first


# -- in a real browser ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_path()


def model_rows(html: str) -> list[tuple[str, bool]]:
    """(data-model, hidden) of every row the filter acts on."""
    return [
        (html_lib.unescape(m.group(2)), "hidden" in m.group(1) + m.group(3))
        for m in re.finditer(r"<tr([^>]*?)data-model=\"([^\"]*)\"([^>]*)>", html)
    ]


def test_every_page_renders_without_console_messages_and_every_link_resolves(chromium, site):
    for page in pages(site):
        html, log = dom(chromium, page)
        assert ":CONSOLE" not in log, (page, [x for x in log.splitlines() if ":CONSOLE" in x])
        links = re.findall(r'href="([^"]+)"', html)
        assert links, page
        for link in links:
            parts = urlsplit(html_lib.unescape(link))
            assert not parts.scheme and not parts.netloc, link  # no link leaves the site
            if parts.path:
                target = (page.parent / unquote(parts.path)).resolve()
                assert target.is_file() and site.resolve() in target.parents, (page, link)


def test_the_index_names_both_releases_and_every_model(chromium, site):
    html, _ = dom(chromium, site / "index.html")
    for release in (OLD, NEW):
        assert f">{release}</a>" in html
    names = {m for m, _ in model_rows(html)}
    assert {"perfect", "fixed-wrong", "down", "<b>odd|name</b>[U+202E]"} <= names
    assert re.search(r'id="shown" data-shown="(\d+)"', html).group(1) == str(len(model_rows(html)))


def test_the_filter_hides_and_shows_rows(chromium, site):
    html, log = dom(chromium, site / "index.html", "#filter=PERF")
    rows = model_rows(html)
    shown = [m for m, hidden in rows if not hidden]
    assert shown and set(shown) == {"perfect"} and ":CONSOLE" not in log
    assert any(hidden for _, hidden in rows)
    assert re.search(r'id="shown" data-shown="(\d+)"', html).group(1) == str(len(shown))
    html, _ = dom(chromium, site / "index.html", "#filter=")
    assert not any(hidden for _, hidden in model_rows(html))
    html, _ = dom(chromium, site / "index.html", "#filter=%3Cb%3E")  # the odd name's markup, as typed
    assert {m for m, hidden in model_rows(html) if not hidden} == {"<b>odd|name</b>[U+202E]"}


# -- where it writes ------------------------------------------------------------------------------------------------
def test_a_rebuild_replaces_the_site_and_nothing_else_is_replaced(warehouse, site, tmp_path):
    before = {p.relative_to(site) for p in pages(site)}
    summary = build_site(warehouse, site)
    assert summary["pages"] == 7 and summary["releases"] == [OLD, NEW] and set(summary["models"]) == set(MODELS)
    assert {p.relative_to(site) for p in pages(site)} == before
    out = tmp_path / "elsewhere"
    assert build_site(warehouse, out)["out"] == str(out.resolve())
    digest = tree_digest(warehouse)
    thesis = user_folder(tmp_path / "thesis")
    (site / "notes.txt").write_text("mine\n")  # the site now holds a file it did not write
    refused = {
        "a user's folder": thesis,
        "the site with a file of the user's": site,
        "the warehouse": warehouse,
        "its tables": warehouse / "tables",
        "another folder of the warehouse": warehouse / "site2",
    }
    for label, target in refused.items():
        result = runner.invoke(app, ["site", "build", "--warehouse", str(warehouse), "--out", str(target)])
        assert result.exit_code == 1, label
        assert result.output.startswith("kitab: error: --out ") and "nothing" in result.output, (label, result.output)
    (site / "notes.txt").unlink()
    assert tree_digest(warehouse) == digest and (thesis / "thesis.txt").read_text() == "years of work\n"
