"""Adding a task is one module (tests/plugins/toy_task.py) plus this test: its options become `malt cv`
flags and `malt tasks` help, its declared metrics drive `malt show`, tables and figures, and its
stored predictions are rescored without refitting."""
from __future__ import annotations

import numpy as np
import pytest

from malt.repository.store import Repository
from malt.results import ResultSet
from tests.helpers import run_malt


@pytest.mark.timeout(180)
def test_a_task_declared_in_one_module_works_end_to_end(tmp_path):
    repo = tmp_path / "repo"
    listed = run_malt("tasks", "toy-regression").stdout
    assert "--noise 0.0" in listed and "r2: R², higher is better" in listed
    assert "--noise" in run_malt("cv", "--help").stdout
    exp = run_malt("cv", "--algo", "toy-ridge", "--param", "alpha=0.1,10", "--dataset", "toy-linear", "--noise", "0.5",
                   "--quiet", "--repo", repo).stdout.strip()
    run_malt("cv", "--algo", "toy-ridge", "--dataset", "toy-linear", "--noise", "0", "--quiet", "--repo", repo)
    shown = run_malt("show", exp, "--repo", repo).stdout
    assert "r2 (higher is better)" in shown and "rmse (lower is better)" in shown
    rs = ResultSet.from_repository(Repository(repo), [exp])
    r2 = rs.frame[(rs.frame.metric == "r2") & (rs.frame.display == "toy-ridge[alpha=0.1]")]["value"]
    assert len(r2) == 5 and r2.min() > 0.9  # a linear target: ridge explains it
    figures = run_malt("plot", repo, "--out", tmp_path / "figures").stdout.split()
    assert any("by-noise" in name and name.endswith("_r2.png") for name in figures)  # the declared setting
    assert "R²" in run_malt("table", repo, "--metric", "r2").stdout
    assert f"{exp}: 10 unit(s) rescored" in run_malt("rescore", "--experiment", exp, "--repo", repo).stdout
    again = ResultSet.from_repository(Repository(repo), [exp]).frame
    np.testing.assert_array_equal(np.sort(again["value"].to_numpy()), np.sort(rs.frame["value"].to_numpy()))


@pytest.mark.timeout(120)
def test_a_metric_added_later_is_rescored_from_stored_predictions_without_refitting(tmp_path, monkeypatch):
    """The task gains a metric (as a new malt release would): `malt rescore` computes it for every
    stored unit from the stored predictions, and the numbers equal a fresh run's."""
    from malt import api
    from malt.tasks.base import Metric
    from tests.plugins import toy_task

    first = api.cv("toy-ridge", "toy-linear", repo=tmp_path / "old", params={"alpha": [0.1, 10.0]})
    assert first.ran == 10
    original = toy_task.RegressionTask.score_packed

    def with_mae(self, dataset, params, split, packed):
        truth = np.asarray(dataset["t"], dtype=float)[split.test_index]
        return dict(original(self, dataset, params, split, packed), mae=float(np.mean(np.abs(truth - packed["values"]))))

    monkeypatch.setattr(toy_task.RegressionTask, "metrics",
                        toy_task.RegressionTask.metrics + (Metric("mae", "MAE", "lower"),))
    monkeypatch.setattr(toy_task.RegressionTask, "score_packed", with_mae)
    fits = {"n": 0}
    monkeypatch.setattr(toy_task.ToyRidge, "run", _counting(toy_task.ToyRidge.run, fits))
    (done,) = api.rescore(tmp_path / "old", metrics=["mae"])
    assert done.rescored == 10 and fits["n"] == 0  # no model was refit
    api.cv("toy-ridge", "toy-linear", repo=tmp_path / "fresh", params={"alpha": [0.1, 10.0]})
    old = ResultSet.from_repository(Repository(tmp_path / "old")).frame.sort_values(["display", "fold", "metric"])
    fresh = ResultSet.from_repository(Repository(tmp_path / "fresh")).frame.sort_values(["display", "fold", "metric"])
    assert set(old["metric"]) == {"r2", "rmse", "mae"}
    np.testing.assert_array_equal(old["value"].to_numpy(), fresh["value"].to_numpy())


def _counting(run, counter):
    def counted(self, split, params, ctx):
        counter["n"] += 1
        return run(self, split, params, ctx)

    return counted
