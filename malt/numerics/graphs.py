"""One k-nearest-neighbour graph builder for all of malt.

A graph is fully described by a `GraphSpec`: how points are compared (``metric``), how many
neighbours each point keeps (``k``), how an edge is weighted (``weight``, ``width``), how the directed
kNN relation is made symmetric (``symmetrize``), how features are scaled first (``scale``) and how
the neighbours are searched (``search``). `knn_graph` builds it from plain arrays; `cached_graph`
builds it through the run context, so every algorithm and fold of a dataset shares one artifact
(producer ``PRODUCER``)::

    spec = GraphSpec(k=10, metric="euclidean", weight="rbf")
    W = cached_graph(ctx, X, spec)                  # (n, n) CSR, symmetric, zero diagonal

Neighbour lists (`neighbours`) are the other shared piece: the k nearest rows of ``among`` for each
row of ``query`` (for example training rows only, as ML-kNN needs), excluding a row itself.

Metrics
    'euclidean'  d = ‖x_i − x_j‖ on the (scaled) features; dense or sparse X
    'cosine'     d = 1 − x_iᵀx_j / (‖x_i‖‖x_j‖); a sparse X (tf-idf) is never densified
    'similarity' X is a precomputed symmetric (n, n) similarity S; nearest = largest S_ij
Weights (of a directed edge i → j, d = its distance)
    'rbf'        exp(−d² / 2σ²)              (heat kernel; Belkin & Niyogi 2003)
    'exp'        exp(−d / 2σ²)               (eq. 6.21 of Agovic 2011 on the cosine distance)
    'similarity' 1 − d for 'cosine' (clipped at 0), S_ij for 'similarity'
    'binary'     1
    σ = ``width``, or with ``width='median'`` the median distance from a point to its k neighbours.
Symmetrisation
    'max'   W = max(A, Aᵀ): an edge when either point is among the other's k nearest (union)
    'mean'  W = (A + Aᵀ)/2: mutual edges keep their weight, one-sided edges get half
    'min'   W = min(A, Aᵀ): only mutual neighbours (may leave points isolated)
    'none'  W = A (directed; row i holds i's k neighbours)
Search
    'exact'        tree search (low-dimensional dense X) or blocked brute force, O(n log n · d) to O(n² d)
    'approximate'  random-projection-tree candidates refined by neighbours-of-neighbours passes,
    O(n (T·leaf + k²) d); dense euclidean/cosine only; recall is measured in the tests

Cost: the search dominates; weighting and symmetrisation are O(n k). Memory O(n k).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

PRODUCER = "malt.graphs@1"
"""Artifact producer of every cached neighbour list and graph; bump when results would change."""

METRICS = ("euclidean", "cosine", "similarity")
WEIGHTS = ("rbf", "exp", "similarity", "binary")
SYMMETRIZE = ("max", "mean", "min", "none")
SEARCHES = ("exact", "approximate")
SCALES = ("none", "standardize", "minmax")


class GraphError(ValueError):
    """A graph spec or input that cannot make a graph."""


@dataclass(frozen=True)
class GraphSpec:
    """Everything that determines a kNN graph (see the module docstring for each choice)."""

    k: int = 10
    metric: str = "euclidean"
    weight: str = "rbf"
    width: float | str = "median"
    symmetrize: str = "max"
    scale: str = "none"
    search: str = "exact"

    def __post_init__(self):
        for name, allowed in (("metric", METRICS), ("weight", WEIGHTS), ("symmetrize", SYMMETRIZE),
                              ("search", SEARCHES), ("scale", SCALES)):
            if getattr(self, name) not in allowed:
                raise GraphError(f"The '{name}' of a GraphSpec must be one of {', '.join(allowed)}. "
                                 f"Got {getattr(self, name)!r} instead.")
        if not (isinstance(self.k, (int, np.integer)) and self.k >= 1):
            raise GraphError(f"The 'k' of a GraphSpec must be an int >= 1. Got {self.k!r} instead.")
        if self.width != "median" and not (isinstance(self.width, (int, float)) and self.width > 0):
            raise GraphError(f"The 'width' of a GraphSpec must be 'median' or a float > 0. Got {self.width!r} instead.")
        if self.weight == "similarity" and self.metric == "euclidean":
            raise GraphError("weight='similarity' needs metric='cosine' or 'similarity' (a Euclidean distance "
                             "is not a similarity); use weight='rbf', 'exp' or 'binary'.")
        if self.metric == "similarity" and self.weight in ("rbf", "exp"):
            raise GraphError("metric='similarity' has no distance to weight; use weight='similarity' or 'binary'.")

    def to_dict(self) -> dict:
        return asdict(self)

    def search_key(self) -> dict:
        """What the neighbour lists depend on (the graph's k, weights and symmetrisation do not)."""
        return {"metric": self.metric, "scale": self.scale, "search": self.search}


# ---- features ------------------------------------------------------------------------------------

def prepared(X, metric: str = "euclidean", scale: str = "none"):
    """The rows the search compares: scaled features (a sparse X stays CSR when unscaled), unit rows
    for 'cosine', the dense similarity matrix for 'similarity'. An all-zero row has no cosine
    distance: left as it is it would sit at ½ from every unit row, nearer than most real pairs, and
    become every point's neighbour, so it is refused."""
    from malt.numerics import linalg

    if metric == "similarity":
        S = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
        if S.ndim != 2 or S.shape[0] != S.shape[1]:
            raise GraphError(f"metric='similarity' needs a square similarity matrix, got shape {S.shape}.")
        return 0.5 * (S + S.T)
    if sp.issparse(X) and scale == "none":
        Z = sp.csr_matrix(X, dtype=float)
    else:
        Z = np.asarray(linalg.standardize(X.toarray() if sp.issparse(X) else X, scale), dtype=float)
    if metric == "cosine":
        from sklearn.preprocessing import normalize

        empty = np.flatnonzero(np.asarray(abs(Z).sum(axis=1)).ravel() == 0)
        if empty.size:
            shown = ", ".join(map(str, empty[:5])) + (", …" if empty.size > 5 else "")
            raise GraphError(f"metric='cosine' needs rows with a non-zero entry, but {empty.size} row(s) of the "
                             f"features are all zero (rows {shown}); drop them from the dataset or use "
                             "metric='euclidean'.")
        Z = normalize(Z)
    return Z


# ---- neighbour search ----------------------------------------------------------------------------

def neighbours(X, k: int, metric: str = "euclidean", *, scale: str = "none", search: str = "exact",
               query=None, among=None, exclude_self: bool = True, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest rows of ``among`` for each row of ``query`` (both default to all rows).

    Returns (indices (len(query), k) int64 into the rows of X, distances (len(query), k)), each row
    sorted by distance. With ``exclude_self`` a query row never counts as its own neighbour (a
    duplicate of it may). For metric='similarity', distances are −S_ij.
    """
    Z = prepared(X, metric, scale)
    n = Z.shape[0]
    query = np.arange(n) if query is None else np.asarray(query, dtype=np.int64)
    among = np.arange(n) if among is None else np.asarray(among, dtype=np.int64)
    candidates = among.size - (1 if exclude_self else 0)
    if not 1 <= k <= candidates:
        raise GraphError(f"Expected 1 <= k <= number of candidate neighbours, but k = {k}, "
                         f"candidates = {candidates}.")
    if metric == "similarity":
        D = -Z[np.ix_(query, among)]
        return _smallest(D, k, query, among, exclude_self)
    if search == "approximate":
        if sp.issparse(Z):
            raise GraphError("search='approximate' needs dense features; sparse rows use the exact search.")
        if query.size != n or among.size != n:
            raise GraphError("search='approximate' builds all-points graphs only (query = among = all rows).")
        idx, d2 = _approximate(Z, k, seed)
    else:
        idx, d2 = _exact(Z, k, query, among, exclude_self)
    dist = np.sqrt(np.maximum(d2, 0.0))
    if metric == "cosine":
        dist = dist ** 2 / 2.0  # unit rows: ‖a − b‖² = 2 − 2 cos
    return idx, dist


def _smallest(D: np.ndarray, k: int, query, among, exclude_self: bool):
    """k smallest entries per row of a dense (q, m) distance block, sorted; self excluded."""
    D = np.array(D, dtype=float)
    if exclude_self:
        D[query[:, None] == among[None, :]] = np.inf
    part = np.argpartition(D, k - 1, axis=1)[:, :k]
    d = np.take_along_axis(D, part, 1)
    order = np.argsort(d, axis=1, kind="stable")
    return among[np.take_along_axis(part, order, 1)].astype(np.int64), np.take_along_axis(d, order, 1)


BRUTE_BLOCK = 2048
"""Query rows per block of the brute-force search (a block × m distance block at a time)."""


def _exact(Z, k: int, query, among, exclude_self: bool):
    """Exact kNN by squared Euclidean distance: a k-d/ball tree for dense rows of low dimension,
    blocked brute force (one matrix product per block) otherwise. Returns (indices, squared distances)."""
    dense_low = not sp.issparse(Z) and Z.shape[1] <= 20
    if dense_low:
        from sklearn.neighbors import NearestNeighbors

        extra = 1 if exclude_self else 0
        nn = NearestNeighbors(n_neighbors=min(k + extra, among.size)).fit(Z[among])
        dist, pos = nn.kneighbors(Z[query])
        idx = among[pos]
        if exclude_self:
            idx, dist = _drop_self(idx, dist, query, k)
        return idx.astype(np.int64), dist ** 2
    A = Z[among]
    sq_a = np.asarray(A.multiply(A).sum(axis=1)).ravel() if sp.issparse(A) else np.einsum("ij,ij->i", A, A)
    out_i = np.empty((query.size, k), dtype=np.int64)
    out_d = np.empty((query.size, k))
    for s in range(0, query.size, BRUTE_BLOCK):  # blocks bound the memory at BRUTE_BLOCK × m
        q = query[s:s + BRUTE_BLOCK]
        Q = Z[q]
        sq_q = np.asarray(Q.multiply(Q).sum(axis=1)).ravel() if sp.issparse(Q) else np.einsum("ij,ij->i", Q, Q)
        G = Q @ A.T
        G = G.toarray() if sp.issparse(G) else G
        D = np.maximum(sq_q[:, None] + sq_a[None, :] - 2.0 * G, 0.0)
        out_i[s:s + q.size], out_d[s:s + q.size] = _smallest(D, k, q, among, exclude_self)
    return out_i, out_d


def _drop_self(idx, dist, query, k):
    """From k+1 candidates per row drop the query itself (or the last one if it is absent)."""
    hit = idx == query[:, None]
    hit[~hit.any(axis=1), -1] = True
    first = np.argmax(hit, axis=1)
    hit[:] = False
    hit[np.arange(len(idx)), first] = True
    keep = ~hit
    return idx[keep].reshape(len(idx), k), dist[keep].reshape(len(idx), k)


APPROX_TREES = 6
"""Random-projection trees whose leaves give the approximate search its candidates."""
APPROX_LEAF = 32
"""Points per leaf of a random-projection tree (candidates: ± this many in leaf order)."""
APPROX_REFINE = 2
"""Neighbours-of-neighbours passes after the tree candidates (as NN-descent)."""


def _rp_tree_order(Z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The points in the leaf order of one random-projection tree (Dasgupta & Freund 2008): each
    node is split at the median of its points' projections on a random direction, all nodes of a
    level at once; points of a leaf end up contiguous."""
    n, d = Z.shape
    node = np.zeros(n, dtype=np.int64)
    levels = max(0, int(np.ceil(np.log2(max(n / APPROX_LEAF, 1.0)))))
    for level in range(levels):
        directions = rng.standard_normal((2 ** level, d))
        proj = np.einsum("ij,ij->i", Z, directions[node])
        order = np.lexsort((proj, node))
        sizes = np.bincount(node, minlength=2 ** level)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - starts[node[order]]
        node = 2 * node + (rank >= sizes[node] // 2)
    proj = Z @ rng.standard_normal(d)
    return np.lexsort((proj, node))


def _approximate(Z: np.ndarray, k: int, seed: int):
    """Approximate all-points kNN: candidates are the points within ± ``APPROX_LEAF`` of each point
    in the leaf order of ``APPROX_TREES`` random-projection trees, then ``APPROX_REFINE`` passes over
    the neighbours of the current neighbours (as NN-descent). Exact distances to every candidate;
    returns (indices, squared distances). Cost O(n (T·2·leaf + R·k²) d)."""
    n = Z.shape[0]
    rng = np.random.default_rng(seed)
    sq = np.einsum("ij,ij->i", Z, Z)
    rows = np.arange(n)
    window = min(APPROX_LEAF, n - 1)
    idx = d2 = None
    for _ in range(APPROX_TREES):
        order = _rp_tree_order(Z, rng)
        pos = np.empty(n, dtype=np.int64)
        pos[order] = rows
        offsets = np.concatenate([np.arange(-window, 0), np.arange(1, window + 1)])
        cand = order[np.clip(pos[:, None] + offsets[None, :], 0, n - 1)]
        if idx is not None:
            cand = np.column_stack([idx, cand])
        idx, d2 = _best_of(Z, sq, cand, k)
    for _ in range(APPROX_REFINE):
        idx, d2 = _best_of(Z, sq, np.column_stack([idx, idx[idx].reshape(n, k * k)]), k)
    return idx, d2


def _best_of(Z, sq, cand: np.ndarray, k: int, block: int = 4096):
    """The k nearest distinct candidates (other than the point itself) of every row, exact distances."""
    n = Z.shape[0]
    out_i = np.empty((n, k), dtype=np.int64)
    out_d = np.empty((n, k))
    for s in range(0, n, block):
        c = np.sort(cand[s:s + block], axis=1)
        rows = np.arange(s, s + c.shape[0])
        d = sq[rows, None] + sq[c] - 2.0 * np.einsum("id,icd->ic", Z[rows], Z[c])
        d[(c == rows[:, None]) | np.concatenate([np.zeros((c.shape[0], 1), bool), c[:, 1:] == c[:, :-1]], 1)] = np.inf
        part = np.argpartition(d, k - 1, axis=1)[:, :k]
        dd = np.take_along_axis(d, part, 1)
        order = np.argsort(dd, axis=1, kind="stable")
        out_i[s:s + c.shape[0]] = np.take_along_axis(np.take_along_axis(c, part, 1), order, 1)
        out_d[s:s + c.shape[0]] = np.maximum(np.take_along_axis(dd, order, 1), 0.0)
    return out_i, out_d


# ---- weights and the graph -----------------------------------------------------------------------

def median_width(distances: np.ndarray) -> float:
    """σ of ``width='median'``: the median distance from a point to its k neighbours (the smallest
    positive distance if the median is 0, 1 if all are 0)."""
    d = np.asarray(distances, dtype=float)
    sigma = float(np.median(d)) if d.size else 1.0
    if not sigma > 0:
        sigma = float(d[d > 0].min()) if (d > 0).any() else 1.0
    return sigma


def edge_weights(distances: np.ndarray, spec: GraphSpec) -> np.ndarray:
    """Weights of the directed kNN edges (same shape as ``distances``); every edge stays an edge."""
    d = np.asarray(distances, dtype=float)
    if spec.weight == "binary":
        w = np.ones_like(d)
    elif spec.weight == "similarity":
        w = np.clip(1.0 - d, 0.0, None) if spec.metric == "cosine" else -d
    else:
        sigma = median_width(d) if spec.width == "median" else float(spec.width)
        w = np.exp(-(d ** 2 if spec.weight == "rbf" else d) / (2.0 * sigma ** 2))
    return np.maximum(w, 1e-300)


def symmetrized(A: sp.spmatrix, rule: str) -> sp.csr_matrix:
    """The symmetrisation ``rule`` ('max', 'mean', 'min', 'none') of a directed weight matrix A."""
    A = sp.csr_matrix(A)
    if rule == "max":
        W = A.maximum(A.T)
    elif rule == "mean":
        W = (A + A.T) * 0.5
    elif rule == "min":
        W = A.minimum(A.T)
    elif rule == "none":
        W = A.copy()
    else:
        raise GraphError(f"unknown symmetrisation {rule!r}; use one of {', '.join(SYMMETRIZE)}")
    W = sp.csr_matrix(W)
    W.setdiag(0)
    W.eliminate_zeros()
    W.sort_indices()
    return W


def graph_from_lists(indices: np.ndarray, distances: np.ndarray, spec: GraphSpec) -> sp.csr_matrix:
    """The (n, n) weight matrix of ``spec`` from neighbour lists (the first ``spec.k`` columns)."""
    idx = np.asarray(indices)[:, :spec.k]
    dist = np.asarray(distances)[:, :spec.k]
    n, k = idx.shape
    if k < spec.k:
        raise GraphError(f"the neighbour lists hold {k} neighbours per point; the graph needs k = {spec.k}")
    w = edge_weights(dist, spec)
    A = sp.csr_matrix((w.ravel(), idx.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))
    return symmetrized(A, spec.symmetrize)


def knn_graph(X, spec: GraphSpec, lists: tuple[np.ndarray, np.ndarray] | None = None) -> sp.csr_matrix:
    """Symmetric (per ``spec.symmetrize``) kNN weight matrix W (n, n), CSR with zero diagonal."""
    if lists is None:
        lists = neighbours(X, spec.k, spec.metric, scale=spec.scale, search=spec.search)
    return graph_from_lists(lists[0], lists[1], spec)


# ---- through the run context ---------------------------------------------------------------------

def cached_neighbours(ctx, X, k: int, spec: GraphSpec) -> tuple[np.ndarray, np.ndarray]:
    """All-points neighbour lists with ``k`` columns for ``spec``'s metric, scale and search, cached
    per dataset (producer ``PRODUCER``). Asking for the largest k of a grid once lets every smaller
    k use the first columns."""
    lists = ctx.cached("knn-lists", {**spec.search_key(), "k": int(k)},
                       lambda: dict(zip(("indices", "distances"),
                                        neighbours(X, int(k), spec.metric, scale=spec.scale, search=spec.search))),
                       producer=PRODUCER)
    return np.asarray(lists["indices"]), np.asarray(lists["distances"])


def cached_graph(ctx, X, spec: GraphSpec, *, lists_k: int | None = None) -> sp.csr_matrix:
    """W for ``spec``, computed once per dataset through the run context's cache (producer
    ``PRODUCER``, so every algorithm shares it). ``lists_k`` (≥ spec.k): search this many neighbours
    and use the first spec.k, so a grid of k shares one search."""
    def build():
        idx, dist = cached_neighbours(ctx, X, max(spec.k, lists_k or 0), spec)
        return graph_from_lists(idx, dist, spec)

    return sp.csr_matrix(ctx.cached("knn-graph", spec.to_dict(), build, producer=PRODUCER))


# ---- matrices of a graph -------------------------------------------------------------------------

def degrees(W) -> np.ndarray:
    """d_i = Σ_j w_ij, (n,)."""
    return np.asarray(W.sum(axis=1)).ravel()


def laplacian(W) -> sp.csr_matrix:
    """Unnormalised Laplacian L_u = D − W (Agovic 2011, eq. 3.1)."""
    return (sp.diags(degrees(W)) - W).tocsr()


def normalized_adjacency(W) -> sp.csr_matrix:
    """S = D^{-1/2} W D^{-1/2}; L_s = I − S (eq. 3.4). Isolated points get a zero row."""
    W = sp.csr_matrix(W)
    d = degrees(W)
    inv = np.where(d > 0, 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)
    data = W.data * np.repeat(inv, np.diff(W.indptr))  # one temporary of nnz: at 10⁶ rows each is 100 MB afresh
    data *= inv[W.indices]
    return sp.csr_matrix((data, W.indices.copy(), W.indptr.copy()), shape=W.shape)
