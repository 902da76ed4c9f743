"""The HTML report in a real headless Chromium (Debian's chromium + chromedriver, driven over WebDriver
with the standard library): it loads with no console error and no network, its navigation links
resolve, sorting a table reorders it, every figure is rendered at a non-zero size.

Set MALT_SCREENSHOTS=/some/folder to keep the screenshots the test takes.
"""
from __future__ import annotations

import html
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from malt.cli import main
from malt.results import ResultSet

from .browser import Browser, find_browser


def _browser():
    found = find_browser()
    if found is None:
        why = "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {why}")
        pytest.skip(why)
    return found


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """A report over three bundled datasets (ranks, CD diagram) and one parameter sweep."""
    from malt.results.report import write_report

    root = tmp_path_factory.mktemp("report")
    repo = root / "repo"
    runs = [[dataset, "--algo", "gf", "--algo", "lgc", "--algo", "tikreg"]
            for dataset in ("sklearn-iris", "sklearn-wine", "sklearn-breast-cancer")]
    runs.append(["sklearn-wine", "--algo", "gf", "--param", "k=3,10,30", "--seed", "1"])  # its own experiment
    for dataset, *rest in runs:
        args = ["cv", "--repo", str(repo), "--quiet", "--dataset", dataset, "--task", "semisupervised",
                "--labeled", "20", *rest]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
    _, html = write_report(ResultSet.load(repo), root / "report", source="repo")
    return html


FIGURES = """
return Array.from(document.images).map(function (img) {
  img.scrollIntoView();
  var r = img.getBoundingClientRect(), style = getComputedStyle(img);
  return {src: img.src.slice(0, 22), complete: img.complete, natural: img.naturalWidth,
          width: r.width, height: r.height, visible: style.visibility === "visible" && style.display !== "none"};
});
"""


def _figures(browser, wait: float = 30.0) -> list[dict]:
    """FIGURES once every image has loaded, or as they are after ``wait`` seconds: the report's images are
    loading='lazy', so scrolling one into view starts its load and decode, which finish asynchronously
    (on a loaded machine an image was still incomplete when read straight after the scroll)."""
    deadline = time.monotonic() + wait
    while True:
        figures = browser.script(FIGURES)
        if all(f["complete"] for f in figures) or time.monotonic() > deadline:
            return figures
        time.sleep(0.2)


COLUMN = """
var table = arguments[0] === null ? null : document.querySelectorAll("table.sortable")[arguments[0]];
return Array.from(table.tBodies[0].rows).map(function (row) {
  var cell = row.cells[arguments[1]];
  var key = cell.getAttribute("data-sort");
  return [row.cells[0].textContent, key === null ? cell.textContent : key];
});
"""


def _column(browser, table: int, column: int):
    return browser.script(COLUMN.replace("arguments[1]", str(column)), table)


@pytest.mark.timeout(120)
def test_report_loads_offline_sorts_and_shows_every_figure(page, tmp_path):
    shots = Path(os.environ.get("MALT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    text = page.read_text()
    assert "http://" not in text and "https://" not in text and "<script src" not in text
    with Browser(*_browser()) as browser:
        browser.open(page)
        assert browser.script("return document.readyState") == "complete"
        assert browser.script("return document.title") == "malt report: repo"
        # navigation: one link per section, every one resolving to a section
        targets = browser.script("return Array.from(document.querySelectorAll('nav a')).map(a => a.hash.slice(1))")
        sections = browser.script("return Array.from(document.querySelectorAll('main section')).map(s => s.id)")
        assert targets and sorted(targets) == sorted(sections)
        browser.screenshot(shots / "report-top.png")

        # every figure is an inline PNG, decoded and laid out at a non-zero size
        figures = _figures(browser)
        assert len(figures) == 6  # 4 bar charts, a sweep over k, a CD diagram
        for figure in figures:
            assert figure["src"].startswith("data:image/png;base64")
            assert figure["complete"] and figure["natural"] > 100, figure
            assert figure["width"] > 100 and figure["height"] > 50 and figure["visible"], figure

        # sorting: the rank table's rows follow a clicked column, ascending then descending
        index = browser.script("return Array.from(document.querySelectorAll('table.sortable'))"
                               ".findIndex(t => t.tHead.rows[0].cells[4] && "
                               "t.tHead.rows[0].cells[4].textContent === 'average rank')")
        assert index >= 0
        browser.script("document.querySelectorAll('table.sortable')[arguments[0]].scrollIntoView()", index)
        browser.screenshot(shots / "report-ranks.png")
        before = _column(browser, index, 0)
        browser.script("document.querySelectorAll('table.sortable')[arguments[0]].tHead.rows[0].cells[0]"
                       ".setAttribute('data-test', 'name')", index)
        browser.click("th[data-test='name']")
        names = [row[0] for row in _column(browser, index, 0)]
        assert names == sorted(names) and names != [row[0] for row in before]  # rank order was not alphabetical
        browser.click("th[data-test='name']")
        assert [row[0] for row in _column(browser, index, 0)] == sorted(names, reverse=True)
        browser.script("document.querySelectorAll('table.sortable')[arguments[0]].tHead.rows[0].cells[4]"
                       ".setAttribute('data-test', 'rank')", index)
        browser.click("th[data-test='rank']")
        browser.click("th[data-test='rank']")  # second click: descending, worst first
        ranks = [float(row[1]) for row in _column(browser, index, 4)]
        assert ranks == sorted(ranks, reverse=True)
        browser.screenshot(shots / "report-sorted.png")

        # the section filter hides what does not match
        browser.script("var f = document.getElementById('nav-filter'); f.value = 'wine';"
                       "f.dispatchEvent(new Event('input'));")
        shown = browser.script("return Array.from(document.querySelectorAll('main section'))"
                               ".filter(s => !s.hidden).map(s => s.id)")
        assert shown and all("wine" in s for s in shown) and len(shown) < len(sections)
        png = browser.screenshot(shots / "report-filtered.png")
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000

        errors = [entry for entry in browser.console() if entry.get("level") == "SEVERE"]
        assert errors == [], errors


FIT = """
var vw = document.documentElement.clientWidth;
var main = document.querySelector("main").getBoundingClientRect();
var outside = Array.from(document.querySelectorAll("body *")).filter(function (e) {
  var r = e.getBoundingClientRect();
  return r.width > 0 && r.right > vw + 1 && !e.closest(".scroll");
}).map(function (e) { return e.tagName + "." + e.className; });
var boxes = Array.from(document.querySelectorAll(".scroll")).filter(function (e) {
  return e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().right > main.right + 1;
}).length;
return {viewport: vw, body: document.body.scrollWidth, page: document.documentElement.scrollWidth,
        outside: outside.slice(0, 5), boxes: boxes};
"""


def _fits(browser, width: int) -> dict:
    """The page at ``width``: nothing wider than the viewport; wide tables scroll inside their box."""
    browser.resize(width, 900)
    fit = browser.script(FIT)
    assert fit["viewport"] <= width and fit["viewport"] > width - 40, fit
    assert fit["body"] <= fit["viewport"] and fit["page"] <= fit["viewport"], fit
    assert fit["outside"] == [] and fit["boxes"] == 0, fit
    return fit


@pytest.mark.timeout(120)
@pytest.mark.parametrize("width", [1400, 800])
def test_report_fits_the_window_and_figures_enlarge(page, tmp_path, width):
    shots = Path(os.environ.get("MALT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    text = page.read_text()
    assert "{'" not in text and "={" not in text  # provenance is tables, not printed Python dicts
    with Browser(*_browser()) as browser:
        browser.resize(width, 900)
        browser.open(page)
        _fits(browser, width)
        browser.screenshot(shots / f"report-{width}-top.png")
        # provenance: tables of settings, experiments and run sessions, folded away until asked for
        folded = browser.script("return Array.from(document.querySelectorAll('details.more')).map("
                                "d => [d.open, d.querySelectorAll('table').length])")
        assert folded and all(not is_open and n == 3 for is_open, n in folded), folded
        browser.script("document.querySelector('details.more').open = true;"
                       "document.querySelector('details.more').scrollIntoView()")
        session = browser.script("var t = Array.from(document.querySelectorAll('details.more table'))[2];"
                                 "return Array.from(t.tHead.rows[0].cells).map(c => c.textContent)")
        assert session[:3] == ["experiment", "session", "started (UTC)"] and "libraries" in session
        _fits(browser, width)
        browser.screenshot(shots / f"report-{width}-provenance.png")
        # a figure enlarges on click, at least to its thumbnail's width, and Escape closes it
        browser.script("document.querySelector('main figure img').scrollIntoView()")
        thumb = browser.script("return document.querySelector('main figure img').getBoundingClientRect().width")
        browser.click("main figure img")
        big = browser.script("var z = document.getElementById('zoom'); var i = z.querySelector('img');"
                             "return [z.hidden, i ? i.getBoundingClientRect().width : 0]")
        assert big[0] is False and big[1] > thumb * 1.3, (thumb, big)
        browser.screenshot(shots / f"report-{width}-zoom.png")
        browser.script("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
        assert browser.script("return document.getElementById('zoom').hidden") is True
        # the tables' reading note is said once, in About, and each caption points to it
        notes = browser.script("return Array.from(document.querySelectorAll('ol.notes li')).map(l => l.textContent)")
        assert notes and all(text.count(html.escape(note, quote=False)) == 1 for note in notes)
        errors = [entry for entry in browser.console() if entry.get("level") == "SEVERE"]
        assert errors == [], errors


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """A report over 50 experiments (one single-experiment section each, a reference baseline beside a
    model) and an algorithm with ten settings."""
    import malt
    from malt.results.report import write_report

    root = tmp_path_factory.mktemp("many")
    for seed in range(50):
        run = malt.cv(["column-mean", "pma-map"], "synthetic-multilabel", task="missing", folds=2, seed=seed,
                      repo=root / "repo", quiet=True)
        assert run.ok
    _, html = write_report(ResultSet.load(root / "repo"), root / "report", source="repo", formats=("png",))
    return html


@pytest.mark.timeout(300)
def test_a_report_of_fifty_experiments_stays_one_readable_page(many, tmp_path):
    shots = Path(os.environ.get("MALT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    size = many.stat().st_size
    assert size < 3_000_000, f"{size} bytes"  # 50 figures, 50 tables, 150 provenance tables
    with Browser(*_browser()) as browser:
        browser.open(many)
        sections = browser.script("return Array.from(document.querySelectorAll('main section > details'))"
                                  ".map(d => [d.parentNode.id, d.open])")
        assert len(sections) == 51 and [s[1] for s in sections].count(True) == 2  # About and the first
        _fits(browser, 1400)
        browser.screenshot(shots / "report-50-top.png")
        last = sections[-1][0]
        browser.click(f"nav a[href='#{last}']")  # the navigation opens the section it jumps to
        assert browser.script("return document.getElementById(arguments[0]).firstElementChild.open", last) is True
        img = browser.script("var r = document.getElementById(arguments[0]).querySelector('img')"
                             ".getBoundingClientRect(); return [r.width, r.height]", last)
        assert img[0] > 100 and img[1] > 50
        browser.screenshot(shots / "report-50-last.png")
        _fits(browser, 800)
        errors = [entry for entry in browser.console() if entry.get("level") == "SEVERE"]
        assert errors == [], errors
