"""The `semisupervised` task: transductive classification on a graph over all points (§3.6).

Five folds over rows. For fold f, ℓ = ``labeled`` training points are drawn from the other four
folds (first one point of every class present there, then the rest at random, from one random
order of those folds, so a larger ℓ labels a superset of the points of a smaller ℓ); every other
point stays unlabelled; the error rate is measured on fold f. The graph covers all points.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.errors import DataError
from malt.params import Interval, Params, param
from malt.splits import Prediction, SemiSupervisedSplit
from malt.tasks.base import Task, describe_metric, fold_assignment, register_task, subkey_rng

describe_metric("error", "Error rate", "lower", percent=True)


@dataclass(frozen=True, kw_only=True)
class SemiSupervisedParams(Params):
    labeled: int = param(30, "number of labelled training points ℓ drawn from the training folds",
                         Interval(1, None))
    folds: int = param(5, "number of cross-validation folds", Interval(2, None))
    seed: int = param(0, "seed of the fold assignment and the labelled points", Interval(0, None))


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


@register_task
class SemiSupervisedTask(Task):
    name = "semisupervised"
    Params = SemiSupervisedParams
    settings = ("labeled",)

    def check(self, dataset, params):
        if "X" not in dataset or "y" not in dataset:
            raise DataError(f"The semisupervised task needs features X and class ids y; dataset "
                            f"'{dataset.name}' has {', '.join(sorted(dataset.components))}.")
        y = np.asarray(dataset["y"])
        if not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
            raise DataError(f"Dataset '{dataset.name}': y must hold integer class ids 0..C-1.")
        n = dataset.n_rows
        if params.labeled > n - n // params.folds - 1:
            raise DataError(f"--labeled {params.labeled} is too large: the training folds of "
                            f"'{dataset.name}' hold about {n - n // params.folds} points.")

    def split(self, dataset, params, fold):
        y = np.asarray(dataset["y"]).astype(np.int64)
        ids = fold_assignment(len(y), params.folds, params.seed)
        test = np.flatnonzero(ids == fold)
        pool = np.flatnonzero(ids != fold)
        rng = subkey_rng("semisupervised", params.seed, fold)
        lab = labeled_points(pool, y, params.labeled, rng)
        y_split = np.full(len(y), -1, dtype=np.int64)
        y_split[lab] = y[lab]
        return SemiSupervisedSplit(dataset["X"], y_split, int(y.max()) + 1, test, fold)

    def score(self, dataset, params, split, prediction: Prediction):
        y = np.asarray(dataset["y"])
        labels = prediction.labels
        if labels is None or np.shape(labels) != y.shape:
            raise ValueError(f"the algorithm returned labels of shape {np.shape(labels)}, expected {y.shape}")
        ev = split.evaluate
        return {"error": float(np.mean(np.asarray(labels)[ev] != y[ev]))}
