"""pma-map's inner selection on the missing task by structure (issue 46): the screen walks the grid on one
shared factorisation, each setting a rescaling of K1's eigenvalues, and warm starts carry fixed points
from setting to setting. Each piece against a from-scratch computation (dense nm × nm Gaussian
conditioning) or a brute-force property."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from malt.algorithms.pma.common import second_moments
from malt.algorithms.pma.map import fixed_kernel_path, pma_map
from malt.algorithms.pma.missing import serpentine
from malt.numerics.eigenbasis import Eigenbasis
from tests.test_pma import dense_conditional, kron_sum_dense
from tests.test_pma_map_solver import problem


def test_fixed_kernel_path_gives_each_settings_exact_conditional_mean():
    """Every setting (s, c) of the path is E[X_U | X_O] under (s K1 + c I) ⊕ K2, K2 the initial second
    moments — whatever the order and the warm start from the setting before."""
    M, K1, _ = problem(9, 5, 0.3, seed=3)
    observed = ~np.isnan(M)
    K2 = second_moments(M, observed, 0, 1e-2)
    d, U = np.linalg.eigh(K1)
    settings = [(1.0, 0.01), (0.1, 0.5), (3.0, 0.0), (0.1, 0.01)]
    got = [X.copy() for X in fixed_kernel_path(M, Eigenbasis(d, U), settings, tol=1e-11, iterations=500,
                                               jitter=1e-2, single=False)]
    for (s, c), X in zip(settings, got):
        want, _ = dense_conditional(M, kron_sum_dense(s * K1 + c * np.eye(9), K2))
        np.testing.assert_allclose(X[~observed], want[~observed], atol=1e-8)
        np.testing.assert_array_equal(X[observed], M[observed])


def test_fixed_kernel_path_with_kernel_updates_follows_the_definition_per_setting():
    """The second screen: each setting re-estimates K2 = GᵀG/n from its own fixed points, starting from the
    initial moments, whatever setting came before — the dissertation's PMA-MAP for K1 = s K1 + c I, dense."""
    from tests.test_pma_map_solver import scratch_pma_map

    M, K1, _ = problem(9, 5, 0.3, seed=6)
    observed = ~np.isnan(M)
    d, U = np.linalg.eigh(K1)
    settings = [(1.0, 0.05), (0.2, 0.5), (2.0, 0.01)]
    got = [X.copy() for X in fixed_kernel_path(M, Eigenbasis(d, U), settings, tol=1e-11, iterations=500,
                                               jitter=1e-2, single=False, kernel_updates=2)]
    for (s, c), X in zip(settings, got):
        want, _ = scratch_pma_map(M, s * K1 + c * np.eye(9), kernel_updates=2)
        np.testing.assert_allclose(X[~observed], want[~observed], atol=1e-7)


def test_pma_map_from_any_start_reaches_the_same_fixed_point():
    """The warm start the inner selection hands on (a nearby problem's fixed point) changes the
    iterations, not the answer: the exact conditional mean under the given kernels."""
    M, K1, K2 = problem(8, 6, 0.35, seed=4)
    observed = ~np.isnan(M)
    want, _ = dense_conditional(M, kron_sum_dense(K1, K2))
    far = np.random.default_rng(0).normal(0.0, 10.0, M.shape)
    for start in (None, far, np.where(observed, M, want) + 0.01):
        got = pma_map(M, K1, K2, kernel_updates=0, tol=1e-11, start=start)["values"]
        np.testing.assert_allclose(got[~observed], want[~observed], atol=1e-8)


def test_serpentine_visits_every_setting_once_each_a_grid_step_from_the_last():
    scales, noises = (0.03, 0.1, 0.3, 1.0), (0.01, 0.03, 0.1, 0.3, 1.0)
    settings = list(itertools.product(scales, noises))
    order = serpentine(settings)
    assert sorted(order) == list(range(len(settings)))
    steps = [(abs(scales.index(settings[i][0]) - scales.index(settings[j][0])),
              abs(noises.index(settings[i][1]) - noises.index(settings[j][1]))) for i, j in zip(order, order[1:])]
    assert all(step in ((0, 1), (1, 0)) for step in steps)


@pytest.mark.parametrize("single", [False, True])
def test_eigenvalue_only_changes_keep_the_rotated_iterate_consistent(single):
    """The path reuses X̂ = U1ᵀ X̃ U2 across settings (only a ⊕ b changes): after every setting the carried
    X̂ equals a fresh rotation of X̃, and the answers of later settings equal those of a path started there."""
    from malt.algorithms.pma.map import MissingEntrySolver
    from malt.numerics.eigenbasis import KroneckerEigenbasis

    M, K1, _ = problem(10, 6, 0.3, seed=5)
    observed = ~np.isnan(M)
    K2 = second_moments(M, observed, 0, 1e-2)
    d1, U1 = np.linalg.eigh(K1)
    right = Eigenbasis(*np.linalg.eigh(K2))
    Xt = np.where(observed, M, 0.0)
    solver = MissingEntrySolver(M, ~observed, Xt, single=single)
    for s, c in [(1.0, 0.1), (0.3, 0.3), (2.0, 0.0)]:
        solver.set_basis(KroneckerEigenbasis(Eigenbasis(d1 * s + c, U1), right))
        solver.solve(1e-9 if not single else 1e-4, 500)
        np.testing.assert_allclose(solver.Xh, U1.T @ Xt @ right.vectors, atol=1e-9 if not single else 1e-4)
    want, _ = dense_conditional(M, kron_sum_dense(2.0 * K1, K2))
    np.testing.assert_allclose(Xt[~observed], want[~observed], atol=1e-7 if not single else 2e-3)


@pytest.mark.parametrize("low_rank", [False, True])
def test_zero_filled_scores_share_their_eigenbases_across_signals(low_rank):
    """The ratings task's ranking grid: a cached call at another signal rescales the shared spectrum and
    gives what a fresh fit at that signal gives (the cache holds one entry per centring)."""
    from malt.algorithms.pma.ratings import zero_filled_scores, zero_filled_scores_low_rank

    rng = np.random.default_rng(2)
    n, m = 30, 12
    rows, cols = np.nonzero(rng.random((n, m)) < 0.4)
    y = rng.integers(1, 6, rows.size).astype(float)
    fit = ((lambda **kw: zero_filled_scores_low_rank(rows, cols, y, (n, m), np.arange(n), rank=5, **kw))
           if low_rank else (lambda **kw: zero_filled_scores(rows, cols, y, (n, m), np.arange(n), **kw)))
    cache = {}
    for center in (False, True):
        for signal in (0.02, 0.3, 0.005):
            got, got_noise = fit(signal=signal, center=center, cache=cache)
            want, want_noise = fit(signal=signal, center=center)
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
            assert got_noise == pytest.approx(want_noise)
    assert len(cache) == 2
