"""Draws from the PCSA model (Shi 2012, eq. 1) and its order-3 tensor form PCSA-3 (eq. 9)."""
from __future__ import annotations

import numpy as np

from .catalogue import DatasetEntry, register_dataset
from .dataset import Dataset


def shift_fold(F, i, shape):
    k = len(shape)
    order = [(i + u) % k for u in range(k)]
    return np.transpose(F.reshape([shape[o] for o in order]), np.argsort(order))


def synthetic_pcsa(shape=(60, 100), ranks=(3, 2), noise=0.1, seed=0) -> Dataset:
    """X = Σ_i mode-shifted A(i) Y(i) + E with A, Y standard normal; for a matrix X = AY + (BZ)ᵀ + E.

    Components: ``M`` the noisy draw, ``truth`` the noiseless signal."""
    rng = np.random.default_rng(seed)
    N = int(np.prod(shape))
    T = np.zeros(shape)
    for i, (D, d) in enumerate(zip(shape, ranks)):
        T += shift_fold(rng.standard_normal((D, d)) @ rng.standard_normal((d, N // D)), i, shape)
    M = T + noise * rng.standard_normal(shape)
    name = "synthetic-pcsa-" + "x".join(map(str, shape))
    return Dataset(name, {"M": M, "truth": T},
                   {"generator": "malt.datasets.synthetic_pcsa.synthetic_pcsa",
                    "hash_meta": {"shape": list(shape), "ranks": list(ranks), "noise": noise, "seed": seed}})


register_dataset(DatasetEntry(
    "synthetic-pcsa-60x100", lambda roots: synthetic_pcsa((60, 100), (3, 2)),
    "a draw from the PCSA model, d1 = 3, d2 = 2, noise sd 0.1", "60 × 100 real matrix",
    "malt synthetic generator (seed 0)", files=(), tasks=("missing",), group="synthetic"))
register_dataset(DatasetEntry(
    "synthetic-pcsa3-20x25x30", lambda roots: synthetic_pcsa((20, 25, 30), (2, 3, 2)),
    "a draw from PCSA-3 (order-3 tensor), ranks (2, 3, 2), noise sd 0.1", "20 × 25 × 30 real tensor",
    "malt synthetic generator (seed 0)", files=(), tasks=("missing",), group="synthetic"))
