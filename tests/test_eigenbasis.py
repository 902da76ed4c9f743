"""malt.numerics.eigenbasis: every method against the dense nm × nm computation it replaces (small matrices)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis

RNG = np.random.default_rng(0)


def spd(n, shift=0.1):
    A = RNG.standard_normal((n, n))
    return A @ A.T / n + shift * np.eye(n)


def dense_sum(A, B):
    """(A ⊕ B) acting on column-major vec of an (n, m) matrix."""
    return np.kron(np.eye(B.shape[0]), A) + np.kron(B, np.eye(A.shape[0]))


def vec(X):
    return X.ravel(order="F")


def unvec(x, shape):
    return x.reshape(shape, order="F")


@pytest.fixture
def pair():
    return spd(7), spd(5)


def test_sylvester_and_stein_match_scipy_and_dense_solves(pair):
    A, B = pair
    C = RNG.standard_normal((7, 5))
    basis = KroneckerEigenbasis(A, B)
    np.testing.assert_allclose(basis.solve_sylvester(C), scipy.linalg.solve_sylvester(A, B, C), atol=1e-10)
    a, b = A / 10, B / 10
    F = KroneckerEigenbasis(a, b).solve_stein(C)
    expected = np.linalg.solve(np.eye(35) - np.kron(b.T, a), vec(C))  # vec(A F B) = (Bᵀ ⊗ A) vec F
    np.testing.assert_allclose(vec(F), expected, atol=1e-10)


def test_low_rank_and_pencil_factors_solve_pcsa_stein_equations():
    """PCSA eq. 6 in both orientations: F − P F G = C and F − G F P = C with P = K diag(g) Kᵀ low-rank and
    G = Λ⁻¹ τBᵀB (a pencil), against dense solves of the vectorised equations."""
    n, m = 8, 4
    K, _ = np.linalg.qr(RNG.standard_normal((n, 3)))
    g = RNG.random(3) * 0.6
    P = K @ np.diag(g) @ K.T
    Lam, BtB = spd(m, 1.0), spd(m)
    G = np.linalg.solve(Lam, BtB)
    C = RNG.standard_normal((n, m))
    left = KroneckerEigenbasis(Eigenbasis.low_rank(K, g), Eigenbasis.pencil(BtB, Lam, "B^-1 A"))
    expected = np.linalg.solve(np.eye(n * m) - np.kron(G.T, P), vec(C))
    np.testing.assert_allclose(vec(left.solve_stein(C)), expected, atol=1e-10)
    right = KroneckerEigenbasis(Eigenbasis.pencil(BtB, Lam, "B^-1 A"), Eigenbasis.low_rank(K, g))
    expected = np.linalg.solve(np.eye(n * m) - np.kron(P.T, G), vec(C.T))
    np.testing.assert_allclose(vec(right.solve_stein(C.T)), expected, atol=1e-10)
    np.testing.assert_allclose(Eigenbasis.pencil(BtB, Lam, "A B^-1").matrix(), BtB @ np.linalg.inv(Lam), atol=1e-10)


@pytest.mark.parametrize("n", [8, 14])  # n ≤ m + 2r and n > m + 2r: both groupings of the low-rank apply
def test_low_rank_left_apply_and_its_span_coordinates_match_the_dense_operator(n):
    """F = φ(A ⊕ B)-style operator with A = K diag(g) Kᵀ + rest (I − K Kᵀ) low-rank: against the dense
    operator built from A's full eigendecomposition; ``span`` also returns Kᵀ F."""
    m, r, rest = 3, 3, 0.2
    K, _ = np.linalg.qr(RNG.standard_normal((n, r)))
    g = RNG.random(r)
    B = spd(m)
    C = RNG.standard_normal((n, m))
    phi = lambda a, b: b / (1.0 - a / (1.0 + b))  # noqa: E731  (BMR's gain has this shape)
    basis = KroneckerEigenbasis(Eigenbasis.low_rank(K, g, rest), B)
    Kfull = np.linalg.qr(np.hstack([K, RNG.standard_normal((n, n - r))]))[0]
    Kfull[:, :r] = K
    a = np.r_[g, np.full(n - r, rest)]
    b, V = np.linalg.eigh(B)
    expected = Kfull @ (phi(a[:, None], b[None, :]) * (Kfull.T @ C @ V)) @ V.T
    np.testing.assert_allclose(basis.apply(C, phi), expected, atol=1e-10)
    F, coords = basis.apply(C, phi, span=True)
    np.testing.assert_allclose(F, expected, atol=1e-10)
    np.testing.assert_allclose(coords, K.T @ expected, atol=1e-10)
    # a left factor that spans everything (BMR with p >= n training rows): F as the dense operator
    # φ(A ⊕ B) C gives it, and its coordinates in A's eigenvectors
    A = spd(n)
    full = KroneckerEigenbasis(A, B)
    a_full, U = np.linalg.eigh(A)
    dense = U @ (phi(a_full[:, None], b[None, :]) * (U.T @ C @ V)) @ V.T
    F_full, coords_full = full.apply(C, phi, span=True)
    np.testing.assert_allclose(F_full, dense, atol=1e-10)
    np.testing.assert_allclose(coords_full, full.left.vectors.T @ dense, atol=1e-10)


def test_gram_factor_is_the_eigenbasis_of_ft_w_f_and_solves_its_stein_equation():
    """Eigenbasis.gram(F, W) of A = Fᵀ W F (rank r < n): rebuilds A, has eigh's nonzero eigenvalues, and as
    the low-rank factor of F − G F A = C it matches scipy.linalg.solve_sylvester on G⁻¹F − F A = G⁻¹C."""
    n, m, r = 9, 4, 3
    F, W = RNG.standard_normal((r, n)), spd(r, 0.5)
    A = F.T @ W @ F
    basis = Eigenbasis.gram(F, W)
    assert basis.vectors.shape == (n, r) and basis.rest == 0.0
    np.testing.assert_allclose(basis.matrix(), A, atol=1e-10)
    np.testing.assert_allclose(np.sort(basis.values), np.linalg.eigvalsh(A)[-r:], rtol=1e-10)
    basis = Eigenbasis.gram(F / np.sqrt(np.linalg.eigvalsh(A).max()) * 0.9, W)   # spectrum in (0, 0.81]
    A = basis.matrix()
    Lam, M = spd(m, 1.0), spd(m)
    G = np.linalg.solve(Lam, M)
    C = RNG.standard_normal((m, n))
    F_ = KroneckerEigenbasis(Eigenbasis.pencil(M, Lam, "B^-1 A"), basis).solve_stein(C)
    Ginv = np.linalg.inv(G)
    np.testing.assert_allclose(F_, scipy.linalg.solve_sylvester(Ginv, -A, Ginv @ C), atol=1e-10)


def test_matvec_precondition_and_inverse_diagonal_equal_the_dense_operators(pair):
    A, B = pair
    V = RNG.standard_normal((7, 5))
    basis = KroneckerEigenbasis(A, B)
    S = dense_sum(A, B) + 0.3 * np.eye(35)
    np.testing.assert_allclose(vec(basis.matvec(V, shift=0.3)), S @ vec(V), atol=1e-10)
    np.testing.assert_allclose(vec(basis.precondition(V, shift=0.3)), np.linalg.solve(S, vec(V)), atol=1e-10)
    np.testing.assert_allclose(vec(basis.inverse_diagonal(shift=0.3)), np.diag(np.linalg.inv(S)), atol=1e-12)
    P = np.kron(B, A)
    np.testing.assert_allclose(vec(basis.matvec(V, kind="product")), P @ vec(V), atol=1e-10)
    bare = KroneckerEigenbasis(Eigenbasis(*np.linalg.eigh(A)), Eigenbasis(*np.linalg.eigh(B)))  # no dense kept
    np.testing.assert_allclose(bare.matvec(V), basis.matvec(V), atol=1e-10)  # rotations = dense products


@pytest.mark.parametrize("kind,noise", [("sum", 0.0), ("sum", 0.2), ("product", 0.05)])
def test_conditional_mean_equals_dense_gaussian_conditioning(pair, kind, noise):
    A, B = pair
    M = RNG.standard_normal((7, 5))
    M.ravel()[RNG.choice(35, 12, replace=False)] = np.nan
    S = (dense_sum(A, B) if kind == "sum" else np.kron(B, A)) + noise * np.eye(35)
    x = vec(M)
    o = ~np.isnan(x)
    expected = S[:, o] @ np.linalg.solve(S[np.ix_(o, o)], x[o])
    basis = KroneckerEigenbasis(A, B)
    for x0 in (None, RNG.standard_normal((7, 5))):  # cold and warm starts reach the same point
        Xt, Xh, info = basis.conditional_mean(M, kind=kind, noise=noise, tol=1e-13, x0=x0)
        assert info["converged"]
        np.testing.assert_allclose(vec(Xt)[~o], expected[~o], atol=1e-9)
        np.testing.assert_allclose(vec(Xt)[o], x[o])
        np.testing.assert_allclose(Xh, basis.rotate(Xt), atol=1e-10)


def test_exact_samples_have_the_model_moments(pair):
    A, B = pair
    basis = KroneckerEigenbasis(A, B)
    rng = np.random.default_rng(1)
    draws = np.stack([vec(basis.sample(rng)) for _ in range(20000)])
    S = dense_sum(A, B)
    np.testing.assert_allclose(np.cov(draws.T), S, atol=0.06 * np.abs(S).max())
    # conditional draws: mean and variance of the dense conditional
    M = RNG.standard_normal((7, 5))
    M.ravel()[RNG.choice(35, 8, replace=False)] = np.nan
    x = vec(M)
    o = ~np.isnan(x)
    mean = S[:, o] @ np.linalg.solve(S[np.ix_(o, o)], x[o])
    cov = S - S[:, o] @ np.linalg.solve(S[np.ix_(o, o)], S[o, :])
    Xm, _, _ = basis.conditional_mean(M, tol=1e-12)
    cond = np.stack([vec(basis.conditional_sample(M, rng, mean=Xm, tol=1e-10)[0]) for _ in range(4000)])
    sd = np.sqrt(np.diag(cov)[~o])
    np.testing.assert_allclose(cond.mean(0)[~o], mean[~o], atol=0.1 * sd.max())
    np.testing.assert_allclose(cond.var(0)[~o], np.diag(cov)[~o], rtol=0.1)
    np.testing.assert_allclose(cond[:, o], np.broadcast_to(x[o], (4000, o.sum())))


def test_split_sum_is_the_posterior_of_g_given_x(pair):
    """X = F + G, columns of F ~ N(0, A), rows of G ~ N(0, B): E[G | X] and Var[G | X] from the joint."""
    A, B = pair
    n, m = 7, 5
    X = RNG.standard_normal((n, m))
    cov_g = np.kron(B, np.eye(n))
    cov_x = dense_sum(A, B)
    mean = cov_g @ np.linalg.solve(cov_x, vec(X))
    var = np.diag(cov_g - cov_g @ np.linalg.solve(cov_x, cov_g))
    basis = KroneckerEigenbasis(A, B)
    got, _ = basis.split_sum(X)
    np.testing.assert_allclose(vec(got), mean, atol=1e-10)
    rng = np.random.default_rng(2)
    draws = np.stack([vec(basis.split_sum(X, rng)[1]) for _ in range(8000)])
    np.testing.assert_allclose(draws.var(0), var, rtol=0.1)


def test_invalid_factors_raise():
    with pytest.raises(Exception, match="not positive semidefinite"):
        KroneckerEigenbasis(-spd(3, 1.0), spd(2))
    K, _ = np.linalg.qr(RNG.standard_normal((4, 2)))
    low = Eigenbasis.low_rank(K, np.ones(2))
    with pytest.raises(ValueError, match="at most one factor"):
        KroneckerEigenbasis(low, low)
    with pytest.raises(ValueError, match="orthonormal full-rank"):
        KroneckerEigenbasis(low, spd(3)).inverse_diagonal()


def test_single_precision_rotations_give_the_same_solve_at_a_loose_tolerance():
    A, B = spd(40), spd(15)
    M = RNG.standard_normal((40, 15))
    M[RNG.random(M.shape) < 0.3] = np.nan
    basis = KroneckerEigenbasis(A, B)
    exact, _, _ = basis.conditional_mean(M, tol=1e-13)
    double, _, info64 = basis.conditional_mean(M, tol=1e-3, single=False)
    single, Xh, info32 = basis.conditional_mean(M, tol=1e-3, single=True)
    assert info32["iterations"] == info64["iterations"]
    np.testing.assert_allclose(single, double, atol=1e-5)
    np.testing.assert_allclose(Xh, basis.rotate(single), atol=1e-5)
    assert np.abs(single - exact).max() < 20 * max(np.abs(double - exact).max(), 1e-6)


def test_single_precision_decomposition_is_backward_stable_and_returned_in_double():
    """`Eigenbasis.symmetric(single=True)`: the basis is exact for K + E with ‖E‖₂ of the order of
    single precision's unit roundoff times ‖K‖₂ (backward stability of the symmetric eigensolver:
    Golub & Van Loan, Matrix Computations, §8.3 — the residual ‖K U − U diag(d)‖ and the loss of
    orthogonality ‖UᵀU − I‖ are O(n·u) with u = 2⁻²⁴), and its eigenvalues are within that of the
    double-precision ones (Weyl)."""
    K = spd(120, shift=0.01)
    single, double = Eigenbasis.symmetric(K, single=True), Eigenbasis.symmetric(K)
    assert single.vectors.dtype == np.float64 and single.values.dtype == np.float64
    U, d = single.vectors, single.values
    norm, u = np.linalg.norm(K, 2), 2.0 ** -24
    assert np.linalg.norm(K @ U - U * d, 2) <= 120 * u * norm
    assert np.linalg.norm(U.T @ U - np.eye(120), 2) <= 120 * u
    assert np.max(np.abs(np.sort(d) - np.sort(double.values))) <= 120 * u * norm
    assert np.linalg.norm(K @ U - U * d, 2) > 1e-3 * 120 * u * norm  # it is single precision, not double


def test_approximate_inverse_diagonal_is_within_its_relative_error():
    """inverse_diagonal(rel_err=…) entry by entry against the exact diagonal (every term positive)."""
    basis = KroneckerEigenbasis(spd(30, 0.01), spd(8, 0.05))
    exact = basis.inverse_diagonal()
    for eps in (1e-2, 1e-4):
        assert np.max(np.abs(basis.inverse_diagonal(rel_err=eps) / exact - 1.0)) <= eps
