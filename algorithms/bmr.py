"""Bayesian Multivariate Regression (BMR), dissertation §4.3.

Model: η_n ~ N(W x_n, Σ), y_ni ~ Bernoulli(σ(η_ni)). Learning is variational EM on the per-row
lower bound (4.4). Two ways to bound the log-partition C(η) = Σ_i log(1 + e^{η_i}):

``taylor``
    The thesis's first-order expansion at ζ_n: updates (4.5)–(4.8), Σ̂_n = Σ (4.6). This is *not* a
    bound (the variance term is dropped), and (4.8) adds the residual covariance to Σ each sweep, so
    Σ grows without limit; the thesis's numbers are reached by stopping early (``iterations``).
``bohning``
    Böhning's quadratic bound C(η) ≤ C(ζ) + g(ζ)ᵀ(η−ζ) + ⅛‖η−ζ‖² (the Hessian of C is ≤ ¼ I).
    The curvature is the same for every row, so Σ̂ = (Σ⁻¹ + ¼ Ī)⁻¹ is shared, and the bound is
    jointly quadratic in (μ, W): one iteration maximises it exactly over both in the eigenbases of
    XᵀX and Σ (``joint_mean_update``), then updates Σ̂ and Σ. Every step is a coordinate ascent
    on a true lower bound, recorded per iteration (``diagnostics['bound']``).

Unknown labels (NaN) contribute no likelihood term; the coupled updates (4.9)–(4.10) for known (l)
and unknown (u) blocks have the closed-form fixed point δ = Σ [m ⊙ (y − g(ζ))] for ``taylor``
(m = known mask); for ``bohning`` the unknown entries' quadratic terms are majorised at the current
mean so the joint update stays exact (each iteration raises the bound), and for ``jj`` they are
solved by majorised (MM) sweeps. Prediction is the matrix product W x (4.11); labels are decided by
the shared thresholds (`malt.numerics.decisions`) learned on out-of-fold predictions of the training rows,
the sign rule (4.12) being the natural cut.

A matrix-normal prior W ~ MN(0, Σ, I/ridge) keeps the normal equations (4.7) well posed:
W = (Σ_n μ̂_n x_nᵀ)(Σ_n x_n x_nᵀ + ridge·I)⁻¹. That prior's normaliser makes the bound unbounded as
Σ turns singular, so ``bohning``/``jj`` also put a weak inverse-Wishart prior IW(ψ I, L + 1) on Σ.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from scipy.special import expit

from malt.numerics import linalg
from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis
from malt.errors import DataError
from malt.numerics.decisions import AUTO_FOLDS, ThresholdParams, decided, learned, out_of_fold
from malt.params import Interval, Options, When, param
from malt.registry import Algorithm, register
from malt.splits import MissingSplit, Prediction

BOHNING = 0.25  # max of σ'(η): the fixed curvature of Böhning's bound


@dataclass
class BMRModel:
    """Fitted BMR: weights W (L, d+1) acting on [standardised x, 1], noise covariance Σ (L, L)."""

    W: np.ndarray
    Sigma: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    mu: np.ndarray = None  # variational means of the training rows (n, L)
    bound: list = field(default_factory=list)
    iterations: int = 0

    def design(self, X) -> np.ndarray:
        return design_matrix(X, self.mean, self.std)

    def predict(self, X, block: int = 262_144, dtype=np.float64, out: np.ndarray | None = None) -> np.ndarray:
        """η* = W x (4.11), computed in row blocks so huge X stays within memory.

        ``dtype=np.float32`` computes in single precision (half the memory traffic; scores differ by
        ~1e-6); ``out`` is an (n, L) array of that dtype to write into (saves first-touch page faults
        of a fresh 10⁶ × 101 result when predicting repeatedly).
        """
        X = linalg.to_dense(X)
        Wx = self.W[:, :-1] / self.std  # fold standardisation into W
        b = (self.W[:, -1] - Wx @ self.mean).astype(dtype)
        Wt = np.ascontiguousarray(Wx.T, dtype=dtype)
        if out is None:
            out = np.empty((X.shape[0], self.W.shape[0]), dtype=dtype)
        for s in range(0, X.shape[0], block):
            np.matmul(np.asarray(X[s:s + block], dtype=dtype), Wt, out=out[s:s + block])
            out[s:s + block] += b
        return out


def design_matrix(X, mean, std) -> np.ndarray:
    """Standardised features with a trailing bias column."""
    X = (np.asarray(linalg.to_dense(X), dtype=float) - mean) / std
    return np.hstack([X, np.ones((X.shape[0], 1))])


def log_partition(eta: np.ndarray) -> np.ndarray:
    """C(η) entrywise: log(1 + e^η), numerically stable."""
    return np.logaddexp(0.0, eta)


def _spd_inv(A: np.ndarray) -> np.ndarray:
    """Inverse of a symmetric positive definite L × L matrix through its Cholesky factor."""
    from scipy.linalg import cho_factor, cho_solve

    return cho_solve(cho_factor(A), np.eye(len(A)))


def _logdet(S: np.ndarray) -> float:
    sign, val = np.linalg.slogdet(S)
    return val if sign > 0 else -np.inf


def _gauss_and_prior(n, d, P, S, RtR, W, ridge, ld_P, psi) -> float:
    """E_q log N(η; Wx, Σ) summed over rows (up to constants), the log matrix-normal W prior and the
    log inverse-Wishart IW(ψ I, L + 1) prior on Σ, from the residual scatter RᵀR (L × L), so no
    n × L × L contraction is needed."""
    L = len(P)
    return float(-0.5 * (n * np.sum(P * S) + np.sum(P * RtR)) + 0.5 * (n + d) * ld_P
                 - 0.5 * ridge * np.sum(P * (W @ W.T)) + (L + 1) * ld_P - 0.5 * psi * np.trace(P))


def bohning_bound(Y, known, Xd, W, Sigma, mu, S, zeta, ridge, RtR=None, psi=0.0) -> float:
    """The lower bound (4.4) under Böhning's quadratic bound, summed over rows, plus the W prior.

    Per row: E_q log N(η; Wx, Σ) + y_lᵀμ_l − E_q[quadratic bound on C_l(η)] + H[q], with
    q = N(μ_n, S) and the bound expanded at ζ_n. ``RtR`` = (μ − XWᵀ)ᵀ(μ − XWᵀ) if already computed.
    """
    n, L = Y.shape
    d = Xd.shape[1]
    P = np.linalg.inv(Sigma)
    if RtR is None:
        R = mu - Xd @ W.T
        RtR = R.T @ R
    y0 = np.where(known, Y, 0.0)
    if zeta is mu:  # expanded at the mean itself (as fit_bmr does): the linear and quadratic terms vanish
        lp = log_partition(mu)
        lik = np.sum(y0 * mu) - (lp.sum() if known.all() else np.sum(lp[known]))
    else:
        D = mu - zeta
        lik = (y0 * mu).sum() - np.sum(known * (log_partition(zeta) + expit(zeta) * D + 0.5 * BOHNING * D ** 2))
    lik -= 0.5 * BOHNING * known.sum(0) @ np.diag(S)
    entropy = 0.5 * n * (_logdet(S) + L)
    return _gauss_and_prior(n, d, P, S, RtR, W, ridge, -_logdet(Sigma), psi) + float(lik + entropy)


def jj_lambda(xi: np.ndarray) -> np.ndarray:
    """Jaakkola–Jordan curvature λ(ξ) = tanh(ξ/2) / (4ξ), with its limit 1/8 at ξ = 0."""
    xi = np.abs(xi)
    small = xi < 1e-6
    return np.where(small, 0.125, np.tanh(xi / 2) / (4 * np.where(small, 1.0, xi)))


def jj_bound(Y, known, Xd, W, Sigma, mu, S, ridge, RtR=None, psi=0.0) -> float:
    """The lower bound (4.4) under the Jaakkola–Jordan bound at its optimal ξ² = μ² + Σ̂_ii, plus the
    W prior: yη − C(η) = (y − ½)η − log 2cosh(η/2) ≥ (y − ½)η + log σ(ξ) − ξ/2 − λ(ξ)(η² − ξ²)."""
    n, L = Y.shape
    d = Xd.shape[1]
    P = np.linalg.inv(Sigma)
    if RtR is None:
        R = mu - Xd @ W.T
        RtR = R.T @ R
    xi = np.sqrt(mu ** 2 + np.diag(S)[None, :])
    # with ξ² = E[η²] the λ terms cancel: E[(y−½)η] + log σ(ξ) − ξ/2
    lik = np.sum(known * ((Y - 0.5) * mu - log_partition(-xi) - xi / 2))
    entropy = 0.5 * n * (_logdet(S) + L)
    return _gauss_and_prior(n, d, P, S, RtR, W, ridge, -_logdet(Sigma), psi) + float(lik + entropy)


def joint_mean_update(C: np.ndarray, hat: Eigenbasis, Sigma: np.ndarray):
    """Maximise the Böhning-bounded (4.4) jointly over the variational means μ and the weights W, for
    fixed Σ and expansion point ζ.

    With curvature ¼ I the stationarity conditions of (4.5) and (4.7) are
    μ = (H μ Σ⁻¹ + C) K,  K = (Σ⁻¹ + ¼ I)⁻¹,  H = X (XᵀX + ridge I)⁻¹ Xᵀ,
    i.e. the Stein equation μ − H μ (I + ¼Σ)⁻¹ = C K, which the eigenbases of H and Σ diagonalise
    (`malt.numerics.eigenbasis.KroneckerEigenbasis` with H as a low-rank factor): with X = U diag(s) Vᵀ (thin
    SVD), h = s² / (s² + ridge) and Σ = Q diag(σ) Qᵀ, r = 1 / (1 + σ/4), k = σ r,
    (Uᵀ μ Q)_ij = (Uᵀ C Q)_ij k_j / (1 − h_i r_j) and (I − UUᵀ) μ Q = (I − UUᵀ) C Q diag(k).
    One call costs one n × L × L and two n × d × L products and no per-row factorisation.

    Parameters
    ----------
    C : (n, L) linear coefficients m ⊙ (y − g(ζ)) + ¼ ζ (unknown entries: ¼ μ_old, the MM majoriser
        of §4.3.4's missing-label terms).
    hat : the hat matrix H = U diag(h) Uᵀ as a low-rank `Eigenbasis` (U: (n, r) left singular vectors
        of the design matrix, h: (r,) its eigenvalues; 0 on the complement).
    Sigma : (L, L) current noise covariance Σ.

    Returns
    -------
    mu : (n, L) the joint maximiser's μ;  A : (r, L) = Uᵀ μ (so W = Aᵀ diag(s / (s² + ridge)) Vᵀ).
    """
    def gain(h, sig):  # k / (1 − h r): the Stein solve's division composed with the right-hand side's K
        r = 1.0 / (1.0 + BOHNING * sig)
        return sig * r / (1.0 - h * r)

    return KroneckerEigenbasis(hat, Eigenbasis.symmetric(Sigma, name="Σ")).apply(C, gain, span=True)


def fit_bmr(X, Y, *, bound: str = "bohning", iterations: int = 200, tol: float = 1e-3,
            ridge: float = 1.0, sweeps: int = 3, psi: float = 1.0, mean=None, std=None) -> BMRModel:
    """Variational EM for BMR (§4.3.3).

    Parameters
    ----------
    X : (n, k) features (dense or sparse); standardised on these rows, a bias column is appended.
        Features constant on these rows are left out of the fit (their weights are 0): they carry no
        information, yet under the matrix-normal prior each column of W adds ½ log|Σ⁻¹| to the bound,
        so they drag Σ, and with it every EM step, towards zero. On genbase (1,081 of 1,186 features
        constant within a training fold) EM then stalls near W = 0: average precision 0.74 with them,
        0.99 without.
    Y : (n, L) labels in {0, 1}, NaN where unknown (§4.3.4).
    bound : 'taylor' for the thesis's updates (4.5)–(4.8) run for exactly ``iterations`` sweeps, or
        'bohning' for the quadratic bound (joint (μ, W) updates, ``joint_mean_update``) or 'jj',
        both stopped when the bound rises by less than ``tol`` per known label entry.
    ridge : precision of the matrix-normal prior on W (added to Σ x xᵀ in (4.7)).
    sweeps : MM sweeps of the coupled known/unknown mean updates (4.9)–(4.10) per iteration ('jj').
    psi : scale of the inverse-Wishart IW(ψ I, L + 1) prior on Σ ('bohning', 'jj'). Without it the
        bound is unbounded: a label combination with Σ-variance → 0 gains ½ d log(1/ε) from the
        W prior's normaliser, and EM drifts there (quality falls after ~100 sweeps).
    Returns
    -------
    BMRModel with W, Σ, the training variational means and the bound trace (``bohning``).
    """
    Y = np.asarray(Y, dtype=float)
    known = ~np.isnan(Y)
    Yk = np.where(known, Y, 0.0)
    X = np.asarray(linalg.to_dense(X), dtype=float)
    if X.shape[0] != Y.shape[0]:
        raise DataError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}; pass one label row per feature row")
    if mean is None:
        fitted = linalg.scaling(X)  # the training rows (BMR is inductive)
        mean, std = fitted.shift, fitted.divisor
    informative = np.ptp(X, axis=0) > 0 if X.shape[0] else np.zeros(X.shape[1], bool)
    Xd = design_matrix(X[:, informative], mean[informative], std[informative])
    n, L = Y.shape
    d = Xd.shape[1]
    XtX = Xd.T @ Xd  # once: every W update and residual scatter reuses it
    G_chol = np.linalg.cholesky(XtX + ridge * np.eye(d))
    if bound == "bohning":  # the joint (μ, W) update works in the design matrix's singular basis,
        ev, V = np.linalg.eigh(XtX)  # from XᵀX = V diag(s²) Vᵀ (d × d) rather than an n × d SVD
        keep = ev > 1e-10 * ev.max()
        sv, Vt = np.sqrt(ev[keep]), V[:, keep].T
        hat = Eigenbasis.low_rank((Xd @ V[:, keep]) / sv, sv ** 2 / (sv ** 2 + ridge))  # H = X(XᵀX + ridge I)⁻¹Xᵀ
        h = hat.values

    W = np.zeros((L, d))
    Sigma = np.eye(L)
    mu = np.zeros((n, L))
    S = Sigma.copy()
    trace: list[float] = []
    frac_known = known.mean(0)
    all_known = bool(known.all())
    eye = np.eye(L)
    it = 0
    for it in range(1, iterations + 1):
        if bound != "bohning":
            M = Xd @ W.T
        if bound == "taylor":
            zeta = mu if it > 1 else M
            mu = M + (known * (Yk - expit(zeta))) @ Sigma  # (4.5), fixed point of (4.9)-(4.10)
            S = Sigma  # (4.6)
        elif bound == "jj":
            # Jaakkola–Jordan: per-entry curvature 2λ(ξ), ξ² = E_q[η²]; μ by MM sweeps majorised by
            # ¼ I (2λ ≤ ¼), Σ̂ shared over rows (the optimum within that family); each step ascends.
            xi = np.sqrt((mu if it > 1 else M) ** 2 + np.diag(S)[None, :])
            A = 2 * jj_lambda(xi) * known
            P = _spd_inv(Sigma)
            K = _spd_inv(P + BOHNING * eye)
            rhs = known * (Yk - 0.5) - A * M
            delta = mu - M if it > 1 else np.zeros_like(M)
            for _ in range(sweeps):
                delta += (rhs - delta @ P - A * delta) @ K
            mu = M + delta
            xi = np.sqrt(mu ** 2 + np.diag(S)[None, :])
            S = _spd_inv(P + np.diag(2 * (jj_lambda(xi) * known).mean(0)))
        else:
            # Böhning: the bound is jointly quadratic in (μ, W) for fixed Σ and ζ = μ_old; unknown
            # entries' −⅛ μ² terms are majorised at μ_old (coefficient ¼ μ_old), so every iteration is
            # an exact joint maximisation of a minorant (4.5 + 4.7 + 4.9-4.10 at once): monotone.
            C = Yk - expit(mu)
            if not all_known:
                C *= known
            C += BOHNING * mu
            mu, A = joint_mean_update(C, hat, Sigma)
            W = ((A.T * (sv / (sv ** 2 + ridge))) @ Vt)
            S = _spd_inv(_spd_inv(Sigma) + BOHNING * np.diag(frac_known))  # shared Σ̂ = (Σ⁻¹ + Ā)⁻¹
            RtR = mu.T @ mu - A.T @ ((2 * h - h ** 2)[:, None] * A)
            Sigma = (n * S + RtR + ridge * W @ W.T + psi * eye) / (n + d + 2 * L + 2)  # (4.8), priors
            Sigma = 0.5 * (Sigma + Sigma.T)
            trace.append(bohning_bound(Yk, known, Xd, W, Sigma, mu, S, mu, ridge, RtR, psi))
            if len(trace) > 1 and abs(trace[-1] - trace[-2]) <= tol * known.sum():
                break
            continue
        # (4.7) with the ridge: W = μᵀX (XᵀX + ridge I)⁻¹, from B = Xᵀμ (d × L)
        B = Xd.T @ mu
        W = np.linalg.solve(G_chol.T, np.linalg.solve(G_chol, B)).T
        # residual scatter (μ − XWᵀ)ᵀ(μ − XWᵀ) from L × L and d × L products (no n × L residual)
        BW = B.T @ W.T
        RtR = mu.T @ mu - BW - BW.T + W @ XtX @ W.T
        if bound == "taylor":
            Sigma = (n * S + RtR + ridge * W @ W.T) / (n + d)  # (4.8) with the W prior
        else:
            Sigma = (n * S + RtR + ridge * W @ W.T + psi * eye) / (n + d + 2 * L + 2)
        Sigma = 0.5 * (Sigma + Sigma.T)
        if bound != "taylor":
            trace.append(jj_bound(Yk, known, Xd, W, Sigma, mu, S, ridge, RtR, psi))
            if len(trace) > 1 and abs(trace[-1] - trace[-2]) <= tol * known.sum():
                break
    W_full = np.zeros((L, X.shape[1] + 1))  # constant features get weight 0
    W_full[:, np.r_[informative, True]] = W
    return BMRModel(W=W_full, Sigma=Sigma, mean=mean, std=std, mu=mu, bound=trace, iterations=it)


def calibrated_offset(eta: np.ndarray, Y: np.ndarray, C: float = 1e4) -> float:
    """The decision threshold t on η (one for all labels) where a calibration map fit on the training
    rows gives probability ½: P(y = 1 | η) = σ(a η + b) by (barely regularised) logistic regression
    over the known entries, t = −b / a (Platt 1999, one map shared by the labels).

    The sign rule (4.12) trusts σ(η) as the probability; BMR's W x is shrunk towards each label's mean
    (the ridge and the variational fit attenuate W), so σ(η) is under-confident and the rule predicts
    too few labels (genbase: 0.01 per row against 1.2). At the calibrated ½ the decisions are the
    Hamming-loss-optimal ones under the calibration map. Falls back to 0 when the map does not
    increase (a ≤ 0). Cost: one 1-D logistic regression on the nL known entries.
    """
    return calibration_map(eta, Y, C)[1]


def calibration_map(eta: np.ndarray, Y: np.ndarray, C: float = 1e4) -> tuple[float, float]:
    """(a, t) of the calibration map P(y = 1 | η) = σ(a (η − t)) fit on the training rows (see
    `calibrated_offset`); (1, 0), the sign rule's σ(η), when the map does not increase."""
    from sklearn.linear_model import LogisticRegression

    Y = np.asarray(Y, dtype=float)
    known = ~np.isnan(Y)
    s, y = eta[known], Y[known].astype(int)
    if s.size == 0 or np.all(y == y[0]):
        return 1.0, 0.0
    fit = LogisticRegression(C=C, max_iter=1000).fit(s[:, None], y)
    a, b = float(fit.coef_[0, 0]), float(fit.intercept_[0])
    return (a, -b / a) if a > 0 else (1.0, 0.0)


@dataclass(frozen=True, kw_only=True)
class BMRParams(ThresholdParams):
    bound: str = param("bohning", "bound on the log-partition: 'bohning' (fixed-curvature quadratic, monotone EM), 'jj' "
                       "(Jaakkola-Jordan, adaptive curvature, monotone EM) or "
                       "'taylor' (the thesis's first-order updates 4.5-4.8, stopped early)",
                       Options("bohning", "jj", "taylor"))
    iterations: int | None = param(None, "EM sweeps: the cap for 'bohning'/'jj' (default 200), the exact "
                                   "count for 'taylor' (default 5)", Interval(1, None))
    tol: float = param(1e-3, "stop 'bohning'/'jj' when the bound rises by less than this per known label entry",
                       Interval(0, None),
                       active_when=When(bound=Options("bohning", "jj")))
    ridge: float = param(1.0, "ridge on Σ x xᵀ in (4.7) (matrix-normal prior precision on W)",
                         Interval(0, None, "neither"))
    sweeps: int = param(3, "MM sweeps of the coupled known/unknown label updates (4.9-4.10) per iteration ('jj')",
                        Interval(1, None),
                        active_when=When(bound="jj"))
    psi: float = param(1.0, "scale ψ of the inverse-Wishart IW(ψ I, L + 1) prior on Σ ('bohning', 'jj'); keeps the "
                       "bound bounded", Interval(0, None, "neither"),
                       active_when=When(bound=Options("bohning", "jj")))


@register
class BMR(Algorithm):
    """Bayesian Multivariate Regression: correlated logistic labels, variational EM (§4.3)."""

    name = "bmr"
    tasks = frozenset({"multilabel", "missing"})
    Params = BMRParams
    version = "8"  # constant features left out of the fit (4); calibrated decisions by default (5); shared
    #                thresholds learned on out-of-fold predictions, p ≥ n training rows handled (6);
    #                prior/calibrated/rscut decision candidates, paired one-SE (7)
    # v8: macro-F1 from its own decisions (the macro-F1 family of malt.numerics.decisions)
    preload = ("scipy.linalg", "sklearn.linear_model")
    blas_threads: ClassVar[int | None] = 1
    """BLAS threads a run uses (None: the unit's setting). Each EM iteration alternates thin products
    (n × L × (r + L)) with elementwise work on n × L arrays, and the decision threshold is a 1-D
    logistic regression (level-1 BLAS): a second thread's synchronisation costs more than it shares.
    On scene (n = 1,211, r = 295, L = 6) two threads were 1.23× slower than one on a quiet machine
    (issue 18) and 5-6× slower on a busy one (bench_threads). The products are 20-40 % of an
    iteration's time at one thread (scene; 8,000 and 32,000 rows × 120 features × 101 labels), so
    even on an idle machine a second thread could gain at most 1.12-1.23×. ``--threads`` overrides it."""

    @staticmethod
    def _fit_options(params) -> dict:
        its = params.iterations or (5 if params.bound == "taylor" else 200)
        return dict(bound=params.bound, iterations=its, tol=params.tol, ridge=params.ridge, sweeps=params.sweeps,
                    psi=params.psi)

    def fit_model(self, split, params, ctx):
        """The inductive half of `run` on a multilabel split: the fitted model, the decisions learned on
        out-of-fold predictions W x of the training rows (3 inner refits; `malt.numerics.decisions`, natural cut
        η > 0, the thesis's rule 4.12) and the calibration map σ(a (η − t)) fit on those predictions
        (what `malt.estimators.BMRClassifier.fit` keeps)."""
        options = self._fit_options(params)
        model = fit_bmr(split.X_train, split.Y_train, **options)
        X, Y = split.X_train, np.asarray(split.Y_train, dtype=float)
        oof = None
        if params.threshold != "natural":
            oof = out_of_fold(lambda tr, va: fit_bmr(X[tr], Y[tr], **options).predict(X[va]), Y, AUTO_FOLDS,
                              ctx.rng)
        decisions = learned(params.threshold, Y, 0.0, ctx.rng, oof)
        slope, offset = calibration_map(model.predict(X) if oof is None else oof, Y)
        return model, slope, offset, decisions

    def predict_model(self, fitted, split, params, ctx) -> Prediction:
        """Scores η = W x, the shared decisions, and in ``extras['probabilities']`` σ(a (η − t_j)): the
        calibration map's slope a around each label's Hamming-family threshold t_j (the map's own ½
        point for the rank cuts), so a probability exceeds ½ exactly where the label is predicted."""
        model, slope, offset, decisions = fitted
        eta = model.predict(split.X_test)
        cut = decisions.hamming.thresholds[None, :] if decisions.hamming.rule not in ("rcut", "rscut") else offset
        probabilities = 1.0 / (1.0 + np.exp(-np.clip(slope * (eta - cut), -500, 500)))
        return decided(eta, decisions, {"iterations": model.iterations, "trace_sigma": float(np.trace(model.Sigma)),
                                        "bound": [round(b, 6) for b in model.bound]},
                       extras={"probabilities": probabilities})

    def run(self, split, params, ctx):
        if not isinstance(split, MissingSplit):
            return self.fit_then_predict(split, params, ctx)
        M = split.M
        Y = np.where(np.isnan(M), np.nan, (M > 0).astype(float))
        X = np.zeros((M.shape[0], 0)) if split.X is None else split.X
        model = fit_bmr(X, Y, **self._fit_options(params))
        return Prediction(values=model.mu, diagnostics={"iterations": model.iterations,
                                                        "trace_sigma": float(np.trace(model.Sigma)),
                                                        "bound": [round(b, 6) for b in model.bound]})
