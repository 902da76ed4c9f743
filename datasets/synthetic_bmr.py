"""Multi-label data simulated from a random BMR model (dissertation §4.3) with Mediamill's shape:
120 features, 101 labels, sparse labels (Mediamill's label cardinality is ≈ 4.4). Always available."""
from __future__ import annotations

import numpy as np

from .catalogue import DatasetEntry, register_dataset
from .dataset import Dataset


def bmr_model(d: int = 120, L: int = 101, rank: int = 10, seed: int = 0):
    """A random BMR model: W (L, d) with N(0, 1/d) entries, biases giving ≈ 5 % positive labels, and a
    low-rank-plus-diagonal label covariance Σ = B Bᵀ/rank + 0.5 I (correlated labels)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=1.5 / np.sqrt(d), size=(L, d))
    b = rng.normal(-4.6, 0.8, size=L)
    B = rng.normal(size=(L, rank))
    Sigma = B @ B.T / rank + 0.5 * np.eye(L)
    return W, b, Sigma


def simulate_bmr(n: int, W: np.ndarray, b: np.ndarray, Sigma: np.ndarray, seed: int = 0):
    """Draw (X, Y): x ~ N(0, I), η ~ N(W x + b, Σ), y ~ Bernoulli(σ(η)) (Figure 4.1's process)."""
    rng = np.random.default_rng(seed)
    L, d = W.shape
    X = rng.standard_normal((n, d))
    C = np.linalg.cholesky(Sigma)
    eta = X @ W.T + b + rng.standard_normal((n, L)) @ C.T
    Y = (rng.random((n, L)) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    return X, Y


def synthetic_bmr(n: int = 10_000, *, d: int = 120, L: int = 101, seed: int = 0) -> Dataset:
    """A Mediamill-shaped draw from a random BMR model; components X (n, d), Y (n, L), W, b, Sigma."""
    W, b, Sigma = bmr_model(d, L, seed=seed)
    X, Y = simulate_bmr(n, W, b, Sigma, seed=seed + 1)
    return Dataset(f"synthetic-bmr-{n}", {"X": X, "Y": Y},
                   {"W": W, "b": b, "Sigma": Sigma, "generator": "malt.datasets.synthetic_bmr.synthetic_bmr",
                    "hash_meta": {"n": n, "d": d, "L": L, "seed": seed}})


for _n in (2_000, 10_000, 12_000):
    register_dataset(DatasetEntry(
        f"synthetic-bmr-{_n}", (lambda roots, n=_n: synthetic_bmr(n)),
        "a draw from a random BMR model with Mediamill's shape (correlated logistic labels)",
        f"{_n} × 120, 101 labels", "malt synthetic generator (seed 0)", files=(), tasks=("multilabel", "missing"),
        group="synthetic"))
