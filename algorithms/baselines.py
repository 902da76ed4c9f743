"""The dissertation's simple baselines: one-vs-rest logistic regression (MLLR) and SVM (MLSVM)
for multi-label prediction (§4.4.2), the trivial multi-label reference ``label-prior`` (each label
decided by its training majority), and per-column mean imputation for missing entries.

The multi-label baselines choose their regularisation constant C by inner cross-validation on the
training rows (`malt.numerics.selection`; 3 folds, as Bogatinovski et al. 2022 tune every method). The
criterion is the learner's own loss on the held-out label entries: binary log-loss for the
probabilistic models (a proper scoring rule, so the choice serves both the rankings and the ½-cut
decisions), hinge loss for the SVM. Logistic regressions walk the grid from strong to weak
regularisation, each fit warm-started at the previous solution (`logistic_path`).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from malt.numerics import linalg
from malt.params import Interval, NoParams, Options, Params, When, param
from malt.registry import Algorithm, register
from malt.numerics.selection import InnerCVParams, Selection, candidates, inner_fold_ids, select
from malt.splits import Prediction

# Inner CV defaults shared by the multi-label baselines: 3 folds, and C grids a decade apart.
INNER_FOLDS = 3
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)


def column_means(M: np.ndarray) -> np.ndarray:
    """Mean of the observed (non-NaN) entries along axis 0; the global mean where a column is empty."""
    observed = ~np.isnan(M)
    total = np.where(observed, M, 0.0).sum(axis=0)
    count = observed.sum(axis=0)
    overall = np.nanmean(M) if observed.any() else 0.0
    return np.where(count > 0, total / np.maximum(count, 1), overall)


@register
class ColumnMean(Algorithm):
    """Impute every hidden entry by the mean of its column's observed entries."""

    name = "column-mean"
    tasks = frozenset({"missing"})

    def run(self, split, params, ctx):
        M = split.M
        return Prediction(values=np.broadcast_to(column_means(M), M.shape).copy())


def single_threaded_blas():
    """Context in which BLAS runs on one thread: the baselines make hundreds of small fits, where
    BLAS threads cost more than they save (a 475 × 72 logistic regression: 0.01 s on one thread,
    0.15-0.27 s with the default threads on a loaded 2-core machine)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def log_loss(Y: np.ndarray, P: np.ndarray, eps: float = 1e-6) -> float:
    """Mean binary log-loss −[y log p + (1−y) log(1−p)] over the known (non-NaN) entries of Y."""
    known = ~np.isnan(Y)
    p = np.clip(P[known], eps, 1 - eps)
    y = Y[known]
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p))) if y.size else 0.0


def hinge_loss(Y: np.ndarray, S: np.ndarray) -> float:
    """Mean hinge loss max(0, 1 − (2y−1) s) over the known entries of Y (s: SVM margins)."""
    known = ~np.isnan(Y)
    return float(np.mean(np.maximum(0.0, 1.0 - (2 * Y[known] - 1) * S[known]))) if known.any() else 0.0


def logistic_path(X_train, Y_train, X_test, Cs, max_iter: int = 1000) -> np.ndarray:
    """(len(Cs), n_test, L) class-1 probabilities of one-vs-rest L2 logistic regressions at every C.

    Per label, the Cs are fit in increasing order, each warm-started at the previous coefficients
    (lbfgs), on the rows where the label is known; a label whose known entries are one class gets
    that class's probability. Returned in the order of ``Cs``.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    Cs = np.asarray(Cs, dtype=float)
    out = np.zeros((len(Cs), X_test.shape[0], Y_train.shape[1]))
    with warnings.catch_warnings(), single_threaded_blas():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for j in range(Y_train.shape[1]):  # one model (path) per label
            known = ~np.isnan(Y_train[:, j])
            y = Y_train[known, j].astype(int)
            if y.size == 0 or np.all(y == y[0]):
                out[:, :, j] = float(y[0]) if y.size else 0.5
                continue
            model = LogisticRegression(max_iter=max_iter, warm_start=True)
            for i in np.argsort(Cs):
                model.set_params(C=float(Cs[i])).fit(X_train[known], y)
                out[i, :, j] = model.predict_proba(X_test)[:, 1]
    return out


def fit_logistic(X_train, Y_train, C: float, max_iter: int = 1000) -> list:
    """One L2 logistic regression per label at C on the rows where the label is known (what
    `logistic_path` fits at a single C); a label whose known entries are one class is that class's
    probability (a float). Cost: L lbfgs fits on (n, d)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    models: list = []
    with warnings.catch_warnings(), single_threaded_blas():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for j in range(Y_train.shape[1]):
            known = ~np.isnan(Y_train[:, j])
            y = Y_train[known, j].astype(int)
            if y.size == 0 or np.all(y == y[0]):
                models.append(float(y[0]) if y.size else 0.5)
                continue
            models.append(LogisticRegression(C=float(C), max_iter=max_iter).fit(X_train[known], y))
    return models


def predict_logistic(models: list, X_test) -> np.ndarray:
    """(n_test, L) class-1 probabilities of `fit_logistic`'s per-label models."""
    out = np.empty((X_test.shape[0], len(models)))
    with single_threaded_blas():
        for j, model in enumerate(models):
            out[:, j] = model if isinstance(model, float) else model.predict_proba(X_test)[:, 1]
    return out


def select_on_path(params: Params, grids: dict[str, Sequence], path: Callable[[np.ndarray, np.ndarray], np.ndarray],
                   Y: np.ndarray, rng: np.random.Generator, loss: Callable[[np.ndarray, np.ndarray], float],
                   progress: Callable[[float], None] | None = None) -> Selection:
    """Inner-CV choice (`malt.numerics.selection.select`) over the combinations of ``grids`` (parameter name →
    its ``<name>_grid``) when one call scores every combination at once.

    path(train, val) : (n_candidates, len(val), L) scores of the validation rows for every combination,
        in the order of ``malt.numerics.selection.candidates(params, grids)``, fit on the training rows
        (indices into the caller's training part); called once per fold.

    loss(Y_val, scores) : the validation loss of one combination (lower is better).
    """
    options = candidates(params, grids)
    ids = inner_fold_ids(Y.shape[0], params.inner_folds, rng)
    folds = len(np.unique(ids))
    done: dict[tuple[int, int], np.ndarray] = {}

    def evaluate(option, train, val):
        key = (int(val[0]), val.size)
        if key not in done:
            S = path(train, val)
            done[key] = np.array([loss(Y[val], S[i]) for i in range(len(options))])
            if progress is not None:  # the work is one path per fold (the final fit on all rows: about one more)
                progress(len(done) / (folds + 1))
        return done[key][next(i for i, o in enumerate(options) if o is option)]

    return select(options, evaluate, ids)


def train_test_features(split, scale: bool):
    """A split's dense float features (train, test), standardised on the training rows if ``scale``."""
    X_train, X_test = linalg.to_dense(split.X_train).astype(float), linalg.to_dense(split.X_test).astype(float)
    return linalg.standardize_train_test(X_train, X_test) if scale else (X_train, X_test)


@register
class LabelPrior(Algorithm):
    """Trivial multi-label reference: every label decided by its training majority, no features.

    Scores are f_j − ½ for every test row, f_j the fraction of known training entries of label j that
    are 1 (−½ for a label with none known); cost O(nL)."""

    name = "label-prior"
    tasks = frozenset({"multilabel"})
    Params = NoParams
    version = "1"

    def run(self, split, params, ctx):
        Ytr = np.asarray(split.Y_train, float)
        known = ~np.isnan(Ytr)
        count = known.sum(axis=0)
        share = np.where(count > 0, np.where(known, Ytr, 0.0).sum(axis=0) / np.maximum(count, 1), 0.0)
        scores = np.tile(share - 0.5, (split.X_test.shape[0], 1))
        return Prediction(scores=scores, labels=(scores > 0).astype(float))


@dataclass(frozen=True, kw_only=True)
class MultilabelCVParams(InnerCVParams):
    """Inner CV over the regularisation constant C, on by default (3 folds, ``C_GRID``)."""

    select: str = param("inner-cv", "'inner-cv': choose C from C_grid by inner cross-validation on the training rows "
                        "(held-out log-loss; hinge loss for SVMs); 'none': use C as given", Options("none", "inner-cv"))
    inner_folds: int = param(INNER_FOLDS, "folds of the inner cross-validation (select=inner-cv)", Interval(2, None))
    C: float = param(1.0, "inverse regularisation strength (used as given with select=none)", Interval(0, None, "neither"))
    C_grid: tuple[float, ...] = param(C_GRID, "candidates for C (select=inner-cv)", Interval(0, None, "neither"))


@dataclass(frozen=True, kw_only=True)
class MLLRParams(MultilabelCVParams):
    scale: bool = param(True, "standardise features on the training rows")


@register
class MLLR(Algorithm):
    """One-vs-rest L2 logistic regression (the dissertation's MLLR), C by inner CV."""

    name = "mllr"
    tasks = frozenset({"multilabel"})
    Params = MLLRParams
    version = "2"  # C chosen by inner CV by default
    preload = ("sklearn.linear_model",)

    def run(self, split, params, ctx):
        X_train, X_test = train_test_features(split, params.scale)
        Y = np.asarray(split.Y_train, dtype=float)
        diagnostics = {}
        if params.select == "inner-cv":
            choice = select_on_path(params, {"C": params.C_grid},
                                    lambda tr, va: logistic_path(X_train[tr], Y[tr], X_train[va], params.C_grid),
                                    Y, ctx.rng, log_loss, progress=lambda f: ctx.progress(f, "inner CV over C"))
            params, diagnostics = choice.best, choice.diagnostics()
        P = logistic_path(X_train, Y, X_test, (params.C,))[0]
        return Prediction(scores=P, labels=(P > 0.5).astype(float), diagnostics=diagnostics)


@dataclass(frozen=True, kw_only=True)
class MLSVMParams(MultilabelCVParams):
    C_grid: tuple[float, ...] = param((1.0, 3.0, 10.0), "candidates for C (select=inner-cv)",
                                      Interval(0, None, "neither"))
    kernel: str = param("rbf", "SVM kernel ('rbf' by default: on scene's given split it lifts average precision from "
                        "85.0 to 88.2 % over the linear kernel)", Options("linear", "rbf"))
    gamma_scale: float = param(1.0, "RBF width γ as a multiple of scikit-learn's 'scale', 1 / (d · var(X))",
                               Interval(0, None, "neither"), active_when=When(kernel="rbf"))
    gamma_scale_grid: tuple[float, ...] = param((0.5, 1.0, 2.0), "candidates for gamma_scale (select=inner-cv, "
                                                "kernel=rbf)", Interval(0, None, "neither"),
                                                active_when=When(kernel="rbf"))
    scale: bool = param(True, "standardise features on the training rows")


def rbf_gamma(X: np.ndarray, multiple: float) -> float:
    """γ = multiple / (d · var(X)), scikit-learn's gamma='scale' times ``multiple``."""
    var = float(np.var(X))
    return multiple / (X.shape[1] * var) if var > 0 else multiple


def svm_grids(params) -> dict[str, tuple]:
    """The (C, gamma_scale) grids an RBF SVM's inner CV walks (C only for a linear kernel)."""
    grids = {"C": params.C_grid}
    if params.kernel == "rbf":
        grids["gamma_scale"] = params.gamma_scale_grid
    return grids


def svm_candidate_margins(X_fit, Y_fit, X_val, options, kernel="rbf") -> np.ndarray:
    """(len(options), n_val, L) one-vs-rest SVM margins for every (C, gamma_scale) candidate."""
    return np.concatenate([svm_margins(X_fit, Y_fit, X_val, (o.C,), kernel, rbf_gamma(X_fit, o.gamma_scale))
                           for o in options])


def svm_margins(X_train, Y_train, X_test, Cs, kernel="linear", gamma="scale") -> np.ndarray:
    """(len(Cs), n_test, L) one-vs-rest SVM margins at every C, each label fit on its known rows; a
    label whose known entries are one class gets margin ±1."""
    from sklearn.svm import SVC

    out = np.zeros((len(Cs), X_test.shape[0], Y_train.shape[1]))
    with single_threaded_blas():
        for j in range(Y_train.shape[1]):  # one model per label and C
            known = ~np.isnan(Y_train[:, j])
            y = Y_train[known, j].astype(int)
            if y.size == 0 or np.all(y == y[0]):
                out[:, :, j] = (2.0 * y[0] - 1) if y.size else 0.0
                continue
            for i, C in enumerate(Cs):
                out[i, :, j] = SVC(C=float(C), kernel=kernel, gamma=gamma).fit(X_train[known], y).decision_function(X_test)
    return out


@register
class MLSVM(Algorithm):
    """One-vs-rest support vector machines (the dissertation's MLSVM; Rai & Daumé's full-SVM), C by inner CV."""

    name = "mlsvm"
    tasks = frozenset({"multilabel"})
    Params = MLSVMParams
    version = "4"  # C chosen by inner CV (2), RBF kernel (3), C and γ by inner CV (4), by default
    preload = ("sklearn.svm",)

    def run(self, split, params, ctx):
        X_train, X_test = train_test_features(split, params.scale)
        Y = np.asarray(split.Y_train, dtype=float)
        diagnostics = {}
        if params.select == "inner-cv":
            grids = svm_grids(params)
            options = candidates(params, grids)
            choice = select_on_path(params, grids, lambda tr, va: svm_candidate_margins(
                X_train[tr], Y[tr], X_train[va], options, params.kernel), Y, ctx.rng, hinge_loss,
                progress=lambda f: ctx.progress(f, "inner CV over C, γ"))
            params, diagnostics = choice.best, choice.diagnostics()
        S = svm_margins(X_train, Y, X_test, (params.C,), params.kernel, rbf_gamma(X_train, params.gamma_scale))[0]
        return Prediction(scores=S, labels=(S > 0).astype(float), diagnostics=diagnostics)
