"""Test-only algorithms, registered like a third-party plugin would be. They do real (trivial)
work and count how often they ran, so tests can prove what the engine skipped or recomputed."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from malt.params import Interval, Params, param
from malt.registry import Algorithm, register
from malt.splits import Prediction

COUNTER = os.environ.get("MALT_TEST_COUNTER")


def _tick(name: str) -> None:
    if COUNTER:
        with open(COUNTER, "a") as f:
            f.write(name + "\n")


@dataclass(frozen=True, kw_only=True)
class CountingParams(Params):
    sleep: float = param(0.0, "seconds to sleep per unit", Interval(0, None))
    fail_fold: int = param(-1, "fold that raises (-1: none)", Interval(-1, None))
    kernel_seconds: float = param(0.0, "seconds the cached artifact takes to compute", Interval(0, None))
    kernel_size: int = param(3, "rows and columns of the cached artifact", Interval(1, None))
    steps: int = param(0, "inner steps reported through ctx.progress (each sleeps `sleep` seconds)", Interval(0, None))
    fold_seconds: tuple[float, ...] = param((), "seconds fold i sleeps, in turn (folds past the list: none)",
                                            Interval(0, None))
    fail_bytes: int = param(0, "characters of filler in the planned failure's message (a long traceback)",
                            Interval(0, None))


def _kernel(n: int) -> np.ndarray:
    return np.random.default_rng(n).random((n, n))


@register
class CountingMean(Algorithm):
    """Column means with a random perturbation from ctx.rng; counts its runs and kernel builds."""

    name = "test-counting"
    tasks = frozenset({"missing", "multilabel"})
    Params = CountingParams

    def run(self, split, params, ctx):
        _tick(f"run {split.fold}")
        for step in range(params.steps):
            time.sleep(params.sleep)
            ctx.progress((step + 1) / params.steps, f"step {step + 1}/{params.steps}")
        if params.sleep and not params.steps:
            time.sleep(params.sleep)
        if split.fold < len(params.fold_seconds):
            time.sleep(params.fold_seconds[split.fold])
        if split.fold == params.fail_fold:
            raise RuntimeError("planned failure" + " x" * (params.fail_bytes // 2))
        K = ctx.cached("test-kernel", {"n": params.kernel_size},
                       lambda: (_tick("kernel"), time.sleep(params.kernel_seconds), _kernel(params.kernel_size))[2])
        noise = ctx.rng.normal(scale=1e-3) + 1e-3 * float(np.mean(K))  # a wrong artifact changes the numbers
        if hasattr(split, "M"):
            mean = np.nanmean(split.M, axis=0) + noise + 0 * K[0, 0]
            return Prediction(values=np.broadcast_to(mean, split.M.shape).copy())
        prior = np.nanmean(split.Y_train, axis=0) + noise
        scores = np.broadcast_to(prior, (split.X_test.shape[0], len(prior))).copy()
        return Prediction(scores=scores, labels=(scores > 0.5).astype(float))


@register
class Popular(Algorithm):
    """Rates every item by its training mean; ranks items by training popularity; counts its fits."""

    name = "test-popular"
    tasks = frozenset({"ratings"})

    def run(self, split, params, ctx):
        _tick(f"ratings {split.fold}")
        train = split.train.tocsc()
        counts = np.diff(train.indptr).astype(float)
        means = np.where(counts > 0, np.asarray(train.sum(axis=0)).ravel() / np.maximum(counts, 1), 3.0)
        rows = np.unique(split.test_rows)
        return Prediction(values=means[split.test_cols], scores=np.tile(counts, (rows.size, 1)))
