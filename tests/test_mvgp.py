"""Con-MV-GP (Koyejo, Lee & Ghosh 2014): factored eq. 11 vs a direct convex solve, λ = 0 vs the
closed-form Kronecker GP posterior mean, monotone objective, new-row prediction, ratings task."""
import numpy as np
import pytest
import scipy.sparse as sp

from malt.algorithms.mvgp import diffusion_sqrt, fit_mvgp, objective
from malt.algorithms.mvgp.core import _refine, numerical_rank
from malt.engine.context import Context
from malt.registry import algorithms
from malt.splits import RatingsSplit


def _problem(M=10, N=8, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, 20))
    GM = np.linalg.cholesky(A @ A.T / 20 + 0.5 * np.eye(M))
    G = sp.random(N, N, density=0.4, random_state=seed)
    GN = diffusion_sqrt(G)
    mask = rng.random((M, N)) < 0.6
    Y = GM @ rng.standard_normal((M, 2)) @ rng.standard_normal((2, N)) @ GN.T + 0.1 * rng.standard_normal((M, N))
    return GM, GN, mask, Y


def _prox_grad(GM, GN, mask, Y, s2, lam, iters=20000):
    """Direct proximal-gradient solve of eq. 11 on the full B (singular-value thresholding)."""
    P = mask.astype(float)
    B = np.zeros((GM.shape[1], GN.shape[1]))
    L = np.linalg.norm(GM, 2) ** 2 * np.linalg.norm(GN, 2) ** 2 / s2 + 1
    for _ in range(iters):
        Z = B - (GM.T @ (P * (GM @ B @ GN.T - Y)) @ GN / s2 + B) / L
        u, s, vt = np.linalg.svd(Z, full_matrices=False)
        B = (u * np.maximum(s - lam / L, 0)) @ vt
    return GM @ B @ GN.T


def test_factored_equals_direct_convex_solve():
    GM, GN, mask, Y = _problem()
    tr = sp.coo_matrix(np.where(mask, Y, 0) * mask)
    tr = sp.coo_matrix((Y[mask], np.nonzero(mask)), shape=Y.shape)
    fits = {}
    for lam in (0.3, 2.0):
        F = _prox_grad(GM, GN, mask, Y, 0.5, lam)
        fit = fits[lam] = fit_mvgp(tr, GM, GN, sigma2=0.5, lam=lam)
        assert fit["converged"]
        np.testing.assert_allclose(fit["Z"] @ fit["W"].T, F, atol=1e-4)
        assert np.all(np.diff(fit["objective"]) <= 1e-8 * abs(fit["objective"][0]))
    # warm starts along the λ path (the inner CV's): from the other λ's factors to the same optimum,
    # whether factors must be added (2.0 → 0.3) or shrunk away (0.3 → 2.0)
    for lam, other in ((0.3, 2.0), (2.0, 0.3)):
        warm = fit_mvgp(tr, GM, GN, sigma2=0.5, lam=lam, init=(fits[other]["U"], fits[other]["V"]))
        np.testing.assert_allclose(warm["Z"] @ warm["W"].T, fits[lam]["Z"] @ fits[lam]["W"].T, atol=1e-4)


def test_lambda_zero_equals_kronecker_gp_posterior_mean():
    GM, GN, mask, Y = _problem(7, 6, seed=1)
    s2 = 0.3
    K = np.kron(GN @ GN.T, GM @ GM.T)                    # C_N ⊗ C_M on vec (column-major)
    o = mask.ravel(order="F")
    y = Y.ravel(order="F")[o]
    mean = K[:, o] @ np.linalg.solve(K[np.ix_(o, o)] + s2 * np.eye(o.sum()), y)
    tr = sp.coo_matrix((Y[mask], np.nonzero(mask)), shape=Y.shape)
    fit = fit_mvgp(tr, GM, GN, sigma2=s2, lam=0.0, max_rank=7, tol=0)
    np.testing.assert_allclose((fit["Z"] @ fit["W"].T).ravel(order="F"), mean, atol=1e-4)


def test_sampled_products_equal_the_dense_product_at_the_entries():
    """Across DOT_BLOCK boundaries (the last block short, its buffers reused), with repeated positions, float32
    factors as the synthetic truth's, and into a given ``out``."""
    from malt.numerics.kron_observed import sampled_products
    from malt.numerics.linalg import DOT_BLOCK
    rng = np.random.default_rng(4)
    Z, W = rng.standard_normal((60, 5)), rng.standard_normal((50, 5))
    rows, cols = rng.integers(0, 60, 2 * DOT_BLOCK + 7), rng.integers(0, 50, 2 * DOT_BLOCK + 7)
    np.testing.assert_allclose(sampled_products(Z, W, rows, cols), (Z @ W.T)[rows, cols], rtol=1e-12, atol=1e-12)
    out = np.full(rows.size, np.nan)
    assert sampled_products(Z, W, rows, cols, out=out) is out
    np.testing.assert_allclose(out, (Z @ W.T)[rows, cols], rtol=1e-12, atol=1e-12)
    Z32, W32 = Z.astype(np.float32), W.astype(np.float32)
    np.testing.assert_allclose(sampled_products(Z32, W32, rows, cols), (Z32 @ W32.T)[rows, cols], rtol=1e-5, atol=1e-5)
    assert sampled_products(Z, W, rows[:0], cols[:0]).shape == (0,)
    with pytest.raises(IndexError, match="row position"):  # the gathers clip; the check does not
        sampled_products(Z, W, np.r_[rows, 60], np.r_[cols, 0])
    with pytest.raises(IndexError, match="column position"):
        sampled_products(Z, W, np.r_[rows, 0], np.r_[cols, -1])


def test_truncated_factors_are_the_best_low_rank_product_balanced():
    """Eckart–Young: U'V'ᵀ is the rank-k SVD truncation of U Vᵀ, and U'ᵀU' = V'ᵀV' = diag(s_k)."""
    from malt.algorithms.mvgp.core import truncate_factors
    rng = np.random.default_rng(6)
    U, V = rng.standard_normal((12, 6)), rng.standard_normal((9, 6))
    Ut, Vt = truncate_factors(U, V, 3)
    u, s, vt = np.linalg.svd(U @ V.T)
    np.testing.assert_allclose(Ut @ Vt.T, (u[:, :3] * s[:3]) @ vt[:3], atol=1e-12)
    np.testing.assert_allclose(Ut.T @ Ut, np.diag(s[:3]), atol=1e-12)
    np.testing.assert_allclose(Vt.T @ Vt, np.diag(s[:3]), atol=1e-12)
    assert truncate_factors(U, V, 6)[0] is U


def test_refinement_decreases_objective():
    GM, GN, mask, Y = _problem(seed=2)
    tr = sp.coo_matrix((Y[mask], np.nonzero(mask)), shape=Y.shape)
    rng = np.random.default_rng(0)
    U, V = rng.standard_normal((10, 3)), rng.standard_normal((8, 3))
    f0 = objective(U, V, GM, GN, tr.row, tr.col, tr.data, 0.5, 1.0)
    U2, V2, f1, _ = _refine(U, V, GM, GN, tr.row, tr.col, tr.data, 0.5, 1.0, 1.0, tr.shape, 50)
    assert f1 < f0 and np.isclose(f1, objective(U2, V2, GM, GN, tr.row, tr.col, tr.data, 0.5, 1.0))


def test_heat_root_is_exact_square_root_of_diffusion_kernel():
    from malt.algorithms.mvgp import HeatRoot
    G = sp.random(30, 30, density=0.1, random_state=3)
    G.setdiag(0)
    H = HeatRoot(G, a=1.0, b=1.0).dense()
    D = diffusion_sqrt(G, 1.0, 1.0)
    np.testing.assert_allclose(H @ H.T, D @ D.T, atol=1e-12)


def test_diffusion_root_matches_scipy_expm_and_sqrtm_to_the_stated_tolerance():
    """The truncated Chebyshev series (CHEBYSHEV_TOL = 1e-10 relative) against the dense kernel from
    scipy.linalg.expm and its principal square root from scipy.linalg.sqrtm, on a small graph with an
    isolated node, over diffusion times and shifts that need 7 to 50 terms."""
    from scipy.linalg import expm, sqrtm

    from malt.algorithms.mvgp.core import CHEBYSHEV_TOL, DiffusionRoot
    G = sp.random(40, 40, density=0.1, random_state=3).tolil()
    G[7, :] = 0
    G[:, 7] = 0
    W = np.abs(G.toarray()) + np.abs(G.toarray()).T
    np.fill_diagonal(W, 0)
    d = W.sum(1)
    s = np.divide(1, np.sqrt(d), out=np.zeros_like(d), where=d > 0)
    Lap = np.eye(40) - s[:, None] * W * s[None, :]
    for a, b in ((1.0, 1.0), (4.0, 0.05), (10.0, 1e-3), (0.3, 5.0)):
        R = DiffusionRoot(sp.csr_matrix(G), a, b)
        C = expm(-a * Lap) + b * np.eye(40)
        D = R.dense()
        scale = np.linalg.norm(C, 2)
        assert np.abs(D @ D - C).max() <= 3 * CHEBYSHEV_TOL * scale, (a, b)
        assert np.abs(D - sqrtm(C).real).max() <= 3 * CHEBYSHEV_TOL * np.sqrt(scale), (a, b)
        np.testing.assert_allclose(R.T @ np.eye(40), D.T, atol=1e-15)


def test_heat_root_gives_the_same_optimum_as_the_dense_root():
    from malt.algorithms.mvgp import HeatRoot
    rng = np.random.default_rng(5)
    M, N = 12, 9
    GR = sp.random(M, M, density=0.3, random_state=1)
    GC = sp.random(N, N, density=0.3, random_state=2)
    Y = rng.standard_normal((M, N))
    mask = rng.random((M, N)) < 0.6
    tr = sp.coo_matrix((Y[mask], np.nonzero(mask)), shape=Y.shape)
    a = fit_mvgp(tr, diffusion_sqrt(GR), diffusion_sqrt(GC), sigma2=0.5, lam=0.5)
    b = fit_mvgp(tr, HeatRoot(GR), HeatRoot(GC), sigma2=0.5, lam=0.5, grow_block=3)
    np.testing.assert_allclose(a["Z"] @ a["W"].T, b["Z"] @ b["W"].T, atol=1e-4)
    assert np.isclose(a["objective"][-1], b["objective"][-1], rtol=1e-6)


def _planted_graph_model(M=60, N=40, seed=0):
    """Rows in 3 clusters (a cluster graph), values = cluster profile + noise."""
    rng = np.random.default_rng(seed)
    lab = np.arange(M) % 3
    same = (lab[:, None] == lab[None, :]) & ~np.eye(M, dtype=bool)
    G = sp.csr_matrix(same.astype(float) * (rng.random((M, M)) < 0.3))
    G = ((G + G.T) > 0).astype(float)
    prof = 2 * rng.standard_normal((3, N))
    Y = 3 + prof[lab] + 0.2 * rng.standard_normal((M, N))
    return Y, G


def test_new_row_predicted_through_row_covariance_better_than_column_mean():
    """A held-out row (no training entry) of a graph-smooth planted model, via the ratings task path."""
    Y, G = _planted_graph_model()
    M, N = Y.shape
    rng = np.random.default_rng(1)
    mask = rng.random(Y.shape) < 0.5
    new = np.array([0, 1, 2, 3, 4, 5])
    mask[new] = False
    tr = sp.coo_matrix((Y[mask], np.nonzero(mask)), shape=Y.shape)
    tr_rows, tr_cols = np.repeat(new, N), np.tile(np.arange(N), new.size)
    split = RatingsSplit(tr, tr_rows, tr_cols, G, None, None, None, True, 0)
    ctx = Context.for_arrays(np.zeros((M, 1)), seed=0)
    truth = Y[tr_rows, tr_cols]
    colmean = np.bincount(tr.col, tr.data, N) / np.bincount(tr.col, minlength=N)
    base = np.sqrt(np.mean((colmean[tr_cols] - truth) ** 2))
    for name, extra in (("con-mvgp", {"lam": 1.0, "sigma2": 0.1, "max_rank": 6, "scale": "absolute"}),
                        ("mvgp", {"sigma2": 0.1, "max_rank": 6}),
                        ("kpmf", {"rank": 3, "sigma2": 0.1, "scale": "absolute"})):
        algo = algorithms()[name]()
        pred = algo.run(split, algo.Params(select="none", col_cov="identity", beta=4.0, shift=0.05, **extra), ctx)
        rmse = np.sqrt(np.mean((pred.values - truth) ** 2))
        assert rmse < 0.5 * base, (name, rmse, base)


def test_inner_cv_picks_from_the_grid():
    """The shared selector (malt.numerics.selection) chooses σ² and λ from the declared grids, which are in units
    of the data's null edge (absolute λ = lam · edge / σ²; KPMF's σ² = sigma2 · edge); the tuned fit
    beats column means."""
    Y, G = _planted_graph_model(30, 20, seed=2)
    rng = np.random.default_rng(3)
    mask = rng.random(Y.shape) < 0.6
    tr = sp.coo_matrix((Y[mask], np.nonzero(mask)), shape=Y.shape)
    r, c = np.nonzero(~mask)
    algo = algorithms()["con-mvgp"]()
    params = algo.Params(col_cov="identity", max_rank=4)
    assert params.select == "inner-cv" and params.scale == "noise-edge"
    pred = algo.run(RatingsSplit(tr, r, c, G, None, None, None, False, 0), params,
                    Context.for_arrays(np.zeros((30, 1)), seed=0))
    d = pred.diagnostics
    assert d["selected"]["lam"] in params.lam_grid and d["sigma2"] in params.sigma2_grid and d["null_edge"] > 0
    assert np.isclose(d["lambda"], d["selected"]["lam"] * d["null_edge"] / d["sigma2"])
    assert d["inner_cv_candidates"] == len(params.lam_grid) * len(params.sigma2_grid)
    colmean = np.bincount(tr.col, tr.data, 20) / np.bincount(tr.col, minlength=20)
    assert np.sqrt(np.mean((pred.values - Y[r, c]) ** 2)) < np.sqrt(np.mean((colmean[c] - Y[r, c]) ** 2))
    kp = algorithms()["kpmf"]()
    kparams = kp.Params(col_cov="identity", rank=3)
    pk = kp.run(RatingsSplit(tr, r, c, G, None, None, None, False, 0), kparams,
                Context.for_arrays(np.zeros((30, 1)), seed=0))
    dk = pk.diagnostics
    assert set(dk["selected"]) == {"sigma2"} and dk["selected"]["sigma2"] in kparams.sigma2_grid
    assert np.isclose(dk["sigma2"], dk["selected"]["sigma2"] * dk["null_edge"]) and dk["lambda"] == 1.0
    absolute = kp.run(RatingsSplit(tr, r, c, G, None, None, None, False, 0),
                      kp.Params(col_cov="identity", rank=3, scale="absolute", select="none", sigma2=0.7),
                      Context.for_arrays(np.zeros((30, 1)), seed=0))
    assert absolute.diagnostics["sigma2"] == 0.7 and absolute.diagnostics["null_edge"] is None


def test_side_graph_datasets_load(tmp_path):
    from tests.conftest import require_data
    root = require_data("matrix/ciaodvd/ciao_ratings.txt", "matrix/yamanishi-dti/ic_admat_dgc.txt")
    from malt.datasets.catalogue import DataRoots, entry
    roots = DataRoots([root])
    d = entry("ciaodvd-trust").loader(roots)
    assert d["ratings"].shape == (2390, 3205) and d["ratings"].nnz == 22424
    assert d["ratings"].data.min() >= 1 and d["ratings"].data.max() <= 5
    full = entry("ciaodvd").loader(roots)
    assert full["ratings"].shape == (17615, 16121) and full["ratings"].nnz == 72665 - 320
    ic = entry("yamanishi-ic").loader(roots)
    assert ic["ratings"].shape == (204, 210) and int((ic["ratings"].data == 2).sum()) == 1476
    assert (ic["row_graph"] != ic["row_graph"].T).nnz == 0 and ic["col_graph"].shape == (210, 210)


@pytest.mark.timeout(60)
def test_convergence_flags_say_what_stopped_the_solver():
    """At the optimum of eq. 11 rank growth stops by its own condition and L-BFGS by its tolerance; a
    rank cap below the optimum's rank, or an iteration cap, is reported as such (issue 23: every run
    said "not converged", because hitting the rank cap was reported as not converging)."""
    GM, GN, mask, Y = _problem()
    tr = sp.coo_matrix((Y[mask], np.nonzero(mask)), shape=Y.shape)
    free = fit_mvgp(tr, GM, GN, sigma2=0.5, lam=0.3)
    assert free["converged"] and free["solver_converged"] and not free["rank_capped"] and free["rank"] >= 2
    capped = fit_mvgp(tr, GM, GN, sigma2=0.5, lam=0.3, max_rank=1)
    assert capped["rank_capped"] and not capped["converged"] and capped["rank"] == 1
    cut = fit_mvgp(tr, GM, GN, sigma2=0.5, lam=0.3, maxiter=2, grow_iter=1)
    assert not cut["solver_converged"]


def test_fixed_offset_enters_the_objective_its_gradient_and_the_growth_direction():
    """The zero-filled ranking fit's popularity offset (a fixed rank-one a bᵀ added to F, issue 36) against the
    objective written out densely, its gradient against finite differences, and the top singular value of
    the smooth gradient against the dense matrix's."""
    import malt.algorithms.mvgp.core as core
    from scipy.optimize import approx_fprime

    rng = np.random.default_rng(0)
    n, m, r, w, s2, lam = 9, 7, 3, 0.7, 0.5, 0.3
    mask = rng.random((n, m)) < 0.4
    rows, cols = np.nonzero(mask)
    y = rng.standard_normal(rows.size)
    Y = np.zeros((n, m))
    Y[rows, cols] = y
    a, b = np.ones(n), rng.random(m)
    x0 = rng.standard_normal((n + m) * r)
    U, V = x0[:n * r].reshape(n, r), x0[n * r:].reshape(m, r)
    F = U @ V.T + np.outer(a, b)
    dense = (0.5 / s2 * (np.sum(mask * (F - Y) ** 2) + w * np.sum(~mask * F ** 2))
             + 0.5 * lam * (np.sum(U * U) + np.sum(V * V)) + 0.5 * np.sum((U.T @ U) * (V.T @ V)))
    assert np.isclose(objective(U, V, None, None, rows, cols, y, s2, lam, 1.0, w, (a, b)), dense)
    captured = {}

    def capture(fg, x, **kw):  # the objective-and-gradient function _refine hands to L-BFGS
        captured["fg"] = fg
        return type("R", (), {"x": x, "fun": fg(x)[0], "success": True})()

    real = core.minimize
    core.minimize = capture
    try:
        _refine(U, V, None, None, rows, cols, y, s2, lam, 1.0, (n, m), 1, unrated=w, offset=(a, b))
    finally:
        core.minimize = real
    fg = captured["fg"]
    np.testing.assert_allclose(fg(x0)[1], approx_fprime(x0, lambda x: fg(x)[0], 1e-7), atol=1e-4)
    gradient = (mask * (F - Y) + w * ~mask * F) / s2 + U @ V.T
    _, top, _ = core.smooth_gradient_top(U, V, None, None, rows, cols, y, s2, 1.0, (n, m), k=1, unrated=w,
                                         offset=(a, b))
    assert np.isclose(top, np.linalg.svd(gradient, compute_uv=False)[0])


@pytest.mark.parametrize("zero_scale", [0.0, 1e-18, 1e-3])
def test_numerical_rank_of_factors_is_numpys_matrix_rank_of_their_product(zero_scale):
    """`numerical_rank` (QR of each factor, SVD of the core) counts what `numpy.linalg.matrix_rank` counts on the
    dense U Vᵀ: a column pair scaled to 0 or to rounding does not count, one at 1e-3 does."""
    rng = np.random.default_rng(5)
    U, V = rng.standard_normal((30, 4)), rng.standard_normal((20, 4))
    U[:, 3] *= zero_scale
    assert numerical_rank(U, V) == np.linalg.matrix_rank(U @ V.T) == (4 if zero_scale == 1e-3 else 3)
    assert numerical_rank(np.zeros((30, 0)), np.zeros((20, 0))) == 0
