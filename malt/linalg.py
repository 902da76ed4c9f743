"""Small linear-algebra pieces shared by the numeric cores (kernels, eigenbases, Sylvester).

Numeric settings are named here rather than buried as literals.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

JITTER = 1e-8
"""Relative diagonal jitter added to kernels that must be positive definite."""


def standardize(X, scale: str = "standardize"):
    """Column-wise feature scaling: 'standardize' (zero mean, unit variance), 'minmax', 'none'.

    Constant columns are left at zero rather than divided by zero.
    """
    if scale == "none":
        return X
    if sp.issparse(X):
        X = X.toarray()
    X = np.asarray(X, dtype=float)
    if scale == "standardize":
        std = X.std(axis=0)
        return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    if scale == "minmax":
        low, span = X.min(axis=0), np.ptp(X, axis=0)
        return (X - low) / np.where(span > 0, span, 1.0)
    raise ValueError(f"unknown feature scaling {scale!r}; use 'standardize', 'minmax' or 'none'")


def sq_dists(A, B=None) -> np.ndarray:
    """Squared Euclidean distances between rows, ``(n_a, n_b)``, clipped at zero."""
    A = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)
    B = A if B is None else (B.toarray() if sp.issparse(B) else np.asarray(B, dtype=float))
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    np.maximum(d, 0.0, out=d)
    if B is A:
        np.fill_diagonal(d, 0.0)
    return d


def median_width(D2: np.ndarray) -> float:
    """Median heuristic: the median of the pairwise distances (off-diagonal), as an RBF width."""
    n = D2.shape[0]
    off = D2[~np.eye(n, dtype=bool)] if D2.shape[0] == D2.shape[1] else D2.ravel()
    med = float(np.sqrt(np.median(off))) if off.size else 1.0
    return med if med > 0 else 1.0


def rbf_from_sq_dists(D2: np.ndarray, width: float) -> np.ndarray:
    """k(x, y) = exp(-||x - y||² / (2 width²))."""
    return np.exp(-D2 / (2.0 * width * width))


def add_jitter(K: np.ndarray, jitter: float = JITTER) -> np.ndarray:
    """Return K + jitter·mean(diag K)·I (a new array): makes a PSD kernel safely PD."""
    K = np.array(K, dtype=float, copy=True)
    K[np.diag_indices_from(K)] += jitter * max(float(np.mean(np.diag(K))), 1e-300)
    return K


def sym_eigh(K: np.ndarray, floor: float = 0.0):
    """Eigendecomposition of a symmetric matrix (symmetrised first), eigenvalues floored at ``floor``."""
    K = 0.5 * (K + K.T)
    d, U = np.linalg.eigh(K)
    return np.maximum(d, floor), U


def solve_sylvester_eig(d1, U1, d2, U2, C) -> np.ndarray:
    """Solve A F + F B = C with A = U1 diag(d1) U1ᵀ and B = U2 diag(d2) U2ᵀ (both symmetric).

    In the eigenbases the equation is elementwise: F̃ = C̃ / (d1 ⊕ d2). Cost O(n²m + nm²) once the
    decompositions are known, so they should be reused while A and B are fixed.
    """
    Ct = U1.T @ C @ U2
    return U1 @ (Ct / (d1[:, None] + d2[None, :])) @ U2.T
