"""Subspace baselines of Rai & Daumé (2009, §5.2): PCA then per-label linear SVMs (``pca-svm``), and
classical CCA whose per-label task parameters are learned in the shared subspace and mapped back to
feature space through W_x (``cca``). K is chosen by inner cross-validation on the training rows (the
paper chose the best K on the test set). ``full-svm`` is ``mlsvm`` in ``baselines.py``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from malt.context import to_dense
from malt.errors import DataError
from malt.params import Interval, Options, Params, param
from malt.registry import Algorithm, register
from malt.splits import Prediction


# ---------------------------------------------------------------------------------------------
# Classical CCA (§2): generalized eigenproblem by whitening + SVD
# ---------------------------------------------------------------------------------------------
def cca_directions(X: np.ndarray, Y: np.ndarray, reg: float = 1e-6):
    """Canonical directions and correlations of centred X (n, p) and Y (n, q).

    Solves the generalized eigenproblem of §2, [0 Σxy; Σyx 0] u = ρ [Σxx 0; 0 Σyy] u, via
    Σxx = LxLxᵀ, Σyy = LyLyᵀ and the SVD of Lx⁻¹ Σxy Ly⁻ᵀ. ``reg`` × mean diagonal is added to
    Σxx and Σyy. Returns (Ux (p, r), Uy (q, r), rho (r,)), r = min(p, q), ρ descending, with
    Uxᵀ Σxx Ux = I.
    """
    n = X.shape[0]
    X = X - X.mean(0)
    Y = Y - Y.mean(0)
    Cxx, Cyy, Cxy = X.T @ X / n, Y.T @ Y / n, X.T @ Y / n
    Cxx = Cxx + reg * max(np.trace(Cxx) / Cxx.shape[0], 1e-12) * np.eye(Cxx.shape[0])
    Cyy = Cyy + reg * max(np.trace(Cyy) / Cyy.shape[0], 1e-12) * np.eye(Cyy.shape[0])
    Lx, Ly = np.linalg.cholesky(Cxx), np.linalg.cholesky(Cyy)
    from scipy.linalg import solve_triangular
    M = solve_triangular(Lx, solve_triangular(Ly, Cxy.T, lower=True).T, lower=True)
    U, s, Vt = np.linalg.svd(M, full_matrices=False)
    Ux = solve_triangular(Lx.T, U, lower=False)
    Uy = solve_triangular(Ly.T, Vt.T, lower=False)
    return Ux, Uy, np.clip(s, 0.0, 1.0)


def bartlett_significant(rho: np.ndarray, n: int, p: int, q: int, level: float = 0.05) -> int:
    """Number of significant canonical correlations by Bartlett's sequential χ² test (Wilks' Λ).

    For k = 0, 1, ... test H0: ρ_{k+1} = ... = 0 with
    χ² = −(n − 1 − (p + q + 1)/2) Σ_{j>k} log(1 − ρ_j²), (p − k)(q − k) degrees of freedom; the
    answer is the first k not rejected at ``level``.
    """
    rho = np.asarray(rho, float)
    logs = np.log1p(-np.minimum(rho, 1 - 1e-15) ** 2)
    tails = np.cumsum(logs[::-1])[::-1]                 # Σ_{j≥k} log(1 − ρ_j²)
    k = np.arange(rho.size)
    chi2 = -(n - 1 - (p + q + 1) / 2) * tails
    pvals = stats.chi2.sf(chi2, (p - k) * (q - k))
    rejected = pvals < level
    return int(rho.size if rejected.all() else np.argmin(rejected))


def pca_basis(X: np.ndarray, k: int) -> np.ndarray:
    """Top-k principal directions (d, k) of X (rows are samples), by SVD of the centred matrix."""
    _, _, Vt = np.linalg.svd(X - X.mean(0), full_matrices=False)
    return Vt[:k].T


# ---------------------------------------------------------------------------------------------
# Per-label linear SVMs in a subspace, K by inner CV
# ---------------------------------------------------------------------------------------------
def label_svms(Ztr: np.ndarray, Ytr: np.ndarray, C: float):
    """Per-label linear SVMs on features Ztr; returns (Θ (k, L), b (L,)); constant labels get θ = 0."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    k, L = Ztr.shape[1], Ytr.shape[1]
    theta, bias = np.zeros((k, L)), np.zeros(L)
    for j in range(L):  # one independent model per label
        known = ~np.isnan(Ytr[:, j])
        y = Ytr[known, j]
        if y.size == 0 or np.all(y == y[0]):
            bias[j] = (float(y.mean()) if y.size else 0.0) - 0.5
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            m = LinearSVC(C=C, max_iter=5000).fit(Ztr[known], y.astype(int))
        theta[:, j], bias[j] = m.coef_[0], m.intercept_[0]
    return theta, bias


def _micro_f1(Y: np.ndarray, P: np.ndarray) -> float:
    known = ~np.isnan(Y)
    y, p = Y[known] > 0.5, P[known] > 0
    tp = np.sum(y & p)
    return 2 * tp / max(y.sum() + p.sum(), 1)


def fit_subspace_predict(Xtr, Ytr, Xte, projector, ks, C, folds, rng):
    """Choose K in ``ks`` by ``folds``-fold CV (micro-F1) on the training rows, refit, predict Xte.

    ``projector(X_fit, Y_fit, X_all, k)`` returns the (d, k) basis P; task parameters θ are learned on
    X_fit P and mapped back to feature space as w = P θ (§5.2), so scores are X w + b.
    Returns (scores, chosen K, per-K CV scores).
    """
    n = Xtr.shape[0]
    ks = sorted({int(k) for k in ks})
    if len(ks) > 1:
        fold = rng.permutation(n) % folds
        cv = np.zeros(len(ks))
        for f in range(folds):
            tr, va = fold != f, fold == f
            for i, k in enumerate(ks):
                P = projector(Xtr[tr], Ytr[tr], np.vstack([Xtr, Xte]), k)
                th, b = label_svms(Xtr[tr] @ P, Ytr[tr], C)
                cv[i] += _micro_f1(Ytr[va], Xtr[va] @ (P @ th) + b) / folds
        k_best = ks[int(np.argmax(cv))]
    else:
        k_best, cv = ks[0], np.zeros(1)
    P = projector(Xtr, Ytr, np.vstack([Xtr, Xte]), k_best)
    th, b = label_svms(Xtr @ P, Ytr, C)
    return Xte @ (P @ th) + b, k_best, cv


def _standardised(split):
    Xtr, Xte = to_dense(split.X_train).astype(float), to_dense(split.X_test).astype(float)
    mean, std = Xtr.mean(0), Xtr.std(0)
    std[std == 0] = 1.0
    return (Xtr - mean) / std, (Xte - mean) / std


@dataclass(frozen=True, kw_only=True)
class PCASVMParams(Params):
    k: int | None = param(None, "subspace dimension; None = chosen by inner CV over k_grid",
                          Interval(1, None))
    k_grid: str = param("5,10,20,40,80", "comma-separated candidate K for inner CV")
    folds: int = param(3, "inner CV folds", Interval(2, None))
    C: float = param(1.0, "linear SVM regularisation constant", Interval(0, None, "neither"))
    fit_on: str = param("all", "rows PCA is fitted on: train+test ('all', as in §5.2) or 'train'",
                        Options("all", "train"))


def _grid(text: str, kmax: int, name: str):
    try:
        ks = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise DataError(f"{name}: k_grid must be comma-separated integers, got {text!r}") from None
    ks = [min(k, kmax) for k in ks if k >= 1]
    if not ks:
        raise DataError(f"{name}: k_grid {text!r} has no positive value; give e.g. k_grid=5,10,20")
    return ks


@register
class PCASVM(Algorithm):
    """PCA subspace then one linear SVM per label (Rai & Daumé 2009's PCA baseline), K by inner CV."""

    name = "pca-svm"
    tasks = frozenset({"multilabel"})
    Params = PCASVMParams

    def run(self, split, params, ctx):
        Xtr, Xte = _standardised(split)
        Ytr = np.asarray(split.Y_train, float)
        d = Xtr.shape[1]
        ks = [min(params.k, d)] if params.k else _grid(params.k_grid, d, self.name)

        def projector(X_fit, Y_fit, X_all, k):
            return pca_basis(X_all if params.fit_on == "all" else X_fit, k)

        scores, k, cv = fit_subspace_predict(Xtr, Ytr, Xte, projector, ks, params.C, params.folds, ctx.rng)
        return Prediction(scores=scores, labels=(scores > 0).astype(float),
                          diagnostics={"K": k, "cv_micro_f1": [float(c) for c in cv]})


@dataclass(frozen=True, kw_only=True)
class CCASVMParams(Params):
    k: int | None = param(None, "number of canonical components; None = inner CV over 1..L",
                          Interval(1, None))
    folds: int = param(3, "inner CV folds", Interval(2, None))
    C: float = param(1.0, "linear SVM regularisation constant", Interval(0, None, "neither"))
    reg: float = param(1e-3, "ridge added to Σxx and Σyy (× mean variance)", Interval(0, None))


@register
class CCASVM(Algorithm):
    """Classical CCA subspace of (X, Y); per-label SVMs there, mapped back through W_x (Rai & Daumé's CCA)."""

    name = "cca"
    tasks = frozenset({"multilabel"})
    Params = CCASVMParams

    def run(self, split, params, ctx):
        Xtr, Xte = _standardised(split)
        Ytr = np.asarray(split.Y_train, float)
        r = min(Xtr.shape[1], Ytr.shape[1])
        ks = [min(params.k, r)] if params.k else list(range(1, r + 1))

        def projector(X_fit, Y_fit, X_all, k):
            full = ~np.isnan(Y_fit).any(1)
            if full.sum() < 2:
                raise DataError("cca: fewer than two training rows with all labels known; "
                                "lower the missing fraction")
            Ux, _, _ = cca_directions(X_fit[full], Y_fit[full], params.reg)
            return Ux[:, :k]

        scores, k, cv = fit_subspace_predict(Xtr, Ytr, Xte, projector, ks, params.C, params.folds, ctx.rng)
        return Prediction(scores=scores, labels=(scores > 0).astype(float),
                          diagnostics={"K": k, "cv_micro_f1": [float(c) for c in cv]})
