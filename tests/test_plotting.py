"""Figures from a result set built through the real engine (malt cv into a temporary repository)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from malt.cli import main
from malt.cli.figures import register
from malt.errors import RepositoryError
from malt.results import ResultSet
from tests.helpers import three_dataset_semisupervised_repo

register(main)


def _cv(repo, *args):
    result = CliRunner().invoke(main, ["cv", "--repo", str(repo), "--quiet", "--dataset", "synthetic-multilabel",
                                       "--folds", "3", *args])
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    path = tmp_path_factory.mktemp("figs") / "repo"
    for missing in ("0", "0.2"):
        _cv(path, "--algo", "mllr", "--algo", "mlsvm", "--missing", missing)
    _cv(path, "--algo", "mllr", "--algo", "mlsvm", "--missing", "0.2", "--discard")  # a lone experiment
    return path


def test_sweep_figures_have_labels_legend_and_error_bars(repo, tmp_path):
    from malt.results import plotting
    from malt.results.describe import setting_label

    rs = ResultSet.load(repo)
    outputs = plotting.plot_all(rs, tmp_path / "figs", metrics=["one_error", "average_precision"], keep=True)
    try:
        sweeps = [o for o in outputs if o.family.swept]
        bars = [o for o in outputs if not o.family.swept]
        assert {o.metric for o in sweeps} == {"one_error", "average_precision"} and len(sweeps) == 2
        assert len(bars) == 2 and all(o.family.fixed["discard"] is True for o in bars)
        for item in outputs:
            assert [p.suffix for p in item.paths] == [".png", ".pdf"]
            assert all(p.stat().st_size > 5000 for p in item.paths)
        one_error = next(o for o in sweeps if o.metric == "one_error")
        ax = one_error.figure.axes[0]
        assert ax.get_xlabel() == setting_label("multilabel", "missing")[0] and ax.get_xlabel().endswith(" (%)")
        assert ax.get_ylabel() == "One-error (%), lower is better\nmean ± std over 3 folds"
        assert "synthetic-multilabel" in ax.get_title(loc="left")
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["mllr", "mlsvm"]
        assert [float(t) for t in ax.get_xticks()] == [0.0, 20.0]
        # each line's points are the fold means ×100; error bars are the fold std (ddof=1)
        frame = rs.frame[(rs.frame.metric == "one_error") & (rs.frame.algorithm == "mllr")
                         & (rs.frame["task.discard"] == False)]  # noqa: E712
        expected = frame.groupby("task.missing")["value"].agg(["mean", lambda v: v.std(ddof=1)]).to_numpy() * 100
        container = ax.containers[0]
        line, _caps, (bars_collection,) = container.lines
        np.testing.assert_allclose(line.get_ydata(), expected[:, 0])
        segments = bars_collection.get_segments()
        np.testing.assert_allclose([s[1, 1] - s[0, 1] for s in segments], 2 * expected[:, 1])
        assert all(s[1, 1] - s[0, 1] > 0 for s in segments)  # visible error bars
        # the legend sits outside the data area (below the axes)
        fig = one_error.figure
        fig.canvas.draw()
        legend_box = ax.get_legend().get_window_extent()
        assert legend_box.y1 <= ax.get_window_extent().y0
        bar = next(o for o in bars if o.metric == "average_precision").figure.axes[0]
        assert bar.get_xlabel() == "Average precision (%), higher is better\nmean ± std over 3 folds"
        assert [t.get_text() for t in bar.get_yticklabels()] == ["mllr", "mlsvm"]
    finally:
        import matplotlib.pyplot as plt

        for item in outputs:
            plt.close(item.figure)


def test_ci_error_bars_are_wider_than_std_for_three_folds(repo):
    from malt.results import plotting

    rs = ResultSet.load(repo)
    fam = next(f for f in plotting.families(rs) if f.swept)
    std = plotting.family_summary(rs, fam, "one_error", "std")
    ci = plotting.family_summary(rs, fam, "one_error", "ci")
    # t_{0.975, 2} / sqrt(3) = 2.4841 for three folds
    np.testing.assert_allclose(ci["err"], std["err"] * 4.302652729911275 / np.sqrt(3))


def test_colours_are_a_function_of_the_name():
    from malt.results.plotting import algorithm_style

    assert algorithm_style("mllr") == algorithm_style("mllr")
    assert algorithm_style("mllr")["color"] != algorithm_style("mlsvm")["color"]
    assert algorithm_style("someone-elses-algo") == algorithm_style("someone-elses-algo")


def test_styles_are_distinct_within_a_figure_even_for_every_known_algorithm():
    from malt.results.plotting import KNOWN, assign_styles

    # the clash: bmr and column-mean were both dark blue in the scene missing-value figure
    pair = assign_styles([("bmr", "bmr"), ("column-mean", "column-mean")])
    assert pair["bmr"]["color"] != pair["column-mean"]["color"]
    everything = assign_styles([(name, name) for name in KNOWN] + [(f"x{i}", f"x{i}") for i in range(10)])
    colours = [style["color"] for style in everything.values()]
    assert len(set(colours)) == len(colours) == len(KNOWN) + 10
    assert len({style["marker"] for style in list(everything.values())[:12]}) == 12
    # an algorithm keeps its preferred colour when nothing in the figure takes it first
    assert assign_styles([("mllr", "mllr")])["mllr"]["color"] == pair_colour("mllr")


def pair_colour(name):
    from malt.results.plotting import algorithm_style

    return algorithm_style(name)["color"]


def series_colours(ax) -> list[str]:
    """The colour of every data series drawn on an axes: error-bar lines, bars, reference lines."""
    from matplotlib.colors import to_hex

    colours = []
    for container in ax.containers:
        if hasattr(container, "lines") and container.lines[0] is not None:  # errorbar with a data line
            colours.append(to_hex(container.lines[0].get_color()))
        elif hasattr(container, "patches"):  # bars
            colours += [to_hex(p.get_facecolor(), keep_alpha=False) for p in container.patches]
    tracked = {id(c.lines[0]) for c in ax.containers if hasattr(c, "lines") and c.lines[0] is not None}
    colours += [to_hex(line.get_color()) for line in ax.get_lines()
                if id(line) not in tracked and line.get_linestyle() == "--"]  # reference lines
    return colours


def assert_distinct_series(ax):
    colours = series_colours(ax)
    assert len(colours) == len(set(colours)), f"series share a colour: {colours}"


def assert_numeric_x(ax):
    ticks = [float(t) for t in ax.get_xticks()]
    assert ticks == sorted(ticks), f"x ticks out of numeric order: {ticks}"
    for container in ax.containers:
        if hasattr(container, "lines") and container.lines[0] is not None:
            x = np.asarray(container.lines[0].get_xdata(), dtype=float)
            assert np.all(np.diff(x) > 0), f"a line's x values are out of order: {x}"


def test_the_figure_checks_catch_a_shared_colour_and_a_string_ordered_axis():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.errorbar([1, 2], [1, 2], yerr=[0.1, 0.1], color="#0072B2")
    ax.errorbar([1, 2], [2, 3], yerr=[0.1, 0.1], color="#0072B2")
    with pytest.raises(AssertionError, match="share a colour"):
        assert_distinct_series(ax)
    fig2, ax2 = plt.subplots()
    ax2.errorbar([100, 30, 50], [1, 2, 3], yerr=[0.1] * 3)  # the string order of the issue
    with pytest.raises(AssertionError, match="out of order"):
        assert_numeric_x(ax2)
    plt.close(fig)
    plt.close(fig2)


@pytest.fixture(scope="module")
def sweep_repo(tmp_path_factory):
    """One experiment sweeping a numeric parameter whose string order differs from its numeric one."""
    path = tmp_path_factory.mktemp("sweep") / "repo"
    _cv(path, "--algo", "mlknn", "--param", "k=3,10,30,100", "--seed", "1")  # seed 1: its own family
    _cv(path, "--algo", "mllr", "--seed", "1")  # joins the same experiment as a reference line
    for missing in ("0.1", "0.3"):
        _cv(path, "--algo", "mllr", "--algo", "mlknn", "--missing", missing)
    return path


def test_every_figure_has_distinct_series_and_numeric_axes_in_numeric_order(sweep_repo, tmp_path):
    import matplotlib.pyplot as plt

    from malt.results import plotting

    rs = ResultSet.load(sweep_repo)
    outputs = plotting.plot_all(rs, tmp_path, metrics=["hamming_loss"], formats=("png",), keep=True)
    try:
        kinds = {("sweep" if o.family.swept else "parameter" if o.parameter_sweep else "bars") for o in outputs}
        assert kinds == {"sweep", "parameter", "bars"}
        for item in outputs:
            ax = item.figure.axes[0]
            assert_distinct_series(ax)
            if item.family.swept or item.parameter_sweep:
                assert_numeric_x(ax)
        sweep = next(o for o in outputs if o.parameter_sweep == "k")
        ax = sweep.figure.axes[0]
        assert [float(t) for t in ax.get_xticks()] == [3.0, 10.0, 30.0, 100.0]
        assert ax.get_xscale() == "log"  # 3 ... 100 spans more than a decade
        assert ax.get_xlabel() == "mlknn: k" and "over 3 folds" in ax.get_ylabel()
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["mlknn", "mllr (mean)"]
        bars = next(o for o in outputs if not o.family.swept and not o.parameter_sweep).figure.axes[0]
        assert [t.get_text() for t in bars.get_yticklabels()] == [
            f"mlknn (k={k})" for k in (3, 10, 30, 100)] + ["mllr"]  # numeric order, not 10, 100, 3, 30
        assert len(series_colours(bars)) == 5
    finally:
        for item in outputs:
            plt.close(item.figure)


def test_metric_labels_carry_their_parameters():
    from malt.results.describe import metric_label

    assert metric_label("precision@k", {"k": 20}) == "Precision@20"
    assert metric_label("recall@k", {"k": 5.0}) == "Recall@5"
    assert metric_label("precision@k", {}) == "Precision@k"  # unknown k stays symbolic
    assert metric_label("one_error", {"k": 20}) == "One-error (%)"


def test_cd_diagram_draws_the_friedman_ranks_and_the_nemenyi_groups(tmp_path):
    """Three bundled datasets × three semi-supervised algorithms: ranks recomputed from the raw frame."""
    from scipy import stats as sps

    from malt.results.cd_diagram import cd_groups, plot_across_datasets

    rs = three_dataset_semisupervised_repo(tmp_path / "repo")
    (out,) = plot_across_datasets(rs, tmp_path / "figs", formats=("png",), keep=True)
    try:
        means = rs.frame.groupby(["dataset", "algorithm"])["value"].mean().unstack()
        expected = pd.Series(sps.rankdata(means.to_numpy(), axis=1).mean(axis=0), index=means.columns)  # lower error
        f = out.comparison.friedman
        pd.testing.assert_series_equal(f.average_ranks.sort_index(), expected.sort_index(), check_names=False)
        assert f.p_chi2 == pytest.approx(sps.friedmanchisquare(*means.to_numpy().T).pvalue, rel=1e-9)
        texts = [t.get_text() for t in out.figure.axes[0].texts]
        for algo, rank in expected.items():
            assert any(algo in t and f"{rank:.2f}" in t for t in texts), (algo, texts)
        assert any("Friedman" in t and "N = 3" in t for t in texts)
        thick = [line for line in out.figure.axes[0].get_lines() if line.get_linewidth() > 2]
        assert len(thick) == len(cd_groups(out.comparison)) >= 1
        assert out.paths[0].stat().st_size > 5000
    finally:
        import matplotlib.pyplot as plt

        plt.close(out.figure)


def test_plot_cli_writes_files_and_rejects_non_repositories(repo, tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["plot", str(repo), "--out", str(tmp_path / "f"), "--metric", "coverage",
                                  "--error", "ci"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == sorted(
        f"{stem}_coverage.{ext}" for stem in ("synthetic-multilabel_multilabel_by-missing_folds=3",
                                              "synthetic-multilabel_multilabel_discard=True_folds=3_missing=0.2")
        for ext in ("png", "pdf"))
    bad = runner.invoke(main, ["plot", str(tmp_path / "nothing-here")])
    assert bad.exit_code == 2 and bad.output.startswith("error: ") and bad.output.count("\n") == 1
    with pytest.raises(RepositoryError):
        ResultSet.load(tmp_path / "nothing-here")
    empty = runner.invoke(main, ["plot", str(repo), "--algo", "no-such-algo"])
    assert empty.exit_code == 2 and "no-such-algo" in empty.output


def test_combined_table_puts_discard_variants_beside_and_bolds_the_best(repo):
    from malt.results.tables import combined_tables

    rs = ResultSet.load(repo)
    (table,) = combined_tables(rs, "discard", ["hamming_loss"])
    assert table.columns == ["mllr", "mlsvm", "mllr (discard)", "mlsvm (discard)"]
    frame = rs.frame[(rs.frame.metric == "hamming_loss") & (rs.frame["task.missing"] == 0.2)]
    means = frame.groupby(["task.discard", "algorithm"])["value"].mean()
    discard, algo = means.idxmin()  # lower is better
    best = algo + (" (discard)" if discard else "")
    (row,) = table.rows
    assert [c for c in table.columns if table.cells[(row, c)].best] == [best]
    assert abs(table.cells[(row, best)].mean - 100 * means.min()) < 1e-9


def test_a_data_file_edited_between_runs_gets_two_figures_and_two_captions(tmp_path):
    """One CSV, edited between two `malt cv` runs: two experiments with the same dataset name and
    options. Each keeps its own figure and its own table caption (the second once overwrote the
    first's file, and both tables carried the same caption)."""
    repo, data = tmp_path / "repo", tmp_path / "m.csv"
    ids = []
    for shift in (0, 5):
        X = np.random.default_rng(shift).normal(size=(40, 4)) + shift
        np.savetxt(data, np.c_[X, X[:, 0] > X[:, 0].mean()], delimiter=",", fmt="%.5f")
        result = CliRunner().invoke(main, ["cv", "--repo", str(repo), "--quiet", "--algo", "majority", "--algo", "gf",
                                           "--dataset", str(data), "--folds", "2", "--labeled", "10"])
        assert result.exit_code == 0, result.output
        ids.append(result.output.split()[-1])
    assert ids[0] != ids[1]
    result = CliRunner().invoke(main, ["plot", str(repo), "--out", str(tmp_path / "f"), "--format", "png"])
    assert result.exit_code == 0, result.output
    tags = sorted(i.rsplit("-", 1)[-1] for i in ids)
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == [
        f"m_semisupervised_folds=2_labeled=10_id_{tag}_error.png" for tag in tags]
    table = CliRunner().invoke(main, ["table", str(repo)])
    assert table.exit_code == 0 and all(f"labeled=10, id {tag})" in table.output for tag in tags)
