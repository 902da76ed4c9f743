"""The `recovery` task: find the latent structure of data drawn from a known generator (Rai & Daumé
2009, §5.1: two views from sparse probabilistic CCA with 4 components and 63 % zeros in W).

Every run sees all rows of the two views X and Y; nothing is held out. Each of ``repeats`` runs has
its own algorithm seed (a sampler's restarts). The answer — the number of shared components K̂ and
the loadings Ŵ — is scored against the generator's W (a dataset component): the error in the
number of components, and the error in the fraction of zero loadings, where a loading counts as
zero when it is at most ``threshold`` times its component's largest — one rule for the estimate and
for the generator's W (whose exact zeros it counts, with the few planted loadings that small).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.errors import DataError
from malt.params import Interval, Params, param
from malt.splits import Prediction, RecoverySplit
from malt.tasks.base import Metric, Task, as_array, register_task


@dataclass(frozen=True, kw_only=True)
class RecoveryParams(Params):
    repeats: int = param(5, "runs on all rows, each with its own algorithm seed", Interval(1, None), count=True)
    threshold: float = param(0.05, "a loading counts as zero at most this fraction of its component's largest "
                             "|loading| (estimate and generator alike)", Interval(0, 1, "neither"), scoring=True)


def zero_fraction(W: np.ndarray, threshold: float) -> float:
    """Fraction of loadings below ``threshold`` × their column's largest |w| (NaN for no columns)."""
    W = np.abs(np.asarray(W, dtype=float))
    if W.size == 0:
        return float("nan")
    scale = W.max(axis=0, keepdims=True)
    return float(np.mean(W <= threshold * scale))


@register_task
class RecoveryTask(Task):
    """Recover a generator's latent structure from two views (number of components, sparsity of W)."""

    name = "recovery"
    Params = RecoveryParams
    requires = ("X", "Y", "W")
    metrics = (
        Metric("k_error", "Error in the number of components", "lower",
               conventions="K̂: the algorithm's number of shared components; K: columns of the generator's W"),
        Metric("sparsity_error", "Error in the fraction of zero loadings", "lower", options=("threshold",),
               conventions="fraction of zero loadings, a loading being zero at most threshold × its column's "
                           "largest |w|, in the estimate and in the generator's W alike; NaN when K̂ = 0"),
    )

    @classmethod
    def test_train_ratio(cls, options):
        """Repeats see the same rows: not resamples, so no corrected t-test."""
        return None

    def check(self, dataset, params):
        missing = [c for c in self.requires if c not in dataset]
        if missing:
            raise DataError(f"The recovery task needs two views X, Y and the generator's loadings W; dataset "
                            f"'{dataset.name}' lacks {', '.join(missing)} (use a synthetic generator such as "
                            "synthetic-cca).")
        X, Y, W = (np.asarray(dataset[c]) for c in ("X", "Y", "W"))
        if X.shape[0] != Y.shape[0] or W.ndim != 2 or W.shape[0] != X.shape[1] + Y.shape[1]:
            raise DataError(f"Dataset '{dataset.name}': W must have one row per dimension of X and Y "
                            f"({X.shape[1]} + {Y.shape[1]}), got shape {W.shape}.")

    def n_folds(self, dataset, params):
        return params.repeats

    def split(self, dataset, params, fold):
        return RecoverySplit(np.asarray(dataset["X"], dtype=float), np.asarray(dataset["Y"], dtype=float), fold)

    def pack(self, split, prediction: Prediction, params):
        extras = prediction.extras or {}
        if "K" not in extras or "W" not in extras:
            raise ValueError("the recovery task needs extras['K'] (components found) and extras['W'] (loadings)")
        D = split.X.shape[1] + split.Y.shape[1]
        W = np.asarray(extras["W"], dtype=float).reshape(D, -1)
        return {"K": np.array([int(extras["K"])], dtype=np.int64),
                "W": as_array(W, "W", (D, W.shape[1])).astype(np.float32)}

    def score_packed(self, dataset, params, split, packed):
        W = np.asarray(dataset["W"], dtype=float)
        return {"k_error": float(abs(int(packed["K"][0]) - W.shape[1])),
                "sparsity_error": abs(zero_fraction(packed["W"], params.threshold) - zero_fraction(W, params.threshold))}

    def features(self, dataset):
        return None
