"""The dissertation's simple baselines: one-vs-rest logistic regression (MLLR) and SVM (MLSVM)
for multi-label prediction (§4.4.2), and per-column mean imputation for missing entries."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from malt.context import to_dense
from malt.params import Interval, Options, Params, param
from malt.registry import Algorithm, register
from malt.splits import Prediction


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


def one_vs_rest(make_model, X_train, Y_train, X_test, score_of):
    """Fit one binary model per label on the rows where that label is known.

    A label whose known training entries are all one class gets a constant score (its prior), so
    degenerate folds never crash. Returns (scores, labels) of shape (n_test, L).
    """
    n_test, L = X_test.shape[0], Y_train.shape[1]
    scores = np.zeros((n_test, L))
    labels = np.zeros((n_test, L))
    for j in range(L):  # one independent model per label: the loop is over models, not entries
        known = ~np.isnan(Y_train[:, j])
        y = Y_train[known, j]
        if known.sum() == 0 or np.all(y == y[0]):
            prior = float(y.mean()) if y.size else 0.0
            scores[:, j], labels[:, j] = prior - 0.5, float(prior > 0.5)
            continue
        model = make_model().fit(X_train[known], y.astype(int))
        scores[:, j], labels[:, j] = score_of(model, X_test)
    return scores, labels


def _scaled(split, scale: bool):
    X_train, X_test = to_dense(split.X_train).astype(float), to_dense(split.X_test).astype(float)
    if scale:
        mean, std = X_train.mean(0), X_train.std(0)
        std[std == 0] = 1.0
        X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
    return X_train, X_test


@dataclass(frozen=True, kw_only=True)
class MLLRParams(Params):
    C: float = param(1.0, "inverse L2 regularisation strength", Interval(0, None, "neither"))
    scale: bool = param(True, "standardise features on the training rows")


@register
class MLLR(Algorithm):
    """One-vs-rest L2 logistic regression (the dissertation's MLLR)."""

    name = "mllr"
    tasks = frozenset({"multilabel"})
    Params = MLLRParams

    def run(self, split, params, ctx):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        X_train, X_test = _scaled(split, params.scale)

        def score(model, X):
            p = model.predict_proba(X)[:, 1]
            return p, (p > 0.5).astype(float)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            scores, labels = one_vs_rest(lambda: LogisticRegression(C=params.C, max_iter=1000),
                                         X_train, split.Y_train, X_test, score)
        return Prediction(scores=scores, labels=labels)


@dataclass(frozen=True, kw_only=True)
class MLSVMParams(Params):
    C: float = param(1.0, "SVM regularisation constant", Interval(0, None, "neither"))
    kernel: str = param("linear", "SVM kernel", Options("linear", "rbf"))
    gamma: float | None = param(None, "RBF width parameter; None = 1 / (d · var(X))", Interval(0, None, "neither"))
    scale: bool = param(True, "standardise features on the training rows")


@register
class MLSVM(Algorithm):
    """One-vs-rest support vector machines (the dissertation's MLSVM; Rai & Daumé's full-SVM)."""

    name = "mlsvm"
    tasks = frozenset({"multilabel"})
    Params = MLSVMParams

    def run(self, split, params, ctx):
        from sklearn.svm import SVC

        X_train, X_test = _scaled(split, params.scale)
        gamma = "scale" if params.gamma is None else params.gamma

        def score(model, X):
            s = model.decision_function(X)
            return s, (s > 0).astype(float)

        scores, labels = one_vs_rest(lambda: SVC(C=params.C, kernel=params.kernel, gamma=gamma),
                                     X_train, split.Y_train, X_test, score)
        return Prediction(scores=scores, labels=labels)
