"""Document kernels of the GPTM experiments (Agovic 2011, §6.4): the nearest-neighbour kernel 𝒦_NN
(6.21) from a symmetrised cosine kNN graph and the must-link kernel 𝒦_ML (6.22) from must-link pairs.

Both are made positive definite by raising the diagonal constant c just enough: c is the given
``c`` plus max(0, -λ_min(off-diagonal part)).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _make_pd(W: np.ndarray, c: float) -> np.ndarray:
    W = 0.5 * (W + W.T)
    np.fill_diagonal(W, 0.0)
    lmin = float(np.linalg.eigvalsh(W)[0]) if W.shape[0] else 0.0
    return W + (c + max(0.0, -lmin)) * np.eye(W.shape[0])


def knn_kernel(counts, k: int = 10, gamma: float = 1.0, sigma2: float = 1.0, c: float = 1.0) -> np.ndarray:
    """𝒦_NN (6.21): γ exp(-d_ij / 2σ²) on edges of the symmetrised (union) cosine kNN graph, c on the
    diagonal. The graph is malt's one kNN builder (`malt.numerics.graphs`, weight 'exp'); (D, D) dense."""
    from malt.numerics import graphs

    n = counts.shape[0]
    if n < 2:
        return _make_pd(np.zeros((n, n)), c)
    spec = graphs.GraphSpec(k=min(k, n - 1), metric="cosine", weight="exp", width=float(np.sqrt(sigma2)),
                            symmetrize="max")
    W = gamma * graphs.knn_graph(sp.csr_matrix(counts, dtype=float), spec).toarray()
    return _make_pd(W, c)


def mustlink_kernel(labels, gamma: float = 1.0, c: float = 1.0) -> np.ndarray:
    """𝒦_ML (6.22): γ between documents that must link (transitive closure: same known label), c on
    the diagonal. ``labels`` holds a class id per document, -1 where unknown (no constraints)."""
    y = np.asarray(labels)
    known = y >= 0
    same = (y[:, None] == y[None, :]) & known[:, None] & known[None, :]
    return _make_pd(np.where(same, gamma, 0.0), c)
