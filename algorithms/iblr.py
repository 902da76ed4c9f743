"""IBLR-ML (Cheng & Hüllermeier 2009): logistic regression per label on the label frequencies of
the k nearest neighbours (IBLR-ML), optionally together with the features (IBLR-ML+).

Unknown training labels (NaN): a neighbour's unknown label is left out of that label's frequency
(the frequency is over neighbours that know it; the label's training prior when none does), and a
training row whose target label is unknown is dropped from that label's regression.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.numerics.decisions import decided, learned
from malt.params import Interval, param
from malt.registry import Algorithm, register
from malt.splits import Prediction

from .baselines import (MultilabelCVParams, train_test_features, fit_logistic, log_loss, logistic_path, predict_logistic,
                        select_on_path)
from .mlknn import neighbour_count, positions


def neighbour_label_rates(Y: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """(m, L) fraction of each row's neighbours carrying each label, over neighbours that know it."""
    V = Y[neighbours]
    known = ~np.isnan(V)
    nk = known.sum(1)
    prior = np.nanmean(Y, axis=0)
    prior = np.where(np.isnan(prior), 0.0, prior)
    return np.where(nk > 0, np.where(known, V, 0.0).sum(1) / np.maximum(nk, 1), prior[None, :])


@dataclass(frozen=True, kw_only=True)
class IBLRParams(MultilabelCVParams):
    k: int = param(10, "number of neighbours (at most the training rows − 1)", Interval(1, None),
                   max_from="train_rows-1")
    C_grid: tuple[float, ...] = param((0.1, 1.0, 10.0, 100.0, 1000.0), "candidates for C (select=inner-cv)",
                                      Interval(0, None, "neither"))
    features: bool = param(False, "also use the standardised features (IBLR-ML+)")


@register
class IBLR(Algorithm):
    """IBLR-ML: logistic regression on neighbours' label frequencies (Cheng & Hüllermeier 2009), C by inner CV.

    The regressions' inputs are L label rates in [0, 1], so the fixed C = 1 of earlier versions shrank
    them hard (average precision 66.8 % against 77.1 % at C = 100 on a held-out MULAN set). The inner
    CV reuses the training rows' neighbour rates (computed among all training rows, each row's own
    label excluded), so an inner-validation row's label can appear in an inner-training row's
    inputs, never in its own.
    """

    name = "iblr"
    tasks = frozenset({"multilabel"})
    Params = IBLRParams
    version = "6"  # v2: C chosen by inner CV by default; v3: neighbours in features scaled with the training
    #                rows' statistics (before: all rows); v4: stratified repeated inner CV, one-SE rule, shared
    #                thresholds, k capped at the training rows − 1; v5: prior/calibrated/rscut decision
    #                candidates, paired one-SE
    # v6: macro-F1 from its own decisions (the macro-F1 family of malt.numerics.decisions)
    preload = ("sklearn.linear_model", "sklearn.neighbors")

    def fit_model(self, split, params, ctx):
        """Training half: the training rows' neighbour label rates, C by inner CV, one logistic
        regression per label, the shared thresholds from the inner CV's out-of-fold scores. Cost: kNN
        among n training rows, then (inner folds × |C_grid| + 1) × L fits."""
        tr = np.asarray(split.train_index)
        k = neighbour_count(params.k, len(tr), self.name)
        nb_tr, _ = ctx.knn(k, query=tr, among=tr)
        Y = np.asarray(split.Y_train, dtype=float)
        Z_tr = neighbour_label_rates(Y, positions(tr, nb_tr))
        if params.features:
            Z_tr = np.hstack([Z_tr, train_test_features(split, True)[0]])
        diagnostics, oof = {"k": k}, None
        if params.select == "inner-cv":
            choice = select_on_path(params, {"C": params.C_grid},
                                    lambda t, v: logistic_path(Z_tr[t], Y[t], Z_tr[v], params.C_grid),
                                    Y, ctx.rng, log_loss, progress=lambda f: ctx.progress(f, "inner CV over C"))
            params, oof = choice.best, choice.out_of_fold
            diagnostics.update(choice.diagnostics())
        decisions = learned(params.threshold, Y, 0.5, ctx.rng, oof, folds=params.inner_folds,
                            fit_predict=lambda t, v: logistic_path(Z_tr[t], Y[t], Z_tr[v], (params.C,))[0])
        return tr, Y, k, fit_logistic(Z_tr, Y, params.C), decisions, diagnostics

    def predict_model(self, fitted, split, params, ctx) -> Prediction:
        tr, Y, k, models, decisions, diagnostics = fitted
        nb_te, _ = ctx.knn(k, query=np.asarray(split.test_index), among=tr, exclude_self=False)
        Z_te = neighbour_label_rates(Y, positions(tr, nb_te))
        if params.features:
            Z_te = np.hstack([Z_te, train_test_features(split, True)[1]])
        return decided(predict_logistic(models, Z_te), decisions, dict(diagnostics))

    def run(self, split, params, ctx):
        return self.fit_then_predict(split, params, ctx)
