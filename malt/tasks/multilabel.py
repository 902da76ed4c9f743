"""The `multilabel` task: predict whole label rows of unseen points (dissertation §4.4, §5.4).

Five folds over rows (or the dataset's own train/test split with ``split=given``, run ``repeats``
times with a different algorithm seed each time; the repeats take the place of folds). Training labels
may have a ``missing`` fraction of entries hidden (NaN), ``discard`` drops partially labelled
training rows (the papers' "-D" variants), ``labeled`` caps the training rows (learning curves).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from malt import metrics
from malt.errors import DataError
from malt.params import Interval, Options, Params, param
from malt.splits import MultilabelSplit, Prediction
from malt.tasks.base import Task, describe_metric, fold_assignment, register_task, subkey_rng

for _name, _label, _better, _pct in [
    ("one_error", "One-error", "lower", True),
    ("average_precision", "Average precision", "higher", True),
    ("coverage", "Coverage", "lower", False),
    ("hamming_loss", "Hamming loss", "lower", True),
    ("ranking_loss", "Ranking loss", "lower", True),
    ("accuracy", "Accuracy (Jaccard)", "higher", True),
    ("f1_micro", "Micro-F1", "higher", True),
    ("f1_macro", "Macro-F1", "higher", True),
    ("auc", "Macro AUC", "higher", True),
]:
    describe_metric(_name, _label, _better, _pct)


@dataclass(frozen=True, kw_only=True)
class MultilabelParams(Params):
    missing: float = param(0.0, "fraction of training label entries hidden at random", Interval(0, 1, "left"))
    discard: bool = param(False, "drop training rows with any hidden label (the '-D' variants)")
    labeled: int | None = param(None, "use at most this many training rows (learning curves)", Interval(1, None))
    folds: int = param(5, "number of cross-validation folds", Interval(2, None))
    split: str = param("cv", "'cv' for k-fold CV, 'given' for the dataset's own train/test split",
                       Options("cv", "given"))
    seed: int = param(0, "seed of the fold assignment and the hidden entries", Interval(0, None))
    repeats: int = param(1, "with split=given: runs on the same split, each with its own seed (a sampler's "
                         "restarts; Rai & Daumé average 10)", Interval(1, None))


@register_task
class MultilabelTask(Task):
    name = "multilabel"
    Params = MultilabelParams
    settings = ("missing", "labeled")

    def check(self, dataset, params):
        if "X" not in dataset or "Y" not in dataset:
            raise DataError(f"The multilabel task needs features X and a label matrix Y; dataset "
                            f"'{dataset.name}' has {', '.join(sorted(dataset.components))}.")
        if params.split == "given" and "given_train" not in dataset.meta:
            raise DataError(f"Dataset '{dataset.name}' ships no train/test split; use --task-param split=cv.")
        if params.repeats > 1 and params.split != "given":
            raise DataError("repeats applies to the dataset's own split; add --task-param split=given "
                            "(cross-validation repeats itself over --folds).")

    def n_folds(self, dataset, params):
        return params.repeats if params.split == "given" else params.folds

    def _parts(self, dataset, params, fold):
        n = dataset.n_rows
        if params.split == "given":
            cut = dataset.meta["given_train"]
            return np.arange(cut), np.arange(cut, n)
        ids = fold_assignment(n, params.folds, params.seed)
        return np.flatnonzero(ids != fold), np.flatnonzero(ids == fold)

    def split(self, dataset, params, fold):
        train, test = self._parts(dataset, params, fold)
        rng = subkey_rng("multilabel", params.seed, fold)
        if params.labeled is not None and params.labeled < len(train):
            train = np.sort(rng.choice(train, params.labeled, replace=False))
        Y = np.asarray(dataset["Y"], dtype=float)
        Y_train = Y[train].copy()
        if params.missing > 0:
            observed = np.flatnonzero(~np.isnan(Y_train))
            hide = rng.choice(observed, int(round(params.missing * observed.size)), replace=False)
            Y_train.ravel()[hide] = np.nan
        if params.discard:
            complete = ~np.isnan(Y_train).any(axis=1)
            if not complete.any():
                raise DataError(f"With missing={params.missing} every training row of fold {fold} has a hidden "
                                "label, so discard=True leaves nothing to train on; lower --missing.")
            train, Y_train = train[complete], Y_train[complete]
        empty = np.nansum(Y_train, axis=0) == 0
        if empty.any():
            warnings.warn(f"fold {fold}: {int(empty.sum())} label(s) have no positive training example",
                          stacklevel=2)
        X = dataset["X"]
        return MultilabelSplit(X[train], Y_train, X[test], train, test, fold)

    def score(self, dataset, params, split, prediction: Prediction):
        Y = np.asarray(dataset["Y"], dtype=float)[split.test_index]
        expected = Y.shape
        for field in ("scores", "labels"):
            value = getattr(prediction, field)
            if value is None or np.shape(value) != expected:
                raise ValueError(f"the algorithm returned {field} of shape {np.shape(value)}, expected {expected}")
        if np.isnan(Y).any():
            keep = ~np.isnan(Y).any(axis=1)
            Y, scores, labels = Y[keep], prediction.scores[keep], prediction.labels[keep]
        else:
            scores, labels = prediction.scores, prediction.labels
        return metrics.multilabel_scores(Y, np.asarray(scores, dtype=float), np.asarray(labels))
