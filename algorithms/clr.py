"""Calibrated label ranking (`clr`; Fürnkranz, Hüllermeier, Loza Mencía & Brinker 2008).

Ranking by pairwise comparison: for every pair of labels i < j one binary model learns, from the
training rows where exactly one of the two is relevant, whether i is preferred to j. A virtual
calibration label v separates relevant from irrelevant labels: "i ≻ v" is learnt from every row
(i relevant ⇔ i ≻ v), i.e. the binary-relevance model of label i. A test row's labels are scored by
their votes, the virtual label by its own, and the labels that beat the virtual label are predicted
(the natural cut, score > 0, of the shared thresholds `malt.numerics.decisions`, which by default learn the cut
from CLR refit on 3 inner folds of the training rows):

    votes_i = Σ_{j≠i} P(i ≻ j) + P(i ≻ v),     votes_v = Σ_i (1 − P(i ≻ v)),
    score_i = votes_i − votes_v,               predict i  ⇔  score_i > 0.

``voting='soft'`` adds the models' probabilities (weighted voting, which breaks the ties hard votes
leave in a ranking); ``voting='hard'`` adds 1 for each comparison won (P > ½), as in the paper.
Unknown training labels (NaN): pair (i, j) learns from the rows that know both and where they differ,
the calibration model of i from the rows that know i. A pair never seen apart (or seen only one way)
gets a constant preference: the fraction of its rows where i won (½ when there are none).

The binary models are RBF support vector machines with Platt-scaled probabilities (``learner='svm'``,
scikit-learn's SVC with Platt scaling; Bogatinovski et al. 2022's CLR, the best method on scene, also
uses RBF SVMs) or L2 logistic regressions (``learner='logistic'``). At C = 1, γ = 'scale' on the given
splits the SVMs reach ranking loss / average precision 0.138 / 0.828 (emotions), 0.067 / 0.881
(scene) and 0.160 / 0.767 (yeast); the logistic regressions 0.153 / 0.819, 0.085 / 0.849,
0.181 / 0.745. With ``select='inner-cv'`` (the default) C and γ are chosen for all the binary models
at once by 3-fold inner CV of the calibration models (label i against the rest) on the training
rows: hinge loss of the SVM margins (log-loss for logistic regressions), `baselines.select_on_path`.

Cost: L(L−1)/2 + L binary models, the pair models on the rows where the two labels differ; Platt
scaling fits each SVM five more times (its internal 5-fold CV).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from malt.numerics.decisions import decide_by_refits
from malt.params import Interval, Options, When, param
from malt.registry import Algorithm, register
from malt.numerics.selection import candidates
from malt.splits import Prediction

from .baselines import (MultilabelCVParams, train_test_features, hinge_loss, log_loss, logistic_path, rbf_gamma, select_on_path,
                        single_threaded_blas, svm_candidate_margins)


class PlattSVC:
    """An RBF SVM with Platt-scaled probabilities: a sigmoid fit to out-of-fold decision values (up to
    5 stratified folds; scikit-learn's CalibratedClassifierCV with ensemble=False, the replacement of
    SVC(probability=True), deprecated in scikit-learn 1.9). With a class of a single example no fold
    can hold it out, and the logistic function of the decision value stands in."""

    def __init__(self, C: float, gamma: float):
        self.C, self.gamma = C, gamma

    def fit(self, X, y):
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.model_selection import StratifiedKFold
        from sklearn.svm import SVC

        folds = int(min(5, np.bincount(y).min()))
        svc = SVC(C=self.C, kernel="rbf", gamma=self.gamma)
        self.model_ = (CalibratedClassifierCV(svc, method="sigmoid", cv=StratifiedKFold(folds), ensemble=False)
                       if folds >= 2 else svc).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X):
        if hasattr(self.model_, "calibrated_classifiers_"):
            return self.model_.predict_proba(X)
        p = 1.0 / (1.0 + np.exp(-self.model_.decision_function(X)))
        return np.column_stack([1.0 - p, p])


def _preference(make_model, X, target, X_test) -> np.ndarray:
    """P(target = 1 | x) on X_test from a model fit on (X, target); constant when target is one class."""
    if target.size == 0:
        return np.full(X_test.shape[0], 0.5)
    if np.all(target == target[0]):
        return np.full(X_test.shape[0], float(target[0]))
    model = make_model().fit(X, target.astype(int))
    return model.predict_proba(X_test)[:, list(model.classes_).index(1)]


def calibrated_label_ranking(X_train, Y_train, X_test, make_model, voting: str = "soft",
                             progress: Callable[[float], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Scores (votes_i − votes_v) and 0/1 decisions (score > 0), each (n_test, L); see the module docstring."""
    Y = np.asarray(Y_train, dtype=float)
    known = ~np.isnan(Y)
    Y0 = np.where(known, Y, -1.0)
    n_test, L = X_test.shape[0], Y.shape[1]

    def vote(p):
        return p if voting == "soft" else (p > 0.5).astype(float)

    votes = np.zeros((n_test, L))
    virtual = np.zeros(n_test)
    for i in range(L):  # calibration models: label i against the virtual label
        p = _preference(make_model, X_train[known[:, i]], Y[known[:, i], i], X_test)
        votes[:, i] += vote(p)
        virtual += vote(1.0 - p)
    pairs = [(i, j) for i in range(L) for j in range(i + 1, L)]
    for count, (i, j) in enumerate(pairs):  # one model per label pair: the loop is over models
        rows = known[:, i] & known[:, j] & (Y0[:, i] != Y0[:, j])
        p = _preference(make_model, X_train[rows], Y[rows, i], X_test)  # P(i ≻ j)
        votes[:, i] += vote(p)
        votes[:, j] += vote(1.0 - p)
        if progress is not None and count % 50 == 49:
            progress((count + 1) / len(pairs))
    scores = votes - virtual[:, None]
    return scores, (scores > 0).astype(float)


@dataclass(frozen=True, kw_only=True)
class CLRParams(MultilabelCVParams):
    learner: str = param("svm", "binary model of each comparison: 'svm' (RBF SVM, Platt-scaled probabilities) or "
                         "'logistic' (L2 logistic regression)", Options("svm", "logistic"))
    C_grid: tuple[float, ...] = param((1.0, 3.0, 10.0), "candidates for C (select=inner-cv)", Interval(0, None, "neither"))
    gamma_scale: float = param(1.0, "RBF width γ of the SVMs as a multiple of 1 / (d · var(X)) (scikit-learn's 'scale')",
                               Interval(0, None, "neither"),
                               active_when=When(learner="svm"))
    gamma_scale_grid: tuple[float, ...] = param((0.5, 1.0, 2.0), "candidates for gamma_scale (select=inner-cv, "
                                                "learner=svm)", Interval(0, None, "neither"),
                                                active_when=When(learner="svm"))
    voting: str = param("soft", "'soft': add the pairwise probabilities (weighted voting); 'hard': count comparisons won",
                        Options("soft", "hard"))

    @classmethod
    def implied_condition(cls, name: str) -> When | None:
        """inner_folds with select='inner-cv' only: its thresholds come from `decide_by_refits`' own folds."""
        return When(select="inner-cv") if name == "inner_folds" else super().implied_condition(name)


@register
class CLR(Algorithm):
    """Calibrated label ranking: pairwise label preferences plus a virtual calibration label (Fürnkranz et al. 2008)."""

    name = "clr"
    tasks = frozenset({"multilabel"})
    Params = CLRParams
    version = "8"  # RBF SVMs with Platt probabilities (2), C and γ by inner CV (3), Platt scaling by
    #                stratified out-of-fold decision values (4; SVC(probability=True) is deprecated); stratified
    #                repeated inner CV, one-SE rule, shared thresholds learned on 3 inner refits (5); one
    #                precomputed kernel matrix per γ shared by labels and Cs (6: margins equal to 1e-6);
    #                prior/calibrated/rscut decision candidates, paired one-SE (7)
    # v8: macro-F1 from its own decisions (the macro-F1 family of malt.numerics.decisions)
    preload = ("sklearn.svm", "sklearn.calibration", "sklearn.linear_model")

    def run(self, split, params, ctx):
        return decide_by_refits(self.fit_predict, split, params, ctx, 0.0)

    def fit_predict(self, split, params, ctx):
        """CLR on one split: C and γ by inner CV, then the pairwise and calibration models."""
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        X_tr, X_te = train_test_features(split, True)
        Y = np.asarray(split.Y_train, dtype=float)
        diagnostics = {}
        if params.select == "inner-cv":
            progress = lambda f: ctx.progress(f, "inner CV of the calibration models")  # noqa: E731
            if params.learner == "svm":
                options = candidates(params, {"C": params.C_grid, "gamma_scale": params.gamma_scale_grid})
                choice = select_on_path(params, options, lambda tr, va: svm_candidate_margins(
                    X_tr[tr], Y[tr], X_tr[va], options), Y, ctx.rng, hinge_loss, progress)
            else:
                choice = select_on_path(params, {"C": params.C_grid}, lambda tr, va: logistic_path(
                    X_tr[tr], Y[tr], X_tr[va], params.C_grid), Y, ctx.rng, log_loss, progress)
            params, diagnostics = choice.best, choice.diagnostics()
        gamma = rbf_gamma(X_tr, params.gamma_scale)
        if params.learner == "svm":
            def make_model():
                return PlattSVC(C=params.C, gamma=gamma)
        else:
            def make_model():
                return LogisticRegression(C=params.C, max_iter=1000)
        with warnings.catch_warnings(), single_threaded_blas():
            warnings.simplefilter("ignore", ConvergenceWarning)
            scores, labels = calibrated_label_ranking(X_tr, Y, X_te, make_model, params.voting,
                                                      progress=lambda f: ctx.progress(f, "label pairs"))
        return Prediction(scores=scores, labels=labels, diagnostics=diagnostics)
