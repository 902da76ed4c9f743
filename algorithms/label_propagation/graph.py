"""kNN graphs for graph-based semi-supervised learning (dissertation §3.2.1).

A graph is fully described by a `GraphSpec` (k, weights, width, feature scaling), so every method
and every fold of an experiment shares one cached graph (``ctx.cached("knn-graph", spec, ...)``).
Cost: one kNN search, O(n log n · d) with a tree (scikit-learn), O(n k) memory.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from malt import linalg
from malt.errors import DataError


@dataclass(frozen=True)
class GraphSpec:
    """Everything that determines the graph.

    k : neighbours per point before symmetrisation
    weight : 'rbf' (exp(-d²/2σ²)), 'cosine' (cosine similarity, clipped at 0) or 'binary'
    width : σ of the RBF weights; 'median' = median distance to the k nearest neighbours
    scale : feature scaling before distances ('none' as the thesis, 'standardize', 'minmax')
    """

    k: int = 10
    weight: str = "rbf"
    width: float | str = "median"
    scale: str = "none"

    def to_dict(self) -> dict:
        return asdict(self)


def scaled(X, scale: str):
    """Float features after ``scale`` ('none', 'standardize', 'minmax'); a sparse X (text) stays
    sparse CSR when ``scale`` is 'none', otherwise the result is dense."""
    if sp.issparse(X) and scale == "none":
        return sp.csr_matrix(X, dtype=float)
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    return np.asarray(linalg.standardize(X, scale), dtype=float)


def knn_lists(X, k: int, scale: str = "none", metric: str = "euclidean") -> dict[str, np.ndarray]:
    """The k nearest other points of every row: {'indices': (n, k) int, 'distances': (n, k)}."""
    from sklearn.neighbors import NearestNeighbors

    Z = scaled(X, scale)
    n = Z.shape[0]
    if not 1 <= k < n:
        raise DataError(f"Expected 1 <= k < n_samples for the kNN graph, but n_samples = {n}, k = {k}.")
    if metric == "cosine":  # Euclidean order on the sphere = cosine order
        from sklearn.preprocessing import normalize

        Z = normalize(Z)  # rows to unit length (zero rows stay zero); keeps a sparse Z sparse
    # sparse (tf-idf) rows: brute force on the sparse matrix, never densified
    nn = NearestNeighbors(n_neighbors=k + 1, algorithm="brute" if sp.issparse(Z) else "auto").fit(Z)
    dist, idx = nn.kneighbors(Z)
    # drop each point itself (it is normally first; duplicates may put it elsewhere)
    self_hit = idx == np.arange(n)[:, None]
    no_self = ~self_hit.any(axis=1)
    self_hit[no_self, -1] = True
    keep = ~self_hit
    idx = idx[keep].reshape(n, k)
    dist = dist[keep].reshape(n, k)
    return {"indices": idx.astype(np.int64), "distances": dist}


def knn_graph(X, spec: GraphSpec, lists: dict | None = None) -> sp.csr_matrix:
    """Symmetrised kNN weight matrix W (n, n), zero diagonal, W = max(W_knn, W_knnᵀ).

    Weights: RBF ``exp(-d²/(2σ²))`` with σ = ``spec.width`` (or the median kNN distance), cosine
    similarity ``max(0, <x_i, x_j>/|x_i||x_j|)`` or 1 ('binary').
    """
    if spec.weight not in ("rbf", "cosine", "binary"):
        raise DataError(f"unknown graph weight {spec.weight!r}; use 'rbf', 'cosine' or 'binary'")
    metric = "cosine" if spec.weight == "cosine" else "euclidean"
    if lists is None:
        lists = knn_lists(X, spec.k, spec.scale, metric)
    idx, dist = lists["indices"], lists["distances"]
    n, k = idx.shape
    if spec.weight == "rbf":
        sigma = float(np.median(dist)) if spec.width == "median" else float(spec.width)
        if not sigma > 0:
            sigma = float(dist[dist > 0].min()) if (dist > 0).any() else 1.0
        w = np.exp(-dist ** 2 / (2 * sigma ** 2))
    elif spec.weight == "cosine":
        w = np.clip(1.0 - dist ** 2 / 2.0, 0.0, None)  # unit vectors: |a-b|² = 2 - 2 cos
    else:
        w = np.ones_like(dist)
    w = np.maximum(w, 1e-300)  # keep every kNN edge as an edge
    W = sp.csr_matrix((w.ravel(), idx.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))
    W = W.maximum(W.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    return W


def cached_graph(ctx, X, spec: GraphSpec) -> tuple[sp.csr_matrix, np.ndarray]:
    """(W, kNN indices) for ``spec``, computed once per dataset through the run context's cache."""
    metric = "cosine" if spec.weight == "cosine" else "euclidean"
    lists = ctx.cached("knn-lists", {"k": spec.k, "scale": spec.scale, "metric": metric},
                       lambda: knn_lists(X, spec.k, spec.scale, metric))
    W = ctx.cached("knn-graph", spec.to_dict(), lambda: knn_graph(X, spec, lists))
    return sp.csr_matrix(W), np.asarray(lists["indices"])


def degrees(W) -> np.ndarray:
    return np.asarray(W.sum(axis=1)).ravel()


def laplacian(W) -> sp.csr_matrix:
    """Unnormalised Laplacian L_u = D − W (eq. 3.1)."""
    return (sp.diags(degrees(W)) - W).tocsr()


def normalized_adjacency(W) -> sp.csr_matrix:
    """S = D^{-1/2} W D^{-1/2}; L_s = I − S (eq. 3.4). Isolated points get a zero row."""
    d = degrees(W)
    inv = np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)
    return (sp.diags(inv) @ W @ sp.diags(inv)).tocsr()
