"""Ensemble of classifier chains (`ecc`; Read, Pfahringer, Holmes & Frank 2009/2011).

m classifier chains of logistic regressions (``ccml.classifier_chain``: the same links, the same
handling of unknown training labels), each with its own random label order and, with ``bootstrap``,
its own bootstrap sample of the training rows ("a random subset of D"). The ensemble's score for a
label is the mean of the chains' probabilities; a label is decided by the shared thresholds (`malt.numerics.decisions`; ½, the vote threshold of
scikit-learn's ECC example, is the natural cut), learned on the out-of-fold scores of the inner CV's
chain. The chains' C is chosen like CCML's (`ccml`): 3-fold inner CV of one chain (the first order) on
the training rows, held-out log-loss.
Cost: m × L logistic regressions on ≤ d + L features, plus |C_grid| × 3 chains for the choice.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from malt.numerics.decisions import decided, learned
from malt.params import Interval, param
from malt.registry import Algorithm, register

from .baselines import MultilabelCVParams, train_test_features, log_loss, select_on_path, single_threaded_blas
from .ccml import classifier_chain


def chain_ensemble(X_train, Y_train, X_test, orders, make_model, rows=None) -> np.ndarray:
    """(n_test, L) mean class-1 probability of one classifier chain per label order.

    orders : sequence of label permutations, one per chain.
    rows : per chain, the training-row indices it learns from (None = all rows).
    """
    Y_train = np.asarray(Y_train, dtype=float)
    total = np.zeros((X_test.shape[0], Y_train.shape[1]))
    for k, order in enumerate(orders):  # chains are independent models: the loop is over models
        r = slice(None) if rows is None else rows[k]
        scores, _ = classifier_chain(X_train[r], Y_train[r], X_test, order, make_model)
        total += scores
    return total / len(orders)


@dataclass(frozen=True, kw_only=True)
class ECCParams(MultilabelCVParams):
    C_grid: tuple[float, ...] = param((0.01, 0.1, 1.0, 10.0), "candidates for C (select=inner-cv)",
                                      Interval(0, None, "neither"))
    chains: int = param(10, "number of classifier chains", Interval(1, None))
    bootstrap: bool = param(True, "train each chain on a bootstrap sample of the training rows")


@register
class ECC(Algorithm):
    """Ensemble of classifier chains of logistic regressions (Read et al. 2009)."""

    name = "ecc"
    tasks = frozenset({"multilabel"})
    Params = ECCParams
    version = "5"  # C chosen by inner CV by default (2); stratified repeated inner CV, one-SE rule, shared
    #                thresholds learned on the inner CV's out-of-fold scores of one chain (3);
    #                prior/calibrated/rscut decision candidates, paired one-SE (4)
    # v5: macro-F1 from its own decisions (the macro-F1 family of malt.numerics.decisions)
    preload = ("sklearn.linear_model",)

    def run(self, split, params, ctx):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        X_tr, X_te = train_test_features(split, True)
        Y = np.asarray(split.Y_train, dtype=float)
        n, L = Y.shape
        orders = [ctx.rng.permutation(L) for _ in range(params.chains)]
        rows = [ctx.rng.integers(0, n, n) for _ in range(params.chains)] if params.bootstrap else None
        diagnostics, oof = {}, None
        with warnings.catch_warnings(), single_threaded_blas():
            warnings.simplefilter("ignore", ConvergenceWarning)
            if params.select == "inner-cv":
                def one_chain(tr, va):
                    return np.stack([classifier_chain(X_tr[tr], Y[tr], X_tr[va], orders[0],
                                                      lambda: LogisticRegression(C=C, max_iter=1000))[0]
                                     for C in params.C_grid])
                choice = select_on_path(params, {"C": params.C_grid}, one_chain, Y, ctx.rng, log_loss,
                                        progress=lambda f: ctx.progress(f, "inner CV over C"))
                params, diagnostics, oof = choice.best, choice.diagnostics(), choice.out_of_fold

            def ensemble(X_fit, Y_fit, X_pred, boot):
                return chain_ensemble(X_fit, Y_fit, X_pred, orders,
                                      lambda: LogisticRegression(C=params.C, max_iter=1000), boot)

            decisions = learned(params.threshold, Y, 0.5, ctx.rng, oof, folds=params.inner_folds,
                                fit_predict=lambda tr, va: ensemble(X_tr[tr], Y[tr], X_tr[va], None))
            scores = ensemble(X_tr, Y, X_te, rows)
        return decided(scores, decisions, diagnostics)
