"""Subspace baselines of Rai & Daumé (2009, §5.2): PCA then per-label linear SVMs (``pca-svm``), and
classical CCA whose per-label task parameters are learned in the shared subspace and mapped back to
feature space through W_x (``cca``). K is chosen by inner cross-validation on the training rows through
`malt.numerics.selection` (``select='inner-cv'`` over ``k_grid``, micro-F1 on the held-out inner fold; the paper
chose the best K on the test set). ``full-svm`` is ``mlsvm`` in ``baselines.py``. ``label-prior`` (in ``baselines.py``) is the
K = 0 end of these baselines: no features, each label decided by its training majority — the reference
any Table 1 cell has to beat (overall accuracy 76.7 % on yeast, 81.9 % on scene: above every row the
paper prints).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from malt.numerics import linalg
from malt.errors import DataError
from malt.params import Interval, Options, When, param
from malt.numerics.decisions import NaturalThresholdParams, decide_by_refits
from malt.registry import Algorithm, register
from malt.numerics.selection import InnerCVParams, candidates, inner_fold_ids, select
from malt.splits import MultilabelSplit, Prediction, RecoverySplit


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
    from scipy import stats  # imported here: scipy.stats costs every command ~0.75 s at start-up

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
    """Per-label linear SVMs on features Ztr; returns (Θ (k, L), b (L,)); constant labels, and every label
    when there are no features (k = 0, e.g. a sampler state with no components), get θ = 0 and
    b = mean − ½."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    k, L = Ztr.shape[1], Ytr.shape[1]
    theta, bias = np.zeros((k, L)), np.zeros(L)
    for j in range(L):  # one independent model per label
        known = ~np.isnan(Ytr[:, j])
        y = Ytr[known, j]
        if y.size == 0 or np.all(y == y[0]) or k == 0:  # nothing to separate with: the label's prior
            bias[j] = (float(y.mean()) if y.size else 0.0) - 0.5
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            m = LinearSVC(C=C, max_iter=5000).fit(Ztr[known], y.astype(int))
        theta[:, j], bias[j] = m.coef_[0], m.intercept_[0]
    return theta, bias


def micro_f1_known(Y: np.ndarray, P: np.ndarray) -> float:
    """Micro-F1 of decisions P > 0 against labels Y > ½ over the known (non-NaN) entries of Y."""
    known = ~np.isnan(Y)
    y, p = Y[known] > 0.5, P[known] > 0
    tp = np.sum(y & p)
    return 2 * tp / max(y.sum() + p.sum(), 1)


def fit_subspace_predict(Xtr, Ytr, Xte, projector, k, C):
    """Per-label SVMs in the K-dimensional subspace ``projector(X_fit, Y_fit, X_all, k)`` (a (d, k) basis
    P); task parameters θ are learned on X_fit P and mapped back to feature space as w = P θ (§5.2), so
    the scores of Xte are Xte w + b."""
    P = projector(Xtr, Ytr, np.vstack([Xtr, Xte]), k)
    th, b = label_svms(Xtr @ P, Ytr, C)
    return Xte @ (P @ th) + b


def choose_k(params, Xtr, Ytr, Xte, projector, kmax, ctx):
    """K for ``params``: as given (select='none'), or the k_grid value (capped at ``kmax``) with the best
    inner-CV micro-F1 on the training rows. Returns (K, diagnostics)."""
    if params.select == "none":
        return min(params.k, kmax), {}
    grid = tuple(sorted({min(int(k), kmax) for k in params.k_grid}))
    ids = inner_fold_ids(Xtr.shape[0], params.inner_folds, ctx.rng)

    def evaluate(option, train, val):
        S = fit_subspace_predict(Xtr[train], Ytr[train], np.vstack([Xtr[val], Xte]), projector, option.k, option.C)
        return micro_f1_known(Ytr[val], S[: val.size])

    choice = select(candidates(params, {"k": grid}), evaluate, ids, better="higher",
                    progress=lambda f: ctx.progress(0.9 * f, "inner CV over K"))
    return choice.best.k, choice.diagnostics()


def _standardised(split):
    return linalg.standardize_train_test(linalg.to_dense(split.X_train), linalg.to_dense(split.X_test))


@dataclass(frozen=True, kw_only=True)
class PCASVMParams(InnerCVParams, NaturalThresholdParams):
    select: str = param("inner-cv", "'inner-cv': K by inner cross-validation over k_grid on the training rows; "
                        "'none': K = k", Options("none", "inner-cv"))
    inner_folds: int = param(3, "folds of the inner cross-validation", Interval(2, None), max_from="inner_items")
    k: int = param(20, "subspace dimension with select=none", Interval(1, None), max_from="features")
    k_grid: tuple[int, ...] = param((5, 10, 20, 40, 80), "candidate K for select=inner-cv; an entry above "
                                    "the number of features is clamped to it, with a notice in the "
                                    "diagnostics", Interval(1, None), max_from="features", clamp=True)
    C: float = param(1.0, "linear SVM regularisation constant", Interval(0, None, "neither"))
    fit_on: str = param("all", "rows PCA is fitted on: train+test ('all', as in §5.2) or 'train'",
                        Options("all", "train"))


@register
class PCASVM(Algorithm):
    """PCA subspace then one linear SVM per label (Rai & Daumé 2009's PCA baseline), K by inner CV."""

    name = "pca-svm"
    tasks = frozenset({"multilabel"})
    Params = PCASVMParams
    version = "2"

    def run(self, split, params, ctx):
        if isinstance(split, MultilabelSplit):
            return decide_by_refits(self.fit_predict, split, params, ctx, 0.0)
        return self.fit_predict(split, params, ctx)

    def fit_predict(self, split, params, ctx):
        Xtr, Xte = _standardised(split)
        Ytr = np.asarray(split.Y_train, float)

        def projector(X_fit, Y_fit, X_all, k):
            return pca_basis(X_all if params.fit_on == "all" else X_fit, k)

        k, diagnostics = choose_k(params, Xtr, Ytr, Xte, projector, Xtr.shape[1], ctx)
        scores = fit_subspace_predict(Xtr, Ytr, Xte, projector, k, params.C)
        return Prediction(scores=scores, labels=(scores > 0).astype(float), diagnostics={"K": k, **diagnostics})


@dataclass(frozen=True, kw_only=True)
class CCASVMParams(InnerCVParams, NaturalThresholdParams):
    select: str = param("inner-cv", "'inner-cv': K by inner cross-validation over k_grid on the training rows; "
                        "'none': K = k (multilabel task; the recovery task keeps Bartlett's significant K)",
                        Options("none", "inner-cv"), active_when=When(task="multilabel"))
    inner_folds: int = param(3, "folds of the inner cross-validation", Interval(2, None), max_from="inner_items")
    k: int = param(4, "number of canonical components with select=none", Interval(1, None), max_from="min_view")
    k_grid: tuple[int, ...] = param(tuple(range(1, 17)), "candidate K for select=inner-cv; an entry above "
                                    "min(features, labels) is clamped to it, with a notice in the "
                                    "diagnostics", Interval(1, None), max_from="min_view", clamp=True)
    C: float = param(1.0, "linear SVM regularisation constant (multilabel task)", Interval(0, None, "neither"),
                     active_when=When(task="multilabel"))
    reg: float = param(1e-3, "ridge added to Σxx and Σyy (× mean variance)", Interval(0, None))


@register
class CCASVM(Algorithm):
    """Classical CCA subspace of (X, Y); per-label SVMs there, mapped back through W_x (Rai & Daumé's CCA)."""

    name = "cca"
    tasks = frozenset({"multilabel", "recovery"})
    Params = CCASVMParams
    version = "2"

    def run(self, split, params, ctx):
        if isinstance(split, MultilabelSplit):
            return decide_by_refits(self.fit_predict, split, params, ctx, 0.0)
        return self.fit_predict(split, params, ctx)

    def fit_predict(self, split, params, ctx):
        if isinstance(split, RecoverySplit):
            return self.recover(split, params)
        Xtr, Xte = _standardised(split)
        Ytr = np.asarray(split.Y_train, float)

        def projector(X_fit, Y_fit, X_all, k):
            full = ~np.isnan(Y_fit).any(1)
            if full.sum() < 2:
                raise DataError("cca: fewer than two training rows with all labels known; "
                                "lower the missing fraction")
            Ux, _, _ = cca_directions(X_fit[full], Y_fit[full], params.reg)
            return Ux[:, :k]

        k, diagnostics = choose_k(params, Xtr, Ytr, Xte, projector, min(Xtr.shape[1], Ytr.shape[1]), ctx)
        scores = fit_subspace_predict(Xtr, Ytr, Xte, projector, k, params.C)
        return Prediction(scores=scores, labels=(scores > 0).astype(float), diagnostics={"K": k, **diagnostics})

    @staticmethod
    def recover(split, params) -> Prediction:
        """Classical CCA's answer to the recovery task (Rai & Daumé's §5.1 baseline): K = the canonical
        correlations significant by Bartlett's test (5 %), loadings = those directions of X and Y."""
        Ux, Uy, rho = cca_directions(split.X, split.Y, params.reg)
        k = bartlett_significant(rho, split.X.shape[0], split.X.shape[1], split.Y.shape[1])
        W = np.vstack([Ux[:, :k], Uy[:, :k]])
        return Prediction(extras={"K": k, "W": W}, diagnostics={"K": k, "rho": [round(float(r), 4) for r in rho]})
