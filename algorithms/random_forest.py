"""Random-forest multi-label learner (`rf`): scikit-learn's RandomForestClassifier on the label matrix.

Random forests win most MULAN measures in the largest published comparison (Bogatinovski et al. 2022:
RF-PCT, one forest whose trees split on all labels at once, and RFDTBR, one forest per label). Both
are here: ``forest='joint'`` fits one multi-output forest (each split reduces the labels' summed
Gini impurity, scikit-learn's native multi-output trees), ``forest='per-label'`` one forest per label.

Unknown training labels (NaN): a tree's impurity for a label must be computed on the rows that know
that label, which scikit-learn's multi-output criterion cannot do, and filling the entries in would
teach the forest labels nobody observed. So, as for the other baselines, unknown entries are dropped
per label: the labels known on every training row share the joint forest, and each label with unknown
entries gets its own forest on the rows that know it.

Scores are the forest's class-1 probabilities (the mean of the trees' leaf frequencies); decisions
come from the shared thresholds learned on the out-of-bag probabilities of the training rows. Cost per forest
O(trees · n log n · max_features) to grow; ``n_jobs=1`` (malt parallelises over units).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.numerics.linalg import to_dense
from malt.numerics.decisions import ThresholdParams, decided, learned
from malt.params import Interval, Options, param
from malt.registry import Algorithm, register


def positive_probability(model, X) -> np.ndarray:
    """(n, L) class-1 probability of a fitted (multi-output) classifier; a label whose training rows
    were all one class gets that class's constant probability."""
    proba = model.predict_proba(X)
    classes = model.classes_
    if not isinstance(proba, list):  # single output
        proba, classes = [proba], [classes]
    out = np.zeros((X.shape[0], len(proba)))
    for j, (p, c) in enumerate(zip(proba, classes)):
        hit = np.flatnonzero(np.asarray(c) == 1)
        if hit.size:
            out[:, j] = p[:, hit[0]]
    return out


def positive_oob(model, Y: np.ndarray) -> np.ndarray:
    """(n, L) out-of-bag class-1 probability of each training row (the mean over the trees that did not
    draw it); a row no tree left out gets its label's training share. Y: the (n, L) 0/1 targets fitted."""
    oob = model.oob_decision_function_
    Y = np.asarray(Y, dtype=float).reshape(Y.shape[0], -1)
    parts = [oob[:, :, j] for j in range(oob.shape[2])] if isinstance(oob, np.ndarray) and oob.ndim == 3 \
        else (oob if isinstance(oob, list) else [oob])
    classes = model.classes_ if isinstance(model.classes_, list) else [model.classes_]
    out = np.tile(Y.mean(0), (Y.shape[0], 1))
    for j, (p, c) in enumerate(zip(parts, classes)):
        seen = np.asarray(p).sum(1) > 0
        hit = np.flatnonzero(np.asarray(c) == 1)
        out[seen, j] = p[seen, hit[0]] if hit.size else 0.0
    return out


def forest_probabilities(X_train, Y_train, X_test, make_forest, forest: str = "joint", oob: bool = False):
    """(n_test, L) class-1 probabilities of the label forests (see the module docstring); with ``oob``
    also the (n_train, L) out-of-bag probabilities of the training rows (`positive_oob`; a label's
    unknown training entries get 0 there).

    make_forest : callable(j) -> an unfitted RandomForestClassifier for forest number j (0 = joint).
    """
    import warnings

    Y = np.asarray(Y_train, dtype=float)
    L = Y.shape[1]
    known = ~np.isnan(Y)
    both = (np.nansum(Y, 0) > 0) & (np.nansum(1 - Y, 0) > 0)
    complete = known.all(0) & both  # a label of one class in training is that class's constant (below)
    scores = np.zeros((X_test.shape[0], L))
    out_of_bag = np.zeros(Y.shape)
    joint = np.flatnonzero(complete) if forest == "joint" else np.array([], dtype=int)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Some inputs do not have OOB scores")
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        if joint.size:
            model = make_forest(0).set_params(oob_score=oob).fit(X_train, Y[:, joint].astype(int))
            scores[:, joint] = positive_probability(model, X_test)
            if oob:
                out_of_bag[:, joint] = positive_oob(model, Y[:, joint])
        for j in np.setdiff1d(np.arange(L), joint):  # one forest per remaining label, on its known rows
            rows = known[:, j]
            y = Y[rows, j].astype(int)
            if y.size == 0:
                continue
            if np.all(y == y[0]):
                scores[:, j] = out_of_bag[rows, j] = float(y[0])
                continue
            model = make_forest(1 + j).set_params(oob_score=oob).fit(X_train[rows], y)
            scores[:, j] = positive_probability(model, X_test)[:, 0]
            if oob:
                out_of_bag[rows, j] = positive_oob(model, y[:, None])[:, 0]
    return (scores, out_of_bag) if oob else scores


@dataclass(frozen=True, kw_only=True)
class RFParams(ThresholdParams):
    trees: int = param(500, "trees per forest: 500, the default of Breiman & Cutler's randomForest (Liaw & Wiener "
                       "2002), not tuned on any data; more trees never hurt a forest's expected performance, so the "
                       "number is a cost choice (Probst & Boulesteix 2018, JMLR 18:181)", Interval(1, None))
    forest: str = param("joint", "'joint': one multi-output forest over the labels (RF-PCT-like); 'per-label': one "
                        "forest per label (RFDTBR)", Options("joint", "per-label"))
    max_features: str = param("sqrt", "features tried per split: 'sqrt', 'log2' or 'all'", Options("sqrt", "log2", "all"))
    min_samples_leaf: int = param(1, "smallest leaf", Interval(1, None))


@register
class RandomForest(Algorithm):
    """Random forests for multi-label data (scikit-learn; RF-PCT / RFDTBR of Bogatinovski et al. 2022).

    Decisions by the shared thresholds (`malt.numerics.decisions`; ½ is the natural cut, scikit-learn's
    ``predict``), learned on the training rows' out-of-bag probabilities."""

    name = "rf"
    tasks = frozenset({"multilabel"})
    Params = RFParams
    version = "5"  # 500 trees by default (2); shared thresholds learned on out-of-bag scores (3);
    #                prior/calibrated/rscut decision candidates, paired one-SE (4)
    # v5: macro-F1 from its own decisions (the macro-F1 family of malt.numerics.decisions)
    preload = ("sklearn.ensemble",)

    def run(self, split, params, ctx):
        from sklearn.ensemble import RandomForestClassifier

        seed = int(ctx.rng.integers(2 ** 31 - 1))
        max_features = None if params.max_features == "all" else params.max_features

        def make_forest(j):
            return RandomForestClassifier(n_estimators=params.trees, max_features=max_features,
                                          min_samples_leaf=params.min_samples_leaf, random_state=seed + j, n_jobs=1)

        X_tr, X_te = to_dense(split.X_train).astype(float), to_dense(split.X_test).astype(float)
        Y = np.asarray(split.Y_train, dtype=float)
        scores, oob = forest_probabilities(X_tr, Y, X_te, make_forest, params.forest, oob=True)
        return decided(scores, learned(params.threshold, Y, 0.5, ctx.rng, oob))
