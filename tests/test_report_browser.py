"""The HTML report in a real headless Chromium (Debian's chromium + chromedriver, driven over WebDriver
with the standard library): it loads with no console error and no network, its navigation links
resolve, sorting a table reorders it, every figure is rendered at a non-zero size.

Set MALT_SCREENSHOTS=/some/folder to keep the screenshots the test takes.
"""
from __future__ import annotations

import os
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
        figures = browser.script(FIGURES)
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
