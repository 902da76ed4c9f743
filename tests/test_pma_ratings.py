"""pma-map on the ratings task: the bias penalties it is given (or selects) are the ones its prediction
uses, checked against the dense closed form (regularised least squares for the biases, the GP posterior
mean by a dense solve over the observed entries)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from malt.context import Context
from malt.registry import get
from malt.splits import RatingsSplit


def dense_prediction(rows, cols, y, shape, test_r, test_c, reg_rows, reg_cols, signal, shrink):
    from malt.algorithms.pma.ratings import moment_kernel

    n, m = shape
    # biases: the normal equations of Σ (y − μ − b_i − c_j)² + reg_rows Σ b² + reg_cols Σ c², solved densely
    mu = y.mean()
    A = np.zeros((y.size, n + m))
    A[np.arange(y.size), rows] = 1.0
    A[np.arange(y.size), n + cols] = 1.0
    penalty = np.r_[np.full(n, reg_rows), np.full(m, reg_cols)]
    bc = np.linalg.solve(A.T @ A + np.diag(penalty), A.T @ (y - mu))
    b, c = bc[:n], bc[n:]
    resid = y - mu - b[rows] - c[cols]
    K1 = signal * moment_kernel(rows, cols, resid, shape, axis=1, shrink=shrink)
    K2 = signal * moment_kernel(rows, cols, resid, shape, axis=0, shrink=shrink)
    noise = np.mean(resid ** 2) - np.mean(np.diag(K1)) - np.mean(np.diag(K2))
    S = np.kron(np.eye(m), K1) + np.kron(K2, np.eye(n))  # column-major vec
    obs = np.ravel_multi_index((cols, rows), (m, n))
    tst = np.ravel_multi_index((test_c, test_r), (m, n))
    weights = np.linalg.solve(S[np.ix_(obs, obs)] + noise * np.eye(obs.size), resid)
    return mu + b[test_r] + c[test_c] + S[np.ix_(tst, obs)] @ weights


def test_ratings_prediction_uses_the_bias_penalties_it_is_given():
    rng = np.random.default_rng(3)
    n, m = 14, 10
    mask = rng.random((n, m)) < 0.55
    rows, cols = np.nonzero(mask)
    y = np.clip(np.round(3 + rng.standard_normal(n)[rows] + rng.standard_normal(rows.size)), 1, 5)
    test_r, test_c = np.nonzero(~mask)
    split = RatingsSplit(sp.coo_matrix((y, (rows, cols)), shape=(n, m)), test_r, test_c)
    algo = get("pma-map")
    params = algo.Params(select="none", bias_scale=0.5, signal=0.7, shrink=2.0)
    got = algo().run(split, params, Context.for_arrays(None)).values
    expected = dense_prediction(rows, cols, y.astype(float), (n, m), test_r, test_c, 7.5, 5.0, 0.7, 2.0)
    np.testing.assert_allclose(got, expected, atol=2e-3)  # the CG tolerance (1e-4 relative) and 20 bias sweeps
    default = algo().run(split, algo.Params(select="none", signal=0.7, shrink=2.0), Context.for_arrays(None)).values
    assert np.max(np.abs(default - got)) > 1e-2  # the penalties matter on this matrix
