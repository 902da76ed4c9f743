"""Sparse infinite CCA (Rai & Daumé III, 2009) for multi-label prediction.

Probabilistic CCA (§2.1) ``[x; y] ~ N(W z, Ψ)`` with ``W = B ⊙ V`` (§3.2): ``B ~ IBP(α)`` over the
D = D1 + D2 observed dimensions, ``V ~ N(0, σ_v² I)``, ``z ~ N(0, I)``, Ψ diagonal with inverse-gamma
priors. Inference is the Gibbs sampler of §3.3 with a Metropolis–Hastings step for new dishes.

Vectorisation (given Z and Ψ the rows of W are conditionally independent):

* b_dk for a whole column k: the collapsed (V_dk integrated out) log likelihood ratios of all D rows
  come from one residual product; only the IBP prior term m_{-d,k} is sequential over d (a scalar
  loop over precomputed ratios).
* new dishes (singletons on row d): V_new from the prior, Z_new from its posterior, so the MH ratio is
  the marginal ∏_n N(r_dn; 0, ψ_d + Σ v²) / N(r_dn; 0, ψ_d), computed for every row at once.
* Z, Ψ, σ_v and the imputed entries (missing labels; Model-2's test labels, §4.2) are block draws.

Start: one random column (K = 1), dishes grown by births; or (``init='factor-analysis'``) maximum-likelihood
factor analysis of the data (K by AIC), varimax-rotated and thresholded, so the chain begins near its
number of dishes instead of growing them one birth at a time.

Hyper-priors: the paper (§3.2) gives σ_v ~ IG(a, b) and an inverse-gamma prior on each ψ_d without values,
and none for α; we use IG(1, 1) for σ_v² and every ψ_d and Gamma(1, 1) for α (`sample_hypers`).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from malt.numerics import linalg
from malt.algorithms.subspace_svm import label_svms, micro_f1_known
from malt.errors import DataError
from malt.params import Interval, Options, When, param
from malt.registry import Algorithm, register
from malt.numerics.decisions import NaturalThresholdParams, decide_by_refits
from malt.splits import MultilabelSplit, Prediction, RecoverySplit


# ---------------------------------------------------------------------------------------------
# IBP prior (§3.1)
# ---------------------------------------------------------------------------------------------
def sample_ibp(alpha: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw an n-row binary matrix from IBP(α) by the Indian buffet (§3.1).

    Customer i takes an existing dish k with probability m_k / i and Poisson(α / i) new dishes, so
    E[K] = α H_n and every row's count is Poisson(α).
    """
    rows: list[np.ndarray] = []
    m = np.zeros(0)
    for i in range(1, n + 1):  # sequential by definition of the process
        old = rng.random(m.size) < m / i
        k_new = rng.poisson(alpha / i)
        row = np.concatenate([old, np.ones(k_new, bool)])
        m = np.concatenate([m, np.zeros(k_new)]) + row
        rows.append(row)
    B = np.zeros((n, m.size), dtype=bool)
    for i, row in enumerate(rows):
        B[i, :row.size] = row
    return B


# ---------------------------------------------------------------------------------------------
# Gibbs sampler (§3.3)
# ---------------------------------------------------------------------------------------------
@dataclass
class ICCAState:
    """One state of the chain. Data ``A`` is (N, D): samples in rows, [x; y] dimensions in columns."""

    B: np.ndarray      # (D, K) bool
    V: np.ndarray      # (D, K), zero where B == 0
    Z: np.ndarray      # (N, K)
    psi: np.ndarray    # (D,) noise variances Ψ
    sigma_v2: float
    alpha: float

    @property
    def W(self) -> np.ndarray:
        return np.where(self.B, self.V, 0.0)


def sample_z(A: np.ndarray, W: np.ndarray, psi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Z | A, W, Ψ (§3.3, 'Sampling Z'): rows ~ N(P⁻¹ Wᵀ Ψ⁻¹ a_n, P⁻¹), P = I + Wᵀ Ψ⁻¹ W.

    Equal to the paper's μ = Wᵀ(WWᵀ + Ψ)⁻¹ a, Σ = I − Wᵀ(WWᵀ + Ψ)⁻¹W by the Woodbury identity,
    but costs a K × K factorisation instead of D × D.
    """
    N, K = A.shape[0], W.shape[1]
    if K == 0:
        return np.zeros((N, 0))
    Wp = W / psi[:, None]
    L = np.linalg.cholesky(np.eye(K) + W.T @ Wp)
    mean = np.linalg.solve(L.T, np.linalg.solve(L, Wp.T @ A.T)).T
    return mean + np.linalg.solve(L.T, rng.standard_normal((K, N))).T


def latent_mean(A: np.ndarray, W: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """E[z | a] = (Wᵀ Ψ⁻¹ W + I)⁻¹ Wᵀ Ψ⁻¹ a for every row of A (§4.1, μ_{Z|X})."""
    K = W.shape[1]
    if K == 0:
        return np.zeros((A.shape[0], 0))
    Wp = W / psi[:, None]
    return np.linalg.solve(np.eye(K) + W.T @ Wp, Wp.T @ A.T).T


def _logsumexp2(a, b):
    m = np.maximum(a, b)
    return m + np.log(np.exp(a - m) + np.exp(b - m))


def sweep_b_v(A, st: ICCAState, rng: np.random.Generator) -> None:
    """Existing dishes: B[:, k] then V[:, k] for each column k (§3.3 'Sampling B', 'Sampling V').

    The residual excluding column k, R_k = A − Σ_{l≠k} W_l z_lᵀ, is kept by rank-one updates. With V_dk
    integrated out, log p(b_dk = 1)/p(b_dk = 0) from the likelihood is
    ½ log(s_dk / σ_v²) + ½ μ_dk² / s_dk,  s_dk = (Σ_n z_nk² / ψ_d + 1/σ_v²)⁻¹,  μ_dk = s_dk Σ_n z_nk R_dn / ψ_d,
    for all d at once; the IBP prior m_{-d,k} / D vs (D − m_{-d,k}) / D is applied sequentially over d.
    """
    D = A.shape[1]
    R = A - st.Z @ st.W.T                       # (N, D) full residual
    for k in range(st.B.shape[1]):
        z = st.Z[:, k]
        Rk = R + np.outer(z, st.W[:, k])        # residual without column k
        zz = z @ z
        s = 1.0 / (zz / st.psi + 1.0 / st.sigma_v2)
        mu = s * (z @ Rk) / st.psi
        llr = 0.5 * np.log(s / st.sigma_v2) + 0.5 * mu ** 2 / s
        b = st.B[:, k].copy()
        m = b.sum()
        u = np.log(rng.random(D))
        for d in range(D):  # IBP prior is sequential in the other rows' counts
            m_d = m - b[d]
            if m_d == 0:
                new = False
            else:
                l1 = math.log(m_d) + llr[d]
                l0 = math.log(D - m_d)
                new = u[d] < l1 - float(_logsumexp2(l1, l0))
            m += int(new) - int(b[d])
            b[d] = new
        v = np.where(b, mu + np.sqrt(s) * rng.standard_normal(D), 0.0)
        st.B[:, k], st.V[:, k] = b, v
        R = Rk - np.outer(z, v)
    keep = st.B.any(axis=0)
    st.B, st.V, st.Z = st.B[:, keep], st.V[:, keep], st.Z[:, keep]


def propose_new_dishes(A, st: ICCAState, rng: np.random.Generator, max_new: int = 3) -> int:
    """MH birth of singleton dishes, one proposal per dimension d, all at once (§3.3).

    K_new ~ Poisson(α / D) (truncated at ``max_new``), V_new from its prior, Z_new from its posterior
    given the residual of row d, so the acceptance ratio is the Z-marginal likelihood ratio of that row:
    ∏_n N(r_dn; 0, ψ_d + Σ_j v_j²) / N(r_dn; 0, ψ_d). Returns the number of dishes added.
    """
    N, D = A.shape
    R = A - st.Z @ st.W.T
    k_new = np.minimum(rng.poisson(st.alpha / D, size=D), max_new)
    rows = np.flatnonzero(k_new)
    if rows.size == 0:
        return 0
    added = 0
    for d in rows:  # only the few rows with a proposal (≈ α of them per sweep)
        v = np.sqrt(st.sigma_v2) * rng.standard_normal(k_new[d])
        s2 = v @ v
        r = R[:, d]
        psi = st.psi[d]
        log_a = -0.5 * N * math.log1p(s2 / psi) + 0.5 * (r @ r) * (1 / psi - 1 / (psi + s2))
        if math.log(rng.random()) < log_a:
            # Z_new | r ~ N(P⁻¹ v r_n / ψ, P⁻¹), P = I + v vᵀ / ψ
            P = np.eye(v.size) + np.outer(v, v) / psi
            L = np.linalg.cholesky(P)
            mean = np.linalg.solve(P, np.outer(v, r) / psi)
            Znew = (mean + np.linalg.solve(L.T, rng.standard_normal((v.size, N)))).T
            Bn = np.zeros((D, v.size), bool)
            Bn[d] = True
            Vn = np.zeros((D, v.size))
            Vn[d] = v
            st.B = np.hstack([st.B, Bn])
            st.V = np.hstack([st.V, Vn])
            st.Z = np.hstack([st.Z, Znew])
            R[:, d] -= Znew @ v
            added += v.size
    return added


def sample_hypers(A, st: ICCAState, rng, a_psi=1.0, b_psi=1.0, a_v=1.0, b_v=1.0, a_alpha=1.0, b_alpha=1.0):
    """Conjugate draws: ψ_d ~ IG(a + N/2, b + ½ Σ_n r_dn²); σ_v² ~ IG(a + nnz/2, b + ½ Σ V²) (§3.2);
    α ~ Gamma(a + K, b + H_D) (the IBP's conjugate update)."""
    N, D = A.shape
    R = A - st.Z @ st.W.T
    st.psi = 1.0 / rng.gamma(a_psi + N / 2, 1.0 / (b_psi + 0.5 * (R ** 2).sum(0)))
    nnz = st.B.sum()
    st.sigma_v2 = 1.0 / rng.gamma(a_v + nnz / 2, 1.0 / (b_v + 0.5 * (st.V[st.B] ** 2).sum()))
    H = np.sum(1.0 / np.arange(1, D + 1))
    st.alpha = rng.gamma(a_alpha + st.B.shape[1], 1.0 / (b_alpha + H))


def impute(A, missing, st: ICCAState, rng) -> np.ndarray:
    """Missing entries ~ N((W z_n)_d, ψ_d) (§4.2: unknown labels are latent variables)."""
    if not missing.any():
        return A
    mean = st.Z @ st.W.T
    draw = mean + np.sqrt(st.psi) * rng.standard_normal(A.shape)
    return np.where(missing, draw, A)


# ---------------------------------------------------------------------------------------------
# Initial state near the stationary K: factor analysis, varimax-rotated and thresholded
# ---------------------------------------------------------------------------------------------
def factor_analysis_rank(A: np.ndarray, rng: np.random.Generator, step: int | None = None) -> int:
    """The number of factors K with the best AIC, ℓ_K − p_K, of maximum-likelihood factor analysis of A (N, D):
    ℓ_K the FA log likelihood, p_K = D K − K (K − 1)/2 + D its free parameters (loadings up to rotation,
    and Ψ). K runs over 1, 1 + step, … (step ≈ D / 24) and stops once AIC has fallen twice in a row or Ψ
    hits a Heywood case (some ψ_d < 10⁻³, the factors reproducing a dimension exactly). On the §5.1 draws it
    gives the planted 4 (one draw of five: 5); on yeast's training [X; Y] ≈ 90, near the K a chain
    started there keeps (≈ 78), where births from K = 1 reach only ≈ 45 in 1000 sweeps.
    Cost: the FA fits, O(iterations · N D K) each."""
    from sklearn.decomposition import FactorAnalysis

    N, D = A.shape
    step = step or max(1, round(D / 24))
    best_K, best_aic, falls = 1, -np.inf, 0
    for K in range(1, D, step):
        fa = FactorAnalysis(n_components=K, random_state=int(rng.integers(2 ** 31))).fit(A)
        if fa.noise_variance_.min() < 1e-3:
            break
        aic = fa.score(A) * N - (D * K - K * (K - 1) / 2 + D)
        if aic > best_aic:
            best_K, best_aic, falls = K, aic, 0
        else:
            falls += 1
            if falls == 2:
                break
    return best_K


def factor_analysis_state(A: np.ndarray, K: int, alpha: float, rng: np.random.Generator,
                          threshold: float = 0.1) -> ICCAState:
    """A sparse starting state from maximum-likelihood factor analysis of A (N, D) with K factors.

    Loadings W (D, K) and Ψ from sklearn's FactorAnalysis, varimax-rotated (the rotation of the FA
    solution with the most near-zero loadings, the sparse mode the IBP prior favours rather than PCA's dense
    rotation), B = |W| > ``threshold`` (a loading below 0.1 explains under 1 % of a standardised
    dimension's variance), empty columns dropped; V = W on B, σ_v² the mean of V² there, Z drawn from its
    posterior given W, Ψ (`sample_z`). Cost O(iterations · N D K)."""
    from sklearn.decomposition import FactorAnalysis

    fa = FactorAnalysis(n_components=K, rotation="varimax", random_state=int(rng.integers(2 ** 31))).fit(A)
    W = fa.components_.T
    B = np.abs(W) > threshold
    keep = B.any(axis=0)
    B, V = B[:, keep], np.where(B, W, 0.0)[:, keep]
    psi = np.maximum(fa.noise_variance_, 1e-3)
    sigma_v2 = float(np.mean(V[B] ** 2)) if B.any() else 1.0
    return ICCAState(B=B, V=V, Z=sample_z(A, V, psi, rng), psi=psi, sigma_v2=sigma_v2, alpha=alpha)


# ---------------------------------------------------------------------------------------------
# Convergence diagnostics: the sampler decides its own run length
# ---------------------------------------------------------------------------------------------
def split_rhat(x: np.ndarray, splits: int = 4) -> float:
    """Potential scale reduction R̂ of one chain cut into ``splits`` consecutive segments (Gelman et al.,
    BDA3 §11.4, split-R̂): sqrt(((n−1)/n W + B/n) / W), W the mean within-segment variance and B/n the
    variance of the segment means. 1 for a stationary chain; a trend or a jump between segments raises
    it. A quantity constant within and across segments gives 1, constant within but not across, inf."""
    x = np.asarray(x, float)
    n = x.size // splits
    if n < 2:
        return float("inf")
    seg = x[x.size - n * splits:].reshape(splits, n)
    W = seg.var(axis=1, ddof=1).mean()
    B_n = seg.mean(axis=1).var(ddof=1)
    if W == 0:
        return 1.0 if B_n == 0 else float("inf")
    return float(np.sqrt(((n - 1) / n * W + B_n) / W))


def effective_sample_size(x: np.ndarray) -> float:
    """n / (1 + 2 Σ ρ_t) with Geyer's initial monotone positive sequence (autocorrelations by FFT).

    An i.i.d. sequence gives ≈ n, an AR(1) with coefficient φ gives ≈ n (1 − φ)/(1 + φ). A constant
    sequence carries no information about its spread; it counts as n (nothing left to mix)."""
    x = np.asarray(x, float)
    n = x.size
    if n < 4:
        return float(n)
    y = x - x.mean()
    if not np.any(y):
        return float(n)
    f = np.fft.rfft(y, 2 * n)
    acov = np.fft.irfft(f * np.conj(f))[:n] / n
    rho = acov / acov[0]
    pairs = rho[: n - n % 2].reshape(-1, 2).sum(axis=1)  # Γ_k = ρ_2k + ρ_2k+1
    positive = np.flatnonzero(pairs <= 0)
    pairs = pairs[: positive[0] if positive.size else pairs.size]
    pairs = np.minimum.accumulate(pairs)                  # monotone
    tau = -1.0 + 2.0 * pairs.sum()
    return float(n / max(tau, 1.0 / n))


def log_likelihood(A: np.ndarray, observed: np.ndarray, st: "ICCAState") -> float:
    """log p(A_observed | W, Z, Ψ) = Σ_observed log N(a_nd; (W z_n)_d, ψ_d)."""
    R = A - st.Z @ st.W.T
    terms = -0.5 * (np.log(2 * np.pi * st.psi)[None, :] + R ** 2 / st.psi[None, :])
    return float(terms[observed].sum())


def marginal_log_likelihood(A: np.ndarray, W: np.ndarray, psi: np.ndarray) -> float:
    """log p(A | W, Ψ) = Σ_n log N(a_n; 0, W Wᵀ + Ψ), Z integrated out (A fully observed, (N, D)).

    Woodbury with P = I + Wᵀ Ψ⁻¹ W = L Lᵀ: log|WWᵀ + Ψ| = log|P| + Σ log ψ_d and
    aᵀ(WWᵀ + Ψ)⁻¹a = aᵀΨ⁻¹a − ‖L⁻¹ Wᵀ Ψ⁻¹ a‖²; cost O(N D K + K³)."""
    N, D = A.shape
    quad = np.sum(A ** 2 / psi)
    logdet = np.sum(np.log(psi))
    if W.shape[1]:
        Wp = W / psi[:, None]
        L = np.linalg.cholesky(np.eye(W.shape[1]) + W.T @ Wp)
        quad -= np.sum(np.linalg.solve(L, Wp.T @ A.T) ** 2)
        logdet += 2 * np.sum(np.log(np.diag(L)))
    return float(-0.5 * (N * D * math.log(2 * math.pi) + N * logdet + quad))


MONITORED = ("log_likelihood", "K", "sigma_v2", "mean_log_psi")


def convergence(trace: dict[str, list], burn_in: int) -> dict[str, dict[str, float]]:
    """Split-R̂ and effective sample size of each monitored scalar over the sweeps after ``burn_in``.
    The scalars are invariant to relabelling the components, so label switching does not inflate them."""
    return {name: {"rhat": split_rhat(np.asarray(trace[name][burn_in:])),
                   "ess": effective_sample_size(np.asarray(trace[name][burn_in:]))} for name in MONITORED}


def _flat_convergence(diag) -> dict[str, float]:
    """``rhat_<scalar>`` and ``ess_<scalar>`` as flat numbers: the diagnostics table keeps scalars only."""
    return {f"{stat}_{name}": round(float(value), 4) for stat in ("rhat", "ess")
            for name, value in diag[stat].items()}


class ChainNotMixedWarning(RuntimeWarning):
    """A unit's chain stopped at its sweep cap before every monitored scalar passed the mixing test."""


def warn_if_not_mixed(diag, target_rhat: float, min_ess: float) -> None:
    """One line (recorded with the unit by the runner) naming the monitored scalars that failed."""
    if diag["converged"]:
        return
    bad = [f"{name} R̂ {diag['rhat'][name]:.2f} ESS {diag['ess'][name]:.0f}" for name in diag["rhat"]
           if not (diag["rhat"][name] < target_rhat and diag["ess"][name] >= min_ess)]
    warnings.warn(f"icca: the chain has not mixed after {diag['sweeps']} sweeps ({'; '.join(bad)}; "
                  f"target R̂ < {target_rhat}, ESS ≥ {min_ess:g}); its averages come from an unmixed chain, "
                  "raise max_sweeps", ChainNotMixedWarning, stacklevel=2)


def run_icca(A, missing, *, alpha, rng, max_sweeps=1000, min_sweeps=200, check_every=50, target_rhat=1.05,
             min_ess=50.0, K_init=None, psi_init=1.0, hold_psi=0, init="random", callback=None, progress=None):
    """Run the chain on data A (N, D) with the ``missing`` entries imputed each sweep, until it has
    converged or ``max_sweeps``.

    Run length: every ``check_every`` sweeps from ``min_sweeps`` on, the first half of the chain is
    burn-in and the second half is checked: every monitored scalar (`MONITORED`: the observed-data log
    likelihood, K, σ_v², mean log ψ) needs split-R̂ < ``target_rhat`` and an effective sample size of at
    least ``min_ess``. ``callback(state, A_filled, sweep)`` is called on every sweep from
    ``min_sweeps // 2`` (the earliest sweep a burn-in can end at); keep what it collects with its sweep
    index and use the sweeps from the returned ``burn_in`` on. ``progress(fraction, message)`` is told
    how far the chain is towards ``max_sweeps``.

    Start (``init``): 'factor-analysis' (an option of the registered algorithm) begins at
    `factor_analysis_state` with K_init factors (default: `factor_analysis_rank`, FA's AIC); 'random' from
    K_init (default 1) random columns, dishes then grown by births. On yeast's training [X; Y] the births
    from K = 1 are still adding dishes at sweep 1000 (K ≈ 45, mean log ψ falling in step), while a chain
    started from FA at K = 80 keeps K at 75–80 for 2000 sweeps; on the §5.1 data both reach K = 4, the FA
    start with sparsity 0.58–0.63 (truth 0.63) where the random one stays at 0.34–0.54 (a denser mode).
    Ψ is held at its start for the first ``hold_psi`` sweeps (``psi_init`` for the random start) so that
    births (accepted when a row's residual exceeds ψ_d) can seed dishes before Ψ absorbs the unexplained
    variance.

    Returns (last state, diagnostics: sweeps, burn_in, converged, per-scalar rhat/ess, trace of K).
    """
    N, D = A.shape
    observed = ~missing
    A = np.where(missing, 0.0, A)
    if init == "factor-analysis":
        st = factor_analysis_state(A, K_init or factor_analysis_rank(A, rng), alpha, rng)
    else:
        K_init = K_init or 1
        st = ICCAState(B=rng.random((D, K_init)) < 0.5, V=rng.standard_normal((D, K_init)),
                       Z=rng.standard_normal((N, K_init)), psi=np.full(D, psi_init), sigma_v2=1.0, alpha=alpha)
        st.V = np.where(st.B, st.V, 0.0)
    psi_held = st.psi
    trace: dict[str, list] = {name: [] for name in MONITORED}
    converged, stats = False, {}
    t = 0
    for t in range(max_sweeps):
        A = impute(A, missing, st, rng)
        st.Z = sample_z(A, st.W, st.psi, rng)
        sweep_b_v(A, st, rng)
        propose_new_dishes(A, st, rng)
        sample_hypers(A, st, rng)
        if t < hold_psi:
            st.psi = psi_held
        trace["log_likelihood"].append(log_likelihood(A, observed, st))
        trace["K"].append(st.B.shape[1])
        trace["sigma_v2"].append(st.sigma_v2)
        trace["mean_log_psi"].append(float(np.mean(np.log(st.psi))))
        if callback is not None and t >= min_sweeps // 2:
            callback(st, A, t)
        done = t + 1
        if progress is not None and done % 10 == 0:
            progress(done / max_sweeps, f"sweep {done} (at most {max_sweeps})")
        if done >= min_sweeps and (done % check_every == 0 or done == max_sweeps):
            stats = convergence(trace, done // 2)
            converged = all(v["rhat"] < target_rhat and v["ess"] >= min_ess for v in stats.values())
            if converged:
                break
    done = t + 1
    if not stats:  # max_sweeps below min_sweeps: never checked
        stats = convergence(trace, done // 2)
    return st, {"sweeps": done, "burn_in": done // 2, "converged": bool(converged),
                "rhat": {k: v["rhat"] for k, v in stats.items()},
                "ess": {k: v["ess"] for k, v in stats.items()}, "K_trace": trace["K"]}


# ---------------------------------------------------------------------------------------------
# Registered algorithm
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class ICCAParams(NaturalThresholdParams):
    semi_supervised: bool = param(False, "Model-2: test rows join the chain with their labels imputed "
                                  "(§4.2); false = Model-1, training rows only (§4.1)",
                                  active_when=When(task="multilabel"))
    alpha: float = param(1.0, "initial IBP concentration α (resampled, Gamma(1, 1) prior)",
                         Interval(0, None, "neither"))
    max_sweeps: int = param(1000, "Gibbs sweeps at most; the chain stops earlier once converged (yeast Model-1, "
                            "split-R̂ of the log likelihood: 2.8 at 1000 from the random start; from "
                            "init=factor-analysis 3.4 at 3000 with K by AIC, 1.24 at 1000 and 1.14 at 2000 "
                            "with init_K=80; figures.d/icca-table1.md)", Interval(1, None))
    min_sweeps: int = param(200, "Gibbs sweeps at least before convergence is checked", Interval(2, None))
    check_every: int = param(50, "sweeps between convergence checks", Interval(1, None))
    target_rhat: float = param(1.05, "converged when the split-R̂ of every monitored scalar (log likelihood, K, "
                               "σ_v², mean log ψ) over the second half of the chain is below this",
                               Interval(1, None, "neither"))
    min_ess: float = param(50.0, "... and each has at least this effective sample size", Interval(1, None))
    hold_psi: int = param(10, "initial sweeps with Ψ held at its start (0.1 for init=random, FA's noise "
                          "variances for init=factor-analysis) so that births can seed dishes before Ψ "
                          "absorbs the unexplained variance (0 = sample Ψ from the start)", Interval(0, None))
    init: str = param("random", "the chain's start: 'random' = one random column (K = 1), dishes grow by "
                      "births; 'factor-analysis' = varimax-rotated FA loadings thresholded at 0.1, K by FA's AIC "
                      "on the training [X; Y] (factor_analysis_rank), Ψ = FA's noise variances. Not the default: "
                      "on yeast it does not mix either (R̂ 3.4 at 3000 sweeps, 6x the CPU) while on the §5.1 "
                      "draws it recovers the sparsity better (error 0.02-0.05 against 0.14-0.32)",
                      Options("random", "factor-analysis"))
    init_K: int = param(0, "with init=factor-analysis: the number of factors of the start (0 = by AIC)",
                        Interval(0, None), active_when=When(init="factor-analysis"))
    label_scale: float = param(1.0, "labels coded ±label_scale before joining the standardised features",
                               Interval(0, None, "neither"),
                               active_when=When(task="multilabel"))
    predictor: str = param("svm", "task parameters: 'svm' = one linear SVM per label learned in the latent "
                           "subspace (§4.1; Model-2's features: svm_features), scores "
                           "averaged over every `thin`-th sample after burn-in; 'gaussian' = the model's own "
                           "label loadings W_y E[z], averaged over every sample", Options("svm", "gaussian"),
                           active_when=When(task="multilabel"))
    svm_features: str = param("sampled", "with predictor=svm and semi_supervised: the SVMs' features. 'sampled' = "
                              "the chain's Z of the training and test rows (§4.2 as written; a training row's z "
                              "is drawn given its true labels, a test row's given imputed ones); 'x-posterior' = "
                              "E[z | x] under the sample's W_x, Ψ_x for both (§4.1's features, the subspace "
                              "learned with the test inputs in the chain)", Options("sampled", "x-posterior"),
                              active_when=When(predictor="svm", semi_supervised=True))
    thin: int = param(10, "with predictor=svm: train the SVMs on every thin-th sample after burn-in",
                      Interval(1, None),
                      active_when=When(predictor="svm"))
    C: float = param(1.0, "with predictor=svm: SVM regularisation constant", Interval(0, None, "neither"),
                     active_when=When(predictor="svm"))


@register
class ICCA(Algorithm):
    """Sparse infinite CCA (Rai & Daumé 2009): IBP-sparse probabilistic CCA on [X; Y], Gibbs sampled
    until split-R̂ and effective sample sizes say the chain has converged."""

    name = "icca"
    tasks = frozenset({"multilabel", "recovery"})
    Params = ICCAParams
    version = "2"  # init / init_K added at v2's behaviour (a random K = 1 start): the defaults' numbers are v2's

    def run(self, split, params, ctx):
        if isinstance(split, MultilabelSplit):
            return decide_by_refits(self.fit_predict, split, params, ctx, 0.0)
        return self.fit_predict(split, params, ctx)

    def fit_predict(self, split, params, ctx):
        import time

        if params.min_sweeps > params.max_sweeps:
            from malt.errors import InvalidParameterError
            raise InvalidParameterError(f"icca: min_sweeps ({params.min_sweeps}) must not exceed max_sweeps "
                                        f"({params.max_sweeps}); lower min_sweeps or raise max_sweeps")
        if isinstance(split, RecoverySplit):
            return self.recover(split, params, ctx)
        Xtr, Xte = linalg.standardize_train_test(linalg.to_dense(split.X_train), linalg.to_dense(split.X_test))
        Ytr = (2 * np.asarray(split.Y_train, float) - 1) * params.label_scale
        y_mean = np.nan_to_num(np.nanmean(Ytr, axis=0)) if Ytr.size else np.zeros(Ytr.shape[1])
        Ytr = Ytr - y_mean  # the model (§3) assumes centred data: μ_y is the label means
        if Xtr.shape[0] == 0:
            raise DataError("icca: the training split is empty; use more training rows")
        d1, L, n_te = Xtr.shape[1], Ytr.shape[1], Xte.shape[0]
        if params.semi_supervised:
            A = np.vstack([np.hstack([Xtr, Ytr]), np.hstack([Xte, np.full((n_te, L), np.nan)])])
        else:
            A = np.hstack([Xtr, Ytr])
        missing = np.isnan(A)
        samples: list[tuple[int, np.ndarray]] = []  # (sweep, test scores)
        K_seen, sparsity_seen, train_fit = [], [], []
        Ylab = np.asarray(split.Y_train, float)

        def collect(st, A_filled, t):
            W = st.W
            K_seen.append((t, W.shape[1]))
            sparsity_seen.append((t, float(1 - st.B.mean()) if st.B.size else 1.0))
            if params.predictor == "gaussian":
                if params.semi_supervised:
                    s = st.Z[-n_te:] @ W[d1:].T
                else:
                    s = latent_mean(Xte, W[:d1], st.psi[:d1]) @ W[d1:].T
                s = s + y_mean
            elif t % params.thin == 0:  # every thin-th sweep
                if params.semi_supervised and params.svm_features == "sampled":  # §4.2 as written
                    Z_tr, Z_te = st.Z[:-n_te], st.Z[-n_te:]
                else:  # §4.1: the subspace of X alone, E[z | x], for training and test rows alike
                    Z_tr, Z_te = (latent_mean(Xs, W[:d1], st.psi[:d1]) for Xs in (Xtr, Xte))
                theta, bias = label_svms(Z_tr, Ylab, params.C)
                train_fit.append((t, micro_f1_known(Ylab, Z_tr @ theta + bias)))
                s = Z_te @ theta + bias
            else:
                return
            samples.append((t, s))

        t0 = time.perf_counter()
        st, diag = run_icca(A, missing, alpha=params.alpha, rng=ctx.rng, max_sweeps=params.max_sweeps,
                            min_sweeps=params.min_sweeps, check_every=params.check_every,
                            target_rhat=params.target_rhat, min_ess=params.min_ess, callback=collect,
                            psi_init=0.1 if params.hold_psi else 1.0, hold_psi=params.hold_psi,
                            init=params.init, K_init=params.init_K or None, progress=ctx.progress)
        seconds = time.perf_counter() - t0
        warn_if_not_mixed(diag, params.target_rhat, params.min_ess)
        kept = [s for t, s in samples if t >= diag["burn_in"]]
        scores = np.mean(kept, axis=0) if kept else np.zeros((n_te, L))
        K_after = [k for t, k in K_seen if t >= diag["burn_in"]]
        return Prediction(scores=scores, labels=(scores > 0).astype(float), diagnostics={
            "K": float(np.mean(K_after)), "K_last": int(st.B.shape[1]),
            "sparsity": float(np.mean([v for t, v in sparsity_seen if t >= diag["burn_in"]])),
            "alpha_last": float(st.alpha),
            "train_f1_micro": float(np.mean([v for t, v in train_fit if t >= diag["burn_in"]] or [np.nan])),
            "sweeps": diag["sweeps"], "burn_in": diag["burn_in"],
            "converged": diag["converged"], "samples_averaged": len(kept),
            "rhat": {k: round(v, 4) for k, v in diag["rhat"].items()},
            "ess": {k: round(v, 1) for k, v in diag["ess"].items()},
            **_flat_convergence(diag), "seconds_per_sweep": seconds / diag["sweeps"]})

    @staticmethod
    def recover(split, params, ctx) -> Prediction:
        """§5.1: the chain on the standardised [X Y]; K̂ = the most frequent number of components after
        burn-in, Ŵ = the last sample's loadings (exact zeros where B is 0)."""
        A = linalg.standardize(np.hstack([split.X, split.Y]))  # nothing is held out: all rows' statistics
        K_seen: list[tuple[int, int]] = []
        st, diag = run_icca(A, np.zeros(A.shape, bool), alpha=params.alpha, rng=ctx.rng,
                            max_sweeps=params.max_sweeps, min_sweeps=params.min_sweeps,
                            check_every=params.check_every, target_rhat=params.target_rhat, min_ess=params.min_ess,
                            callback=lambda s, _A, t: K_seen.append((t, s.B.shape[1])),
                            psi_init=0.1 if params.hold_psi else 1.0, hold_psi=params.hold_psi,
                            init=params.init, K_init=params.init_K or None, progress=ctx.progress)
        warn_if_not_mixed(diag, params.target_rhat, params.min_ess)
        after = [k for t, k in K_seen if t >= diag["burn_in"]] or [st.B.shape[1]]
        K = int(np.bincount(after).argmax())
        return Prediction(extras={"K": K, "W": st.W}, diagnostics={
            "K": K, "K_last": int(st.B.shape[1]), "sweeps": diag["sweeps"], "converged": diag["converged"],
            "sparsity": float(1 - st.B.mean()) if st.B.size else 1.0,
            "rhat": {k: round(v, 4) for k, v in diag["rhat"].items()}})
