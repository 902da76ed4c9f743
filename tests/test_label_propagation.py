"""Label propagation family: each method against its closed form / a reference library / a
brute-force implementation on small graphs, the thesis's equalities between GLP special cases,
and recovery on a synthetic two-manifold problem."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.semi_supervised import LabelPropagation, LabelSpreading

from malt import registry
from malt.algorithms.label_propagation import methods as m
from malt.algorithms.label_propagation import resolved, solvers
from malt.numerics.graphs import GraphSpec, knn_graph, laplacian, neighbours
from malt.engine.context import Context
from malt.splits import SemiSupervisedSplit
from tests.conftest import require_data


def blobs(n=60, seed=0, classes=3):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, (classes, 4))
    y = np.arange(n) % classes
    X = centers[y] + rng.normal(0, 1.5, (n, 4))
    return X, y


def problem(n=60, seed=0, classes=3, per_class=3):
    X, y = blobs(n, seed, classes)
    W = knn_graph(X, GraphSpec(k=6))
    lab = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in range(classes)])
    return X, y, W, lab, m.one_hot(y[lab], classes)


def test_gf_closed_form_and_sklearn_label_propagation():
    X, y, W, lab, Yl = problem()
    F = m.gaussian_fields(W, lab, Yl)
    n = len(y)
    unl = np.setdiff1d(np.arange(n), lab)
    Wd = W.toarray()
    L = np.diag(Wd.sum(1)) - Wd
    expected = np.linalg.solve(L[np.ix_(unl, unl)], Wd[np.ix_(unl, lab)] @ Yl)  # eq. 3.8
    np.testing.assert_allclose(F[unl], expected, atol=1e-8)
    y_sk = np.full(n, -1)
    y_sk[lab] = y[lab]
    sk = LabelPropagation(kernel=lambda A, B: Wd, max_iter=100000, tol=1e-12).fit(X, y_sk)
    np.testing.assert_array_equal(sk.transduction_[unl], F[unl].argmax(1))
    np.testing.assert_allclose(sk.label_distributions_[unl], expected / expected.sum(1, keepdims=True), atol=1e-5)


def test_lgc_closed_form_sklearn_label_spreading_and_iteration():
    X, y, W, lab, Yl = problem(seed=1)
    alpha = 0.9
    F = m.local_global_consistency(W, lab, Yl, alpha)
    n = len(y)
    Wd = W.toarray()
    d = Wd.sum(1)
    S = Wd / np.sqrt(np.outer(d, d))
    Y = np.zeros((n, 3))
    Y[lab] = Yl
    expected = (1 - alpha) * np.linalg.solve(np.eye(n) - alpha * S, Y)  # fixed point of eq. 3.15
    np.testing.assert_allclose(F, expected, atol=1e-8)
    it, _ = m.propagate(sp.csr_matrix(S), Y, alpha, tol=1e-13)
    np.testing.assert_allclose(it, expected, atol=1e-10)
    y_sk = np.full(n, -1)
    y_sk[lab] = y[lab]
    sk = LabelSpreading(kernel=lambda A, B: Wd, alpha=alpha, max_iter=100000, tol=1e-12).fit(X, y_sk)
    np.testing.assert_array_equal(sk.transduction_, F.argmax(1))
    # LGC is GLP with L_s and multiplier μ = (1 − α)/α (eq. 3.16): f = μ(L_s + μI)⁻¹y
    mu = (1 - alpha) / alpha
    np.testing.assert_allclose(F, mu * np.linalg.solve(np.eye(n) - S + mu * np.eye(n), Y), atol=1e-8)


def _kkt(M, lab, Yl, alpha, a):
    """min fᵀMf + α Σ_ℓ (f_i − y_i)² s.t. aᵀf = 0, by the dense KKT system."""
    n = M.shape[0]
    Ik = np.zeros((n, n))
    Ik[lab, lab] = 1
    K = np.block([[2 * (M + alpha * Ik), a[:, None]], [a[None, :], np.zeros((1, 1))]])
    out = []
    for c in range(Yl.shape[1]):
        yhat = np.zeros(n)
        yhat[lab] = Yl[:, c]
        out.append(np.linalg.solve(K, np.concatenate([2 * alpha * yhat, [0.0]]))[:n])
    return np.column_stack(out)


def test_tikreg_against_kkt_and_orthogonality():
    X, y, W, lab, Yl = problem(seed=2)
    gamma = 0.05
    F = m.tikhonov(W, lab, Yl, gamma)
    L = laplacian(W).toarray()
    expected = _kkt(L, lab, Yl, 1 / (len(lab) * gamma), np.ones(len(y)))  # eq. 3.10 with f ⊥ 1
    np.testing.assert_allclose(F, expected, atol=1e-7)
    np.testing.assert_allclose(F.sum(0), 0, atol=1e-8)


def test_constrained_embedding_against_kkt_and_equals_tikreg():
    X, y, W, lab, Yl = problem(seed=3)
    M = m.lle_matrix(X, neighbours(X, 6)[0])
    a = np.sqrt(np.asarray(W.sum(1)).ravel())
    for weights in (None, a):
        F = m.constrained_embedding_lp(M, lab, Yl, 0.7, weights)
        ref = _kkt(M.toarray(), lab, Yl, 0.7, np.ones(len(y)) if weights is None else weights)  # eqs. 3.38–3.40
        np.testing.assert_allclose(F, ref, atol=1e-7)
    # with M = L_u and A = I, eq. 3.39 is TIKREG with ℓγ = 1/α
    gamma = 0.2
    F1 = m.constrained_embedding_lp(laplacian(W), lab, Yl, 1 / (len(lab) * gamma))
    np.testing.assert_allclose(F1, m.tikhonov(W, lab, Yl, gamma), atol=1e-8)


def test_lelp_equals_gf_and_embedding_closed_form():
    X, y, W, lab, Yl = problem(seed=4)
    np.testing.assert_allclose(m.embedding_lp(laplacian(W), lab, Yl), m.gaussian_fields(W, lab, Yl), atol=1e-9)
    M = m.ltsa_matrix(X, neighbours(X, 6)[0], 1).toarray()
    unl = np.setdiff1d(np.arange(len(y)), lab)
    F = m.embedding_lp(M, lab, Yl)
    np.testing.assert_allclose(F[unl], -np.linalg.solve(M[np.ix_(unl, unl)], M[np.ix_(unl, lab)] @ Yl), atol=1e-6)


def test_lle_weights_match_scikit_learn():
    from sklearn.manifold._locally_linear import barycenter_weights

    X, _ = blobs(50, seed=5)
    idx = neighbours(X, 7)[0]
    Wm = m.lle_weights(X, idx, reg=1e-3).toarray()
    ref = barycenter_weights(X, X, idx, reg=1e-3)
    np.testing.assert_allclose(np.take_along_axis(Wm, idx, 1), ref, atol=1e-10)


def test_ltsa_matrix_annihilates_the_coordinate_of_a_line():
    rng = np.random.default_rng(6)
    t = np.sort(rng.uniform(0, 10, 80))
    X = np.outer(t, [1.0, 2.0, -0.5]) + 3.0
    M = m.ltsa_matrix(X, neighbours(X, 6)[0], 1)
    np.testing.assert_allclose(M @ t, 0, atol=1e-8)
    np.testing.assert_allclose(M @ np.ones(80), 0, atol=1e-10)
    assert np.linalg.eigvalsh(M.toarray()).min() > -1e-10


def test_lnp_weights_match_per_point_qp_and_iteration_reaches_fixed_point():
    X, y, W, lab, Yl = problem(n=30, seed=7)
    idx = neighbours(X, 5)[0]
    U = m.lnp_weights(X, idx, iters=3000, reg=0.0)
    np.testing.assert_allclose(np.asarray(U.sum(1)).ravel(), 1, atol=1e-12)
    assert U.min() >= 0
    for i in range(0, 30, 7):  # brute force: one constrained least-squares problem per point
        N = X[idx[i]]
        obj = lambda u: np.sum((X[i] - u @ N) ** 2)
        res = minimize(obj, np.full(5, 0.2), method="SLSQP", bounds=[(0, 1)] * 5,
                       constraints=[{"type": "eq", "fun": lambda u: u.sum() - 1}], options={"ftol": 1e-14})
        assert obj(U[i, idx[i]].toarray().ravel()) <= res.fun + 1e-7
    Y = np.zeros((30, 3))
    Y[lab] = Yl
    F, _ = m.propagate(U, Y, 0.95, tol=1e-13)  # eq. 3.19 iterates to (1−α)(I−αU)⁻¹y, not (3.18)'s solution
    np.testing.assert_allclose(F, 0.05 * np.linalg.solve(np.eye(30) - 0.95 * U.toarray(), Y), atol=1e-9)


def test_gwem_against_dense_brute_force():
    X, y, W, lab, Yl = problem(n=40, seed=8)
    F, _ = m.random_walk_em(W, lab, y[lab], 3, steps=4, self_loop=1.0, max_iter=500, tol=1e-13)
    A = W.toarray() + np.eye(40)
    P = A / A.sum(1, keepdims=True)
    Pm = np.linalg.matrix_power(P, 4)
    post = Pm / Pm.sum(0, keepdims=True)  # post[i, k] = P_{0|m}(i | k)
    Q = np.full((40, 3), 1 / 3)
    for _ in range(500):
        R = np.zeros((40, len(lab)))
        for j, k in enumerate(lab):
            R[:, j] = Q[:, y[k]] * post[:, k]
            R[:, j] /= R[:, j].sum()
        newQ = np.zeros_like(Q)
        for c in range(3):
            newQ[:, c] = R[:, y[lab] == c].sum(1)
        tot = newQ.sum(1, keepdims=True)
        Q = np.where(tot > 0, newQ / np.where(tot > 0, tot, 1), 1 / 3)
    np.testing.assert_allclose(F, post.T @ Q, atol=1e-8)


def test_cluster_kernel_embedding_spans_leading_eigenvectors():
    X, _ = blobs(500, seed=9)
    W = knn_graph(X, GraphSpec(k=8))
    V = m.cluster_kernel_embedding(W, 3, normalize_rows=False)  # n > 400: eigsh path
    d = np.asarray(W.sum(1)).ravel()
    S = W.toarray() / np.sqrt(np.outer(d, d))
    top = np.linalg.eigh(S)[1][:, -3:]
    proj = top @ (top.T @ V)  # same subspace (eigenvectors are defined up to rotation)
    np.testing.assert_allclose(proj, V, atol=1e-6)


ALL = ["gf", "tikreg", "lgc", "lnp", "ck", "gwem", "lelp", "llelp", "ltsalp", "lelpc", "llelpc", "ltsalpc"]


@pytest.mark.parametrize("name", ALL)
def test_recovers_two_moons_from_few_labels(name):
    from sklearn.datasets import make_moons

    X, y = make_moons(300, noise=0.06, random_state=0)
    lab = np.concatenate([np.flatnonzero(y == 0)[:4], np.flatnonzero(y == 1)[:4]])
    y_split = np.full(300, -1)
    y_split[lab] = y[lab]
    rest = np.setdiff1d(np.arange(300), lab)
    split = SemiSupervisedSplit(X, y_split, 2, rest)
    algo = registry.get(name)()
    pred = algo.run(split, algo.Params(), Context.for_arrays(X))
    error = np.mean(pred.labels[rest] != y[rest])
    bar = {"ck": 0.15, "llelp": 0.25, "llelpc": 0.25}.get(name, 0.05)
    assert error <= bar, f"{name}: error {error:.3f} on two moons"


def test_graph_is_computed_once_per_context():
    X, y, W, lab, Yl = problem()
    ctx = Context.for_arrays(X)
    y_split = np.full(len(y), -1)
    y_split[lab] = y[lab]
    split = SemiSupervisedSplit(X, y_split, 3, np.arange(len(y)))
    for name in ("gf", "lgc", "tikreg"):
        registry.get(name)().run(split, registry.get(name).Params(), ctx)
    graph_keys = [k for k in ctx.cache.new_keys]
    assert len(graph_keys) == 2  # one kNN list, one weight matrix, shared by the three methods


def test_inner_cv_selects_by_the_error_on_labelled_points_only():
    """select=inner-cv goes through malt.numerics.selection: the chosen (k, α) has the smallest error over
    stratified inner folds of the *labelled* points, recomputed here by hand; the split the task
    hands over carries no label of a test or unlabelled point, so none can leak into the choice."""
    from malt.numerics.selection import inner_fold_ids
    from malt.tasks import get_task

    X, y = blobs(150, seed=10)
    from malt.datasets.dataset import Dataset

    data = Dataset("blobs", {"X": X, "y": y}, {})
    task = get_task("semisupervised")
    P = task.Params(labeled=24)
    split = task.split(data, P, 0)
    lab = np.flatnonzero(split.y >= 0)
    assert lab.size == 24 and not np.isin(lab, split.evaluate).any()  # ℓ points, none from the test fold
    assert np.all(split.y[np.setdiff1d(np.arange(150), lab)] == -1)
    algo = registry.get("lgc")()
    params = algo.Params(select="inner-cv", k_grid=(10, 5), alpha_grid=(0.9, 0.3, 0.99))
    pred = algo.run(split, params, Context.for_arrays(X, seed=4))
    chosen = pred.diagnostics["selected"]
    ids = inner_fold_ids(24, 5, np.random.default_rng(4), strata=y[lab])  # the context's rng, as run() uses it

    def inner_error(k, alpha):
        Wk = knn_graph(X, GraphSpec(k=k))
        wrong = 0
        for j in range(5):
            tr, va = lab[ids != j], lab[ids == j]
            F = m.local_global_consistency(Wk, tr, m.one_hot(y[tr], 3), alpha)
            wrong += np.sum(F[va].argmax(1) != y[va])
        return wrong / 24

    errs = {(k, a): inner_error(k, a) for k in (10, 5) for a in (0.9, 0.3, 0.99)}
    assert errs[(chosen["k"], chosen["alpha"])] == min(errs.values())
    assert pred.diagnostics["inner_cv_score"] == pytest.approx(min(errs.values()))
    first = next(key for key, v in errs.items() if v == min(errs.values()))  # ties keep the grid order
    assert (chosen["k"], chosen["alpha"]) == first


def test_brier_loss_closed_forms():
    """Certain right rows score 0, certain wrong ones 2, uniform rows (C − 1)/C; entries are clipped to [0, 1]."""
    from malt.algorithms.label_propagation.registered import brier_loss

    y = np.array([0, 2, 1])
    assert brier_loss(np.eye(3)[y], y) == 0.0
    assert brier_loss(np.eye(3)[[1, 0, 2]], y) == 2.0
    assert brier_loss(np.full((3, 4), 0.25), y) == pytest.approx(3 / 4)
    assert brier_loss(np.array([[1.5, -0.5]]), np.array([0])) == 0.0


@pytest.mark.parametrize("loss", ["error-brier", "brier", "error"])
def test_gf_inner_cv_minimises_its_inner_loss_over_k(loss):
    """gf's select=inner-cv picks the k with the least held-out 0/1 error, its ties broken by the Brier
    score (the default), or the least Brier score or 0/1 error alone, each recomputed here from dense
    harmonic solves on the stratified inner folds of the labelled points."""
    from malt.datasets.dataset import Dataset
    from malt.numerics.selection import inner_fold_ids
    from malt.tasks import get_task

    X, y = blobs(150, seed=11)
    task = get_task("semisupervised")
    split = task.split(Dataset("blobs", {"X": X, "y": y}, {}), task.Params(labeled=24), 0)
    lab = np.flatnonzero(split.y >= 0)
    algo = registry.get("gf")()
    grid = (10, 5, 3, 20)
    pred = algo.run(split, algo.Params(select="inner-cv", k_grid=grid, inner_loss=loss), Context.for_arrays(X, seed=4))
    ids = inner_fold_ids(24, 5, np.random.default_rng(4), strata=y[lab])

    def inner(k):
        L = laplacian(knn_graph(X, GraphSpec(k=k))).toarray()
        wrong = brier = 0.0
        for j in range(5):
            tr, va = lab[ids != j], lab[ids == j]
            u = np.setdiff1d(np.arange(150), tr)
            F = np.linalg.solve(L[np.ix_(u, u)], -L[np.ix_(u, tr)] @ np.eye(3)[y[tr]])
            F = F[np.searchsorted(u, va)]
            wrong += np.sum(F.argmax(1) != y[va])
            brier += np.sum((np.clip(F, 0, 1) - np.eye(3)[y[va]]) ** 2)
        return wrong / 24, brier / 24

    scores = {k: inner(k) for k in grid}
    if loss == "error":
        key = lambda k: (scores[k][0], grid.index(k))  # noqa: E731  ties keep the grid order
    elif loss == "brier":
        key = lambda k: scores[k][1]  # noqa: E731
    else:
        key = lambda k: scores[k]  # noqa: E731  the error, then the Brier score
    best = min(grid, key=key)
    assert pred.diagnostics["selected"]["k"] == best
    expected = scores[best][1] if loss == "brier" else scores[best][0]
    assert pred.diagnostics["inner_cv_score"] == pytest.approx(expected, abs=1e-8)


def test_sparse_text_features_give_the_dense_results():
    """tf-idf-like sparse X: cosine kNN graph, LNP/LLE weights and the LTSA matrix are computed
    without densifying X and agree with the dense computation (cosine weights = brute force)."""
    rng = np.random.default_rng(3)
    Xs = sp.random(40, 300, density=0.05, random_state=4, format="csr")
    Xs.data = rng.random(Xs.nnz) + 0.1
    Xd = Xs.toarray()
    spec = GraphSpec(k=5, metric="cosine", weight="similarity")
    Ws, Wd = knn_graph(Xs, spec), knn_graph(Xd, spec)
    np.testing.assert_allclose(Ws.toarray(), Wd.toarray(), atol=1e-12)
    U = Xd / np.maximum(np.linalg.norm(Xd, axis=1, keepdims=True), 1e-300)
    C = U @ U.T
    i, j = Ws.nonzero()
    np.testing.assert_allclose(np.asarray(Ws[i, j]).ravel(), np.clip(C[i, j], 1e-300, None), atol=1e-12)
    nbrs = neighbours(Xd, 5, "cosine")[0]
    np.testing.assert_allclose(m.lnp_weights(Xs, nbrs).toarray(), m.lnp_weights(Xd, nbrs).toarray(), atol=1e-10)
    np.testing.assert_allclose(m.lle_weights(Xs, nbrs).toarray(), m.lle_weights(Xd, nbrs).toarray(), atol=1e-8)
    np.testing.assert_allclose(m.ltsa_matrix(Xs, nbrs, 2).toarray(), m.ltsa_matrix(Xd, nbrs, 2).toarray(), atol=1e-8)


def test_fig_3_8_embeddings_are_the_eigenvector_and_the_lp_solution():
    """Figure 3.8 helpers: the unsupervised LE coordinate is the second generalised eigenvector of
    (L_u, D) (D-orthogonal to the constant), the semi-supervised one is GF on the centred 1-D code."""
    from tests.helpers import figure_script

    fg = figure_script("fig_3_8")

    X, y = blobs(45, seed=2)
    lab = np.concatenate([np.flatnonzero(y == c)[:3] for c in range(3)])
    M, B = fg.alignment("LE", X, k=6)
    v = fg.unsupervised_1d(M, B)
    Ld, Dd = M.toarray(), B.toarray()
    lam = v @ Ld @ v / (v @ Dd @ v)
    np.testing.assert_allclose(Ld @ v, lam * Dd @ v, atol=1e-9)
    assert abs(np.ones(45) @ Dd @ v) < 1e-9 and lam > 1e-9
    W = knn_graph(X, GraphSpec(k=6))
    code = y[lab] - y[lab].mean()
    np.testing.assert_allclose(fg.semisupervised_1d(M, lab, y[lab]),
                               m.gaussian_fields(W, lab, code[:, None])[:, 0], atol=1e-9)


def test_lgc_as_alpha_tends_to_one_gives_every_point_the_class_of_most_labelled_degree_mass():
    """The mechanism behind LGC's near-chance error on text at α = 0.99: the limit of eq. 3.15 is
    the leading eigenvector of S (dense eigendecomposition here), one class for every point."""
    X, y, W, lab, Yl = problem(seed=11, per_class=2)
    lab = np.concatenate([lab, np.flatnonzero(y == 2)[2:6]])  # class 2 gets more labels
    Yl = m.one_hot(y[lab], 3)
    Wd = W.toarray()
    d = Wd.sum(1)
    vals, vecs = np.linalg.eigh(Wd / np.sqrt(np.outer(d, d)))
    v1 = np.abs(vecs[:, -1])  # Perron vector, ∝ D^{1/2}1
    assert np.isclose(vals[-1], 1) and vals[-2] < 1 - 1e-6  # connected
    Y = np.zeros((len(y), 3))
    Y[lab] = Yl
    expected_class = int(np.argmax(v1 @ Y))  # F → v1 v1ᵀY: the same ranking of classes in every row
    assert m.lgc_limit_class(W, lab, y[lab], 3) == expected_class
    F = m.local_global_consistency(W, lab, Yl, 1 - 1e-9)
    np.testing.assert_array_equal(F.argmax(1), expected_class)
    assert (m.local_global_consistency(W, lab, Yl, 0.5).argmax(1) == y).mean() > 0.8


@pytest.mark.parametrize("name", ["lgc", "lnp", "gf"])
def test_default_methods_beat_chance_on_different100_cosine_graph(name):
    """Regression: with α = 0.99 LGC/LNP scored ~50-65 % error on Different100 (chance 66.7 %) while
    GF scored ~11 %. The thesis (Fig. 3.4, ℓ = 30): GF 7.3 ± 1.4, LGC 13.0 ± 1.2, LNP 13.6 ± 2.4."""
    require_data("text/20newsgroups/20news-19997.tar.gz")
    from malt.datasets.open import open_dataset
    from malt.tasks import get_task

    d = open_dataset("different100")
    task = get_task("semisupervised")
    P = task.Params(labeled=30)
    algo = registry.get(name)()
    params = algo.Params(metric="cosine", weight="similarity")
    ctx = Context.for_arrays(d["X"])
    errors = []
    for fold in range(task.n_folds(d, P)):
        s = task.split(d, P, fold)
        errors.append(task.score(d, P, s, algo.run(s, params, ctx))["error"])
    assert np.mean(errors) < 0.2, f"{name}: fold errors {np.round(errors, 3)}"


def test_large_graphs_are_solved_by_multigrid_cg_to_the_closed_forms():
    """From ITERATIVE_MIN_ROWS rows the graph systems (GF, TIKREG, LGC) go to conjugate gradients
    (multigrid- or Jacobi-preconditioned); the scores equal sparse direct solves of eqs. 3.8,
    3.11–3.12 and 3.15."""
    import scipy.sparse.linalg as spla

    n = solvers.ITERATIVE_MIN_ROWS + 100
    X, y = blobs(n, seed=12)
    W = knn_graph(X, GraphSpec(k=8))
    lab = np.concatenate([np.flatnonzero(y == c)[:5] for c in range(3)])
    Yl = m.one_hot(y[lab], 3)
    solver = m._factor(laplacian(W), np.isin(np.arange(n), lab).astype(float))
    assert isinstance(solver, solvers.Reordered) and isinstance(solver.inner, solvers.ConjugateGradients)
    assert isinstance(solver.inner.M, solvers.Multigrid)
    unl = np.setdiff1d(np.arange(n), lab)
    L = laplacian(W).tocsc()
    Fgf = m.gaussian_fields(W, lab, Yl)
    np.testing.assert_allclose(Fgf[unl], spla.spsolve(L[unl][:, unl], (W[unl][:, lab] @ Yl)), atol=1e-6)
    d = np.asarray(W.sum(1)).ravel()
    S = sp.diags(d ** -0.5) @ W @ sp.diags(d ** -0.5)
    Y = np.zeros((n, 3))
    Y[lab] = Yl
    np.testing.assert_allclose(m.local_global_consistency(W, lab, Yl, 0.9),
                               0.1 * spla.spsolve(sp.csc_matrix(sp.identity(n) - 0.9 * S), Y), atol=1e-7)
    Ik = sp.diags(np.isin(np.arange(n), lab).astype(float))
    A = sp.csc_matrix(len(lab) * 0.1 * L + Ik)
    G, g1 = spla.spsolve(A, Y), spla.spsolve(A, np.ones(n))
    np.testing.assert_allclose(m.tikhonov(W, lab, Yl, 0.1), G - np.outer(g1, G.sum(0) / g1.sum()), atol=1e-6)


def test_multigrid_cg_converges_on_a_path_graph_where_jacobi_cg_stalls():
    """A path graph's Laplacian (+ a small diagonal) has condition number ~ n²: Jacobi-CG needs
    about n iterations, the aggregation multigrid a few dozen; both solutions equal a direct solve,
    and an unconverged solve raises instead of returning a wrong answer."""
    import scipy.sparse.linalg as spla

    n = 20000
    A = sp.diags([np.full(n - 1, -1.0), np.r_[1.0, np.full(n - 2, 2.0), 1.0] + 1e-4, np.full(n - 1, -1.0)],
                 [-1, 0, 1], format="csr")
    B = np.random.default_rng(0).random((n, 2))
    exact = spla.spsolve(sp.csc_matrix(A), B)
    mg = solvers.ConjugateGradients(A, solvers.Multigrid(A))
    np.testing.assert_allclose(mg.solve(B), exact, rtol=1e-6, atol=1e-6 * np.abs(exact).max())
    assert mg.iterations < 100
    with pytest.raises(solvers.SolveError, match="did not reach relative residual"):
        solvers.ConjugateGradients(A, solvers.Jacobi(A), maxiter=200).solve(B)


def test_multigrid_cg_iterations_do_not_grow_with_the_number_of_levels():
    """The K-cycle keeps the CG iteration count flat as levels are added (a V-cycle's grows): on a
    2-D grid Laplacian plus a small diagonal (κ ~ n), 9 times the rows and one more multigrid level
    cost at most 2 more iterations; each solution meets the tolerance by its own residual
    ‖b − A x‖ / ‖b‖, computed directly, in the caller's order of the rows. The grid's equal weights
    must not stop the pairwise matching from coarsening (`solvers._edge_hash`)."""
    def grid(side):
        path = sp.diags([np.full(side - 1, -1.0), np.r_[1.0, np.full(side - 2, 2.0), 1.0], np.full(side - 1, -1.0)],
                        [-1, 0, 1])
        eye = sp.identity(side)
        return sp.csr_matrix(sp.kron(path, eye) + sp.kron(eye, path) + 1e-3 * sp.identity(side * side))

    iterations, levels = [], []
    for side in (100, 300):
        A = grid(side)
        shuffle = np.random.default_rng(side).permutation(A.shape[0])  # points in arbitrary order
        A = sp.csr_matrix(A[shuffle][:, shuffle])
        B = np.random.default_rng(1).random((A.shape[0], 3))
        solver = solvers.factor(A)
        X = solver.solve(B)
        residual = np.linalg.norm(B - A @ X, axis=0) / np.linalg.norm(B, axis=0)
        assert residual.max() <= solvers.CG_RTOL * 1.0001
        iterations.append(solver.iterations)
        levels.append(len(solver.inner.M.levels))
    assert levels[1] > levels[0]
    assert iterations[1] <= iterations[0] + 2, (iterations, levels)


def test_majority_baseline_predicts_the_most_frequent_labelled_class_everywhere():
    """Hand-computed: labelled classes (2, 0, 2, 1, 2) -> class 2 (3 of 5) for all 8 points; the
    held-out points (classes 0, 0, 2) are then 2 of 3 wrong. A tie (one 0, one 1) goes to class 0."""
    X = np.zeros((8, 2))
    y_split = np.array([2, 0, 2, 1, 2, -1, -1, -1])
    algo = registry.get("majority")()
    pred = algo.run(SemiSupervisedSplit(X, y_split, 3, np.array([5, 6, 7])), algo.Params(), Context.for_arrays(X))
    assert pred.labels.tolist() == [2] * 8
    assert np.mean(pred.labels[[5, 6, 7]] != np.array([0, 0, 2])) == pytest.approx(2 / 3)
    tie = algo.run(SemiSupervisedSplit(X, np.array([1, 0, -1, -1, -1, -1, -1, -1]), 3, np.arange(2, 8)),
                   algo.Params(), Context.for_arrays(X))
    assert tie.labels.tolist() == [0] * 8


def _blobs_with_far_cluster(seed=12):
    """90 blob points and a far cluster of 8 (with k = 6 its neighbourhoods stay inside it, so it is
    a component of its own): labelled = 5 per class plus one point of the far cluster."""
    X, y = blobs(90, seed=seed)
    rng = np.random.default_rng(seed)
    X = np.vstack([X, 60.0 + rng.normal(0, 1.0, (8, 4))])
    y = np.concatenate([y, np.zeros(8, int)])
    lab = np.concatenate([np.concatenate([np.flatnonzero(y[:90] == c)[:5] for c in range(3)]), [92]])
    return X, y, lab


@pytest.mark.parametrize("kind", ["ltsa", "lle"])
def test_held_out_embedding_lp_equals_one_solve_per_inner_split(kind):
    """Inner CV of LLELP/LTSALP factorises M_uu once and reduces eq. 3.37 to the Schur complement on
    the labelled rows (`HeldOutEmbeddingLP`); block elimination is exact, so each split's held-out
    scores equal `embedding_lp` run on that split (independent reference: its own sparse LU of the
    split's M_{u∪V, u∪V}). The split that holds out the far cluster's only label leaves that cluster
    unreached; `embedding_lp` jitters it, so the reduction declines that split (None)."""
    X, y, lab = _blobs_with_far_cluster()
    nbrs = neighbours(X, 6)[0]
    M = m.ltsa_matrix(X, nbrs, 2) if kind == "ltsa" else m.lle_matrix(X, nbrs)
    Yl = m.one_hot(y[lab], 3)
    reduced = m.HeldOutEmbeddingLP(M, lab)
    assert reduced.available
    ids = np.arange(len(lab)) % 4
    declined = 0
    for f in range(4):
        train, val = np.flatnonzero(ids != f), np.flatnonzero(ids == f)
        F = reduced.held_out(train, val, Yl[train])
        if 15 in val:  # lab[15] = 92, the far cluster's label
            assert F is None
            declined += 1
            continue
        np.testing.assert_allclose(F, m.embedding_lp(M, lab[train], Yl[train])[lab[val]], atol=1e-9)
    assert declined == 1


def test_held_out_embedding_lp_declines_a_numerically_singular_m_uu():
    """LTSA with k = 3 neighbours and tangent dimension 2 leaves each neighbourhood a rank-1 block
    (I − G_iG_iᵀ, 4 × 4, G_i of rank 3): M_uu is singular up to rounding (its smallest eigenvalues,
    scaled to unit diagonal, are ~1e-14 here). Any two solvers then disagree along the null direction,
    so the reduction must decline (`RCOND_MIN`) and leave every split to `embedding_lp`; with k = 6 it
    is well conditioned and taken."""
    X, y, lab = _blobs_with_far_cluster()
    unl = np.setdiff1d(np.arange(len(y)), lab)
    for k, taken in ((3, False), (6, True)):
        M = m.ltsa_matrix(X, neighbours(X, k)[0], 2)
        A = M[unl][:, unl].toarray()
        scale = 1 / np.sqrt(np.diag(A))
        smallest = np.linalg.eigvalsh(A * scale[:, None] * scale[None, :])[0]
        assert (abs(smallest) < 1e-12) == (not taken)
        assert m.HeldOutEmbeddingLP(M, lab).available == taken


@pytest.mark.parametrize("name", ["ltsalp", "llelp", "lnp"])
def test_inner_cv_shortcuts_give_the_per_split_scores(name):
    """`held_out_scores` (one factorisation per candidate: LNP's I − αU, the embeddings' Schur
    complement) against the default one `scores` fit per split, on every inner split; LNP's is the
    same computation (bit for bit), the embeddings' equal to rounding. Includes the declined split."""
    from malt.algorithms.label_propagation.registered import _GraphAlgorithm

    X, y, lab = _blobs_with_far_cluster()
    y_split = np.full(len(y), -1)
    y_split[lab] = y[lab]
    split = SemiSupervisedSplit(X, y_split, 3, np.setdiff1d(np.arange(len(y)), lab))
    algo = registry.get(name)()
    params = algo.Params(k=6)
    ctx = Context.for_arrays(X)
    W, nbrs, Xs = algo._inputs(split, params, ctx)
    fast = algo.held_out_scores(W, nbrs, Xs, lab, y[lab], 3, params, ctx)
    slow = _GraphAlgorithm.held_out_scores(algo, W, nbrs, Xs, lab, y[lab], 3, params, ctx)
    ids = np.arange(len(lab)) % 4
    for f in range(4):
        train, val = np.flatnonzero(ids != f), np.flatnonzero(ids == f)
        if name == "lnp":
            np.testing.assert_array_equal(fast(train, val), slow(train, val))
        else:
            np.testing.assert_allclose(fast(train, val), slow(train, val), atol=1e-9)


def _chain(n, seed):
    """A path graph of n points with weights drawn from [0.5, 1.5] (no two halves alike)."""
    w = np.random.default_rng(seed).uniform(0.5, 1.5, n - 1)
    return sp.csr_matrix(sp.diags([w, w], [-1, 1], shape=(n, n)))


def test_lgc_resolves_scores_far_from_labels_to_the_direct_solves_decisions():
    """LGC's scores decay geometrically away from the labels (by ~0.6 per hop on a chain at α = 0.9:
    ~1e-30 midway between labels 300 points apart). One CG solve stopped at a relative residual of
    1e-8 leaves an error of up to 1e-8·‖b‖/(1−α) in every entry, so most rows between the labels got an
    arbitrary class (the code before the magnitude stages: 1,325 of these 3,000 rows); the staged
    solve (`resolved`) gives a sparse LU's decisions on every row and its scores to ≤ K·δ/(1−δ) of each
    row's sum (K stages, δ = `resolved.RESOLUTION`). Reference: SuperLU (scipy.sparse.linalg.spsolve) on I − αS, componentwise accurate here
    (LU of a diagonally dominant M-matrix: its substitutions add non-negative terms only)."""
    import scipy.sparse.linalg as spla

    n, alpha = 3000, 0.9
    W = _chain(n, seed=0)
    rng = np.random.default_rng(1)
    lab = np.arange(150, n, 300)
    Yl = m.one_hot(rng.integers(0, 3, lab.size), 3)
    Y = np.zeros((n, 3))
    Y[lab] = Yl
    d = np.asarray(W.sum(1)).ravel()
    S = sp.diags(d ** -0.5) @ W @ sp.diags(d ** -0.5)
    exact = (1 - alpha) * spla.spsolve(sp.csc_matrix(sp.identity(n) - alpha * S), Y)
    assert exact.max(1).min() < 1e-25  # far below any normwise tolerance
    F = m.local_global_consistency(W, lab, Yl, alpha)
    wrong = np.count_nonzero(F.argmax(1) != exact.argmax(1))
    assert wrong == 0, f"{wrong} of {n} decisions differ from the direct solve's"
    solution = m.lgc_solution(W, lab, Yl, alpha)
    delta = resolved.RESOLUTION
    assert solution.stages > 1
    # a row is uncertain when its two largest scores are within twice the bound; only rows whose exact gap is
    # within four times it may be (one here, exact gap 0.0088 of its row's sum against a bound of 6 × 1e-3)
    top_two = -np.sort(-exact, axis=1)[:, :2]
    near_ties = np.count_nonzero(top_two[:, 0] - top_two[:, 1] < 4 * solution.error_bound * exact.sum(1))
    assert solution.uncertain_rows <= near_ties <= 1
    assert solution.error_bound == pytest.approx(solution.stages * delta / (1 - delta)) and solution.error_bound < 1e-2
    assert np.all(np.abs(F - exact) <= solution.error_bound * exact.sum(1, keepdims=True))
    np.testing.assert_array_equal(solution.labels, exact.argmax(1))


def test_lgc_rows_no_label_reaches_get_the_exact_zero():
    """A chain with labels, a second chain without any and three isolated points: the rows of the
    unlabelled pieces have exactly 0 scores in eq. 3.15 (I − αS is block diagonal), and so here;
    the labelled chain equals a sparse LU's solution (relative to each row's sum, the solve's bound)."""
    import scipy.sparse.linalg as spla

    W = sp.block_diag([_chain(2500, seed=2), _chain(100, seed=3), sp.csr_matrix((3, 3))], format="csr")
    n = W.shape[0]
    lab = np.array([10, 1200, 2400])
    Yl = np.eye(3)
    solution = m.lgc_solution(W, lab, Yl, 0.9)
    F = solution.scores
    assert np.all(F[2500:] == 0)
    d = np.asarray(W.sum(1)).ravel()
    inv = np.where(d > 0, 1 / np.sqrt(np.maximum(d, 1e-300)), 0.0)
    S = sp.diags(inv) @ W @ sp.diags(inv)
    Y = np.zeros((n, 3))
    Y[lab] = Yl
    exact = 0.1 * spla.spsolve(sp.csc_matrix(sp.identity(n) - 0.9 * S), Y)
    assert np.all(np.abs(F - exact) <= solution.error_bound * exact.sum(1, keepdims=True))
    np.testing.assert_array_equal(solution.labels, exact.argmax(1))


def test_lgc_decides_rows_whose_scores_underflow_float64():
    """A uniform chain of 4,000 points labelled at its two ends with different classes: every score
    of the middle rows is below 1e-300 (~0.63 per hop), so float64 cannot hold F there (its sparse LU
    returns 0 for both classes). By the chain's mirror symmetry each row takes the class of the nearer
    end (G(i, 0) = G(n−1−i, n−1) and decreases with i): the staged solve keeps each row's scale as a
    logarithm and decides every row so."""
    n = 4000
    W = sp.csr_matrix(sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1]))
    solution = m.lgc_solution(W, [0, n - 1], np.eye(2), 0.9)
    assert solution.log_scale.min() < np.log(1e-300)
    np.testing.assert_array_equal(solution.labels, np.repeat([0, 1], n // 2))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("first_hops", [2, 32])
def test_lgc_bands_give_the_direct_solves_decisions_and_scores_within_the_declared_bound(first_hops):
    """The staged solve works on bands (rows within H hops of the resolved ones) and bounds what a band
    leaves out by the residual it leaks into the rows just outside (`resolved`). On a kNN graph of 3,000
    points in a 60 × 3 strip, labelled at one end and near a third of its length, scores fall to 1e-42,
    so every band is cut short; H = 2 starts far too narrow (the bound must widen it, not resolve rows
    with the leak ignored: without that term 22 decisions differ here), H = 32 is the default. Both give
    a sparse LU's decisions on every row and every score within ``error_bound`` of its row's sum.
    Reference: SuperLU (scipy.sparse.linalg.spsolve) on I − αS, componentwise accurate for this
    M-matrix (its substitutions add non-negative terms only)."""
    import scipy.sparse.linalg as spla

    from malt.algorithms.label_propagation import resolved
    from malt.numerics.graphs import normalized_adjacency

    n, alpha = 3000, 0.9
    X = np.random.default_rng(5).uniform(0, 1, (n, 2)) * [60, 3]
    order, W = solvers.locality_order(knn_graph(X, GraphSpec(k=8)))
    X = X[order]
    lab = np.concatenate([np.flatnonzero(X[:, 0] < 2)[:3], np.flatnonzero(np.abs(X[:, 0] - 20) < 1)[:2]])
    B = np.zeros((n, 3))
    B[lab] = np.eye(3)[[0, 1, 2, 1, 0]]
    S = normalized_adjacency(W)
    exact = spla.spsolve(sp.csc_matrix(sp.identity(n) - alpha * S), B)
    assert exact.max(1).min() < 1e-40
    solution = resolved.resolve(S, alpha, B, np.sqrt(np.asarray(W.sum(1)).ravel()), first_hops=first_hops)
    assert solution.truncated > 0 and solution.row_iterations < solution.iterations * n / 2  # bands, cut short
    delta = resolved.RESOLUTION
    assert solution.error_bound == pytest.approx(solution.stages * delta / (1 - delta)) and solution.error_bound < 1e-2
    assert solution.uncertain_rows < 0.02 * n  # rows whose two top scores are within 2 × the bound (δ = 1e-3: 33)
    assert np.all(np.abs(solution.scores - exact) <= solution.error_bound * exact.sum(1, keepdims=True))
    np.testing.assert_array_equal(solution.labels, exact.argmax(1))


def test_chebyshev_solves_lgc_systems_within_its_rate_bound():
    """solvers.Chebyshev on I − αS (spectrum in [1 − α, 1 + α]) reaches the residual goal, agrees with a
    sparse LU, and needs no more iterations than its worst-case bound 2σᵏ‖r₀‖ ≤ atol·(1−α)/(1+α)
    (the ‖·‖₂ residual from the error in the A-norm) allows, rounded up to a residual check; an
    interval that misses the spectrum is refused or does not converge."""
    from scipy.sparse.linalg import spsolve

    X, y, W, lab, Y_l = problem(n=300, seed=3)
    alpha = 0.9
    A = (sp.identity(300) - alpha * m.normalized_adjacency(W)).tocsc()
    B = np.zeros((300, 3))
    B[lab] = Y_l
    atol = 1e-11
    cheb = solvers.Chebyshev(A, 1 - alpha, 1 + alpha, atol=atol)
    F = cheb.solve(B)
    assert np.linalg.norm(B - A @ F, axis=0).max() <= atol
    np.testing.assert_allclose(F, spsolve(A, B), atol=1e-9)
    kappa = (1 + alpha) / (1 - alpha)
    sigma = (np.sqrt(kappa) - 1) / (np.sqrt(kappa) + 1)
    r0 = np.linalg.norm(B, axis=0).max()
    bound = np.log(atol / (2 * r0 * np.sqrt(kappa))) / np.log(sigma)
    assert cheb.iterations <= solvers.CHEBYSHEV_CHECK * np.ceil(bound / solvers.CHEBYSHEV_CHECK)
    assert np.array_equal(solvers.Chebyshev(A, 1 - alpha, 1 + alpha, atol=atol).solve(B, F), F)  # converged guess
    with pytest.raises(ValueError):
        solvers.Chebyshev(A, 0.0, 1.0, atol=atol)
    with pytest.raises(solvers.SolveError):
        solvers.Chebyshev(A, 1.5, 1.9, atol=atol, maxiter=200).solve(B)


def test_lgc_and_gf_report_cg_iterations_and_residuals_as_progress():
    """A solve of minutes must show how far it is: through the run context's progress, the
    registered gf reports every CG iteration with its residual, lgc each residual check of its
    Chebyshev stages (and the rows resolved),
    with fractions in [0, 1] that never decrease."""
    n = solvers.ITERATIVE_MIN_ROWS + 500
    X, y = blobs(n, seed=13)
    lab = np.concatenate([np.flatnonzero(y == c)[:4] for c in range(3)])
    y_split = np.full(n, -1)
    y_split[lab] = y[lab]
    split = SemiSupervisedSplit(X, y_split, 3, np.setdiff1d(np.arange(n), lab))
    for name in ("lgc", "gf"):
        calls = []
        ctx = Context(X, progress=lambda f, message: calls.append((f, message)))
        algo = registry.get(name)()
        pred = algo.run(split, algo.Params(), ctx)
        word = "Chebyshev iteration" if name == "lgc" else "CG iteration"
        iterations = [msg for _, msg in calls if word in msg and "residual" in msg]
        assert len(iterations) >= 5, (name, calls[:3])
        fractions = [f for f, _ in calls]
        assert all(0 <= f <= 1 for f in fractions) and fractions == sorted(fractions)
        every = solvers.CHEBYSHEV_CHECK if name == "lgc" else 1  # lgc's stages report at each residual check
        assert pred.diagnostics["cg_iterations"] == every * len(iterations)


@pytest.mark.parametrize("alpha", [0.5, 0.9, 0.99])
def test_lgc_held_out_decisions_are_the_direct_solves(alpha):
    """Inner CV reads only the held-out rows' decisions (`resolved.decide_rows`, stopped once each is
    certified by its error bound; `methods.HeldOutLGC` for every split): on a 2,500-point swiss roll
    (iterative path) with 40 labelled points in 4 folds they equal a sparse LU's argmax of
    (I − αS)⁻¹Y_T on those rows, and `lgc_solution`'s labels there. Reference: SuperLU
    (scipy.sparse.linalg.spsolve) on I − αS."""
    import scipy.sparse.linalg as spla
    from sklearn.datasets import make_swiss_roll

    from malt.numerics.graphs import normalized_adjacency

    n = 2500
    X, t = make_swiss_roll(n, noise=0.05, random_state=3)
    y = (t > np.median(t)).astype(int) + 2 * (X[:, 1] > np.median(X[:, 1]))
    lab = np.sort(np.random.default_rng(3).choice(n, 40, replace=False))
    W = knn_graph(X, GraphSpec(k=8))
    Yl = m.one_hot(y[lab], 4)
    A = sp.csc_matrix(sp.identity(n) - alpha * normalized_adjacency(W))
    held = m.HeldOutLGC(W, lab, alpha)
    ids = np.arange(lab.size) % 4
    certified = 0
    for f in range(4):
        train, val = np.flatnonzero(ids != f), np.flatnonzero(ids == f)
        B = np.zeros((n, 4))
        B[lab[train]] = Yl[train]
        exact = spla.spsolve(A, B)[lab[val]].argmax(1)
        np.testing.assert_array_equal(held.held_out(train, val, Yl[train]).argmax(1), exact)
        np.testing.assert_array_equal(m.lgc_solution(W, lab[train], Yl[train], alpha).labels[lab[val]], exact)
        d = np.asarray(W.sum(1)).ravel()
        direct = resolved.decide_rows(normalized_adjacency(W), alpha, B, np.sqrt(d), lab[val])
        if direct is not None:
            certified += 1
            np.testing.assert_array_equal(direct.argmax(1), exact)
    assert certified >= 3  # the short path, not only its fallback


def test_in_place_products_match_scipys():
    """`solvers.accumulate_product` (Y += A X in scipy's CSR kernel, in place) equals Y + A @ X, also on
    the fallback for a non-contiguous block; `solvers.ShiftedAdjacency` applies I − αS as the matrix
    does, and Chebyshev gives the same iterates with it as with the assembled matrix."""
    X, y, W, lab, Y_l = problem(n=300, seed=4)
    S = m.normalized_adjacency(W)
    rng = np.random.default_rng(0)
    P, Y0 = rng.normal(size=(300, 3)), rng.normal(size=(300, 3))
    for block in (P, np.asfortranarray(P)):
        Y = Y0.copy()
        solvers.accumulate_product(S, block, Y)
        np.testing.assert_allclose(Y, Y0 + S @ P, rtol=1e-13, atol=1e-13)
    alpha = 0.9
    A = sp.csr_matrix(sp.identity(300) - alpha * S)
    op = solvers.ShiftedAdjacency(sp.csr_matrix(alpha * S))
    np.testing.assert_allclose(op @ P, A @ P, atol=1e-13)
    R = Y0.copy()
    op.subtract_product(R, np.ascontiguousarray(P))
    np.testing.assert_allclose(R, Y0 - A @ P, atol=1e-13)
    B = np.zeros((300, 3))
    B[lab] = Y_l
    a = solvers.Chebyshev(op, 1 - alpha, 1 + alpha, atol=1e-11)
    b = solvers.Chebyshev(A, 1 - alpha, 1 + alpha, atol=1e-11)
    np.testing.assert_allclose(a.solve(B), b.solve(B), atol=1e-12)
    assert a.iterations == b.iterations
