"""Tables: bold on the best mean (respecting the metric's direction), ties by the corrected resampled
t-test (Nadeau & Bengio 2003), no marks below five folds, incomplete cells and single folds shown as such."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

from malt.cli import main
from malt.cli.figures import register
from malt.results import ResultSet
from tests.helpers import three_dataset_semisupervised_repo

register(main)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    path = tmp_path_factory.mktemp("tables") / "repo"
    for missing in ("0", "0.3"):
        result = CliRunner().invoke(main, ["cv", "--repo", str(path), "--quiet", "--dataset", "synthetic-multilabel",
                                           "--folds", "5", "--algo", "mllr", "--algo", "mlsvm",
                                           "--param", "C=0.01,1", "--param", "select=none", "--param", "kernel=linear",
                                           "--missing", missing])
        assert result.exit_code == 0, result.output
    return path


@pytest.fixture(scope="module")
def three_folds(tmp_path_factory):
    path = tmp_path_factory.mktemp("tables3") / "repo"
    result = CliRunner().invoke(main, ["cv", "--repo", str(path), "--quiet", "--dataset", "synthetic-multilabel",
                                       "--folds", "3", "--algo", "mllr", "--algo", "mlsvm", "--param", "C=0.01,1",
                                       "--param", "select=none"])
    assert result.exit_code == 0, result.output
    return path


def _expected(frame: pd.DataFrame, metric: str, better: str) -> tuple[str, set[str]]:
    """Best display and the displays not significantly different from it, computed from the raw folds:
    scipy's paired t statistic rescaled by Nadeau & Bengio's correction, five-fold CV (ρ = 1/4)."""
    part = frame[frame.metric == metric].pivot_table(index="fold", columns="display", values="value")
    means = part.mean()
    best = means.idxmin() if better == "lower" else means.idxmax()
    folds = len(part)
    tied = set()
    for d in part.columns:
        if d == best:
            continue
        t = stats.ttest_rel(part[best], part[d]).statistic * math.sqrt((1 / folds) / (1 / folds + 1 / (folds - 1)))
        if 2 * stats.t.sf(abs(t), folds - 1) >= 0.05:
            tied.add(d)
    return best, tied


def _label(display: str, frame: pd.DataFrame) -> str:  # the legend text: 'mllr (C=0.01)'
    row = frame[frame.display == display].iloc[0]
    return f"{row['algorithm']} (C={float(row['param.C']):g})"


@pytest.mark.parametrize("metric,better", [("ranking_loss", "lower"), ("average_precision", "higher")])
def test_sweep_table_bolds_best_and_marks_ties(repo, metric, better):
    from malt.results.plotting import families
    from malt.results.tables import sweep_tables

    rs = ResultSet.load(repo)
    (family,) = families(rs)
    (table,) = sweep_tables(rs, family, [metric])
    assert table.columns == ["0", "30"]
    for column, missing in (("0", 0.0), ("30", 0.3)):
        frame = rs.frame[rs.frame["task.missing"] == missing]
        best, tied = _expected(frame, metric, better)
        bold = [row for row in table.rows if table.cells[(row, column)].best]
        assert bold == [_label(best, frame)]
        assert {row for row in table.rows if table.cells[(row, column)].tied} == {_label(d, frame) for d in tied}
    markdown = table.to_markdown()
    best0, _ = _expected(rs.frame[rs.frame["task.missing"] == 0.0], metric, better)
    line = next(l for l in markdown.splitlines() if l.startswith(f"| {_label(best0, rs.frame)} |"))
    assert line.split("|")[2].strip().startswith("**") and "p ≥ 0.05" in markdown
    assert "corrected resampled t-test" in table.caption and "n_test/n_train = 0.25" in table.caption
    assert "\\textbf{" in table.to_latex()
    assert any(table.cells[(r, c)].tied for r in table.rows for c in table.columns)  # the check can see a tie


def test_no_marks_below_five_folds_and_the_caption_says_so(three_folds):
    from malt.results.plotting import families
    from malt.results.tables import experiment_table

    rs = ResultSet.load(three_folds)
    (family,) = families(rs)
    table = experiment_table(rs, family, ["one_error", "ranking_loss"])
    assert not any(cell.tied for cell in table.cells.values())
    assert all(sum(table.cells[(r, c)].best for c in table.columns) >= 1 for r in table.rows)
    assert "No significance marks: 3 paired folds, fewer than the 5" in table.caption


def test_incomplete_cells_show_n_of_planned_and_one_fold_shows_no_spread(repo):
    from malt.results.describe import planned_folds
    from malt.results.plotting import families
    from malt.results.tables import experiment_table, format_mean_std

    rs = ResultSet.load(repo)
    exp = sorted(rs.specs)[0]
    assert planned_folds(rs, exp) == 5
    frame = rs.frame
    drop = (frame.experiment == exp) & (frame.display == "mllr[select=none]") & (frame.fold == 4)
    partial = type(rs)(frame[~drop].reset_index(drop=True), rs.specs)  # as if one unit were still missing
    family = next(f for f in families(partial) if exp in f.experiments)
    table = experiment_table(partial, type(family)(family.dataset, family.task, None, family.fixed, {exp: None}),
                             ["one_error"])
    (row,) = table.rows
    label = next(c for c in table.columns if c.startswith("mllr") and "0.01" not in c)
    assert table.cells[(row, label)].text().endswith("(4/5)")
    assert "n/N: only n of the N planned folds" in table.caption
    assert format_mean_std(26.71, 0.8, True, 1) == "26.7" and format_mean_std(26.71, 0.84, True, 5) == "26.7 ± 0.8"


def test_rank_table_against_scipy(tmp_path):
    from scipy.stats import friedmanchisquare, rankdata

    from malt.results.tables import rank_tables

    rs = three_dataset_semisupervised_repo(tmp_path / "repo")
    (table,) = rank_tables(rs)
    means = rs.frame.groupby(["dataset", "algorithm"])["value"].mean().unstack()
    ranks = pd.DataFrame(rankdata(means.to_numpy(), axis=1), index=means.index, columns=means.columns)
    average = ranks.mean().sort_values(kind="stable")
    assert table.rows == list(average.index)
    for algo in table.rows:
        assert table.cells[(algo, "average rank")].text() == f"{average[algo]:.2f}"
        for dataset in means.index:
            assert table.cells[(algo, dataset)].mean == ranks.loc[dataset, algo]
    p = friedmanchisquare(*means.to_numpy().T).pvalue
    assert f"χ²_F = {friedmanchisquare(*means.to_numpy().T).statistic:.2f} (p = {p:.3f})" in table.caption
    assert table.columns[-1] == f"Holm p vs {table.rows[0]}" and "N = 3 datasets" in table.caption


def test_table_cli_formats(repo, tmp_path):
    runner = CliRunner()
    md = runner.invoke(main, ["table", str(repo), "--metric", "one_error", "--where", "missing=0"])
    assert md.exit_code == 0, md.output
    # a single experiment: metrics × algorithm settings, the published tables' orientation
    assert "| metric | mllr (C=0.01) | mllr (C=1) | mlsvm (C=0.01) | mlsvm (C=1) |" in md.output  # numeric order
    assert md.output.count("**") >= 2 + 2  # caption + one bold cell
    csv = runner.invoke(main, ["table", str(repo), "--format", "csv", "--metric", "coverage"])
    frame = pd.read_csv(pd.io.common.StringIO(csv.output))
    assert set(frame.columns) >= {"row", "column", "mean", "std", "best", "tied_with_best", "p_value"}
    for _, column in frame.groupby("column"):  # coverage: lower is better; exactly tied means are all best
        assert set(column.row[column.best]) == set(column.row[column["mean"] == column["mean"].min()]) != set()
    tex = runner.invoke(main, ["table", str(repo), "--format", "latex", "--metric", "coverage"])
    assert tex.output.count("\\begin{table}") == 1 and "$\\pm$" in tex.output


def test_report_puts_published_numbers_beside_ours(repo, tmp_path):
    from malt.results.report import published, write_report

    reference = published()
    files = sorted((Path(__file__).parents[1] / "malt" / "results" / "published").glob("*.csv"))
    assert len(reference) == sum(len(f.read_text().strip().splitlines()) - 1 for f in files)
    assert (reference.source.str.startswith("Agovic 2011, Table 4")).sum() == 130  # Tables 4.4-4.7 as printed: 30 + 30 + 10 + 10 + 25 + 25
    row = reference[(reference.source == "Agovic 2011, Table 4.4") & (reference.algorithm == "mllr")
                     & (reference.metric == "one_error")].iloc[0]
    assert (row["mean"], row["std"], row["dataset"]) == ("32.2", "5.4", "emotions")
    md, page = write_report(ResultSet.load(repo), tmp_path / "report", metrics=["one_error", "coverage"])
    text = md.read_text()
    assert "![" in text and "Provenance: algorithm settings and versions" in text and page.read_text().startswith("<!DOCTYPE")
    for link in re.findall(r"\]\((figures/[^)]+)\)", text):
        assert (tmp_path / "report" / link).stat().st_size > 5000


def test_a_published_row_with_params_matches_only_that_setting(repo):
    from malt.results.report import PUBLISHED_COLUMNS, comparison

    rs = ResultSet.load(repo)
    # folds=5 named; missing not named, so only the experiment with missing at its default (0) matches
    row = dict(source="test", dataset="synthetic-multilabel", task="multilabel", setting="folds=5",
               algorithm="mllr", printed="LR", metric="one_error", mean="10", std="")
    reference = pd.DataFrame([dict(row, params=""), dict(row, params="C=0.01")], columns=PUBLISHED_COLUMNS)
    table = comparison(rs, reference=reference)
    assert sorted(table.display) == sorted(["mllr[select=none]", "mllr[C=0.01,select=none]",
                                            "mllr[C=0.01,select=none]"])
    assert set(table.published) == {"10"} and set(table.folds) == {5}
    assert len(comparison(rs, reference=reference.assign(setting="folds=5;missing=0.3"))) == 3
    assert len(comparison(rs, reference=reference.assign(params="C=5;scale=true"))) == 0  # no such setting
