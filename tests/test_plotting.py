"""Figures from a result set built through the real engine (malt cv into a temporary repository)."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from malt.cli import main
from malt.cli_figures import register
from malt.errors import RepositoryError
from malt.results import ResultSet

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
    from malt import plotting

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
        assert ax.get_xlabel() == "Hidden entries (%)"
        assert ax.get_ylabel() == "One-error (%)\n(lower is better)"
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
        assert bar.get_xlabel() == "Average precision (%) (higher is better)"
        assert [t.get_text() for t in bar.get_yticklabels()] == ["mllr", "mlsvm"]
    finally:
        import matplotlib.pyplot as plt

        for item in outputs:
            plt.close(item.figure)


def test_ci_error_bars_are_wider_than_std_for_three_folds(repo):
    from malt import plotting

    rs = ResultSet.load(repo)
    fam = next(f for f in plotting.families(rs) if f.swept)
    std = plotting.family_summary(rs, fam, "one_error", "std")
    ci = plotting.family_summary(rs, fam, "one_error", "ci")
    # t_{0.975, 2} / sqrt(3) = 2.4841 for three folds
    np.testing.assert_allclose(ci["err"], std["err"] * 4.302652729911275 / np.sqrt(3))


def test_colours_are_a_function_of_the_name():
    from malt.plotting import algorithm_style

    assert algorithm_style("mllr") == algorithm_style("mllr")
    assert algorithm_style("mllr")["color"] != algorithm_style("mlsvm")["color"]
    assert algorithm_style("someone-elses-algo") == algorithm_style("someone-elses-algo")


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
    from malt.tables import combined_tables

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
