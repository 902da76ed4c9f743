"""Synthetic matrices drawn from the PMA model itself (dissertation §5.3.3, Figure 5.2): X = F + G with
the columns of F ~ N(0, K1) and the rows of G ~ N(0, K2), K1 and K2 RBF kernels (median-heuristic
width) of random row and column features. Always available (generated, no files)."""
from __future__ import annotations

import numpy as np

from malt.numerics import linalg

from .catalogue import DatasetEntry, register_dataset
from .dataset import Dataset


def rbf_kernel(Z: np.ndarray, width: float | str = "median") -> np.ndarray:
    D2 = linalg.sq_dists(Z)
    w = linalg.median_width(D2) if width == "median" else float(width)
    return linalg.rbf_from_sq_dists(D2, w)


def synthetic_pma(n: int = 50, m: int = 20, *, d: int = 5, d_cols: int = 3, K1: np.ndarray | None = None,
                  K2: np.ndarray | None = None, noise: float = 0.0, seed: int = 0) -> Dataset:
    """One PMA draw X = F + G (eq. 5.5) with given or random RBF kernels.

    Components: ``M`` (n, m) the matrix, ``X`` (n, d) the row features K1 was built from, ``Z`` (m, d_cols)
    the column features of K2, and the true kernels ``K1``, ``K2``.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Z = rng.standard_normal((m, d_cols))
    K1 = rbf_kernel(X) if K1 is None else np.asarray(K1, dtype=float)
    K2 = rbf_kernel(Z) if K2 is None else np.asarray(K2, dtype=float)
    L1 = np.linalg.cholesky(linalg.add_jitter(K1, 1e-8))
    L2 = np.linalg.cholesky(linalg.add_jitter(K2, 1e-8))
    F = L1 @ rng.standard_normal((n, m))
    G = rng.standard_normal((n, m)) @ L2.T
    M = F + G + (np.sqrt(noise) * rng.standard_normal((n, m)) if noise > 0 else 0.0)
    return Dataset(f"synthetic-pma-{n}x{m}", {"M": M, "X": X, "Z": Z, "K1": K1, "K2": K2},
                   {"generator": "malt.datasets.synthetic_pma.synthetic_pma",
                    "hash_meta": {"n": n, "m": m, "d": d, "d_cols": d_cols, "noise": noise, "seed": seed}})


for _n, _m in [(50, 20), (50, 50)]:
    register_dataset(DatasetEntry(
        f"synthetic-pma-{_n}x{_m}", (lambda roots, n=_n, m=_m: synthetic_pma(n, m)),
        "a draw from the PMA model (RBF K1 over rows, RBF K2 over columns); Figure 5.2",
        f"{_n} × {_m} real matrix", "malt synthetic generator (seed 0)", files=(), tasks=("missing",),
        group="synthetic"))
