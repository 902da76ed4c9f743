"""Large sparse rating matrices drawn from PMA's ratings model, so the truth behind every entry is known
(the scale benchmarks of issue 36 and the recovery tests):

    r_ij = μ + b_i + c_j + x_ij + ε_ij,   X = F + G,   columns of F ~ N(0, K1),  rows of G ~ N(0, K2),

ε ~ N(0, σ²), with low-rank kernels K1 = V1 diag(λ1) V1ᵀ (n × n) and K2 = V2 diag(λ2) V2ᵀ (m × m), V
orthonormal (QR of Gaussian draws), λ_k ∝ 1/k scaled so that each of F and G carries ``signal`` / 2 of the
variance of an entry on average. Then F = V1 diag(√λ1) Ω ᵀ and G = Υ diag(√λ2) V2ᵀ with Ω (m × r), Υ (n × r)
standard normal: X = Z Wᵀ for Z = [V1 √λ1, Υ], W = [Ω, V2 √λ2] — stored as the components ``truth_Z``,
``truth_W``, so x_ij at any position costs O(r) and nothing of size n × m exists.

The L observed positions are uniform without repetition (each row and column about L/n and L/m of them),
stored as int32 where the shape allows. Cost O(L r + (n + m) r²); memory O(L + (n + m) r): 16 bytes per
entry in the result (two int32 positions, a float64 value), about 40 while drawing the positions.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from malt.numerics.linalg import dot_at

from .catalogue import DatasetEntry, register_dataset
from .dataset import Dataset


def orthonormal(rng: np.random.Generator, size: int, rank: int) -> np.ndarray:
    return np.linalg.qr(rng.standard_normal((size, rank)))[0]


def observed_positions(rng: np.random.Generator, n: int, m: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` distinct uniform positions of an n × m matrix, in row-major order, without forming it."""
    if count > n * m:
        raise ValueError(f"cannot observe {count} entries of a {n} × {m} matrix")
    chosen = np.empty(0, dtype=np.int64)
    while chosen.size < count:
        extra = rng.integers(0, n * m, size=int(1.1 * (count - chosen.size)) + 16, dtype=np.int64)
        chosen = np.unique(np.concatenate([chosen, extra]))
    chosen = np.sort(rng.choice(chosen, count, replace=False))
    index = np.int32 if max(n, m) < np.iinfo(np.int32).max else np.int64
    return (chosen // m).astype(index), (chosen % m).astype(index)


def synthetic_ratings(n: int = 2000, m: int = 400, nnz: int = 40_000, *, rank: int = 10, signal: float = 1.0,
                      noise: float = 0.5, bias_sd: float = 0.3, mean: float = 3.0, seed: int = 0) -> Dataset:
    """A draw of the module's model: ``ratings`` (COO, n × m, ``nnz`` entries) and the truth ``truth_Z``
    (n, 2 rank), ``truth_W`` (m, 2 rank), float32, with X = truth_Z truth_Wᵀ, ``truth_bias_rows`` (n,),
    ``truth_bias_cols`` (m,); the noise variance, μ and the kernels' spectra in the metadata."""
    rng = np.random.default_rng(seed)
    scale = np.arange(1, rank + 1, dtype=float) ** -1.0
    lam1 = scale * (0.5 * signal * n / scale.sum())  # mean diagonal of K1: tr / n = signal / 2
    lam2 = scale * (0.5 * signal * m / scale.sum())
    A1 = orthonormal(rng, n, rank) * np.sqrt(lam1)
    A2 = orthonormal(rng, m, rank) * np.sqrt(lam2)
    Z = np.hstack([A1, rng.standard_normal((n, rank))])
    W = np.hstack([rng.standard_normal((m, rank)), A2])
    b, c = bias_sd * rng.standard_normal(n), bias_sd * rng.standard_normal(m)
    rows, cols = observed_positions(rng, n, m, nnz)
    x = dot_at(Z, W, rows, cols)  # never an L × 2r gather
    y = b[rows] + mean  # μ + b_i + c_j + x_ij + ε_ij, summed in that order, in place
    y += c[cols]
    y += x
    del x
    y += np.sqrt(noise) * rng.standard_normal(nnz)
    R = sp.coo_matrix((y, (rows, cols)), shape=(n, m))
    R.has_canonical_format = True  # distinct positions in row-major order: no consumer needs to sort a copy
    meta = {"generator": "malt.datasets.synthetic_ratings.synthetic_ratings", "noise": noise, "mean": mean,
            "lambda1": lam1.tolist(), "lambda2": lam2.tolist(),
            "hash_meta": {"n": n, "m": m, "nnz": nnz, "rank": rank, "signal": signal, "noise": noise,
                          "bias_sd": bias_sd, "mean": mean, "seed": seed}}
    # the truth is kept in float32 (the ratings above were drawn from the float64 components): it only scores
    # estimates against the noise-free signal, where 1e-7 relative is far below the noise; 8 bytes less per
    # row and component (76 MiB of a 500,000² draw)
    Z, W = Z.astype(np.float32), W.astype(np.float32)
    return Dataset(f"synthetic-ratings-{n}x{m}-{nnz}", {"ratings": R, "truth_Z": Z, "truth_W": W,
                                                        "truth_bias_rows": b, "truth_bias_cols": c}, meta)


SIZES = {"synthetic-ratings-small": (2000, 400, 40_000), "synthetic-ratings-100k": (100_000, 20_000, 2_000_000)}
for _name, (_n, _m, _l) in SIZES.items():
    register_dataset(DatasetEntry(
        _name, (lambda roots, n=_n, m=_m, l=_l: synthetic_ratings(n, m, l)),
        "a draw from PMA's ratings model with rank-10 kernels and known truth (scale benchmarks)",
        f"{_n:,} × {_m:,}, {_l:,} ratings", "malt synthetic generator (seed 0)", files=(), tasks=("ratings",),
        group="synthetic"))
