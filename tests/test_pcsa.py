"""PCSA (Shi 2012): Stein/Sylvester eigen-solver, bound monotonicity, recovery of planted co-subspaces."""
import numpy as np
import pytest

from malt.algorithms.pcsa import pcsa_fit
from malt.engine.context import Context
from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis
from malt.registry import get as get_algorithm
from malt.splits import MissingSplit


def _planted(rng, D1=30, D2=50, d1=3, d2=2, noise=0.1):
    A = rng.standard_normal((D1, d1)); Y = rng.standard_normal((d1, D2))
    B = rng.standard_normal((D2, d2)); Z = rng.standard_normal((d2, D1))
    T = A @ Y + (B @ Z).T
    return T, T + noise * rng.standard_normal(T.shape)


def test_stein_solves_as_pcsa_builds_them_match_kronecker_brute_force():
    """Eq. 6 in core.pcsa_fit's two orientations, each factor built as there (P = F0ᵀ W F0 by
    Eigenbasis.gram, G from the pencil (M, Λ)), against the dense vectorised solve."""
    rng = np.random.default_rng(0)
    n, m, r = 7, 4, 3
    F0 = rng.standard_normal((r, n))
    W = np.eye(r) * 0.1
    P = F0.T @ W @ F0
    S = rng.standard_normal((m, m)); Lam = S @ S.T + m * np.eye(m)
    M = rng.standard_normal((m, m)); M = 0.3 * (M @ M.T)
    G = np.linalg.solve(Lam, M)                  # G = Λ⁻¹ M
    C = rng.standard_normal((m, n))
    F = KroneckerEigenbasis(Eigenbasis.pencil(M, Lam, "B^-1 A"), Eigenbasis.gram(F0, W)).solve_stein(C)
    brute = np.linalg.solve(np.eye(m * n) - np.kron(G, P.T), C.ravel()).reshape(m, n)     # F − G F P = C
    np.testing.assert_allclose(F, brute, atol=1e-9)
    G2 = M @ np.linalg.inv(Lam)                  # F − P F G2 = C, G2 = (Λ W) γ Wᵀ
    C2 = rng.standard_normal((n, m))
    F2 = KroneckerEigenbasis(Eigenbasis.gram(F0, W), Eigenbasis.pencil(M, Lam, "A B^-1")).solve_stein(C2)
    brute2 = np.linalg.solve(np.eye(m * n) - np.kron(P, G2.T), C2.ravel()).reshape(n, m)
    np.testing.assert_allclose(F2, brute2, atol=1e-9)


@pytest.mark.parametrize("prior,fill", [("ard", "point"), ("jeffreys", "point"), ("ard", "latent")])
def test_bound_monotone_and_planted_recovery(prior, fill):
    rng = np.random.default_rng(1)
    T, X = _planted(rng)
    mask = rng.random(X.shape) > 0.3
    fit = pcsa_fit(X, mask, d1=10, d2=10, prior=prior, max_iter=1500, tol=0, rng=rng, fill=fill)
    b = np.asarray(fit["bound"])
    assert np.all(np.diff(b) >= -1e-8 * np.abs(b[1:])), np.diff(b).min()
    # the co-subspaces are exchangeable in rank (ARD moves it between them slowly), so the total
    # 3 + 2 is what is identifiable; a column is pruned below 1 % of the largest column energy
    assert fit["d1_eff"] + fit["d2_eff"] == 5
    assert 0.07 < 1 / np.sqrt(fit["tau"]) < 0.13
    err = fit["values"] - T
    assert np.sqrt(np.mean(err[~mask] ** 2)) < 0.12        # noise sd 0.1; entries have sd ≈ 2.2


def test_missing_run_through_registry_beats_column_means():
    rng = np.random.default_rng(2)
    T, X = _planted(rng, D1=60, D2=25, noise=0.2)
    hidden = rng.random(X.shape) < 0.4
    M = np.where(hidden, np.nan, X)
    ctx = Context.for_arrays(np.zeros((60, 1)), seed=0)
    for name in ("pcsa", "pcsa-sparse"):
        algo = get_algorithm(name)()
        pred = algo.run(MissingSplit(M, hidden, None, np.arange(60), "real"), algo.Params(), ctx)
        rmse = np.sqrt(np.mean((pred.values - T)[hidden] ** 2))
        colmean = np.nanmean(M, axis=0)[None, :] + 0 * T
        base = np.sqrt(np.mean((colmean - T)[hidden] ** 2))
        assert rmse < 0.15 * base, (name, rmse, base)
        assert pred.diagnostics["d1"] + pred.diagnostics["d2"] == 5


def test_tensor_pcsa3_bound_monotone_and_fills_hidden_entries():
    from malt.algorithms.pcsa.tensor import pcsa_tensor_fit, shift_fold, shift_unfold
    from malt.datasets.synthetic_pcsa import synthetic_pcsa
    ds = synthetic_pcsa((12, 15, 18), (2, 3, 2), noise=0.1, seed=3)
    X, T = ds["M"], ds["truth"]
    np.testing.assert_array_equal(shift_fold(shift_unfold(X, 1), 1, X.shape), X)
    rng = np.random.default_rng(3)
    mask = rng.random(X.shape) > 0.3
    fit = pcsa_tensor_fit(X, mask, rank=6, max_iter=300, tol=0, rng=rng)
    b = np.asarray(fit["bound"])
    assert np.all(np.diff(b) >= -1e-8 * np.abs(b[1:])), np.diff(b).min()
    rmse = np.sqrt(np.mean((fit["values"] - T)[~mask] ** 2))
    assert rmse < 0.1 * T.std(), (rmse, T.std())


def test_latent_fill_keeps_noise_estimate_when_most_entries_missing():
    # 60 % missing: 'point' fill counts the self-fitted entries as zero-residual data and inflates τ
    # (about 1/0.4 at the fixed point); 'latent' fill charges them 1/⟨τ⟩ and recovers the noise sd 0.3
    rng = np.random.default_rng(4)
    T, X = _planted(rng, D1=80, D2=120, d1=2, d2=1, noise=0.3)
    mask = rng.random(X.shape) < 0.4
    sd = {f: 1 / np.sqrt(pcsa_fit(X, mask, d1=8, d2=8, max_iter=400, rng=np.random.default_rng(0),
                                    fill=f)["tau"]) for f in ("point", "latent")}
    assert 0.2 < sd["latent"] < 0.4, sd
    assert sd["point"] < 0.6 * sd["latent"], sd


def test_ratings_split_through_registry_beats_global_mean():
    import scipy.sparse as sp
    from malt.splits import RatingsSplit
    rng = np.random.default_rng(5)
    T, X = _planted(rng, D1=70, D2=90, d1=2, d2=1, noise=0.2)
    obs = np.flatnonzero(rng.random(X.size) < 0.7)
    test = rng.random(obs.size) < 0.3
    r, c = np.unravel_index(obs, X.shape)
    train = sp.coo_matrix((X.ravel()[obs[~test]], (r[~test], c[~test])), shape=X.shape)
    split = RatingsSplit(train, r[test], c[test])
    ctx = Context.for_arrays(np.zeros((70, 1)), seed=0)
    for name in ("pcsa", "pcsa-sparse"):
        algo = get_algorithm(name)()
        pred = algo.run(split, algo.Params(fill="latent"), ctx)
        truth = T[r[test], c[test]]
        rmse = np.sqrt(np.mean((pred.values - truth) ** 2))
        base = np.sqrt(np.mean((train.data.mean() - truth) ** 2))
        assert pred.values.shape == truth.shape
        assert rmse < 0.5 * base, (name, rmse, base)


def test_missing_task_completes_the_orl_person_image_pixel_tensor_through_malt_cv(tmp_path):
    """source=T: the k-way component reaches pcsa-tensor; a 3-way fit beats the global mean."""
    from tests.conftest import require_data
    from tests.helpers import run_malt
    from malt.results import ResultSet

    require_data("matrix/orl-faces")
    repo = tmp_path / "repo"
    run_malt("cv", "--repo", str(repo), "--quiet", "--algo", "pcsa-tensor", "--param", "max_iter=5",
             "--param", "rank=4", "--dataset", "orl-faces", "--task", "missing", "--task-param", "source=T",
             "--missing", "0.1", "--folds", "1", timeout=300)
    frame = ResultSet.load(repo).frame
    corr = float(frame[frame.metric == "correlation"].value.iloc[0])
    assert corr > 0.5  # the global mean has correlation 0 with the hidden pixels


def test_observed_factor_update_is_the_per_row_gaussian_posterior():
    """One coordinate update of the observed-entry inference: for each row, Σ⁻¹ = diag(λ) + τ Σ_j⟨v vᵀ⟩
    and μ = τ Σ (Σ_j x_ij ν_j − Σ_j ⟨v_free v_const⟩), written out row by row."""
    import scipy.sparse as sp
    from malt.algorithms.pcsa.observed import Packing, _factor_update
    rng = np.random.default_rng(6)
    n, m, d = 6, 9, 4
    X = sp.random(n, m, density=0.5, random_state=1, format="csr")
    pat = X.copy(); pat.data[:] = 1
    V = rng.standard_normal((m, d)); V[:, -1] = 1.0        # the last component is the constant
    S = rng.standard_normal((m, d, d)) * 0.1
    S = S @ np.transpose(S, (0, 2, 1)); S[:, -1, :] = 0; S[:, :, -1] = 0
    prec, tau = np.array([2.0, 1.0, 0.5, 1.0]), 1.7
    pk = Packing(d)
    mu, C, logdet, _ = _factor_update(X, pat, V, S[:, pk.up, pk.lo], prec, tau, slice(0, d - 1), d - 1)
    C = pk.unpack(C)
    for i in range(n):
        o = X[i].indices
        E = V[o][:, :, None] * V[o][:, None, :] + S[o]
        P = np.diag(prec[:3]) + tau * E.sum(0)[:3, :3]
        rhs = X[i].data @ V[o][:, :3] - E.sum(0)[:3, 3]
        np.testing.assert_allclose(C[i, :3, :3], np.linalg.inv(P), atol=1e-10)
        np.testing.assert_allclose(mu[i, :3], tau * np.linalg.solve(P, rhs), atol=1e-10)
        assert mu[i, 3] == 1.0 and np.all(C[i, 3] == 0)
    assert np.isclose(logdet, sum(-np.linalg.slogdet(np.linalg.inv(C[i, :3, :3]))[1] for i in range(n)))


@pytest.mark.parametrize("prior", ["ard", "jeffreys"])
def test_observed_inference_bound_monotone_and_recovers_planted_biased_co_subspaces(prior):
    from malt.algorithms.pcsa.observed import pcsa_observed_fit
    rng = np.random.default_rng(7)
    T, X = _planted(rng, D1=60, D2=80, d1=2, d2=1, noise=0.1)
    T = T + rng.normal(0, 1, (60, 1)) + rng.normal(0, 1, (1, 80))     # row and column biases
    X = T + 0.1 * rng.standard_normal(T.shape)
    obs = rng.random(T.shape) < 0.3
    r, c = np.nonzero(obs)
    fit = pcsa_observed_fit(r, c, X[r, c], T.shape, d1=6, d2=6, prior=prior, max_iter=300, tol=0, rng=rng)
    b = np.asarray(fit["bound"])
    assert np.all(np.diff(b) >= -1e-8 * np.abs(b[1:])), np.diff(b).min()
    est = fit["U"] @ fit["V"].T
    rmse = np.sqrt(np.mean((est - T)[~obs] ** 2))
    assert rmse < 0.2 * T[~obs].std(), (rmse, T.std())
    assert 0.07 < 1 / np.sqrt(fit["tau"]) < 0.13
    assert fit["d1_eff"] + fit["d2_eff"] <= 5
