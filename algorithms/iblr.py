"""IBLR-ML (Cheng & Hüllermeier 2009): logistic regression per label on the label frequencies of
the k nearest neighbours (IBLR-ML), optionally together with the features (IBLR-ML+).

Unknown training labels (NaN): a neighbour's unknown label is left out of that label's frequency
(the frequency is over neighbours that know it; the label's training prior when none does), and a
training row whose target label is unknown is dropped from that label's regression.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from malt.params import Interval, Params, param
from malt.registry import Algorithm, register
from malt.splits import Prediction

from .baselines import _scaled, one_vs_rest
from .mlknn import fold_neighbours


def neighbour_label_rates(Y: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """(m, L) fraction of each row's neighbours carrying each label, over neighbours that know it."""
    V = Y[neighbours]
    known = ~np.isnan(V)
    nk = known.sum(1)
    prior = np.nanmean(Y, axis=0)
    prior = np.where(np.isnan(prior), 0.0, prior)
    return np.where(nk > 0, np.where(known, V, 0.0).sum(1) / np.maximum(nk, 1), prior[None, :])


@dataclass(frozen=True, kw_only=True)
class IBLRParams(Params):
    k: int = param(10, "number of neighbours", Interval(1, None))
    C: float = param(1.0, "inverse L2 regularisation of the logistic regressions", Interval(0, None, "neither"))
    features: bool = param(False, "also use the standardised features (IBLR-ML+)")


@register
class IBLR(Algorithm):
    """IBLR-ML: logistic regression on neighbours' label frequencies (Cheng & Hüllermeier 2009)."""

    name = "iblr"
    tasks = frozenset({"multilabel"})
    Params = IBLRParams
    version = "2"  # neighbours in features scaled with the training rows' statistics (v1: all rows)

    def run(self, split, params, ctx):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        nb_tr, nb_te = fold_neighbours(split, ctx, params.k)
        Y = np.asarray(split.Y_train, dtype=float)
        Z_tr, Z_te = neighbour_label_rates(Y, nb_tr), neighbour_label_rates(Y, nb_te)
        if params.features:
            X_tr, X_te = _scaled(split, True)
            Z_tr, Z_te = np.hstack([Z_tr, X_tr]), np.hstack([Z_te, X_te])

        def score(model, X):
            p = model.predict_proba(X)[:, 1]
            return p, (p > 0.5).astype(float)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            scores, labels = one_vs_rest(lambda: LogisticRegression(C=params.C, max_iter=1000),
                                         Z_tr, Y, Z_te, score)
        return Prediction(scores=scores, labels=labels)
