"""SoftImpute (Mazumder, Hastie & Tibshirani 2010) and softImpute-ALS (Hastie et al. 2015) against a
brute-force SVD-thresholding loop and the optimality conditions of the nuclear-norm problem."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from malt.algorithms.softimpute import (_low_rank_frobenius_change, lambda_max, lambda_path, soft_impute,
                                        soft_impute_als, svd_soft_threshold)


def low_rank_problem(n=30, m=20, rank=3, missing=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, rank)) @ rng.normal(size=(rank, m)) + 0.1 * rng.normal(size=(n, m))
    M = X.copy()
    M[rng.random(M.shape) < missing] = np.nan
    return X, M


def brute_force(M, lam, iterations=20000):
    """The literal iteration Z ← S_λ(P_Ω(X) + P_Ω⊥(Z)) with a full SVD, run far past convergence."""
    observed = ~np.isnan(M)
    Z = np.zeros(M.shape)
    for _ in range(iterations):
        U, d, Vt = np.linalg.svd(np.where(observed, M, Z), full_matrices=True)
        D = np.zeros(M.shape)
        np.fill_diagonal(D, np.maximum(d - lam, 0.0))
        Z_new = U @ D @ Vt
        if np.max(np.abs(Z_new - Z)) < 1e-13:
            return Z_new
        Z = Z_new
    return Z


def test_soft_threshold_is_the_proximal_map_of_the_nuclear_norm():
    """S_λ(W) minimises ½‖W − Z‖² + λ‖Z‖_* (MHT 2010, Lemma 1): no random perturbation does better."""
    rng = np.random.default_rng(1)
    W = rng.normal(size=(8, 5))
    lam = 1.0
    U, d, Vt = svd_soft_threshold(W, lam)
    Z = (U * d) @ Vt

    def objective(Z):
        return 0.5 * np.sum((W - Z) ** 2) + lam * np.linalg.svd(Z, compute_uv=False).sum()

    best = objective(Z)
    assert all(objective(Z + 1e-3 * rng.normal(size=Z.shape)) > best for _ in range(200))


@pytest.mark.parametrize("fraction", [0.05, 0.3])
def test_soft_impute_equals_the_brute_force_iteration(fraction):
    _, M = low_rank_problem()
    lam = fraction * lambda_max(M)
    fast = soft_impute(M, lam, max_iter=20000, tol=1e-20)["Z"]
    np.testing.assert_allclose(fast, brute_force(M, lam), atol=1e-8)


def test_soft_impute_satisfies_the_nuclear_norm_optimality_conditions():
    """R = P_Ω(X − Z) must be a λ-subgradient of ‖Z‖_* at Z = U D Vᵀ: Uᵀ R V = λ I, Uᵀ R (I − VVᵀ) = 0,
    (I − UUᵀ) R V = 0 and ‖(I − UUᵀ) R (I − VVᵀ)‖₂ ≤ λ (Watson 1992's characterisation)."""
    _, M = low_rank_problem()
    lam = 0.3 * lambda_max(M)
    fit = soft_impute(M, lam, max_iter=20000, tol=1e-24)
    Z = fit["Z"]
    R = np.where(np.isnan(M), 0.0, M - Z)
    U, d, Vt = np.linalg.svd(Z)
    r = fit["rank"]
    assert 0 < r < min(M.shape)
    U, V = U[:, :r], Vt[:r].T
    P, Q = np.eye(M.shape[0]) - U @ U.T, np.eye(M.shape[1]) - V @ V.T
    np.testing.assert_allclose(U.T @ R @ V, lam * np.eye(r), atol=1e-7)
    np.testing.assert_allclose(U.T @ R @ Q, 0.0, atol=1e-7)
    np.testing.assert_allclose(P @ R @ V, 0.0, atol=1e-7)
    assert np.linalg.norm(P @ R @ Q, 2) <= lam * (1 + 1e-9)


def test_zero_solves_the_problem_from_lambda_max_on():
    _, M = low_rank_problem()
    lam = lambda_max(M)
    assert soft_impute(M, lam * 1.0001)["rank"] == 0
    assert soft_impute(M, lam * 0.95)["rank"] >= 1
    path = lambda_path(lam, 5, 1e-2)
    np.testing.assert_allclose(path[[0, -1]], [lam, 1e-2 * lam])
    assert np.all(np.diff(path) < 0)


@pytest.mark.parametrize("step", [1e-1, 1e-6, 1e-10])
def test_low_rank_change_matches_the_dense_difference_down_to_tiny_steps(step):
    """softImpute-ALS's stopping measure ‖A − B‖²_F / ‖A‖²_F from the factors against the dense difference (exact
    to ~1e-32 relative here): the expansion ‖A‖² + ‖B‖² − 2⟨A, B⟩ it replaced had a floor of ~1e-16."""
    rng = np.random.default_rng(4)
    U0, V0 = np.linalg.qr(rng.normal(size=(40, 5)))[0], np.linalg.qr(rng.normal(size=(30, 5)))[0]
    d0 = np.array([9.0, 5.0, 3.0, 1.0, 0.5])
    U1 = np.linalg.qr(U0 + step * rng.normal(size=U0.shape))[0]
    V1 = np.linalg.qr(V0 + step * rng.normal(size=V0.shape))[0]
    d1 = d0 * (1 + step * rng.normal(size=5))
    A, B = (U0 * d0) @ V0.T, (U1 * d1) @ V1.T
    dense = np.sum((A - B) ** 2) / np.sum(A ** 2)
    assert np.isclose(_low_rank_frobenius_change(U0, d0, V0, U1, d1, V1), dense, rtol=1e-6, atol=0), dense


@pytest.mark.parametrize("fraction", [0.05, 0.3])
def test_als_reaches_the_nuclear_norm_solution_when_its_rank_suffices(fraction):
    """HMLZ 2015: with rank r ≥ rank of the solution, softImpute-ALS's fixed point is the SVD solution."""
    _, M = low_rank_problem()
    lam = fraction * lambda_max(M)
    exact = brute_force(M, lam)
    rows, cols = np.nonzero(~np.isnan(M))
    fit, iterations = soft_impute_als(rows, cols, M[rows, cols], M.shape, lam, rank=15, max_iter=20000, tol=1e-22)
    assert iterations < 20000
    np.testing.assert_allclose(fit.dense(), exact, atol=1e-6)
    np.testing.assert_allclose(fit.at(rows[:50], cols[:50]), exact[rows[:50], cols[:50]], atol=1e-6)
    # warm start from a larger λ's solution reaches the same point
    start, _ = soft_impute_als(rows, cols, M[rows, cols], M.shape, 2 * lam, rank=15, max_iter=500)
    warm, _ = soft_impute_als(rows, cols, M[rows, cols], M.shape, lam, rank=15, start=start, max_iter=20000,
                              tol=1e-22)
    np.testing.assert_allclose(warm.dense(), exact, atol=1e-6)


def test_registered_softimpute_completes_a_low_rank_matrix_and_a_rating_matrix():
    from malt.engine.context import Context
    from malt.registry import get
    from malt.splits import MissingSplit, RatingsSplit

    X, M = low_rank_problem(60, 40, missing=0.4, seed=3)
    hidden = np.isnan(M)
    algo = get("softimpute")
    pred = algo().run(MissingSplit(M, hidden, None, np.arange(60), "real", 0), algo.Params(), Context.for_arrays())
    mean_rmse = np.sqrt(np.mean((np.nanmean(M, axis=0)[None, :] - X)[hidden] ** 2))
    rmse = np.sqrt(np.mean((pred.values - X)[hidden] ** 2))
    assert rmse < 0.3 * mean_rmse, (rmse, mean_rmse)
    rows, cols = np.nonzero(~hidden)
    split = RatingsSplit(sp.coo_matrix((M[rows, cols], (rows, cols)), shape=M.shape), *np.nonzero(hidden))
    pred = algo().run(split, algo.Params(rank=10), Context.for_arrays())
    assert np.sqrt(np.mean((pred.values - X[hidden]) ** 2)) < 0.3 * mean_rmse
    assert pred.diagnostics["solver"] == "als"
