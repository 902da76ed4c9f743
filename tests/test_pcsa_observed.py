"""PCSA's observed-entry inference with row and column noise scales (noise='scaled') and the SVD start:
each piece against a brute-force or closed-form reference, and the whole fit on planted data."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from scipy.special import digamma, gammaln

from malt.algorithms.pcsa.observed import (NEGLIGIBLE, Packing, _best_scales, _chunk_rows, _dead, _energies,
                                           _factor_update, _gamma_shape_by_evidence, _residual_sums, _svd_start,
                                           pcsa_observed_fit)


def test_weighted_factor_update_is_the_per_row_gaussian_posterior():
    """Entry weights w_j (the other side's ⟨κ_j⟩) in the pattern and X, a per-row precision τ ρ_i:
    Σ_i⁻¹ = diag(λ) + τ ρ_i Σ_j w_j ⟨v vᵀ⟩, μ_i = τ ρ_i Σ_i Σ_j w_j (x_ij ν_j − ⟨v_free v_const⟩), row by row."""
    rng = np.random.default_rng(0)
    n, m, d = 5, 8, 4
    X = sp.random(n, m, density=0.6, random_state=2, format="csr")
    w = rng.uniform(0.2, 3.0, m)
    pat = X.copy(); pat.data = w[pat.indices]
    XW = X.multiply(pat).tocsr()
    V = rng.standard_normal((m, d)); V[:, -1] = 1.0
    S = rng.standard_normal((m, d, d)) * 0.1
    S = S @ np.transpose(S, (0, 2, 1)); S[:, -1, :] = 0; S[:, :, -1] = 0
    prec, tau = np.array([2.0, 1.0, 0.5, 1.0]), 1.3 * rng.uniform(0.5, 2.0, n)
    pk = Packing(d)
    xx = np.asarray(XW.multiply(X).sum(axis=1)).ravel()
    mu, C, logdet, sse = _factor_update(XW, pat, V, S[:, pk.up, pk.lo], prec, tau, slice(0, d - 1), d - 1, xx=xx)
    # the same in blocks of 2 rows (the blocks bound the update's memory, not its result)
    blocked = _factor_update(XW, pat, V, S[:, pk.up, pk.lo], prec, tau, slice(0, d - 1), d - 1, xx=xx, block=2)
    for got, want in zip(blocked, (mu, C, logdet, sse)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    C = pk.unpack(C)
    for i in range(n):
        o = X[i].indices
        E = (V[o][:, :, None] * V[o][:, None, :] + S[o]) * w[o][:, None, None]
        P = np.diag(prec[:3]) + tau[i] * E.sum(0)[:3, :3]
        rhs = (X[i].data * w[o]) @ V[o][:, :3] - E.sum(0)[:3, 3]
        np.testing.assert_allclose(C[i, :3, :3], np.linalg.inv(P), atol=1e-10)
        np.testing.assert_allclose(mu[i, :3], tau[i] * np.linalg.solve(P, rhs), atol=1e-10)
        # the weighted expected squared residual Σ_j w_j E(x_ij − uᵀv_j)², entry by entry
        U_i, SU_i = mu[i], C[i]
        want = sum(w[j] * ((X[i, j] - U_i @ V[j]) ** 2 + U_i @ S[j] @ U_i + V[j] @ SU_i @ V[j] + np.sum(SU_i * S[j]))
                   for j in o)
        np.testing.assert_allclose(sse[i], want, rtol=1e-10)


def test_packed_second_moments_and_residual_sums_match_dense_ones_row_by_row():
    """Packing.outer (into a new array or into the covariances) is μ_i μ_iᵀ + S_i's upper triangle, and
    `_residual_sums` over more rows than one block of `_chunk_rows` is x² − 2 x u·ν + tr(⟨u uᵀ⟩ G_i) row by row."""
    rng = np.random.default_rng(3)
    d = 5
    n = _chunk_rows(d) + 37                                  # two blocks, the second partial
    pk = Packing(d)
    U = rng.standard_normal((n, d))
    S = rng.standard_normal((n, d, d)) * 0.2
    S = S @ np.transpose(S, (0, 2, 1))
    SU = S[:, pk.up, pk.lo]
    dense = U[:, :, None] * U[:, None, :] + S
    np.testing.assert_allclose(pk.outer(U, SU), dense[:, pk.up, pk.lo], rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(pk.outer(U, SU.copy(), overwrite=True), pk.outer(U, SU))
    np.testing.assert_array_equal(pk.outer(U), (U[:, :, None] * U[:, None, :])[:, pk.up, pk.lo])
    G = rng.standard_normal((n, d, d))
    G = G @ np.transpose(G, (0, 2, 1))
    XV, xx = rng.standard_normal((n, d)), rng.uniform(50, 60, n)
    want = xx - 2 * np.einsum("na,na->n", U, XV) + np.einsum("nab,nab->n", dense, G)
    np.testing.assert_allclose(_residual_sums(XV, xx, U, SU, G[:, pk.up, pk.lo]), np.maximum(want, 0), rtol=1e-12)


@pytest.mark.parametrize("true_shape", [0.7, 4.0, 40.0])
def test_gamma_shape_is_the_maximiser_of_the_expected_log_prior(true_shape):
    rng = np.random.default_rng(1)
    u = true_shape + rng.uniform(1, 20, 300)                  # Q(w_i) = Gamma(u_i, v_i)
    v = u / rng.gamma(true_shape, 1 / true_shape, 300)
    mean, elog = u / v, digamma(u) - np.log(v)

    def neg(log_h):                                          # −Σ_i E log Gamma(w_i | h, h)
        h = np.exp(log_h)
        return -np.sum(h * np.log(h) - gammaln(h) + (h - 1) * elog - h * mean)

    best = np.exp(minimize_scalar(neg, bounds=(np.log(1e-2), np.log(1e4)), method="bounded",
                                  options={"xatol": 1e-10}).x)
    np.testing.assert_allclose(_gamma_shape_by_evidence(mean.sum(), elog.sum(), 300), best, rtol=1e-5)


@pytest.mark.parametrize("rows_ard,rows_fixed,w_extra,rate", [(300, 500, 1.0, 1.0), (500, 300, 1e-3, 1e-3),
                                                                 (400, 400, 1.0, 0.0)])
def test_best_scales_maximise_the_bound_along_the_rescaling(rows_ard, rows_fixed, w_extra, rate):
    """The closed-form root against a numerical maximisation of the part of the bound the rescaling changes:
    entropies ± log r a row, −½ Σ⟨y²⟩ / r² on the unit-Gaussian side and, on the ARD side, −w log(rate + ½ r² S)
    (E log N(a | 0, 1/ς) and the KL term of Q(ς) = Gamma(w, rate + ½ r² S)). That the full bound does not
    decrease through the step is checked by the fits' monotone bounds below."""
    rng = np.random.default_rng(5)
    S, T = rng.uniform(0.1, 50, 4), rng.uniform(0.1, 50, 4)
    w = rows_ard / 2.0 + w_extra
    count = rows_ard - rows_fixed

    def neg_bound(log_r, k):
        r = np.exp(log_r)
        return -(count * np.log(r) - w * np.log(rate + 0.5 * r ** 2 * S[k]) - 0.5 * T[k] / r ** 2)

    got = _best_scales(S, T, count, w, rate)
    want = [np.exp(minimize_scalar(neg_bound, bounds=(-10, 10), args=(k,), method="bounded",
                                   options={"xatol": 1e-12}).x) for k in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_svd_start_is_the_best_low_rank_approximation():
    """Eckart–Young: the start's product U Vᵀ is the rank-(d1 + d2) truncated SVD of the observed matrix."""
    rng = np.random.default_rng(2)
    X = sp.random(40, 60, density=0.3, random_state=3, format="csr")
    U, V = _svd_start(X, 2, 3, rng)
    P, s, Qt = np.linalg.svd(X.toarray())
    np.testing.assert_allclose(U @ V.T, (P[:, :5] * s[:5]) @ Qt[:5], atol=1e-8)
    order = np.argsort(-np.sum(U ** 2, 0) * np.sum(V ** 2, 0))   # A gets ranks 1, 3; B ranks 2, 4, 5
    assert list(order) == [0, 2, 1, 3, 4]


def _planted_heteroscedastic(rng, n=80, m=100, noisy=0.5, clean=0.05):
    """Rank-2 signal plus biases; the first half of the rows and of the columns are noisy."""
    T = rng.standard_normal((n, 2)) @ rng.standard_normal((2, m)) + rng.normal(0, 1, (n, 1)) + rng.normal(0, 1, (1, m))
    row_sd = np.where(np.arange(n) < n // 2, noisy, clean)
    col_sd = np.where(np.arange(m) < m // 2, 2.0, 1.0)
    X = T + row_sd[:, None] * col_sd[None, :] * rng.standard_normal(T.shape)
    obs = rng.random(T.shape) < 0.4
    return T, X, obs


def test_scaled_noise_bound_monotone_finds_the_noisy_rows_and_columns_and_predicts_better():
    rng = np.random.default_rng(3)
    T, X, obs = _planted_heteroscedastic(rng)
    r, c = np.nonzero(obs)
    fits = {nz: pcsa_observed_fit(r, c, X[r, c], T.shape, d1=4, d2=4, noise=nz, max_iter=150, tol=0,
                                  rng=np.random.default_rng(0)) for nz in ("shared", "scaled")}
    fit = fits["scaled"]
    b = np.asarray(fit["bound"])
    assert np.all(np.diff(b) >= -1e-8 * np.abs(b[1:])), np.diff(b).min()
    # ⟨ρ⟩ is a precision: the noisy rows (sd 10× the clean ones) and columns (2×) get far smaller scales
    rho, kap = fit["row_scale"], fit["col_scale"]
    assert rho[:40].max() < rho[40:].min()
    assert np.median(kap[50:]) / np.median(kap[:50]) > 2.5          # true precision ratio 4
    err = {nz: np.sqrt(np.mean(((f["U"] @ f["V"].T) - T)[~obs] ** 2)) for nz, f in fits.items()}
    assert err["scaled"] < 0.8 * err["shared"], err


@pytest.mark.parametrize("prior,strength", [("ard", 1.0), ("jeffreys", None)])
def test_scaled_noise_bound_monotone_with_other_column_priors(prior, strength):
    """Every update is a coordinate maximiser, so the bound must not decrease under either column prior
    (the Gamma(s, s) ARD prior of ``ard_strength``, Jeffreys of §3.2), from the SVD and the random start."""
    rng = np.random.default_rng(4)
    T, X, obs = _planted_heteroscedastic(rng, n=50, m=70)
    r, c = np.nonzero(obs)
    for init in ("svd", "random"):
        fit = pcsa_observed_fit(r, c, X[r, c], T.shape, d1=3, d2=3, prior=prior, noise="scaled", init=init,
                                ard_strength=strength, max_iter=80, tol=0, rng=np.random.default_rng(1))
        b = np.asarray(fit["bound"])
        assert np.all(np.diff(b) >= -1e-8 * np.abs(b[1:])), (init, np.diff(b).min())


def test_components_that_die_together_are_removed_by_the_absolute_threshold():
    """`_dead`: equal energies far below the floor are all dead (the relative test alone keeps every one of a set
    that decays together), one above the floor keeps the others alive only if they are within PRUNE of it."""
    floor = 1.0
    np.testing.assert_array_equal(_dead(np.full(4, 1e-40), floor), [True] * 4)
    np.testing.assert_array_equal(_dead(np.array([2.0, 1.5, 1e-4, 0.5]), floor), [False, False, True, True])
    np.testing.assert_array_equal(_dead(np.array([1e6, 2.0, 5e3]), floor), [False, True, False])
    assert not _dead(np.empty(0), floor).size


@pytest.mark.timeout(60)
def test_a_fit_whose_components_all_die_ends_as_the_bias_model_with_no_dead_columns():
    """The scale benchmark's draw at 10⁵ ratings (20 a row, 70 % kept): its rank-20 signal is too weak for ARD at
    14 ratings a row, and every component decays ~100× a sweep (the relative test alone kept 12 columns with
    energies below 1e-40 of the ratings' variance until the 21st sweep). They must be gone: only the two bias
    columns are left, and no kept component's fitted values are below NEGLIGIBLE of the ratings' sd."""
    from malt.datasets.synthetic_ratings import synthetic_ratings

    n = 5000
    R = synthetic_ratings(n, n, int(1e5 / 0.7))["ratings"].tocoo()
    keep = np.random.default_rng(0).random(R.nnz) < 0.7
    r, c, x = R.row[keep], R.col[keep], R.data[keep] - R.data[keep].mean()
    fit = pcsa_observed_fit(r, c, x, (n, n), d1=20, d2=20, noise="scaled", ard_strength=1.0, max_iter=100,
                            tol=1e-5, rng=np.random.default_rng(0))
    assert fit["U"].shape[1] == fit["V"].shape[1] == 2 and fit["d1_eff"] == fit["d2_eff"] == 0
    assert fit["pruned"] == 40 and fit["iterations"] < 20, fit["iterations"]
    small = pcsa_observed_fit(r, c, x, (n, n), d1=20, d2=20, noise="scaled", ard_strength=1.0, max_iter=1,
                              rng=np.random.default_rng(0))           # after one sweep, some are still alive
    alive = _energies(small["U"], small["V"], 1) / n ** 2 >= NEGLIGIBLE ** 2 * x.var()
    assert alive.any(), "the draw no longer tests a set of components that dies during the fit"


def test_inner_cv_picks_the_ard_strength_with_the_lowest_holdout_error_and_refits_on_all_entries():
    """select='inner-cv' (pcsa's ratings default): the holdout of 1/inner_folds of the entries and each
    candidate's fit on the rest, recomputed here from the same seed, give the reported score and choice."""
    from malt.algorithms.pcsa import ObservedFit, observed_fit, PCSAParams
    from malt.engine.context import Context
    from malt.numerics.selection import inner_fold_ids
    rng = np.random.default_rng(4)
    n, m = 60, 80
    T = rng.standard_normal((n, 3)) @ rng.standard_normal((3, m)) + rng.normal(0, 1, (n, 1))
    r, c = np.nonzero(rng.random((n, m)) < 0.5)
    x = T[r, c] + 0.3 * rng.standard_normal(r.size)
    params = PCSAParams(rank=6, max_iter=60, ard_strength_grid=(3.0, 1e-3))
    fit = observed_fit(r, c, x, (n, m), params, Context.for_arrays(np.zeros((n, 1)), seed=0), "ard")
    ctx = Context.for_arrays(np.zeros((n, 1)), seed=0)
    val = inner_fold_ids(x.size, params.inner_folds, ctx.rng) == 0
    errors = []
    for s in params.ard_strength_grid:
        f = ObservedFit(r[~val], c[~val], x[~val], (n, m),
                        PCSAParams(rank=6, max_iter=60, select="none", ard_strength=s), ctx, "ard")
        est = np.clip(f.at(r[val], c[val]), x[~val].min(), x[~val].max())
        errors.append(np.mean((est - x[val]) ** 2))
    best = params.ard_strength_grid[int(np.argmin(errors))]
    assert fit.diagnostics["selected_ard_strength"] == best
    np.testing.assert_allclose(fit.diagnostics["inner_cv_score"], min(errors), rtol=1e-10)
    refit = ObservedFit(r, c, x, (n, m), PCSAParams(rank=6, max_iter=60, select="none", ard_strength=best), ctx, "ard")
    np.testing.assert_allclose(fit.at(r, c), refit.at(r, c), atol=1e-10)


def test_exposure_scores_span_popularity_and_the_predicted_ratings():
    """pcsa's ranking (issue 36): log(1 + c_j) + slope × the standardised posterior mean — slope 0 ranks every
    row by item popularity, a large slope by the predicted ratings, written out for a fixed fit."""
    from malt.algorithms.pcsa import exposure_scores

    class Fit:  # a fit's posterior means, as ObservedFit.rows gives them
        table = np.random.default_rng(0).random((6, 5))

        def rows(self, r):
            return self.table[r]

    rows, cols = np.array([0, 1, 2, 3, 4, 0, 1]), np.array([0, 0, 0, 1, 1, 2, 3])
    x = np.array([1.0, 2, 3, 4, 5, 2, 1])
    r = np.arange(6)
    pop = exposure_scores(Fit(), rows, cols, x, 5, 0.0)(r)
    np.testing.assert_allclose(pop, np.tile(np.log1p([3, 2, 1, 1, 0]), (6, 1)))
    steep = exposure_scores(Fit(), rows, cols, x, 5, 1e6)(r)
    np.testing.assert_array_equal(np.argsort(-steep, axis=1), np.argsort(-Fit.table, axis=1))
    half = exposure_scores(Fit(), rows, cols, x, 5, 0.5)(r)
    np.testing.assert_allclose(half, pop + 0.5 * (Fit.table - x.mean()) / x.std())



def test_behind_stops_only_a_candidate_rising_for_rising_sweeps_above_the_lead():
    """pcsa's early stop of a losing inner-CV candidate (issue 46), on a written-out holdout-error sequence:
    true exactly from the first sweep whose error has risen over the last ``rising`` sweeps and exceeds the
    best by more than ``margin``; never for the first candidate (best = inf)."""
    from malt.algorithms.pcsa import behind

    errors = [1.0, 0.9, 0.8, 0.81, 0.82, 0.83, 0.84, 0.85, 0.86, 0.87]   # minimum at sweep 3, then rising
    def stops(best, margin, rising):
        stop = behind(lambda at: at, best, margin, rising)
        return [stop(e) for e in errors]
    # best 0.8: every error from sweep 4 on is above 0.8 (1 + 1e-3); five rises complete at sweep 8 (0.85)
    assert stops(0.8, 1e-3, 5) == [False] * 7 + [True] * 3
    # a lead the rising errors reach only at 0.86: stops there
    assert stops(0.8, 0.07, 5) == [False] * 8 + [True] * 2
    # three rises complete at sweep 6
    assert stops(0.8, 1e-3, 3) == [False] * 5 + [True] * 5
    # below the best's error (by any margin) or the first candidate: never
    assert not any(stops(0.9, 1e-3, 5))
    assert not any(stops(np.inf, 1e-3, 1))
    # errors above the best but not rising for long enough: never
    stop = behind(lambda at: at, 0.5, 1e-3, 5)
    assert not any(stop(e) for e in [0.9, 0.8, 0.81, 0.82, 0.80, 0.81, 0.82, 0.83, 0.84])


def test_a_true_callback_ends_the_fit_and_the_stop_sees_the_means_in_the_data_orientation():
    """``callback`` returning true ends pcsa_observed_fit after that sweep; `ObservedFit`'s ``stop`` gets
    ``at(rows, cols)`` of the current means in the caller's orientation (the fit flips a matrix with more rows
    than columns), so at the stopping sweep it equals the fit's own ``at``."""
    from malt.algorithms.pcsa import ObservedFit, PCSAParams
    from malt.engine.context import Context

    rng = np.random.default_rng(5)
    n, m = 90, 40                                     # more rows than columns: the fit runs on the transpose
    T = rng.standard_normal((n, 2)) @ rng.standard_normal((2, m))
    r, c = np.nonzero(rng.random((n, m)) < 0.5)
    x = T[r, c] + 0.2 * rng.standard_normal(r.size)
    fit = pcsa_observed_fit(r, c, x, (n, m), d1=3, d2=3, max_iter=50, tol=0.0, rng=np.random.default_rng(0),
                            callback=lambda it, _: it == 2)
    assert fit["iterations"] == 3 and len(fit["bound"]) == 3
    seen = []

    def stop(at):
        seen.append(at(r, c))
        return len(seen) == 4
    params = PCSAParams(rank=3, max_iter=50, tol=0.0, select="none")
    stopped = ObservedFit(r, c, x, (n, m), params, Context.for_arrays(np.zeros((n, 1)), seed=0), "ard", stop=stop)
    assert stopped.diagnostics["iterations"] == 4
    np.testing.assert_allclose(seen[-1], stopped.at(r, c), rtol=0, atol=1e-12)
