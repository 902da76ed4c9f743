"""One convention per number and one name per setting, wherever results are shown: percent or fraction
as the metric declares (CLI, Python API, tables, figures), the same short setting names in `malt show`,
`malt table` and figure legends, LaTeX tables that fit a page, and reference baselines that never
set the scale of a figure."""
from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from malt.cli import main
from malt.results import ResultSet


def _cv(repo, *args):
    result = CliRunner().invoke(main, ["cv", "--repo", str(repo), "--quiet", *args])
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """mllr at two values of C (select=none, so C is used), label-prior (a reference baseline) on
    synthetic multi-label data with and without hidden labels; a semi-supervised experiment with four
    settings of one metric."""
    path = tmp_path_factory.mktemp("conventions") / "repo"
    for missing in ("0", "0.3"):
        exp = _cv(path, "--algo", "mllr", "--algo", "label-prior", "--param", "select=none", "--param", "C=0.1,10",
                  "--dataset", "synthetic-multilabel", "--folds", "3", "--missing", missing)
    semi = _cv(path, "--algo", "gf", "--algo", "lgc", "--param", "k=5,10", "--dataset", "sklearn-iris", "--task",
               "semisupervised", "--labeled", "20", "--folds", "3")
    return path, exp, semi


def test_summary_show_and_tables_use_the_metrics_declared_unit(repo):
    path, exp, _ = repo
    rs = ResultSet.load(path)
    frame = rs.frame[rs.frame["experiment"] == exp]
    summary = rs.summary().set_index(["experiment", "display", "metric"])
    for metric, percent in (("one_error", True), ("coverage", False)):
        stored = frame[(frame["metric"] == metric) & (frame["display"] == "label-prior")]["value"]
        row = summary.loc[(exp, "label-prior", metric)]
        assert row["unit"] == ("%" if percent else "")
        assert row["mean"] == pytest.approx(stored.mean() * (100 if percent else 1))
        assert row["std"] == pytest.approx(stored.std(ddof=1) * (100 if percent else 1))
        fractions = rs.summary(percent=False).set_index(["experiment", "display", "metric"]).loc[
            (exp, "label-prior", metric)]
        assert fractions["mean"] == pytest.approx(stored.mean()) and fractions["unit"] == ""
    # the same number, printed the same way, by `malt show` (table and CSV) and `malt table`
    one_error = summary.loc[(exp, "label-prior", "one_error"), "mean"]
    shown = CliRunner().invoke(main, ["show", "--repo", str(path), exp]).output
    line = next(line for line in shown.splitlines() if line.startswith("one_error"))
    assert f"{one_error:.1f} ±" in line and "%" in line
    csv = CliRunner().invoke(main, ["show", "--repo", str(path), exp, "--format", "csv"]).output
    rows = pd.read_csv(io.StringIO(csv)).set_index(["display", "metric"])
    assert rows.loc[("label-prior", "one_error"), "mean"] == pytest.approx(one_error)
    assert rows.loc[("label-prior", "one_error"), "unit"] == "%"
    table = CliRunner().invoke(main, ["table", str(path), "--metric", "one_error", "--experiment", exp]).output
    assert f"{one_error:.1f} ±" in table


def test_a_setting_has_one_name_in_show_table_and_figures(repo, tmp_path):
    path, exp, _ = repo
    expected = ["label-prior", "mllr (C=0.1)", "mllr (C=10)"]  # select=none is shared: not part of the name
    shown = CliRunner().invoke(main, ["show", "--repo", str(path), exp]).output
    header = shown.splitlines()[0]
    assert [name for name in expected if name in header] == expected and "[" not in header
    table = CliRunner().invoke(main, ["table", str(path), "--experiment", exp]).output
    columns = [c.strip() for c in next(line for line in table.splitlines() if line.startswith("| metric")).split("|")]
    assert columns[2:-1] == expected
    summary = ResultSet.load(path).summary()
    assert sorted(set(summary[summary["experiment"] == exp]["setting"])) == expected
    from malt.results.plotting import plot_all

    outputs = plot_all(ResultSet.load(path), tmp_path, metrics=["one_error"], formats=("png",), keep=True)
    try:
        legend = [t.get_text() for t in next(o for o in outputs if o.family.swept).figure.axes[0].get_legend().get_texts()]
        assert [re.sub(r" \(reference.*\)$", "", t) for t in legend] == expected
    finally:
        import matplotlib.pyplot as plt

        for item in outputs:
            plt.close(item.figure)


def test_latex_tables_transpose_when_wider_than_tall(repo):
    path, exp, semi = repo
    wide = CliRunner().invoke(main, ["table", str(path), "--format", "latex", "--experiment", semi]).output
    assert "\\begin{tabular}{lr}" in wide  # four settings of one metric: settings as rows
    assert "algorithm & Error rate (\\%) $\\downarrow$ \\\\" in wide
    rows = [line.split(" & ")[0] for line in wide.splitlines() if line.endswith("\\\\") and " $\\pm$ " in line]
    assert rows == ["gf (k=5)", "gf (k=10)", "lgc (k=5)", "lgc (k=10)"]
    tall = CliRunner().invoke(main, ["table", str(path), "--format", "latex", "--experiment", exp]).output
    assert "metric & label-prior & mllr (C=0.1) & mllr (C=10) \\\\" in tall  # 13 metrics × 3 settings: as it is


def test_reference_baselines_are_registered_algorithms():
    from malt import registry
    from malt.results.settings import REFERENCE_BASELINES

    assert REFERENCE_BASELINES <= set(registry.algorithms())
    assert {"column-mean", "label-prior", "majority", "popularity"} <= REFERENCE_BASELINES


def test_a_reference_baseline_does_not_set_the_scale(repo, tmp_path):
    """label-prior's one-error is far above mllr's: its dashed line stays off the axis, named with its
    value, and mllr's differences keep the whole axis; a dot plot's axis spans the data, not 0."""
    import matplotlib.pyplot as plt

    from malt.results.plotting import family_summary, plot_all

    path, exp, semi = repo
    rs = ResultSet.load(path)
    outputs = plot_all(rs, tmp_path, metrics=["one_error", "error"], formats=("png",), keep=True)
    try:
        sweep = next(o for o in outputs if o.family.swept and o.metric == "one_error")
        ax = sweep.figure.axes[0]
        summary = family_summary(rs, sweep.family, "one_error")
        models = summary[summary["algorithm"] == "mllr"]
        prior = summary[summary["algorithm"] == "label-prior"]["mean"]
        lo, hi = ax.get_ylim()
        assert lo <= (models["mean"] - models["err"]).min() and (models["mean"] + models["err"]).max() <= hi
        assert prior.min() > hi  # off the scale...
        label = next(t.get_text() for t in ax.get_legend().get_texts() if t.get_text().startswith("label-prior"))
        assert f"off scale at {prior.mean():.3g}" in label  # ...and its value said
        span = (models["mean"] + models["err"]).max() - (models["mean"] - models["err"]).min()
        assert hi - lo < 1.5 * span
        dots = next(o for o in outputs if o.family.task == "semisupervised").figure.axes[0]
        points = family_summary(rs, next(o for o in outputs if o.family.task == "semisupervised").family, "error")
        left, right = dots.get_xlim()
        assert left > 0.5 * (points["mean"] - points["err"]).min() and left <= (points["mean"] - points["err"]).min()
        assert right >= (points["mean"] + points["err"]).max()
        assert np.isclose(sorted(c.lines[0].get_xdata()[0] for c in dots.containers), sorted(points["mean"])).all()
    finally:
        for item in outputs:
            plt.close(item.figure)
