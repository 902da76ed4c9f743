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


def test_fixed_kernel_path_writes_its_answer_whatever_the_matrix_order():
    """A column subset of a C-ordered matrix (``R[:, cols]``) is Fortran-ordered: the solver writes its iterate
    through ``ravel``, which copies such an array, so the answer was the column means. Both orders must give
    the exact conditional mean."""
    M, K1, _ = problem(9, 6, 0.3, seed=7)
    observed = ~np.isnan(M)
    K2 = second_moments(M, observed, 0, 1e-2)
    want, _ = dense_conditional(M, kron_sum_dense(0.5 * K1 + 0.1 * np.eye(9), K2))
    d, U = np.linalg.eigh(K1)
    for order in (np.ascontiguousarray, np.asfortranarray):
        X = next(fixed_kernel_path(order(M), Eigenbasis(d, U), [(0.5, 0.1)], tol=1e-11, iterations=500,
                                   jitter=1e-2, single=False))
        np.testing.assert_allclose(X[~observed], want[~observed], atol=1e-8)


def test_looser_solves_before_a_settings_last_reach_the_same_fixed_point():
    """``update_tol`` loosens the solves that only feed a K2 re-estimation (as `pma_map` does); the setting's last
    solve at ``tol`` still lands on the definition's answer to within what the looser K2 estimates move it."""
    from tests.test_pma_map_solver import scratch_pma_map

    M, K1, _ = problem(9, 5, 0.3, seed=6)
    observed = ~np.isnan(M)
    d, U = np.linalg.eigh(K1)
    X = next(fixed_kernel_path(M, Eigenbasis(d, U), [(0.2, 0.5)], tol=1e-11, iterations=500, jitter=1e-2,
                               single=False, kernel_updates=2, update_tol=1e-3))
    want, _ = scratch_pma_map(M, 0.2 * K1 + 0.5 * np.eye(9), kernel_updates=2)
    error = np.abs(X[~observed] - want[~observed]).max()
    assert 0 < error < 1e-2 * np.abs(want[~observed]).max()


def test_screen_subsets_are_sorted_distinct_and_whole_when_small():
    from malt.algorithms.pma.missing import SCREEN_COLUMNS, SCREEN_MIN_ROWS, screen_columns, screen_rows

    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(screen_columns(SCREEN_COLUMNS, rng), np.arange(SCREEN_COLUMNS))
    np.testing.assert_array_equal(screen_rows(SCREEN_MIN_ROWS, rng), np.arange(SCREEN_MIN_ROWS))
    assert screen_rows(SCREEN_MIN_ROWS + 50, rng).size == SCREEN_MIN_ROWS
    for got, size, of in ((screen_columns(174, rng), SCREEN_COLUMNS, 174), (screen_rows(1000, rng), 500, 1000)):
        assert got.size == size and np.all(np.diff(got) > 0) and got.min() >= 0 and got.max() < of


def test_restricted_kernels_are_the_prior_on_the_subset_of_rows():
    """The first screens' K1 on a row subset: the eigenbasis of K[S, S] itself (the GP's marginal on S), dense."""
    from malt.algorithms.pma.missing import restrict_kernels

    _, K1, _ = problem(12, 3, 0.3, seed=8)
    rows = np.array([0, 3, 4, 9, 11])
    got = restrict_kernels({"rbf": (K1, None)}, rows, single=False)["rbf"][1]
    np.testing.assert_allclose((got.vectors * got.values) @ got.vectors.T, K1[np.ix_(rows, rows)], atol=1e-12)


def test_screened_choice_is_the_exhaustive_inner_choice_on_a_draw_from_the_model():
    """On a matrix large enough to be screened (n²m + nm² ≥ `SCREEN_MIN_COST`), drawn with a strong row kernel and
    little noise, the screens on row and column subsets choose what fitting all 40 candidates in full on every
    entry chooses (the brute force: ``path=None``)."""
    from malt.algorithms.pma.map import MAPParams, fixed_kernel_path, pma_map
    from malt.algorithms.pma.missing import SCREEN_MIN_COST, choose

    rng = np.random.default_rng(11)
    n, m = 420, 100
    assert n * m * (n + m) >= SCREEN_MIN_COST
    Z = rng.standard_normal((n, 3))
    K1 = np.exp(-0.5 * ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1))
    kernels = {"rbf": (K1 + 1e-2 * np.eye(n), Eigenbasis(*np.linalg.eigh(K1 + 1e-2 * np.eye(n))))}
    F = np.linalg.cholesky(K1 + 1e-6 * np.eye(n)) @ rng.standard_normal((n, m))
    M = F + rng.standard_normal((n, 1)) * rng.standard_normal((1, m)) + 0.1 * rng.standard_normal((n, m))
    M[rng.random((n, m)) < 0.25] = np.nan
    params = MAPParams(k1_grid=("rbf",))
    picks = [choose(params, M, kernels, "real", np.random.default_rng(0), pma_map, path=path)[0].best
             for path in (fixed_kernel_path, None)]
    assert (picks[0].k1_scale, picks[0].noise) == (picks[1].k1_scale, picks[1].noise)
