"""The `semisupervised` task: transductive classification on a graph over all points (§3.6).

Five folds over rows. For fold f, ℓ = ``labeled`` training points are drawn from the other four
folds (first one point of every class present there, then the rest at random, from one random
order of those folds, so a larger ℓ labels a superset of the points of a smaller ℓ); every other
point stays unlabelled; the error rate is measured on fold f. The graph covers all points. With
``stratify`` the ℓ points are drawn per class instead, each class getting its share of the training
folds (largest remainders), as the thesis's draws evidently were (its Hepatitis TIKREG/CK at ℓ = 30
is 20.8 ± 0.0 over five folds; figures.d/ch3-glp-cells.md, R3). With ``evaluate=unlabeled`` the
error is measured on every unlabelled point (n − ℓ of them, the training folds' included) instead
of fold f: each fold is then one labelled draw scored on all the rest, the protocol the thesis's
small fold-to-fold stds point to (its Hepatitis 20.8 ± 0.0 is 26/125, a count over the 125 = 155 − 30
unlabelled points, not over a 31-point fold). ``stratify_folds`` assigns the folds themselves per
class, so that every fold's pool of training points holds the same class counts (within one).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.errors import DataError
from malt.params import Interval, Options, Params, Size, param
from malt.splits import Prediction, SemiSupervisedSplit
from malt.tasks.base import (Metric, Setting, Task, as_array, fold_assignment, register_task, stratified_fold_assignment,
                             subkey_rng)


@dataclass(frozen=True, kw_only=True)
class SemiSupervisedParams(Params):
    labeled: int = param(30, "number of labelled training points ℓ drawn from the training folds",
                         Interval(1, None))
    folds: int = param(5, "number of cross-validation folds", Interval(2, None))
    seed: int = param(0, "seed of the fold assignment and the labelled points", Interval(0, None), repetition=True)
    stratify: bool = param(False, "draw the labelled points per class, in proportion to the training folds",
                           Options(False, True))
    stratify_folds: bool = param(False, "assign the folds per class, each fold holding every class's share "
                                 "(within one point)", Options(False, True))
    evaluate: str = param("fold", "which unlabelled points are scored: the held-out fold, or every "
                          "unlabelled point (n − ℓ)", Options("fold", "unlabeled"))


def labeled_points(pool: np.ndarray, y: np.ndarray, labeled: int, rng: np.random.Generator) -> np.ndarray:
    """ℓ points of ``pool``: one of each class present (in a random order's first occurrence), then
    the next points of that order. Nested in ℓ for a fixed rng state."""
    order = rng.permutation(pool)
    _, first = np.unique(y[order], return_index=True)
    first = np.sort(first)
    if labeled < first.size:
        first = first[:labeled]
    rest = np.setdiff1d(np.arange(order.size), first, assume_unique=True)
    take = np.concatenate([first, rest[: max(labeled - first.size, 0)]])
    return np.sort(order[take])


def stratified_points(pool: np.ndarray, y: np.ndarray, labeled: int, rng: np.random.Generator) -> np.ndarray:
    """ℓ points of ``pool`` drawn per class: class c gets ⌊ℓ n_c / n⌋ points plus one for the classes
    with the largest remainders (n_c its count in the pool), chosen at random within the class."""
    classes, counts = np.unique(y[pool], return_counts=True)
    quota = labeled * counts / counts.sum()
    take = np.floor(quota).astype(int)
    take[np.argsort(take - quota, kind="stable")[: labeled - take.sum()]] += 1
    return np.sort(np.concatenate([rng.choice(pool[y[pool] == c], t, replace=False)
                                   for c, t in zip(classes, take)]))


@register_task
class SemiSupervisedTask(Task):
    """Transductive classification on a graph over all points, ℓ labelled points per fold (§3.6)."""

    name = "semisupervised"
    Params = SemiSupervisedParams
    requires = ("X", "y")
    metrics = (Metric("error", "Error rate", "lower", True,
                      conventions="misclassified fraction of the held-out fold (evaluate=fold, the default) or "
                                  "of every unlabelled point (evaluate=unlabeled)"),)
    settings = (Setting("labeled", "Labelled points ℓ"),)

    def check(self, dataset, params):
        if "X" not in dataset or "y" not in dataset:
            raise DataError(f"The semisupervised task needs features X and class ids y; dataset "
                            f"'{dataset.name}' has {', '.join(sorted(dataset.components))}.")
        y = np.asarray(dataset["y"])
        if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer) or y.size == 0 or y.min() < 0:
            raise DataError(f"Dataset '{dataset.name}': y must hold integer class ids 0..C-1.")
        counts = np.bincount(y)
        if np.count_nonzero(counts) < 2:
            raise DataError(f"Dataset '{dataset.name}' has a single class; classification needs at least two.")
        n = dataset.n_rows
        if n < 2 * params.folds:
            raise DataError(f"Dataset '{dataset.name}' has {n} points, too few for {params.folds} folds; "
                            "lower --folds.")
        if params.labeled > n - n // params.folds - 1:
            raise DataError(f"--labeled {params.labeled} is too large for the data: the training folds of "
                            f"'{dataset.name}' hold about {n - n // params.folds} points, so the largest valid labeled "
                            f"is {n - n // params.folds - 1}.")

    def sizes(self, dataset, params):
        """An inner CV divides the ℓ labelled points (refused above them). Stratified by class, as every
        algorithm of this task does it, a class with fewer labelled points than inner folds is missing
        from some of them: scikit-learn's StratifiedKFold warns then (and refuses only when every class
        is that small, because its folds would be empty; malt deals the classes in one round-robin, so
        its folds stay filled up to ℓ), so that is a notice here (`Size.notice_above`). Cost: the
        labelled draw of every fold."""
        C = int(np.max(dataset["y"])) + 1
        least = min(int(np.bincount(split.y[split.y >= 0], minlength=C).min())
                    for split in (self.split(dataset, params, fold) for fold in range(params.folds)))
        stratum = Size(least, f"the labelled points of the least populated class in a fold of '{dataset.name}'")
        return {"points": Size(dataset.n_rows, f"the number of points of '{dataset.name}' (the graph spans them all)"),
                "inner_items": Size(params.labeled, "the number of labelled points (labeled)", stratum)}

    def split(self, dataset, params, fold):
        y = np.asarray(dataset["y"]).astype(np.int64)
        ids = (stratified_fold_assignment(y, params.folds, params.seed) if params.stratify_folds
               else fold_assignment(len(y), params.folds, params.seed))
        test = np.flatnonzero(ids == fold)
        pool = np.flatnonzero(ids != fold)
        rng = subkey_rng("semisupervised", params.seed, fold)
        lab = (stratified_points if params.stratify else labeled_points)(pool, y, params.labeled, rng)
        y_split = np.full(len(y), -1, dtype=np.int64)
        y_split[lab] = y[lab]
        scored = test if params.evaluate == "fold" else np.flatnonzero(y_split < 0)
        return SemiSupervisedSplit(dataset["X"], y_split, int(y.max()) + 1, scored, fold)

    def pack(self, split, prediction: Prediction, params):
        labels = as_array(prediction.labels, "labels", split.y.shape)
        if not np.array_equal(labels, np.round(labels)) or labels.min() < 0 or labels.max() >= split.n_classes:
            raise ValueError(f"the algorithm returned labels outside the class ids 0..{split.n_classes - 1}")
        out = {"labels": labels[split.evaluate].astype(np.int32)}
        if prediction.scores is not None:
            out["scores"] = as_array(prediction.scores, "scores", (len(split.y), split.n_classes),
                                     finite=False)[split.evaluate].astype(np.float32)
        return out

    def score_packed(self, dataset, params, split, packed):
        y = np.asarray(dataset["y"])[split.evaluate]
        return {"error": float(np.mean(packed["labels"] != y))}
