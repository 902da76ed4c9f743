"""The shared kNN-graph builder (malt.numerics.graphs): a hand-computed graph, every symmetrisation rule and
metric against brute force, subset queries, the approximate search's recall, and the cache."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from malt.numerics import graphs
from malt.engine.context import Context
from malt.numerics.graphs import GraphError, GraphSpec, knn_graph, neighbours


@pytest.mark.timeout(30)
def test_a_graph_computed_by_hand():
    """Five points on a line, x = 0, 1, 3, 6, 10, k = 1, σ = 1.

    Nearest neighbours: 0→1 (d=1), 1→0 (d=1), 3→1 (d=2), 6→3 (d=3), 10→6 (d=4), so the directed
    weights are a_01 = a_10 = e^{-1/2}, a_21 = e^{-2}, a_32 = e^{-9/2}, a_43 = e^{-8}. The union
    ('max') keeps each pair once, symmetric; 'mean' halves the one-sided ones; 'min' keeps only the
    mutual pair 0–1.
    """
    X = np.array([[0.0], [1.0], [3.0], [6.0], [10.0]])
    e = np.exp
    union = np.zeros((5, 5))
    for i, j, w in ((0, 1, e(-0.5)), (1, 2, e(-2.0)), (2, 3, e(-4.5)), (3, 4, e(-8.0))):
        union[i, j] = union[j, i] = w
    W = knn_graph(X, GraphSpec(k=1, width=1.0)).toarray()
    np.testing.assert_allclose(W, union, rtol=1e-12)
    mean = union.copy()
    mean[[1, 2, 2, 3, 3, 4], [2, 1, 3, 2, 4, 3]] /= 2
    np.testing.assert_allclose(knn_graph(X, GraphSpec(k=1, width=1.0, symmetrize="mean")).toarray(), mean)
    mutual = np.zeros((5, 5))
    mutual[0, 1] = mutual[1, 0] = e(-0.5)
    np.testing.assert_allclose(knn_graph(X, GraphSpec(k=1, width=1.0, symmetrize="min")).toarray(), mutual)
    directed = np.zeros((5, 5))
    directed[[0, 1, 2, 3, 4], [1, 0, 1, 2, 3]] = [e(-0.5), e(-0.5), e(-2.0), e(-4.5), e(-8.0)]
    np.testing.assert_allclose(knn_graph(X, GraphSpec(k=1, width=1.0, symmetrize="none")).toarray(), directed)
    # median width: the median of the kNN distances 1, 1, 2, 3, 4 is 2; binary weights are 1
    np.testing.assert_allclose(knn_graph(X, GraphSpec(k=1)).toarray()[0, 1], e(-1 / 8))
    np.testing.assert_array_equal(knn_graph(X, GraphSpec(k=1, weight="binary")).toarray(), union > 0)
    # 'exp' weights on the distance itself: e^{-d/2σ²}
    np.testing.assert_allclose(knn_graph(X, GraphSpec(k=1, width=1.0, weight="exp")).toarray()[2, 1], e(-1.0))


def _brute_lists(D: np.ndarray, k: int):
    D = D.copy()
    np.fill_diagonal(D, np.inf)
    idx = np.argsort(D, axis=1, kind="stable")[:, :k]
    return idx, np.take_along_axis(D, idx, 1)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("d", [3, 40])  # tree search and blocked brute force
def test_euclidean_neighbours_match_brute_force(d):
    rng = np.random.default_rng(d)
    X = rng.normal(size=(300, d))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    idx, dist = neighbours(X, 7)
    ref_idx, ref_dist = _brute_lists(D, 7)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, ref_dist, atol=1e-6)  # the Gram-matrix distance rounds
    # among a subset, for other queries (the ML-kNN use: training rows as candidates)
    among, query = np.arange(0, 300, 2), np.arange(1, 300, 3)
    sub_idx, sub_dist = neighbours(X, 4, query=query, among=among, exclude_self=False)
    Dq = D[np.ix_(query, among)]
    order = np.argsort(Dq, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(sub_idx, among[order])
    np.testing.assert_allclose(sub_dist, np.take_along_axis(Dq, order, 1), atol=1e-6)


@pytest.mark.timeout(30)
def test_sparse_cosine_graph_equals_dense_and_brute_force_similarities():
    rng = np.random.default_rng(3)
    Xs = sp.random(60, 400, density=0.04, random_state=4, format="csr")
    Xs.data = rng.random(Xs.nnz) + 0.1
    spec = GraphSpec(k=5, metric="cosine", weight="similarity")
    Ws, Wd = knn_graph(Xs, spec), knn_graph(Xs.toarray(), spec)
    np.testing.assert_allclose(Ws.toarray(), Wd.toarray(), atol=1e-12)
    U = Xs.toarray() / np.linalg.norm(Xs.toarray(), axis=1, keepdims=True)
    C = U @ U.T
    ref_idx, _ = _brute_lists(1 - C, 5)
    A = np.zeros((60, 60), bool)
    A[np.repeat(np.arange(60), 5), ref_idx.ravel()] = True
    A |= A.T
    np.testing.assert_array_equal(Ws.toarray() > 0, A)
    np.testing.assert_allclose(Ws.toarray()[A], np.clip(C[A], 1e-300, None), atol=1e-12)


@pytest.mark.timeout(30)
def test_precomputed_similarity_graph():
    """metric='similarity': neighbours are the largest S_ij, weights S_ij (the side-graph use)."""
    rng = np.random.default_rng(5)
    S = rng.random((30, 30))
    S = (S + S.T) / 2
    W = knn_graph(S, GraphSpec(k=3, metric="similarity", weight="similarity")).toarray()
    T = S.copy()
    np.fill_diagonal(T, -np.inf)
    top = np.argsort(-T, axis=1)[:, :3]
    A = np.zeros((30, 30), bool)
    A[np.repeat(np.arange(30), 3), top.ravel()] = True
    A |= A.T
    np.testing.assert_array_equal(W > 0, A)
    np.testing.assert_allclose(W[A], S[A])


@pytest.mark.timeout(60)
def test_approximate_search_recall_against_the_exact_search():
    rng = np.random.default_rng(6)
    centers = rng.normal(0, 4, (10, 12))
    X = centers[rng.integers(0, 10, 3000)] + rng.normal(size=(3000, 12))
    exact, _ = neighbours(X, 10)
    approx, dist = neighbours(X, 10, search="approximate")
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact, approx)])
    assert recall > 0.9, recall
    assert np.all(approx != np.arange(3000)[:, None]) and np.all(np.diff(dist, axis=1) >= 0)


@pytest.mark.timeout(30)
def test_spec_errors_name_the_field_and_the_allowed_values():
    with pytest.raises(GraphError, match="'symmetrize' of a GraphSpec must be one of max, mean, min, none"):
        GraphSpec(symmetrize="or")
    with pytest.raises(GraphError, match="weight='similarity' needs metric='cosine'"):
        GraphSpec(weight="similarity")
    with pytest.raises(GraphError, match="k = 12, candidates = 9"):
        neighbours(np.zeros((10, 2)), 12)


@pytest.mark.timeout(30)
def test_cached_graph_is_computed_once_and_shared_by_every_k_of_a_grid():
    X = np.random.default_rng(7).normal(size=(80, 3))
    ctx = Context.for_arrays(X)
    W10 = graphs.cached_graph(ctx, X, GraphSpec(k=10), lists_k=20)
    W5 = graphs.cached_graph(ctx, X, GraphSpec(k=5), lists_k=20)
    assert len(ctx.cache.new_keys) == 3  # one search (k = 20), two graphs
    graphs.cached_graph(ctx, X, GraphSpec(k=10), lists_k=20)
    assert len(ctx.cache.new_keys) == 3
    np.testing.assert_allclose(W10.toarray(), knn_graph(X, GraphSpec(k=10)).toarray())
    np.testing.assert_allclose(W5.toarray(), knn_graph(X, GraphSpec(k=5)).toarray())


@pytest.mark.timeout(30)
@pytest.mark.parametrize("sparse", [False, True])
def test_cosine_refuses_all_zero_rows_naming_them(sparse):
    """An all-zero row has no cosine distance (a text with no word left); measured before the check,
    it sat at ½ from every unit row and became every document's neighbour. The search names the rows."""
    X = np.abs(np.random.default_rng(0).normal(size=(8, 5)))
    X[[2, 6]] = 0.0
    X = sp.csr_matrix(X) if sparse else X
    with pytest.raises(GraphError, match=r"2 row\(s\) of the features are all zero \(rows 2, 6\)"):
        neighbours(X, 3, "cosine")
    neighbours(X, 3, "euclidean")  # the Euclidean distance is defined for them
