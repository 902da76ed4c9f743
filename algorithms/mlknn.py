"""ML-kNN (Zhang & Zhou 2007): per-label Bayes rule on the number of neighbours carrying the label.

Unknown training labels (NaN): a row whose label l is unknown is left out of label l's prior and
count statistics, and a neighbour whose label l is unknown is replaced by the neighbourhood's
known-entry rate (the count among k neighbours is k × known positives / known neighbours, rounded;
the prior when no neighbour knows label l).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.params import Interval, Params, param
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


def positions(train_index: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions in ``train_index`` of the dataset rows ``rows``."""
    order = np.argsort(train_index)
    return order[np.searchsorted(train_index, rows, sorter=order)]


@dataclass(frozen=True, kw_only=True)
class MLkNNParams(Params):
    k: int = param(10, "number of neighbours", Interval(1, None))
    s: float = param(1.0, "Laplace smoothing of priors and count likelihoods", Interval(0, None, "neither"))


@register
class MLkNN(Algorithm):
    """ML-kNN: Bayes rule on neighbour label counts (Zhang & Zhou 2007)."""

    name = "mlknn"
    tasks = frozenset({"multilabel"})
    Params = MLkNNParams
    version = "2"  # neighbours in features scaled with the training rows' statistics (v1: all rows)
    preload = ("sklearn.neighbors",)

    def fit_model(self, split, params, ctx):
        """The inductive half of `run`: the training rows' neighbour statistics (Zhang & Zhou, Fig. 1)."""
        tr = np.asarray(split.train_index)
        nb_tr, _ = ctx.knn(params.k, query=tr, among=tr)
        Y = np.asarray(split.Y_train, dtype=float)
        return tr, Y, mlknn_tables(Y, positions(tr, nb_tr), params.k, params.s)

    def predict_model(self, fitted, split, params, ctx) -> Prediction:
        tr, Y, tables = fitted
        nb_te, _ = ctx.knn(params.k, query=np.asarray(split.test_index), among=tr, exclude_self=False)
        P = posteriors_from_tables(Y, positions(tr, nb_te), params.k, tables)
        return Prediction(scores=P, labels=(P >= 0.5).astype(float))

    def run(self, split, params, ctx):
        return self.fit_then_predict(split, params, ctx)
