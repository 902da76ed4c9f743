"""Datasets that are always available: scikit-learn's bundled sets and a synthetic multi-label
generator, so the demo and the tests run with no data folder and no network."""
from __future__ import annotations

import numpy as np

from .catalogue import DatasetEntry, register_dataset
from .dataset import Dataset


def _sklearn(loader_name: str, name: str):
    def load(roots) -> Dataset:
        from sklearn import datasets as skd

        bunch = getattr(skd, loader_name)()
        return Dataset(name, {"X": np.asarray(bunch.data, dtype=float), "y": np.asarray(bunch.target, dtype=int)},
                       {"feature_names": list(map(str, getattr(bunch, "feature_names", []))),
                        "class_names": list(map(str, getattr(bunch, "target_names", [])))})

    return load


for _name, _loader, _desc, _shape in [
    ("sklearn-iris", "load_iris", "Fisher's iris (scikit-learn bundle)", "150 × 4, 3 classes"),
    ("sklearn-wine", "load_wine", "UCI wine (scikit-learn bundle)", "178 × 13, 3 classes"),
    ("sklearn-breast-cancer", "load_breast_cancer", "Wisconsin diagnostic breast cancer (scikit-learn bundle)",
     "569 × 30, 2 classes"),
    ("sklearn-digits", "load_digits", "8×8 handwritten digits (scikit-learn bundle)", "1797 × 64, 10 classes"),
]:
    register_dataset(DatasetEntry(_name, _sklearn(_loader, _name), _desc, _shape, "scikit-learn bundled data",
                                  tasks=("semisupervised",), group="bundled"))


def synthetic_multilabel(n: int = 400, d: int = 20, labels: int = 6, seed: int = 0) -> Dataset:
    """Multi-label data with correlated labels: Y = 1[X W + E > t] with low-rank shared noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, labels)) / np.sqrt(d)
    shared = rng.standard_normal((n, 2)) @ rng.standard_normal((2, labels))
    eta = 2.0 * X @ W + 0.7 * shared + 0.5 * rng.standard_normal((n, labels))
    Y = (eta > np.quantile(eta, 0.65, axis=0)).astype(float)
    return Dataset("synthetic-multilabel", {"X": X, "Y": Y},
                   {"generator": "malt.datasets.builtin.synthetic_multilabel",
                    "hash_meta": {"n": n, "d": d, "labels": labels, "seed": seed}})


register_dataset(DatasetEntry(
    "synthetic-multilabel", lambda roots: synthetic_multilabel(), "correlated multi-label data from a probit-like model",
    "400 × 20, 6 labels", "malt synthetic generator (seed 0)", tasks=("multilabel", "missing"), group="synthetic"))
