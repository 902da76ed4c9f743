"""scikit-learn's general-purpose imputers as baselines of the `missing` task, run on [M, X]: the matrix
to complete beside the row side information PMA's row kernel K1 is built from.

* ``iterative-impute`` — `sklearn.impute.IterativeImputer` (MICE-style chained regressions, van Buuren
  & Groothuis-Oudshoorn 2011): each column with missing entries is regressed on all other columns in
  turn (BayesianRidge, scikit-learn's default estimator), ``max_iter`` rounds.
* ``knn-impute`` — `sklearn.impute.KNNImputer` (Troyanskaya et al. 2001): each missing entry is the
  mean of that column over the ``n_neighbors`` rows nearest in the NaN-aware Euclidean distance over the
  coordinates both rows have; ``n_neighbors`` chosen by held-out training entries.

The features are standardised over all rows (the missing task is transductive, as for K1) and, when
they have more than ``x_components`` columns, replaced by that many principal components: BayesianRidge
on enron's 1001 or genbase's 1185 columns would cost about a second per column and round. Label
matrices are completed as the task gives them (±c); the estimate's sign is the predicted label.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from malt.errors import DataError
from malt.params import Interval, Options, Params, param
from malt.registry import Algorithm, register
from malt.numerics.selection import InnerCVParams, candidates, holdout_ids, select
from malt.splits import Prediction

from .baselines import single_threaded_blas
from .completion import holdout_loss


def side_information(split, ctx, components: int, use: bool = True) -> np.ndarray | None:
    """The rows' features, standardised over all rows and reduced to ``components`` principal components
    when wider (0: all columns); None when the dataset has none or ``use`` is False. Cached in the run
    context."""
    if not use or getattr(split, "X", None) is None or ctx is None or ctx.X is None:
        return None

    def compute():
        Z = ctx.scaled_features("standardize")
        Z = Z[:, Z.std(axis=0) > 0]
        if components and Z.shape[1] > components:
            from sklearn.decomposition import PCA

            Z = PCA(components, svd_solver="full").fit_transform(Z)
        return np.ascontiguousarray(Z)

    Z = ctx.cached("imputer-features", {"components": int(components)}, compute, producer="imputers@1")
    rows = split.rows if split.rows is not None else np.arange(split.M.shape[0])
    return Z[np.asarray(rows)]


def stacked(M: np.ndarray, Z: np.ndarray | None) -> np.ndarray:
    """[M, Z] (Z None: M alone); DataError for a matrix the imputers cannot take."""
    M = np.asarray(M, dtype=float)
    if M.ndim != 2:
        raise DataError(f"The scikit-learn imputers need a 2-D matrix, got shape {M.shape}.")
    if np.isnan(M).all():
        raise DataError("The matrix has no observed entry; nothing can be imputed.")
    return M if Z is None else np.hstack([M, Z])


def complete_empty_columns(M: np.ndarray, filled: np.ndarray) -> np.ndarray:
    """scikit-learn drops columns with no observed entry; give them the overall observed mean."""
    observed = ~np.isnan(M)
    out = np.full(M.shape, float(np.nanmean(M)))
    keep = observed.any(axis=0)
    out[:, keep] = filled[:, : int(keep.sum())]
    return out


@dataclass(frozen=True, kw_only=True)
class IterativeParams(Params):
    max_iter: int = param(10, "imputation rounds over the columns (scikit-learn's default; it stops earlier at "
                          "tol). A baseline keeps its library's defaults: 3 rounds cost a third but were "
                          "measured only on hidden entries, which may not choose a default", Interval(1, None))
    x_components: int = param(50, "principal components kept of the standardised features when they have more "
                              "columns (0 = all; enron and genbase have 1001 and 1185)", Interval(0, None))
    tol: float = param(1e-3, "stop when the largest change of an imputed value, relative to the largest "
                       "absolute observed value, falls below this (scikit-learn's tol)", Interval(0, None))
    features: bool = param(True, "complete [M, X] (True) or M alone (False)")


@register
class IterativeImpute(Algorithm):
    """ITERATIVE-IMPUTE: scikit-learn's IterativeImputer (chained BayesianRidge regressions) on [M, X]."""

    name = "iterative-impute"
    tasks = frozenset({"missing"})
    Params = IterativeParams
    version = "1"
    preload = ("sklearn.impute", "sklearn.linear_model")

    def run(self, split, params, ctx):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.experimental import enable_iterative_imputer  # noqa: F401
        from sklearn.impute import IterativeImputer

        M = np.asarray(split.M, dtype=float)
        A = stacked(M, side_information(split, ctx, params.x_components, params.features))
        imputer = IterativeImputer(max_iter=params.max_iter, tol=params.tol,
                                   random_state=int(ctx.rng.integers(2 ** 31)))
        with warnings.catch_warnings(), single_threaded_blas():
            warnings.simplefilter("ignore", ConvergenceWarning)
            filled = imputer.fit_transform(A)
        values = complete_empty_columns(M, filled)
        return Prediction(values=values, diagnostics={"rounds": int(imputer.n_iter_), "columns": int(A.shape[1])})


@dataclass(frozen=True, kw_only=True)
class KNNParams(InnerCVParams):
    select: str = param("inner-cv", "'inner-cv': choose n_neighbors from n_neighbors_grid on a holdout of "
                        "1/inner_folds of the training entries (squared hinge loss on the labels' sign, squared "
                        "error on real values); 'none': use n_neighbors",
                        Options("none", "inner-cv"))
    n_neighbors: int = param(10, "neighbours averaged per missing entry (select=none)", Interval(1, None),
                             max_from="rows-1")
    n_neighbors_grid: tuple[int, ...] = param((5, 10, 20, 40), "candidate n_neighbors (select=inner-cv); "
                                              "an entry above the rows minus one is refused (the default "
                                              "list is clamped, with a notice in the diagnostics)",
                                              Interval(1, None), max_from="rows-1")
    weights: str = param("uniform", "'uniform' mean of the neighbours, or 'distance'-weighted",
                         Options("uniform", "distance"))
    x_components: int = param(50, "principal components kept of the standardised features when they have more "
                              "columns (0 = all)", Interval(0, None))
    features: bool = param(True, "complete [M, X] (True) or M alone (False)")


def knn_complete(A: np.ndarray, m: int, n_neighbors: int, weights: str) -> np.ndarray:
    """KNNImputer on [M, X] (its first m columns returned, empty columns filled). O(n² d)."""
    from sklearn.impute import KNNImputer

    with single_threaded_blas():
        filled = KNNImputer(n_neighbors=n_neighbors, weights=weights).fit_transform(A)
    return complete_empty_columns(A[:, :m], filled)


@register
class KNNImpute(Algorithm):
    """KNN-IMPUTE: scikit-learn's KNNImputer on [M, X], the number of neighbours chosen on held-out training entries."""

    name = "knn-impute"
    tasks = frozenset({"missing"})
    Params = KNNParams
    version = "1"
    preload = ("sklearn.impute",)

    def run(self, split, params, ctx):
        M = np.asarray(split.M, dtype=float)
        A = stacked(M, side_information(split, ctx, params.x_components, params.features))
        m = M.shape[1]
        diagnostics = {}
        if params.select == "inner-cv":
            rows, cols = np.nonzero(~np.isnan(M))
            ids = holdout_ids(rows.size, 1.0 / params.inner_folds, ctx.rng)

            def evaluate(option, train, val):
                inner = A.copy()
                inner[rows[val], cols[val]] = np.nan
                est = knn_complete(inner, m, option.n_neighbors, option.weights)[rows[val], cols[val]]
                return holdout_loss(est, M[rows[val], cols[val]], getattr(split, "kind", "real"))

            choice = select(candidates(params, {"n_neighbors": params.n_neighbors_grid}), evaluate, ids,
                            progress=lambda f: ctx.progress(0.8 * f, "inner holdout over n_neighbors"))
            params = choice.best
            diagnostics.update(choice.diagnostics())
        values = knn_complete(A, m, min(params.n_neighbors, M.shape[0] - 1) or 1, params.weights)
        return Prediction(values=values, diagnostics=diagnostics)
