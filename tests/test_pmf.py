"""PMF (Salakhutdinov & Mnih 2007) by alternating least squares: closed-form half steps, exact
reconstruction, recovery of a low-rank matrix, monotone objective, a real-data bar."""
from __future__ import annotations

import numpy as np
import pytest

from malt.algorithms.pmf import _ridge_rows, pmf_fit
from malt.errors import DataError


def test_half_step_is_the_per_row_ridge_solution():
    rng = np.random.default_rng(0)
    R = rng.standard_normal((7, 5))
    O = (rng.random((7, 5)) < 0.7).astype(float)
    V = rng.standard_normal((5, 3))
    U = _ridge_rows(R, O, V, 0.5)
    for i in range(7):
        o = O[i] > 0
        expected = np.linalg.solve(V[o].T @ V[o] + 0.5 * np.eye(3), V[o].T @ R[i, o])
        np.testing.assert_allclose(U[i], expected, atol=1e-10)


def test_full_rank_fit_reconstructs_a_complete_matrix():
    rng = np.random.default_rng(1)
    M = rng.standard_normal((12, 2)) @ rng.standard_normal((2, 6))
    fit = pmf_fit(M, rank=2, reg=1e-8, iterations=500, tol=1e-14, center="none")
    np.testing.assert_allclose(fit["values"], M, atol=1e-4)


def test_recovers_hidden_entries_of_a_low_rank_matrix_and_objective_decreases():
    rng = np.random.default_rng(2)
    truth = rng.standard_normal((80, 3)) @ rng.standard_normal((3, 30)) + 0.1 * rng.standard_normal((80, 30))
    M = truth.copy()
    hidden = rng.random(M.shape) < 0.3
    M[hidden] = np.nan
    fit = pmf_fit(M, rank=3, reg=0.1, iterations=200)
    rmse = np.sqrt(np.mean((fit["values"][hidden] - truth[hidden]) ** 2))
    baseline = np.sqrt(np.mean((np.nanmean(M, axis=0)[None, :].repeat(80, 0)[hidden] - truth[hidden]) ** 2))
    assert rmse < 0.15 * baseline
    assert np.all(np.diff(fit["objective"]) <= 1e-9 * fit["objective"][0])


def test_errors():
    with pytest.raises(DataError, match="no observed entry"):
        pmf_fit(np.full((3, 4), np.nan))
    with pytest.raises(DataError, match="2-D"):
        pmf_fit(np.zeros(5))


def test_emotions_missing_labels_quality_bar():
    from tests.conftest import require_data

    require_data("multilabel/emotions/emotions.arff")
    from malt.engine.context import Context
    from malt.datasets.catalogue import DataRoots, entry
    from malt.registry import get
    from malt.tasks.missing import MissingParams, MissingTask

    data = entry("emotions").loader(DataRoots.default())
    task, tparams = MissingTask(), MissingParams(missing=0.25)
    split = task.split(data, tparams, 0)
    algo = get("pmf")
    pred = algo().run(split, algo.Params(), Context(data["X"], seed=0))
    # Table 5.1: PMF 26.3 % at 25 % missing; the column-mean baseline is ~31 % on this fold
    assert task.score(data, tparams, split, pred)["error"] < 0.26


def test_sparse_pmf_equals_dense_pmf():
    """The COO solver (ratings task) runs the same alternating ridge solves as the dense one."""
    import scipy.sparse as sp
    from malt.algorithms.pmf import pmf_fit, pmf_fit_sparse
    rng = np.random.default_rng(3)
    Y = rng.standard_normal((15, 4)) @ rng.standard_normal((4, 12)) + 3
    mask = rng.random(Y.shape) < 0.5
    M = np.where(mask, Y, np.nan)
    d = pmf_fit(M, 3, 0.5, rng=np.random.default_rng(1), iterations=30, tol=0)
    s = pmf_fit_sparse(sp.coo_matrix((Y[mask], np.nonzero(mask)), shape=Y.shape), 3, 0.5,
                       rng=np.random.default_rng(1), iterations=30, tol=0)
    np.testing.assert_allclose(d["U"] @ d["V"].T + d["offset"], s["U"] @ s["V"].T + s["offset"], atol=1e-8)


def test_default_is_not_trivial_on_sparse_labels_and_diagnostics_say_when_a_fit_is():
    """Issue 37: on sparse tags (12 % positives, a rank-3 logistic model) the default leaves the column
    means (its error below theirs, signs changed, ``trivial`` 0); a fit forced to a huge penalty equals
    the column means and says so in its diagnostics."""
    from malt.engine.context import Context
    from malt.datasets.dataset import Dataset
    from malt.registry import get
    from malt.tasks import get_task

    rng = np.random.default_rng(0)
    logits = 2.0 * rng.normal(size=(300, 3)) @ rng.normal(size=(3, 40)) - 4.0
    Y = (rng.random(logits.shape) < 1 / (1 + np.exp(-logits))).astype(float)
    data = Dataset("sparse-tags", {"Y": Y})
    task = get_task("missing")
    tparams = task.Params(missing=0.25)
    split = task.split(data, tparams, 0)
    means = np.broadcast_to(np.nanmean(split.M, axis=0), split.M.shape)
    algo = get("pmf")
    fit = algo().run(split, algo.Params(), Context.for_arrays(seed=0))
    error = task.score(data, tparams, split, fit)["error"]
    baseline = task.score(data, tparams, split, type(fit)(values=means.copy()))["error"]
    assert error < 0.85 * baseline, (error, baseline)
    assert fit.diagnostics["trivial"] == 0 and fit.diagnostics["sign_changes_vs_column_means"] > 0.02
    forced = algo().run(split, algo.Params(select="none", reg=1e6), Context.for_arrays(seed=0))
    assert forced.diagnostics["trivial"] == 1 and "trivial fit" in forced.diagnostics["note"]
