"""A toy task, written as a user adding a protocol would: this one module is all it takes.

`regression`: predict a real target ``t`` from features ``X``; k-fold CV; R² and RMSE.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.datasets.dataset import Dataset
from malt.datasets.catalogue import DatasetEntry, register_dataset
from malt.errors import DataError
from malt.params import Interval, Params, param
from malt.registry import Algorithm, register
from malt.splits import Prediction
from malt.tasks.base import Metric, Setting, Task, as_array, fold_assignment, register_task


@dataclass(frozen=True, kw_only=True)
class RegressionParams(Params):
    folds: int = param(5, "number of cross-validation folds", Interval(2, None))
    noise: float = param(0.0, "standard deviation of noise added to the training targets", Interval(0, None))
    seed: int = param(0, "seed of the folds and the noise", Interval(0, None), repetition=True)


@dataclass(frozen=True)
class RegressionSplit:
    X_train: np.ndarray
    t_train: np.ndarray
    X_test: np.ndarray
    test_index: np.ndarray
    fold: int = 0


@register_task
class RegressionTask(Task):
    """Predict a real target from features (k-fold CV; R² and RMSE)."""

    name = "toy-regression"
    Params = RegressionParams
    requires = ("X", "t")
    metrics = (Metric("r2", "R²", "higher", conventions="1 - SSE/SST over the test fold"),
               Metric("rmse", "RMSE", "lower", conventions="over the test fold"))
    settings = (Setting("noise", "Training-target noise (sd)"),)

    def check(self, dataset, params):
        if "X" not in dataset or "t" not in dataset:
            raise DataError(f"The toy-regression task needs X and t; '{dataset.name}' has "
                            f"{', '.join(sorted(dataset.components))}.")

    def split(self, dataset, params, fold):
        ids = fold_assignment(dataset.n_rows, params.folds, params.seed)
        train, test = np.flatnonzero(ids != fold), np.flatnonzero(ids == fold)
        t = np.asarray(dataset["t"], dtype=float)[train]
        t = t + np.random.default_rng([params.seed, fold]).normal(scale=params.noise, size=t.shape)
        return RegressionSplit(dataset["X"][train], t, dataset["X"][test], test, fold)

    def pack(self, split, prediction, params):
        return {"values": as_array(prediction.values, "values", (len(split.test_index),)).astype(np.float64)}

    def score_packed(self, dataset, params, split, packed):
        truth = np.asarray(dataset["t"], dtype=float)[split.test_index]
        sse = float(np.sum((truth - packed["values"]) ** 2))
        sst = float(np.sum((truth - truth.mean()) ** 2))
        return {"r2": 1 - sse / sst if sst > 0 else float("nan"), "rmse": float(np.sqrt(sse / truth.size))}


@dataclass(frozen=True, kw_only=True)
class RidgeParams(Params):
    alpha: float = param(1.0, "ridge penalty", Interval(0, None, "neither"))


@register
class ToyRidge(Algorithm):
    """Ridge regression on the features."""

    name = "toy-ridge"
    tasks = frozenset({"toy-regression"})
    Params = RidgeParams

    def run(self, split, params, ctx):
        X, t = split.X_train, split.t_train
        w = np.linalg.solve(X.T @ X + params.alpha * np.eye(X.shape[1]), X.T @ t)
        return Prediction(values=split.X_test @ w)


def _linear(_roots) -> Dataset:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    return Dataset("toy-linear", {"X": X, "t": X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * rng.normal(size=80)})


register_dataset(DatasetEntry("toy-linear", _linear, "a linear target with a little noise (tests)", "80 × 4",
                              "malt tests", tasks=("toy-regression",), group="synthetic"))
