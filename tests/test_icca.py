"""Sparse infinite CCA (Rai & Daumé 2009): IBP prior moments, conditional draws against closed forms,
recovery of planted components (§5.1), and the registered multilabel algorithm."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from malt.algorithms.icca import (ICCAState, effective_sample_size, latent_mean, propose_new_dishes, run_icca,
                                  sample_ibp, sample_z, split_rhat)
from malt.engine.context import Context
from malt.datasets.synthetic_cca import synthetic_cca


def test_ibp_prior_moments():
    """E[K] = α H_N, per-row counts Poisson(α) (mean α, variance α), total ones mean N α."""
    rng = np.random.default_rng(1)
    alpha, n, reps = 3.0, 12, 3000
    draws = [sample_ibp(alpha, n, rng) for _ in range(reps)]
    K = np.array([B.shape[1] for B in draws])
    H = np.sum(1.0 / np.arange(1, n + 1))
    se = np.sqrt(alpha * H / reps)  # K ~ Poisson(α H_N)
    assert abs(K.mean() - alpha * H) < 4 * se
    assert abs(K.var() / (alpha * H) - 1) < 0.1
    rows = np.concatenate([B.sum(1) for B in draws])
    assert abs(rows.mean() - alpha) < 4 * np.sqrt(alpha / rows.size) * 3  # rows within a draw correlate
    # each row's count is Poisson(α): compare its histogram for row 5 with the pmf
    row5 = np.array([B[5].sum() for B in draws])
    counts = np.bincount(row5, minlength=12)[:8]
    expected = reps * stats.poisson.pmf(np.arange(8), alpha)
    assert stats.chisquare(counts, expected * counts.sum() / expected.sum()).pvalue > 1e-3


def test_z_posterior_matches_paper_form():
    """Woodbury form of §3.3: μ = Wᵀ(WWᵀ+Ψ)⁻¹a, Σ = I − Wᵀ(WWᵀ+Ψ)⁻¹W; checked on the sample moments."""
    rng = np.random.default_rng(0)
    D, K = 6, 3
    W = rng.standard_normal((D, K))
    psi = rng.uniform(0.5, 2, D)
    a = rng.standard_normal(D)
    S = W @ W.T + np.diag(psi)
    mu = W.T @ np.linalg.solve(S, a)
    Sig = np.eye(K) - W.T @ np.linalg.solve(S, W)
    np.testing.assert_allclose(latent_mean(a[None], W, psi)[0], mu, rtol=1e-10)
    Zs = sample_z(np.tile(a, (20000, 1)), W, psi, rng)
    np.testing.assert_allclose(Zs.mean(0), mu, atol=0.03)
    np.testing.assert_allclose(np.cov(Zs.T), Sig, atol=0.03)


def test_birth_acceptance_is_the_marginal_likelihood_ratio():
    """A strong unexplained signal on one dimension is explained by new dishes on that row only."""
    rng = np.random.default_rng(0)
    N, D = 200, 5
    A = 0.1 * rng.standard_normal((N, D))
    A[:, 2] += 3 * rng.standard_normal(N)
    st = ICCAState(B=np.zeros((D, 0), bool), V=np.zeros((D, 0)), Z=np.zeros((N, 0)),
                   psi=np.full(D, 0.01), sigma_v2=4.0, alpha=20.0)
    added = sum(propose_new_dishes(A, st, rng) for _ in range(5))
    assert added > 0 and st.B.shape[1] == added
    assert st.B[2].all() and not np.delete(st.B, 2, axis=0).any()


def test_convergence_diagnostics_on_sequences_with_known_answers():
    """ESS of i.i.d. draws ≈ n; of an AR(1) with φ = 0.8, n(1 − φ)/(1 + φ) = n/9 (its integrated
    autocorrelation time is (1 + φ)/(1 − φ)); split-R̂ ≈ 1 for a stationary sequence, well above for a trend."""
    rng = np.random.default_rng(0)
    n = 20000
    iid = rng.standard_normal(n)
    assert abs(effective_sample_size(iid) / n - 1) < 0.1
    ar = np.empty(n)
    ar[0] = 0.0
    e = rng.standard_normal(n)
    for t in range(1, n):
        ar[t] = 0.8 * ar[t - 1] + e[t]
    assert abs(effective_sample_size(ar) / (n / 9) - 1) < 0.2
    assert split_rhat(iid) < 1.01
    assert split_rhat(iid[:400] + np.linspace(0, 3, 400)) > 1.2
    assert split_rhat(np.full(100, 4.0)) == 1.0 and split_rhat(np.repeat([3.0, 4.0], 50)) == np.inf


@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_planted_components_and_sparsity(seed):
    """§5.1 setting: 4 components, 63 % zeros; the chain settles on K = 4 with a sparse W, and decides
    by itself that it has converged well before its cap."""
    ds = synthetic_cca(seed=seed)
    A = np.hstack([ds.components["X"], ds.components["Y"]])
    A = (A - A.mean(0)) / A.std(0)
    Ks, sparsity = [], []

    def collect(st, _A, t):
        Ks.append((t, st.B.shape[1]))
        sparsity.append((t, 1 - st.B.mean()))

    _, diag = run_icca(A, np.zeros(A.shape, bool), alpha=1.0, rng=np.random.default_rng(seed), min_sweeps=300,
                       max_sweeps=1500, callback=collect)
    assert diag["converged"] and diag["sweeps"] < 1500 and diag["burn_in"] == diag["sweeps"] // 2
    assert all(v < 1.05 for v in diag["rhat"].values()) and all(v >= 50 for v in diag["ess"].values())
    K_mode = np.bincount([k for t, k in Ks if t >= diag["burn_in"]]).argmax()
    assert K_mode == 4
    assert 0.35 < np.mean([v for t, v in sparsity if t >= diag["burn_in"]]) < 0.75


def test_multilabel_models_1_and_2_beat_the_label_prior():
    from malt.registry import get
    from malt.splits import MultilabelSplit

    rng = np.random.default_rng(0)
    n, d, L = 160, 10, 4
    Zl = rng.standard_normal((n, 2))
    X = Zl @ rng.standard_normal((2, d)) + 0.3 * rng.standard_normal((n, d))
    Y = (Zl @ rng.standard_normal((2, L)) + 0.3 * rng.standard_normal((n, L)) > 0).astype(float)
    train, test = np.arange(120), np.arange(120, 160)
    Ytr = Y[train].copy()
    Ytr[rng.random(Ytr.shape) < 0.1] = np.nan
    split = MultilabelSplit(X[train], Ytr, X[test], train, test)
    algo = get("icca")
    for semi, features in ((False, "sampled"), (True, "sampled"), (True, "x-posterior")):
        pred = algo().run(split, algo.Params(semi_supervised=semi, svm_features=features, min_sweeps=100,
                                             max_sweeps=300), Context.for_arrays(X, seed=0))
        assert pred.scores.shape == (40, L)
        acc = np.mean(pred.labels == Y[test])
        prior = np.mean(np.maximum(Y[train].mean(0), 1 - Y[train].mean(0)))
        assert acc > max(0.8, prior + 0.1), (semi, acc)
        d = pred.diagnostics
        assert d["K"] >= 1 and 0 <= d["sparsity"] < 1
        assert 100 <= d["sweeps"] <= 300 and d["samples_averaged"] >= 5
        assert set(d["rhat"]) == set(d["ess"]) == {"log_likelihood", "K", "sigma_v2", "mean_log_psi"}
        assert 0.5 < d["train_f1_micro"] <= 1 and d["rhat_K"] == d["rhat"]["K"]


def test_an_unconverged_chain_says_so():
    """Capped at its minimum on the §5.1 data (births still growing K), the chain reports converged=False."""
    ds = synthetic_cca(seed=0)
    A = np.hstack([ds.components["X"], ds.components["Y"]])
    A = (A - A.mean(0)) / A.std(0)
    _, diag = run_icca(A, np.zeros(A.shape, bool), alpha=1.0, rng=np.random.default_rng(0), min_sweeps=8,
                       max_sweeps=8)
    assert diag["sweeps"] == 8 and not diag["converged"]


def test_bad_sweep_bounds_are_a_user_error():
    from malt.errors import MaltError
    from malt.registry import get
    from malt.splits import MultilabelSplit

    X = np.zeros((4, 2))
    split = MultilabelSplit(X[:2], np.zeros((2, 1)), X[2:], np.arange(2), np.arange(2, 4))
    algo = get("icca")
    with pytest.raises(MaltError, match="min_sweeps"):
        algo().run(split, algo.Params(min_sweeps=20, max_sweeps=10), Context.for_arrays(X))


def test_the_recovery_task_scores_the_generators_own_answer_zero():
    """Closed form: the generator's W and K as an answer have no error; a dense W misses exactly the
    generator's fraction of zeros (its exact zeros and its planted loadings under 5 % of their column's
    largest)."""
    from malt.splits import Prediction
    from malt.tasks import get_task

    ds = synthetic_cca(seed=0)
    task = get_task("recovery")
    options = task.Params()
    split = task.split(ds, options, 0)
    W = ds.components["W"]
    assert task.score(ds, options, split, Prediction(extras={"K": 4, "W": W})) == {"k_error": 0.0,
                                                                                   "sparsity_error": 0.0}
    dense = task.score(ds, options, split, Prediction(extras={"K": 6, "W": np.ones((35, 6))}))
    small = np.abs(W) <= 0.05 * np.abs(W).max(0)
    assert 0.6 < np.mean(W == 0) <= np.mean(small) < 0.7
    assert dense == {"k_error": 2.0, "sparsity_error": pytest.approx(np.mean(small))}


@pytest.mark.timeout(120)
def test_icca_recovers_the_sparse_structure_cca_cannot(tmp_path):
    """§5.1 through `malt.cv`: icca finds the 4 planted components and far fewer spurious nonzero loadings
    than classical CCA, whose canonical directions are dense (Rai & Daumé 2009, §5.1 and Figure 2)."""
    import malt

    run = malt.cv(["icca", "cca"], dataset="synthetic-cca", task="recovery", repeats=3, repo=tmp_path / "r")
    assert run.ok and run.ran == 6
    s = malt.load(tmp_path / "r").summary(by="algorithm").set_index(["algorithm", "metric"])["mean"]
    assert s["icca", "k_error"] == 0 and s["cca", "k_error"] == 0
    assert s["icca", "sparsity_error"] < 0.5 * s["cca", "sparsity_error"]


def test_the_unmixed_warning_is_recorded_with_the_unit(tmp_path):
    """Through `malt.cv`: a chain capped at 20 sweeps stores one warning line in its unit's record beside
    its R̂ per monitored scalar."""
    import malt

    run = malt.cv("icca", dataset="synthetic-cca", task="recovery", params={"min_sweeps": 20, "max_sweeps": 20},
                  repo=tmp_path / "r", quiet=True)
    assert run.ok
    records = malt.load(tmp_path / "r").records()
    assert len(records) == 5  # the recovery task's five seeds
    for record in records:
        assert record["diagnostics"]["converged"] is False and "K" in record["diagnostics"]["rhat"]
        (line,) = record["warnings"]
        assert line.startswith("icca: the chain has not mixed after 20 sweeps") and "\n" not in line


def test_factor_analysis_rank_finds_the_planted_number_of_factors():
    """Independent reference: the generator's K. Three sparse planted factors under unit noise (the §5.1
    draws' 4 are checked through the chain below); pure noise gives the smallest K, 1."""
    from malt.algorithms.icca import factor_analysis_rank

    rng = np.random.default_rng(0)
    N, D = 500, 30
    W = np.zeros((D, 3))
    W[:10, 0], W[10:20, 1], W[20:, 2] = 1.0, -1.0, 1.0
    A = rng.standard_normal((N, 3)) @ W.T + rng.standard_normal((N, D))
    assert factor_analysis_rank(A, rng) == 3
    assert factor_analysis_rank(rng.standard_normal((N, D)), rng) == 1


@pytest.mark.parametrize("seed", [0, 1])
def test_factor_analysis_start_recovers_planted_components_and_sparsity(seed):
    """§5.1 setting from the factor-analysis start: the generator's K = 4 (the independent reference) is
    the chain's mode after burn-in, the zeros of W are near the generator's 63 %, and the chain decides by
    itself that it has converged."""
    from malt.algorithms.icca import factor_analysis_state

    ds = synthetic_cca(seed=seed)
    A = np.hstack([ds.components["X"], ds.components["Y"]])
    A = (A - A.mean(0)) / A.std(0)
    start = factor_analysis_state(A, 4, 1.0, np.random.default_rng(seed))
    assert start.B.shape == (35, 4) and start.psi.shape == (35,) and np.all(start.V[~start.B] == 0)
    Ks, sparsity = [], []

    def collect(st, _A, t):
        Ks.append((t, st.B.shape[1]))
        sparsity.append((t, 1 - st.B.mean()))

    _, diag = run_icca(A, np.zeros(A.shape, bool), alpha=1.0, rng=np.random.default_rng(seed), min_sweeps=300,
                       max_sweeps=1500, init="factor-analysis", callback=collect)
    assert diag["converged"] and all(v < 1.05 for v in diag["rhat"].values())
    assert np.bincount([k for t, k in Ks if t >= diag["burn_in"]]).argmax() == 4
    true_zeros = np.mean(ds.components["W"] == 0)
    assert abs(np.mean([v for t, v in sparsity if t >= diag["burn_in"]]) - true_zeros) < 0.1


def test_malt_cv_prints_the_unmixed_warning_once_per_kind(tmp_path):
    """`malt cv` says on stderr, in one line, that the units' chains have not mixed (how many units, where),
    beside the stored record; the experiment id stays the last line of stdout. `malt show` repeats the line
    under its table."""
    from tests.helpers import run_malt

    out = run_malt("cv", "--repo", tmp_path / "r", "--algo", "icca", "--dataset", "synthetic-cca", "--task", "recovery",
                   "--param", "min_sweeps=20", "--param", "max_sweeps=20", "--quiet")
    lines = [line for line in out.stderr.splitlines() if line.startswith("warning: ")]
    assert len(lines) == 1 and lines[0].startswith("warning: 5 unit(s): icca: the chain has not mixed after 20 sweeps")
    experiment = out.stdout.strip().splitlines()[-1]
    assert experiment.startswith("synthetic-cca-recovery-")
    shown = run_malt("show", experiment, "--repo", tmp_path / "r")  # the numbers, with the reason to doubt them
    assert [line for line in shown.stderr.splitlines() if line.startswith("warning: ")] == lines
    as_csv = run_malt("show", experiment, "--repo", tmp_path / "r", "--format", "csv")  # scripts read stdout alone
    assert "warning" not in as_csv.stderr and "not mixed" not in as_csv.stdout
