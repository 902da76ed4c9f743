"""pma-map's solver for a sequence of kernel settings (issue 18): warm starts carried across K2 updates,
single-precision rotations and the looser tolerance of the settings before the last, each against a
from-scratch computation (dense nm × nm Gaussian conditioning, scipy's Bartels–Stewart Sylvester solver)."""
from __future__ import annotations

import numpy as np
import scipy.linalg

from malt.numerics import linalg
from malt.algorithms.pma.common import second_moments
from malt.algorithms.pma.map import MissingEntrySolver, pma_map
from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis
from tests.test_pma import dense_conditional, kron_sum_dense, rbf


def problem(n, m, fraction, seed):
    rng = np.random.default_rng(seed)
    K1 = linalg.add_jitter(rbf(n, 3, rng), 0.05)
    K2 = linalg.add_jitter(rbf(m, 2, rng), 0.05)
    X = np.linalg.cholesky(K1) @ rng.standard_normal((n, m)) + rng.standard_normal((n, m)) @ np.linalg.cholesky(K2).T
    M = X.copy()
    M[rng.random((n, m)) < fraction] = np.nan
    return M, K1, K2


def scratch_pma_map(M, K1, kernel_updates, jitter=1e-2):
    """The definition, literally: for each kernel setting the exact conditional mean (dense), F from
    the Sylvester equation F K2 + K1 F = K1 X̃ (eq. 5.22, Bartels–Stewart), then K2 = GᵀG/n + jitter."""
    observed = ~np.isnan(M)
    K2 = second_moments(M, observed, 0, jitter)
    for round_ in range(kernel_updates + 1):
        mean, _ = dense_conditional(M, kron_sum_dense(K1, K2))
        Xt = np.where(observed, M, mean)
        if round_ == kernel_updates:
            return Xt, K2
        G = Xt - scipy.linalg.solve_sylvester(K1, K2, K1 @ Xt)
        K2 = linalg.add_jitter(G.T @ G / M.shape[0], jitter)


def test_kernel_updates_with_carried_rotations_equal_the_definition():
    M, K1, _ = problem(9, 5, 0.3, seed=1)
    expected, K2 = scratch_pma_map(M, K1, kernel_updates=3)
    fit = pma_map(M, K1, None, kernel_updates=3, tol=1e-13, iterations=2000)  # double precision throughout
    np.testing.assert_allclose(fit["K2"], K2, atol=1e-9)
    np.testing.assert_allclose(fit["values"], expected, atol=1e-8)
    np.testing.assert_allclose(fit["F"] @ fit["K2"] + K1 @ fit["F"], K1 @ fit["values"], atol=1e-8)  # eq. 5.22


def test_default_tolerance_stays_within_its_residual_of_the_definition():
    """Single-precision rotations, settings before the last at 10 × tol: the answer of the default
    solver is still the definition's to the accuracy a relative residual of 1e-3 promises."""
    M, K1, _ = problem(40, 12, 0.25, seed=2)
    expected, _ = scratch_pma_map(M, K1, kernel_updates=3)
    fit = pma_map(M, K1, None, kernel_updates=3)
    hidden = np.isnan(M)
    scale = np.std(M[~hidden])
    assert fit["residuals"][-1] <= 1e-3 and all(r <= 1e-2 for r in fit["residuals"][:-1])
    assert np.max(np.abs(fit["values"] - expected)[hidden]) < 0.05 * scale
    np.testing.assert_array_equal(fit["values"][~hidden], M[~hidden])


def test_change_of_right_basis_equals_a_fresh_rotation():
    M, K1, K2 = problem(30, 8, 0.25, seed=3)
    missing = np.isnan(M)
    Xt = np.where(missing, 0.5, M)
    e1 = Eigenbasis.symmetric(K1)
    for single, atol in ((False, 1e-11), (True, 1e-4)):
        solver = MissingEntrySolver(M, missing, Xt.copy(), single=single)
        solver.set_basis(KroneckerEigenbasis(e1, Eigenbasis.symmetric(K2)))
        solver.solve(1e-2 if single else 1e-8, 50)
        v = np.linspace(-1.0, 1.0, K2.shape[0])
        new = KroneckerEigenbasis(e1, Eigenbasis.symmetric(0.5 * K2 + np.outer(v, v)))  # other eigenvectors
        solver.set_basis(new)
        np.testing.assert_allclose(solver.Xh, new.rotate(solver.Xt), atol=atol)
        # and the solve from there reaches the new setting's conditional mean
        solver.solve(1e-9 if not single else 1e-4, 500)
        mean, _ = dense_conditional(M, kron_sum_dense(K1, new.right.matrix()))
        np.testing.assert_allclose(solver.Xt[missing], mean[missing], atol=1e-6 if not single else 1e-3)


def test_inverse_sum_factors_approximate_one_over_a_plus_b_to_the_requested_accuracy():
    """Φ Ψᵀ against 1 / (a_i + b_j) itself, over spectra spanning 2 to 9 decades, endpoints included."""
    from malt.numerics.eigenbasis import inverse_sum_factors

    rng = np.random.default_rng(5)
    for lo, hi in ((0.5, 2.0), (0.01, 301.0), (1e-6, 1e3)):
        a = np.r_[lo, hi, np.exp(rng.uniform(np.log(lo), np.log(hi), 200))]
        b = np.r_[lo, hi, np.exp(rng.uniform(np.log(lo), np.log(hi), 60))]
        exact = 1.0 / (a[:, None] + b[None, :])
        for eps in (1e-2, 1e-4):
            Phi, Psi = inverse_sum_factors(a, b, eps)
            assert np.max(np.abs(Phi @ Psi.T / exact - 1.0)) <= eps
            assert Phi.shape[1] < 60  # a few dozen terms, not one per eigenvalue
