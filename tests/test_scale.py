"""The scalable path of the matrix models (issue 36) against the exact dense path it stands in for, on small
data where both run: every approximation knob (eigenpairs kept, Krylov depth, conjugate-gradient tolerance)
converges to the exact answer as it grows; a 20,000 × 20,000 fit never allocates a side × side array; and
the large-ratings generator's truth is recovered at a reduced size, against the oracle posterior under the
true kernels.

References are independent: numpy's dense eigendecomposition, dense Gaussian conditioning over the vectorised
matrix (nm × nm), and the exact path's own dense code (`malt.algorithms.pma.ratings`)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from malt.algorithms.pma import ratings as R
from malt.engine.context import Context
from malt.numerics.eigenbasis import Eigenbasis, top_eigenpairs
from malt.numerics.kron_observed import ObservedKroneckerSum, Pattern
from malt.registry import get
from malt.splits import RatingsSplit

RNG = np.random.default_rng(0)


def psd(k, decay=1.0):
    Q = np.linalg.qr(RNG.standard_normal((k, k)))[0]
    return (Q * np.arange(1, k + 1) ** -decay) @ Q.T


def dense_posterior(K1, K2, rows, cols, y, noise, shape):
    """E[vec X | y] for vec X ~ N(0, K1 ⊕ K2) observed at (rows, cols) with noise, by dense algebra."""
    n, m = shape
    S = np.kron(np.eye(m), K1) + np.kron(K2, np.eye(n))  # column-major vec
    obs = np.ravel_multi_index((cols, rows), (m, n))
    w = np.linalg.solve(S[np.ix_(obs, obs)] + noise * np.eye(obs.size), y)
    return (S[:, obs] @ w).reshape((n, m), order="F")


def ratings_problem(n=40, m=30, density=0.3, seed=1):
    rng = np.random.default_rng(seed)
    mask = rng.random((n, m)) < density
    rows, cols = np.nonzero(mask)
    u, v = rng.standard_normal((n, 2)), rng.standard_normal((m, 2))
    y = np.clip(np.round(3 + (u @ v.T)[rows, cols] + 0.5 * rng.standard_normal(rows.size)), 1, 5)
    return rows, cols, y.astype(float), (n, m), np.nonzero(~mask)


@pytest.mark.parametrize("space", ["weights", "observations"])
def test_observed_kronecker_sum_is_the_dense_gaussian_posterior(space):
    """Full eigenbases, a low-rank factor with a white complement (rest > 0), and a kernel scale: the
    conjugate gradients in either space (weights or observations) give the dense conditional mean at every
    unobserved entry."""
    n, m = 12, 9
    K1, K2 = psd(n), psd(m)
    mask = RNG.random((n, m)) < 0.35
    rows, cols = np.nonzero(mask)
    y = RNG.standard_normal(rows.size)
    hidden = ~mask
    full = ObservedKroneckerSum(Eigenbasis.symmetric(K1), Eigenbasis.symmetric(K2), rows, cols, (n, m))
    mean, info = full.solve(y, noise=0.3, tol=1e-12, space=space)
    np.testing.assert_allclose(mean.rows(np.arange(n))[hidden],
                               dense_posterior(K1, K2, rows, cols, y, 0.3, (n, m))[hidden], atol=1e-9)
    assert info["converged"] and info["space"] == space
    w, V = np.linalg.eigh(K1)
    low = Eigenbasis.low_rank(V[:, -4:], w[-4:], rest=0.05)  # K1 = V diag(w) Vᵀ + 0.05 (I − V Vᵀ)
    mean, _ = ObservedKroneckerSum(low, Eigenbasis.symmetric(K2), rows, cols, (n, m)).solve(y, noise=0.3, scale=2.0,
                                                                                             tol=1e-12, space=space)
    expected = dense_posterior(2 * low.matrix(), 2 * K2, rows, cols, y, 0.3, (n, m))
    np.testing.assert_allclose(mean.at(*np.nonzero(hidden)), expected[hidden], atol=1e-9)


def test_observed_kronecker_sum_iterates_on_the_smaller_set_of_unknowns():
    """The default space is the one with fewer unknowns: L observations against m r1 + n r2 weights."""
    n, m = 30, 20
    K1, K2 = psd(n), psd(m)
    w1, V1 = np.linalg.eigh(K1)
    low = Eigenbasis.low_rank(V1[:, -2:], w1[-2:], rest=0.0)  # r1 = 2: 20·2 + 30·20 = 640 weights
    dense = RNG.random((n, m)) < 0.9   # 540 observations < 640 weights
    sparse = RNG.random((n, m)) < 0.2  # 120 observations
    for mask, space in ((dense, "observations"), (sparse, "observations")):
        rows, cols = np.nonzero(mask)
        assert ObservedKroneckerSum(low, Eigenbasis.symmetric(K2), rows, cols, (n, m)).space == space
    tiny = Eigenbasis.low_rank(np.linalg.eigh(K2)[1][:, -1:], np.linalg.eigh(K2)[0][-1:], rest=0.0)
    rows, cols = np.nonzero(dense)  # r1 = 2, r2 = 1: 20·2 + 30·1 = 70 weights < 540 observations
    solver = ObservedKroneckerSum(low, tiny, rows, cols, (n, m))
    assert solver.space == "weights"
    y = RNG.standard_normal(rows.size)
    a, _ = solver.solve(y, noise=0.2, tol=1e-12)
    b, info = solver.solve(y, noise=0.2, tol=1e-12, space="observations")
    assert info["space"] == "observations"
    np.testing.assert_allclose(a.rows(np.arange(n)), b.rows(np.arange(n)), atol=1e-9)


def test_conjugate_gradient_tolerance_is_a_knob_that_converges():
    n, m = 30, 20
    K1, K2 = psd(n, 0.5), psd(m, 0.5)
    mask = RNG.random((n, m)) < 0.3
    rows, cols = np.nonzero(mask)
    y = RNG.standard_normal(rows.size)
    exact = dense_posterior(K1, K2, rows, cols, y, 0.1, (n, m))[~mask]
    solver = ObservedKroneckerSum(Eigenbasis.symmetric(K1), Eigenbasis.symmetric(K2), rows, cols, (n, m))
    errors = [np.abs(solver.solve(y, noise=0.1, tol=tol)[0].rows(np.arange(n))[~mask] - exact).max()
              for tol in (1e-2, 1e-4, 1e-6, 1e-8)]
    assert all(a > b for a, b in zip(errors, errors[1:])) and errors[-1] < 1e-6


@pytest.mark.timeout(30)
@pytest.mark.parametrize("span", [1, 2, 3, 5, 9, None])
def test_pattern_products_are_the_dense_products_for_every_column_block(span):
    """R X and Rᵀ Y through a `Pattern`'s column blocks equal numpy's dense products, with repeated
    positions (they add up), empty rows and columns, vectors and blocks of vectors; the order is a
    permutation, row-major within each block, and one block (span ≥ m) is plain row-major order."""
    n, m, L = 13, 9, 60
    rows, cols = RNG.integers(0, n - 2, L), RNG.integers(1, m, L)  # rows n-2, n-1 and column 0 stay empty
    values = RNG.standard_normal(L)
    p = Pattern(rows, cols, (n, m), span=span)
    assert sorted(p.order) == list(range(L))
    np.testing.assert_array_equal(p.rows, rows[p.order])
    np.testing.assert_array_equal(p.cols, cols[p.order])
    width = m if span is None else span
    keys = (p.cols // width) * n * m + p.rows * m + p.cols
    assert np.all(np.diff(keys) >= 0)
    dense = np.zeros((n, m))
    np.add.at(dense, (rows, cols), values)
    R = p.matrix(values[p.order])
    X, Y = RNG.standard_normal((m, 4)), RNG.standard_normal((n, 3))
    np.testing.assert_allclose(R @ X, dense @ X, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(R.T @ Y, dense.T @ Y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(R @ X[:, 0], dense @ X[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(R.T @ Y[:, 0], dense.T @ Y[:, 0], rtol=1e-12, atol=1e-12)
    assert R.shape == (n, m) and R.T.shape == (m, n)


@pytest.mark.timeout(30)
def test_pattern_cuts_only_narrow_factors_into_blocks():
    """Blocks of BLOCK_BYTES of factor rows for a narrow factor; one block for a wide one (see `Pattern`), and
    for a factor whose rows all fit in one block."""
    from malt.numerics.kron_observed import BLOCK_BYTES, NARROW_WIDTH
    m = 4 * BLOCK_BYTES // (8 * NARROW_WIDTH)
    rows, cols = RNG.integers(0, 50, 500), RNG.integers(0, m, 500)
    assert Pattern(rows, cols, (50, m), width=NARROW_WIDTH).span == m // 4
    assert Pattern(rows, cols, (50, m), width=NARROW_WIDTH + 1).span == m
    assert Pattern(rows, cols % 100, (50, 100), width=1).span == 100


@pytest.mark.timeout(30)
@pytest.mark.parametrize("block_bytes", [1, 300, None])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scattered_products_are_bitwise_the_csr_products(monkeypatch, block_bytes, dtype):
    """`scattered(A)` @ X — Aᵀ's entries in blocks of A's rows, X read a chunk of columns at a time — adds each
    output entry's terms in the order scipy's CSR product does, so it is bitwise that product (the reference),
    for every block size and for vectors, narrow blocks and blocks wider than one chunk; with empty rows and
    columns, and against numpy's dense product to rounding."""
    from malt.numerics import kron_observed
    if block_bytes is not None:
        monkeypatch.setattr(kron_observed, "BLOCK_BYTES", block_bytes)
    a, s, L = 23, 17, 120
    rows, cols = RNG.integers(0, a - 2, L), RNG.integers(1, s, L)  # rows a-2, a-1 and column 0 stay empty
    A = sp.csr_matrix((RNG.standard_normal(L), (rows, cols)), shape=(a, s))
    S = kron_observed.scattered(A, dtype)
    assert len(S.blocks) == (1 if block_bytes is None else -(-a // max(1, block_bytes // 128)))
    reference = A.astype(dtype)
    for X in (RNG.standard_normal(s), RNG.standard_normal((s, 3)), RNG.standard_normal((s, 70))):
        got = S @ X
        assert got.dtype == dtype and got.shape == (a,) + X.shape[1:]
        np.testing.assert_array_equal(got, reference @ X.astype(dtype))
        np.testing.assert_allclose(got, A.toarray() @ X, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@pytest.mark.timeout(60)
def test_column_blocks_change_no_solution(monkeypatch):
    """The block size is a cache knob, not an approximation: the observed Kronecker-sum posterior and a
    kpmf-style refinement are the same to rounding with one column per block as with one block."""
    from malt.algorithms.mvgp.core import _refine
    from malt.numerics import kron_observed
    n, m = 30, 20
    K1, K2 = psd(n, 0.5), psd(m, 0.5)
    mask = RNG.random((n, m)) < 0.3
    rows, cols = np.nonzero(mask)
    y = RNG.standard_normal(rows.size)
    U0, V0 = RNG.standard_normal((n, 3)), RNG.standard_normal((m, 3))

    def fits():
        solver = ObservedKroneckerSum(Eigenbasis.symmetric(K1), Eigenbasis.symmetric(K2), rows, cols, (n, m))
        mean = solver.solve(y, noise=0.1, tol=1e-10)[0].rows(np.arange(n))
        U, V, f, _ = _refine(U0, V0, None, None, rows, cols, y, 0.5, 1.0, 1.0, (n, m), 200)
        return mean, U @ V.T, f, solver.pattern.span

    one = fits()
    monkeypatch.setattr(kron_observed, "BLOCK_BYTES", 1)
    monkeypatch.setattr(kron_observed, "NARROW_WIDTH", 10**6)
    blocked = fits()
    assert one[3] == m and blocked[3] == 1
    np.testing.assert_allclose(blocked[0], one[0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(blocked[1], one[1], rtol=1e-6, atol=1e-6)
    assert blocked[2] == pytest.approx(one[2], rel=1e-10)


@pytest.mark.timeout(30)
def test_orthonormal_basis_spans_the_singular_directions_above_its_cut_and_drops_the_rest():
    """Reference: numpy's thin SVD. A tall block of rank 6 (singular values 1 … 1e-6) plus columns repeating
    others: the basis is orthonormal to working precision and its span is the SVD's leading directions down to
    `GRAM_DROP` of the largest (1e-6 kept, the repeats' rounding-level directions dropped)."""
    from malt.numerics.eigenbasis import GRAM_DROP, orthonormal_basis

    rng = np.random.default_rng(1)
    left = np.linalg.qr(rng.standard_normal((5000, 6)))[0]
    right = np.linalg.qr(rng.standard_normal((9, 6)))[0]
    sv = np.array([1.0, 0.3, 1e-2, 1e-4, 1e-5, 1e-6])
    Y = (left * sv) @ right.T
    Y = np.hstack([Y, Y[:, :3] * 2.0])  # 12 columns, still rank 6
    Q = orthonormal_basis(Y)
    U, s, _ = np.linalg.svd(Y, full_matrices=False)
    kept = int(np.sum(s > GRAM_DROP * s[0]))
    assert Q.shape == (5000, kept) and kept == 6
    np.testing.assert_allclose(Q.T @ Q, np.eye(kept), atol=1e-13)
    np.testing.assert_allclose(np.linalg.svd(U[:, :kept].T @ Q, compute_uv=False), 1.0, atol=1e-6)  # same span
    assert orthonormal_basis(Y, floor=1e-3).shape[1] == 3  # the absolute floor cuts 1e-4 and below
    assert orthonormal_basis(np.zeros((50, 4))).shape == (50, 0)


def test_top_eigenpairs_converge_with_rank_and_krylov_depth_and_equal_eigh_at_full_rank():
    n = 200
    A = psd(n) - 0.3 * psd(n, 0.2)  # indefinite: the negative end of the spectrum is as large as the top's tail
    top = np.linalg.eigvalsh(A)[::-1]

    def error(rank, blocks):
        got, vectors = top_eigenpairs(lambda X: A @ X, n, rank, rng=np.random.default_rng(0), blocks=blocks)
        np.testing.assert_allclose(vectors.T @ vectors, np.eye(rank), atol=1e-10)
        np.testing.assert_allclose(np.sum(vectors * (A @ vectors), axis=0), got, atol=1e-10)  # Ritz values
        return np.abs(got[:5] - top[:5]).max()

    assert error(n, 1) < 1e-10  # full rank: the exact decomposition
    errors = np.array([[error(rank, depth) for rank in (5, 20, 40)] for depth in (1, 2, 3)])
    assert np.all(np.diff(errors, axis=0) < 0) and np.all(np.diff(errors, axis=1) < 0)
    assert errors[2, 2] < 1e-3 * top[4]  # the default depth (3) at 40 eigenpairs: the top five to 1e-3


def test_moment_kernel_operator_equals_the_dense_moments_in_each_storage_mode(monkeypatch):
    rows, cols, y, shape, _ = ratings_problem()
    resid = y - y.mean()
    X = RNG.standard_normal((shape[1], 3))
    for axis, size in ((0, shape[1]), (1, shape[0])):
        Rm = sp.csr_matrix((resid, (rows, cols)), shape=shape).toarray()
        Om = sp.csr_matrix((np.ones_like(resid), (rows, cols)), shape=shape).toarray()
        if axis == 1:
            Rm, Om = Rm.T, Om.T
        K = (Rm.T @ Rm) / (Om.T @ Om + 7.0)
        np.fill_diagonal(K, 0.0)
        X = RNG.standard_normal((size, 3))
        stored = R.MomentKernel(rows, cols, resid, shape, axis, 7.0)
        assert stored.kind == "stored" and 0 < stored.C.nnz < np.count_nonzero(K)  # pairs co-rating twice or more
        np.testing.assert_allclose(stored.matmat(X), K @ X, atol=1e-12)
        monkeypatch.setattr(R, "STORED_BYTES", 0)
        dense_blocks = R.MomentKernel(rows, cols, resid, shape, axis, 7.0)
        assert dense_blocks.kind == "dense"
        np.testing.assert_allclose(dense_blocks.matmat(X), K @ X, atol=1e-12)
        monkeypatch.setattr(R, "BLOCK_ENTRIES", 100)  # 30 % filled: still dense blocks, as Jester's user side
        assert R.MomentKernel(rows, cols, resid, shape, axis, 7.0).kind == "dense"
        monkeypatch.setattr(R, "DENSE_FILL", 0.5)  # too sparse for dense blocks: sparse ones
        sparse_blocks = R.MomentKernel(rows, cols, resid, shape, axis, 7.0)
        assert sparse_blocks.kind == "recomputed" and not sparse_blocks.stored
        np.testing.assert_allclose(sparse_blocks.matmat(X), K @ X, atol=1e-12)
        monkeypatch.undo()


def test_moment_kernel_above_the_pair_limit_is_the_gram_part_weighted_by_expected_counts(monkeypatch):
    """Above PAIR_LIMIT the operator is A (RᵀR − diag) A, a_j = (1 + shrink + n_j² κ)^(-1/2) with n_j the ratings of
    column j and κ = Σ_r c_r² / nnz² from the rows' counts c_r, computed here from the dense matrices; its weight
    a_j a_k is at most 1 / (1 + n_j n_k κ + shrink) (it shrinks no less) and equals it where n_j = n_k."""
    rows, cols, y, shape, _ = ratings_problem(density=0.2)
    resid = y - y.mean()
    monkeypatch.setattr(R, "PAIR_LIMIT", 0)
    monkeypatch.setattr(R, "DENSE_FILL", 1.1)
    for axis in (0, 1):
        Rm = sp.csr_matrix((resid, (rows, cols)), shape=shape).toarray()
        Om = sp.csr_matrix((np.ones_like(resid), (rows, cols)), shape=shape).toarray()
        if axis == 1:
            Rm, Om = Rm.T, Om.T
        n_j, kappa = Om.sum(axis=0), np.sum(Om.sum(axis=1) ** 2) / Om.sum() ** 2
        a = 1.0 / np.sqrt(1.0 + 7.0 + n_j ** 2 * kappa)
        G = Rm.T @ Rm
        np.fill_diagonal(G, 0.0)
        kernel = R.MomentKernel(rows, cols, resid, shape, axis, 7.0)
        assert kernel.kind == "separable"
        X = RNG.standard_normal((Rm.shape[1], 3))
        exact = (a[:, None] * G * a[None, :]) @ X
        np.testing.assert_allclose(kernel.matmat(X), exact, atol=1e-12)
        np.testing.assert_allclose(kernel.matmat(X, single=True), exact, atol=1e-6 * np.abs(exact).max())
        expected = 1.0 / (1.0 + np.outer(n_j, n_j) * kappa + 7.0)
        assert np.all(np.outer(a, a) <= expected + 1e-15)
        np.testing.assert_allclose(np.diag(np.outer(a, a)), np.diag(expected))


def dense_moment_kernel(rows, cols, resid, shape, axis, shrink):
    Rm = sp.csr_matrix((resid, (rows, cols)), shape=shape).toarray()
    Om = sp.csr_matrix((np.ones_like(resid), (rows, cols)), shape=shape).toarray()
    if axis == 1:
        Rm, Om = Rm.T, Om.T
    K = (Rm.T @ Rm) / (Om.T @ Om + shrink)
    np.fill_diagonal(K, 0.0)
    return K


def test_moment_kernel_pairs_whose_products_cancel_are_still_corrected():
    """Column 1 rated by rows 0 and 1 alone, which co-rate columns 0 and 1 with residual products +1 and −1:
    S_01 = 0, which the sparse product drops while N_01 = 2 keeps the pair; the operator still equals the dense
    moments (C_01 = 0, and every other pair's correction lands on its own pair)."""
    rows, cols, y, shape, _ = ratings_problem()
    keep = (cols != 1) & ~(np.isin(rows, (0, 1)) & (cols == 0))
    rows, cols, resid = rows[keep], cols[keep], y[keep] - y.mean()
    rows, cols = np.r_[rows, 0, 0, 1, 1], np.r_[cols, 0, 1, 0, 1]
    resid = np.r_[resid, 1.0, 1.0, 1.0, -1.0]
    K = dense_moment_kernel(rows, cols, resid, shape, 0, 7.0)
    kernel = R.MomentKernel(rows, cols, resid, shape, 0, 7.0)
    S, N = kernel.Rt @ kernel.R, kernel.Ot @ kernel.O
    assert S.nnz < N.nnz  # the cancelling pair is there to exercise the lookup
    X = RNG.standard_normal((shape[1], 3))
    np.testing.assert_allclose(kernel.matmat(X), K @ X, atol=1e-12)


def test_single_precision_products_agree_with_the_double_ones_to_single_precision():
    """The Krylov products of the moment kernel and of the zero-filled Gram operators in single precision: the
    same K X to float32's rounding (relative 1e-6 of the largest entry), on both sides."""
    rows, cols, y, shape, _ = ratings_problem(n=300, m=200, density=0.1)
    resid = y - y.mean()
    target = R.ZeroFilled(rows, cols, y, shape, center=True)
    for axis, size in ((0, shape[1]), (1, shape[0])):
        kernel = R.MomentKernel(rows, cols, resid, shape, axis, 7.0)
        X = RNG.standard_normal((size, 5))
        exact = dense_moment_kernel(rows, cols, resid, shape, axis, 7.0) @ X
        single = kernel.matmat(X, single=True)
        assert single.dtype == np.float64
        np.testing.assert_allclose(single, exact, atol=1e-6 * np.abs(exact).max())
        assert np.abs(single - exact).max() > 0  # it did run in single precision
        gram = target.gram_cols if axis == 0 else target.gram_rows
        np.testing.assert_allclose(gram(X, single=True), gram(X), atol=1e-6 * np.abs(gram(X)).max())


def test_pma_map_scalable_path_converges_to_the_exact_path_as_its_rank_grows():
    """The same split through pma-map's exact path (dense_limit above both sides) and the scalable path
    (dense_limit 1): at rank ≥ both sides the same predictions and ranking scores (to the CG tolerance); below
    it they approach them as the rank grows."""
    rows, cols, y, shape, (test_r, test_c) = ratings_problem()
    split = RatingsSplit(sp.coo_matrix((y, (rows, cols)), shape=shape), test_r, test_c)
    algo = get("pma-map")
    common = dict(select="none", shrink=5.0, signal=0.7, rank_center="columns")

    def run(**kw):
        return algo().run(split, algo.Params(**common, **kw), Context.for_arrays(None))

    exact = run()
    assert exact.diagnostics["path"] == "exact"
    full = run(dense_limit=1, rank=max(shape))
    assert full.diagnostics["path"] == "low-rank" and full.diagnostics["moment_kernels"] == ["stored", "stored"]
    np.testing.assert_allclose(full.values, exact.values, atol=1e-3)  # CG to 1e-4 relative on either path
    np.testing.assert_allclose(full.scores, exact.scores, atol=1e-8)  # the ranking fit is a direct solve
    errors = [np.sqrt(np.mean((run(dense_limit=1, rank=k).values - exact.values) ** 2)) for k in (2, 8, 20)]
    assert errors[0] > errors[1] > errors[2] and errors[-1] < 1e-3


@pytest.mark.timeout(120)
def test_a_20000_by_20000_fit_never_allocates_a_side_by_side_array():
    """pma-map's scalable path and con-mvgp on a 20,000 × 20,000 rating matrix (30,000 ratings, 100 test rows):
    traced peak far below one 20,000² array (3.2 GB in double, 1.6 GB in single precision)."""
    n = m = 20_000
    rng = np.random.default_rng(0)
    rows, cols = rng.integers(0, n, 30_000), rng.integers(0, m, 30_000)
    keep = np.unique(rows * m + cols, return_index=True)[1]
    rows, cols = rows[keep], cols[keep]
    y = rng.integers(1, 6, rows.size).astype(float)
    test = np.repeat(np.arange(100), 3), rng.integers(0, m, 300)
    split = RatingsSplit(sp.coo_matrix((y, (rows, cols)), shape=(n, m)), *test)
    for name, params in (("pma-map", dict(select="none", rank=20)), ("con-mvgp", dict(select="none", max_rank=3))):
        algo = get(name)
        tracemalloc.start()
        prediction = algo().run(split, algo.Params(**params), Context.for_arrays(None))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert np.all(np.isfinite(prediction.values)) and prediction.scores.shape == (100, m)
        assert peak < 400 * 2 ** 20, f"{name}: traced peak {peak / 2 ** 20:.0f} MiB"


@pytest.mark.timeout(120)
def test_generated_truth_is_recovered_near_the_oracle_posterior():
    """synthetic_ratings at a reduced size (800 × 200, 40 % observed): pma-map's scalable path, its kernels
    estimated from the co-rating moments (little shrinkage: the matrix is dense), closes more than half of the
    gap between the biases alone and the oracle — the exact posterior mean of the hidden signal μ + b + c + x
    under the true kernels, biases and noise (`ObservedKroneckerSum` with the generator's eigenbases)."""
    from malt.datasets.synthetic_ratings import synthetic_ratings
    from malt.tasks.ratings import RatingsParams, RatingsTask

    data = synthetic_ratings(800, 200, 64_000, rank=5, noise=0.5, seed=3)
    task = RatingsTask()
    split = task.split(data, RatingsParams(), 0)
    Z, W = data["truth_Z"], data["truth_W"]
    b, c, mu = data["truth_bias_rows"], data["truth_bias_cols"], data.meta["mean"]
    tr, tc = split.test_rows, split.test_cols
    truth = mu + b[tr] + c[tc] + np.einsum("ij,ij->i", Z[tr], W[tc])
    train = sp.coo_matrix(split.train)
    # oracle: the model's posterior mean with everything but X known
    n, m = train.shape
    lam1, lam2 = np.array(data.meta["lambda1"]), np.array(data.meta["lambda2"])
    V1, V2 = Z[:, :5] / np.sqrt(lam1), W[:, 5:] / np.sqrt(lam2)
    oracle_solver = ObservedKroneckerSum(Eigenbasis.low_rank(V1, lam1), Eigenbasis.low_rank(V2, lam2), train.row,
                                         train.col, (n, m))
    resid = train.data - mu - b[train.row] - c[train.col]
    oracle = oracle_solver.solve(resid, noise=0.5, tol=1e-8)[0].at(tr, tc) + mu + b[tr] + c[tc]
    algo = get("pma-map")
    got = algo().run(split, algo.Params(dense_limit=100, select="none", shrink=1.0, ranking="ratings"),
                     Context.for_arrays(None, seed=0))
    biases = get("baseline")().run(split, get("baseline").Params(), Context.for_arrays(None)).values

    def rmse(v):
        return float(np.sqrt(np.mean((v - truth) ** 2)))

    assert got.diagnostics["path"] == "low-rank"
    # measured: oracle 0.237, pma-map 0.567, biases 1.016 (biased-mf, whose rank-20 factors hold the rank-10
    # truth exactly, 0.388: the moment kernels keep noise directions beside the five true ones)
    assert rmse(oracle) < rmse(got.values) < rmse(oracle) + 0.5 * (rmse(biases) - rmse(oracle))
