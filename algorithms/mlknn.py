"""ML-kNN (Zhang & Zhou 2007): per-label Bayes rule on the number of neighbours carrying the label.

Unknown training labels (NaN): a row whose label l is unknown is left out of label l's prior and
count statistics, and a neighbour whose label l is unknown is replaced by the neighbourhood's
known-entry rate (the count among k neighbours is k × known positives / known neighbours, rounded;
the prior when no neighbour knows label l).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.errors import DataError
from malt.numerics.decisions import ThresholdParams, decided, learned
from malt.params import Interval, param
from malt.registry import Algorithm, register
from malt.splits import Prediction


def neighbour_counts(Y: np.ndarray, neighbours: np.ndarray, k: int, prior: np.ndarray) -> np.ndarray:
    """C[i, l] = number of the k neighbours of row i that carry label l, in 0..k (int).

    Y : (n_train, L) 0/1/NaN; neighbours : (m, k) row positions into Y.
    Unknown entries are imputed by the known-entry rate among the neighbours (see module doc).
    """
    V = Y[neighbours]  # (m, k, L)
    known = ~np.isnan(V)
    pos = np.where(known, V, 0.0).sum(1)
    nk = known.sum(1)
    if np.all(nk == k):
        return pos.astype(int)
    rate = np.where(nk > 0, pos / np.maximum(nk, 1), prior[None, :])
    return np.rint(k * rate).astype(int)


def mlknn_tables(Y: np.ndarray, train_neighbours: np.ndarray, k: int, s: float = 1.0):
    """ML-kNN training statistics (Zhang & Zhou 2007, Fig. 1): prior P(H¹_l) (L,) and count
    likelihoods P(E_j | H¹_l), P(E_j | H⁰_l) of shape (L, k+1).

    Priors P(H¹_l) = (s + Σ_i y_il) / (2s + n); likelihoods P(E_j | H^b_l) = (s + c_b[j]) /
    (s(k+1) + Σ_j c_b[j]) where c_b[j] counts training rows with y_il = b and j neighbours with l.
    """
    Y = np.asarray(Y, dtype=float)
    n, L = Y.shape
    known = ~np.isnan(Y)
    pos = np.where(known, Y, 0.0)
    prior1 = (s + pos.sum(0)) / (2 * s + known.sum(0))
    C = neighbour_counts(Y, train_neighbours, k, prior1)  # (n, L)
    onehot = C[:, :, None] == np.arange(k + 1)[None, None, :]  # (n, L, k+1)
    c1 = np.einsum("nl,nlj->lj", pos, onehot)
    c0 = np.einsum("nl,nlj->lj", known * (1 - pos), onehot)
    like1 = (s + c1) / (s * (k + 1) + c1.sum(1, keepdims=True))
    like0 = (s + c0) / (s * (k + 1) + c0.sum(1, keepdims=True))
    return prior1, like1, like0


def mlknn_posteriors(Y: np.ndarray, train_neighbours: np.ndarray, test_neighbours: np.ndarray,
                     k: int, s: float = 1.0) -> np.ndarray:
    """ML-kNN posterior P(H¹_l | E^l_{C_l}) for every test row and label (Bayes rule on ``mlknn_tables``)."""
    Y = np.asarray(Y, dtype=float)
    return posteriors_from_tables(Y, test_neighbours, k, mlknn_tables(Y, train_neighbours, k, s))


def posteriors_from_tables(Y: np.ndarray, test_neighbours: np.ndarray, k: int, tables) -> np.ndarray:
    """Bayes rule of ML-kNN for test rows whose neighbours (positions into Y) are given."""
    prior1, like1, like0 = tables
    Ct = neighbour_counts(Y, test_neighbours, k, prior1)
    lab = np.arange(Y.shape[1])[None, :]
    p1 = prior1[None, :] * like1[lab, Ct]
    p0 = (1 - prior1)[None, :] * like0[lab, Ct]
    return p1 / (p1 + p0)


def neighbour_count(k: int, n_train: int, name: str) -> int:
    """k capped at the n_train − 1 other training rows (a fold smaller than k neighbours still runs);
    DataError with fewer than two training rows."""
    if n_train < 2:
        raise DataError(f"{name}: the training part has {n_train} row(s); neighbours need at least 2")
    return min(int(k), n_train - 1)


def positions(train_index: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions in ``train_index`` of the dataset rows ``rows``."""
    order = np.argsort(train_index)
    return order[np.searchsorted(train_index, rows, sorter=order)]


@dataclass(frozen=True, kw_only=True)
class MLkNNParams(ThresholdParams):
    k: int = param(10, "number of neighbours (at most the training rows − 1)", Interval(1, None),
                   max_from="train_rows-1")
    s: float = param(1.0, "Laplace smoothing of priors and count likelihoods", Interval(0, None, "neither"))


@register
class MLkNN(Algorithm):
    """ML-kNN: Bayes rule on neighbour label counts (Zhang & Zhou 2007).

    Decisions by the shared thresholds (`malt.numerics.decisions`; the posterior's ½ is the natural cut),
    learned on the training rows' leave-one-out posteriors: each row's own neighbours exclude it (the
    count tables are those of all training rows, as ML-kNN's own training step computes them)."""

    name = "mlknn"
    tasks = frozenset({"multilabel"})
    Params = MLkNNParams
    version = "5"  # neighbours in features scaled with the training rows' statistics (2); shared thresholds,
    #                k capped at the training rows − 1 (3); prior/calibrated/rscut decision candidates,
    #                paired one-SE (4)
    # v5: macro-F1 from its own decisions (the macro-F1 family of malt.numerics.decisions)
    preload = ("sklearn.neighbors",)

    def fit_model(self, split, params, ctx):
        """The inductive half of `run`: the training rows' neighbour statistics (Zhang & Zhou, Fig. 1)
        and the decisions learned on their leave-one-out posteriors."""
        tr = np.asarray(split.train_index)
        k = neighbour_count(params.k, len(tr), self.name)
        nb_tr, _ = ctx.knn(k, query=tr, among=tr)
        Y = np.asarray(split.Y_train, dtype=float)
        tables = mlknn_tables(Y, positions(tr, nb_tr), k, params.s)
        oof = posteriors_from_tables(Y, positions(tr, nb_tr), k, tables)
        return tr, Y, k, tables, learned(params.threshold, Y, 0.5, ctx.rng, oof)

    def predict_model(self, fitted, split, params, ctx) -> Prediction:
        tr, Y, k, tables, decisions = fitted
        nb_te, _ = ctx.knn(k, query=np.asarray(split.test_index), among=tr, exclude_self=False)
        P = posteriors_from_tables(Y, positions(tr, nb_te), k, tables)
        return decided(P, decisions, {"k": k})

    def run(self, split, params, ctx):
        return self.fit_then_predict(split, params, ctx)
