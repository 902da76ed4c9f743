"""Label propagation as generalised label propagation (GLP, dissertation §3.3–3.5).

Every method takes a symmetric sparse weight matrix ``W`` (n, n), the labelled rows ``labeled``
(ℓ,) and their targets ``Y_l`` (ℓ, C) and returns scores ``F`` (n, C); the predicted class is the
row-wise argmax (one-vs-rest). Targets are one-hot: all solutions here are linear in y, so the
±1 coding of the thesis gives the same argmax (F(±1) = 2 F(one-hot) − F(1_ℓ), the last term is
shared by all classes). Each system is factorised once (sparse LU) and solved for all classes
together; no dense n × n inverse is formed. Cost: one sparse factorisation of an n × n matrix
with O(nk) non-zeros, then O(C) triangular solves.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from malt.errors import DataError

from malt.numerics.graphs import degrees, laplacian, normalized_adjacency

from . import resolved, solvers

JITTER = 1e-10
"""Relative ridge on the diagonal of graph components that no label reaches (else singular)."""


def _split(n: int, labeled) -> tuple[np.ndarray, np.ndarray]:
    labeled = np.asarray(labeled, dtype=np.int64)
    mask = np.zeros(n, bool)
    mask[labeled] = True
    return labeled, np.flatnonzero(~mask)


SIGNIFICANT = 1e-12
"""A coupling a_ij counts as an edge for the connectivity check when |a_ij| > SIGNIFICANT·√(a_ii a_jj):
an RBF weight of 1e-73 beside a degree of 1 vanishes in floating point (1 + 1e-73 = 1)."""


def significant_pattern(A: sp.spmatrix) -> sp.csr_matrix:
    """The off-diagonal entries of A that count as edges: |a_ij| > SIGNIFICANT·√(a_ii a_jj), as a
    0/1 CSR matrix. O(nnz)."""
    A = sp.csr_matrix(A)
    if not A.has_canonical_format:  # duplicates summed on a copy: the caller's matrix stays as it is
        A = A.copy()
        A.sum_duplicates()
    d = np.abs(A.diagonal())
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    keep = (rows != A.indices) & (np.abs(A.data) > SIGNIFICANT * np.sqrt(d[rows] * d[A.indices]))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=A.shape[0]))])
    return sp.csr_matrix((np.ones(int(keep.sum())), A.indices[keep], indptr), shape=A.shape)  # no COO round trip


def anchored(anchor: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Rows whose tie to a label is significant beside their diagonal d = |a_ii|, (n,) bool."""
    return np.asarray(anchor) > SIGNIFICANT * np.maximum(d, 1e-300)


def loose_rows(A: sp.spmatrix, anchor: np.ndarray) -> np.ndarray:
    """Rows of A in a component that no label reaches, (n,) bool.

    anchor : (n,) ≥ 0, how strongly each row is tied to a label (its coupling to the labelled
    points, or its label penalty). A connected component of A's numerically significant pattern
    (`significant_pattern`) without a significantly anchored row is singular in floating point (a
    graph piece no label reaches, or one joined to the rest only by underflowing weights). O(nnz).
    """
    from scipy.sparse.csgraph import connected_components

    A = sp.csr_matrix(A)
    if not A.shape[0]:
        return np.zeros(0, bool)
    n_comp, comp = connected_components(significant_pattern(A), directed=False)
    reached = np.zeros(n_comp, bool)
    reached[comp[anchored(anchor, np.abs(A.diagonal()))]] = True
    return ~reached[comp]


def _factor(A: sp.spmatrix, anchor: np.ndarray | None = None, precondition: str = "multigrid",
            rtol: float | None = None, progress=None):
    """A solver for the symmetric positive (semi)definite A (`solvers.factor`).

    anchor : (n,) ≥ 0, each row's tie to a label (`loose_rows`); the diagonal of a component no
    label reaches gets a relative jitter ``JITTER``, so its scores come out ≈ 0 and every other
    component is solved as given.
    """
    A = sp.csr_matrix(A)
    if anchor is not None and A.shape[0]:
        loose = loose_rows(A, anchor)
        if loose.any():
            d = np.abs(A.diagonal())
            A = sp.csr_matrix(A + sp.diags(JITTER * np.where(d > 0, d, 1.0) * loose))
    return solvers.factor(A, precondition, rtol, progress)


def _coupling(B) -> np.ndarray:
    """Σ_j |b_ij| of every row of B (a row's tie to the labelled points)."""
    return np.asarray(abs(sp.csr_matrix(B)).sum(axis=1)).ravel()


def one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    Y = np.zeros((len(y), n_classes))
    Y[np.arange(len(y)), y] = 1.0
    return Y


def gaussian_fields(W, labeled, Y_l, rtol: float | None = None, progress=None, diagnostics=None) -> np.ndarray:
    """Harmonic solution of Gaussian fields (Zhu et al. 2003), eq. 3.8.

    .. math:: f_u = (D_{uu} - W_{uu})^{-1} W_{u\\ell} y_\\ell,\\quad f_\\ell = y_\\ell

    rtol : relative residual of an iterative solve (None: `solvers.CG_RTOL`); its iterations go to
    progress(fraction, message) and their number to ``diagnostics['cg_iterations']`` (a dict).
    """
    W = sp.csr_matrix(W)
    n = W.shape[0]
    lab, unl = _split(n, labeled)
    order = None
    if n >= solvers.ITERATIVE_MIN_ROWS:  # every O(nnz) pass below (connectivity, slicing, aggregation) reads
        order, W = solvers.locality_order(W)  # nearby rows: a graph in arbitrary order misses the cache
        position = np.empty(n, dtype=np.int64)
        position[order] = np.arange(n)
        lab, unl = _split(n, position[lab])
    F = np.zeros((n, Y_l.shape[1]))
    F[lab] = Y_l
    if unl.size:
        L = laplacian(W)
        Wul = W[unl][:, lab]
        solver = _factor(L[unl][:, unl], _coupling(Wul), rtol=rtol, progress=progress)
        F[unl] = solver.solve(np.asarray(Wul @ Y_l))
        if diagnostics is not None:
            diagnostics["cg_iterations"] = solver.iterations
    if order is None:
        return F
    out = np.empty_like(F)
    out[order] = F
    return out


def embedding_lp(M, labeled, Y_l) -> np.ndarray:
    """Unconstrained semi-supervised embedding, eq. 3.37: f_u = −M_uu⁻¹ M_uℓ y_ℓ, f_ℓ = y_ℓ.

    With M = L_u this is LELP, which equals GF (eq. 3.8) exactly.
    """
    M = sp.csr_matrix(M)
    n = M.shape[0]
    lab, unl = _split(n, labeled)
    F = np.zeros((n, Y_l.shape[1]))
    F[lab] = Y_l
    if unl.size:
        Mul = M[unl][:, lab]
        F[unl] = -_factor(M[unl][:, unl], _coupling(Mul)).solve(np.asarray(Mul @ Y_l))
    return F


DENSE_MAX_ROWS = 5000
"""Up to this many unlabelled rows `HeldOutEmbeddingLP` factorises M_uu densely (Cholesky, 8n² bytes:
120 MB at 3,900 rows); above it inner CV keeps one `embedding_lp` per split. The LU of an LTSA
alignment matrix of a kNN graph fills in to most of the dense matrix (Classic3, 3,861 unlabelled
rows: SuperLU's factors hold 9.4 / 10.5 M of the 14.9 M entries at k = 10 / 20) and takes 1.8–2.8 s
there, a dense Cholesky 0.3 s (2 threads)."""
RCOND_MIN = 1e-8
"""The reduction is used only where M_uu (scaled to unit diagonal) and each split's K_VV have a
reciprocal condition number of at least this: then it and `embedding_lp` agree to ~eps/RCOND_MIN
relative. Below it both answers are dominated by rounding along a near-null direction (LTSA with
k = 3 neighbours on Same100: two eigenvalues of M_uu at ±1e-16, scores differing by 11 between two
solvers), and only `embedding_lp` itself reproduces its own numbers."""


def _dense_spd_solve(A: sp.spmatrix, B: np.ndarray) -> np.ndarray | None:
    """A⁻¹B by a dense Cholesky factorisation of the symmetric positive definite A, symmetrically
    scaled to unit diagonal first (as `solvers.DirectSolver`); None when that matrix is not
    numerically positive definite or its reciprocal condition number (LAPACK dpocon, 1-norm) is
    below ``RCOND_MIN``. O(n³/3)."""
    from scipy.linalg import cho_factor, cho_solve, lapack

    d = np.abs(A.diagonal())
    scale = 1.0 / np.sqrt(np.where(d > 0, d, 1.0))
    As = A.toarray()
    As *= scale[:, None]
    As *= scale[None, :]
    norm1 = float(np.abs(As).sum(axis=0).max())
    try:
        factor = cho_factor(As, lower=True, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    rcond, info = lapack.dpocon(factor[0], norm1, uplo="L")
    if info != 0 or not rcond >= RCOND_MIN:
        return None
    return scale[:, None] * cho_solve(factor, scale[:, None] * B, check_finite=False)


class HeldOutEmbeddingLP:
    """eq. 3.37 for every split of the labelled points ℓ into fitted T and held-out V, from one
    factorisation of M_uu (u = the rows outside ℓ) instead of one per split (inner CV).

    With V unlabelled the system of eq. 3.37 is over u ∪ V; eliminating u (block Gaussian
    elimination, exact) leaves the Schur complement of M_uu in M on the labelled rows,

    .. math:: K = M_{\\ell\\ell} - M_{\\ell u} M_{uu}^{-1} M_{u\\ell}\\quad (\\ell \\times \\ell),\\qquad
              f_V = -K_{VV}^{-1} K_{VT}\\, y_T,

    i.e. eq. 3.37 on the ℓ-node matrix K (a Kron reduction). Cost (``__init__``): one dense Cholesky
    factorisation of M_uu, O(n³/3), and ℓ solves; each split then O(n·|T| + |V|³) for the checks
    below and the small solve.

    Used only where it gives `embedding_lp`'s answer to rounding: ``available`` is False when M_uu
    would go to conjugate gradients, has rows no label reaches (`loose_rows`), has more than
    ``DENSE_MAX_ROWS`` rows, or is not numerically positive definite with reciprocal condition
    number ≥ ``RCOND_MIN``; `held_out` returns None for a split whose own system over u ∪ V would
    have jittered rows or whose K_VV is that ill-conditioned. The caller then runs `embedding_lp`
    for that split.

    M : (n, n) symmetric sparse; labeled : (ℓ,) row ids.
    """

    MARGIN = 2.0
    """The fast connectivity check counts a row as anchored only beyond MARGIN × the threshold of
    `anchored` (its sums run in another order than `loose_rows`'); anything closer is checked
    exactly."""

    def __init__(self, M, labeled):
        from scipy.sparse.csgraph import connected_components

        self.M = sp.csr_matrix(M)
        n = self.M.shape[0]
        self.lab, unl = _split(n, labeled)
        self.K = None
        if not unl.size:
            return
        Mu = self.M[unl]
        Mul, A = Mu[:, self.lab], Mu[:, unl]
        if loose_rows(A, _coupling(Mul)).any():
            return
        if n >= solvers.ITERATIVE_MIN_ROWS and solvers.is_m_matrix(A):
            return  # a split's system would go to conjugate gradients (`solvers.factor`), not an LU
        if unl.size > DENSE_MAX_ROWS:
            return
        Z = _dense_spd_solve(A, Mul.toarray())  # M_uu⁻¹ M_uℓ, (n − ℓ, ℓ)
        if Z is None:
            return
        self.K = self.M[self.lab][:, self.lab].toarray() - np.asarray(Mul.T @ Z)
        # for the per-split connectivity check: components of u, each row's ties to the labelled
        # rows, and which labelled rows have a significant edge into u
        P = significant_pattern(self.M)
        P = P + P.T
        self.n_comp, self.comp = connected_components(P[unl][:, unl], directed=False)
        self.unl, self.d = unl, np.abs(self.M.diagonal())
        self.ties = abs(self.M[:, self.lab]).toarray()  # (n, ℓ)
        self.edge_to_u = np.asarray(P[self.lab][:, unl].sum(axis=1)).ravel() > 0

    @property
    def available(self) -> bool:
        return self.K is not None

    def _surely_reached(self, train, val) -> bool:
        """True when every component of the split's significant pattern over u ∪ V has a row tied to
        T (so `loose_rows` finds none): each component of u has such a row, and each held-out row is
        tied to T itself or joined to u. False means: check exactly."""
        tie = self.ties[:, train].sum(axis=1)
        strong = tie > self.MARGIN * SIGNIFICANT * np.maximum(self.d, 1e-300)
        if np.bincount(self.comp, weights=strong[self.unl], minlength=self.n_comp).min() == 0:
            return False
        return bool(np.all(strong[self.lab[val]] | self.edge_to_u[val]))

    def held_out(self, train, val, Y_t) -> np.ndarray | None:
        """Scores f_V (|V|, C) of the labelled rows ``lab[val]`` fitted on ``lab[train]`` with
        targets Y_t (|T|, C); None when this split needs `embedding_lp` itself (see the class)."""
        train, val = np.asarray(train), np.asarray(val)
        if not self._surely_reached(train, val):
            keep = np.ones(self.M.shape[0], bool)
            keep[self.lab[train]] = False
            rows = np.flatnonzero(keep)  # u ∪ V, as embedding_lp takes them
            R = self.M[rows]
            if loose_rows(R[:, rows], _coupling(R[:, self.lab[train]])).any():
                return None
        Kvv = self.K[np.ix_(val, val)]
        if not 1.0 / np.linalg.cond(Kvv, 1) >= RCOND_MIN:
            return None
        return -np.linalg.solve(Kvv, self.K[np.ix_(val, train)] @ Y_t)


def constrained_embedding_lp(M, labeled, Y_l, alpha: float, a=None) -> np.ndarray:
    """Semi-supervised embedding with f ⊥ A1, eqs. 3.39–3.40.

    .. math:: f = (M + \\alpha I_k)^{-1}(\\alpha \\hat y + \\mu A1/2),\\quad
              \\mu = -2\\alpha \\frac{1^T A^T (M+\\alpha I_k)^{-1} \\hat y}{1^T A^T (M+\\alpha I_k)^{-1} A 1}

    a : (n,) the diagonal of A applied to 1 (``a = A1``); None for A = I. ŷ is y on labelled rows,
    0 elsewhere; I_k is the identity on labelled rows only.
    """
    M = sp.csr_matrix(M)
    n = M.shape[0]
    lab, _ = _split(n, labeled)
    a = np.ones(n) if a is None else np.asarray(a, dtype=float)
    Ik = np.zeros(n)
    Ik[lab] = 1.0
    lu = _factor(M + alpha * sp.diags(Ik), alpha * Ik)
    Yhat = np.zeros((n, Y_l.shape[1]))
    Yhat[lab] = Y_l
    sol = lu.solve(np.column_stack([Yhat, a]))
    G, g1 = sol[:, :-1], sol[:, -1]  # (M+αI_k)⁻¹ŷ and (M+αI_k)⁻¹A1
    mu = -2 * alpha * (a @ G) / (a @ g1)  # (C,)
    return alpha * G + np.outer(g1, mu / 2)


def tikhonov(W, labeled, Y_l, gamma: float) -> np.ndarray:
    """Tikhonov regularisation on graphs (Belkin et al. 2004), eqs. 3.11–3.12, f ⊥ 1.

    .. math:: f = (\\ell\\gamma L_u + I_k)^{-1}(\\hat y + \\mu 1),\\quad
              \\mu = -\\frac{1^T(\\ell\\gamma L_u + I_k)^{-1}\\hat y}{1^T(\\ell\\gamma L_u + I_k)^{-1}1}
    """
    W = sp.csr_matrix(W)
    n = W.shape[0]
    lab, _ = _split(n, labeled)
    Ik = np.zeros(n)
    Ik[lab] = 1.0
    lu = _factor(len(lab) * gamma * laplacian(W) + sp.diags(Ik), Ik)
    Yhat = np.zeros((n, Y_l.shape[1]))
    Yhat[lab] = Y_l
    sol = lu.solve(np.column_stack([Yhat, np.ones(n)]))
    G, g1 = sol[:, :-1], sol[:, -1]
    mu = -G.sum(axis=0) / g1.sum()
    return G + np.outer(g1, mu)


def local_global_consistency(W, labeled, Y_l, alpha: float, rtol: float | None = None, progress=None) -> np.ndarray:
    """Fixed point of LGC (Zhou et al. 2004), eq. 3.15: F = (1−α)(I − αS)⁻¹Y, S = D^{-1/2}WD^{-1/2}
    (the scores of `lgc_solution`; rows below ~1e-308 underflow to 0, its ``labels`` do not).

    rtol : None (default) resolves every row (`resolved`); a number instead stops one CG solve
        (from ``solvers.ITERATIVE_MIN_ROWS`` rows) at that relative residual ‖b − A x‖/‖b‖ — an error of up to rtol·‖b‖/(1−α) in any entry, so
        rows far from every label get arbitrary scores (kept for accuracy-matched comparisons with
        scikit-learn's normwise iterations, tests/benchmarks/bench_label_propagation.py).

    With S = Σ_k λ_k v_k v_kᵀ (λ_1 = 1, v_1 ∝ D^{1/2}1 on a connected graph),
    F = Σ_k (1−α)/(1−αλ_k) v_k v_kᵀ Y: as α → 1 the k = 1 term (weight 1, the others shrink like
    (1−α)/(1−λ_k)) dominates, F_ic → √d_i Σ_{j labelled c} √d_j / vol, and every point gets the
    class with the most labelled degree mass. On graphs with a clear spectral gap (cosine kNN graphs
    of tf-idf text) α = 0.99 is already in that regime; see `lgc_limit_class`.
    """
    W = sp.csr_matrix(W)
    n = W.shape[0]
    if rtol is None or n < solvers.ITERATIVE_MIN_ROWS:
        return lgc_solution(W, labeled, Y_l, alpha, progress).scores
    lab, _ = _split(n, labeled)
    Y = np.zeros((n, Y_l.shape[1]))
    Y[lab] = Y_l
    order, S = solvers.locality_order(normalized_adjacency(W))

    def operator(P):
        AP = S @ P
        AP *= -alpha
        AP += P
        return AP

    return (1 - alpha) * solvers.Reordered(solvers.ConjugateGradients(operator, None, rtol), order).solve(Y)


LGC_LOCALITY_MIN_ROWS = 30_000
"""From this many rows `lgc_solution` puts W in reverse Cuthill–McKee order first (`solvers.locality_order`).
Below, the graph and an (n, C) block fit in the core's cache and the order saves less than it costs
(swiss roll, one thread, the whole solve: 10⁴ points 0.035 s in arbitrary order, 0.037 s with the
order; 3·10⁴ 0.12 s both; 10⁵: each product 7.0 → 4.8 ms, for an order of 0.04 s)."""


def lgc_solution(W, labeled, Y_l, alpha: float, progress=None) -> resolved.ResolvedScores:
    """LGC's scores F = (1−α)(I − αS)⁻¹Y (eq. 3.15) with every row resolved, however far from the
    labels its scores have decayed, and its decisions (``labels``).

    Below ``solvers.ITERATIVE_MIN_ROWS`` rows a sparse LU (accurate entry by entry: the substitutions
    with an M-matrix's factors add non-negative terms only); above, the magnitude stages of `resolved`
    (CG on the rows near the resolved ones, with W put in reverse Cuthill–McKee order before S is
    built from it, so each product and the normalisation read nearby rows). progress :
    progress(fraction, message), per CG iteration.
    """
    W = sp.csr_matrix(W)
    n = W.shape[0]
    lab, _ = _split(n, labeled)
    Y = np.zeros((n, Y_l.shape[1]))
    Y[lab] = Y_l
    if n < solvers.ITERATIVE_MIN_ROWS:
        F = (1 - alpha) * solvers.DirectSolver(sp.identity(n) - alpha * normalized_adjacency(W)).solve(Y)
        return resolved.ResolvedScores(F, np.zeros(n), 0, 0, 0.0)
    order = None
    if n >= LGC_LOCALITY_MIN_ROWS:  # S in this order is the same as S put in it, built from nearby rows
        order, W = solvers.locality_order(W)
        Y = Y[order]
    d = degrees(W)
    v = np.where(d > 0, np.sqrt(d), 1.0)  # S v = v (v = 1 on isolated rows, where S is 0)
    ordered = resolved.resolve(normalized_adjacency(W), alpha, Y, v, progress=progress)
    if order is None:
        return dataclasses.replace(ordered, log_scale=ordered.log_scale + np.log1p(-alpha))
    mantissa, log_scale = np.empty_like(ordered.mantissa), np.empty(n)
    mantissa[order], log_scale[order] = ordered.mantissa, ordered.log_scale + np.log1p(-alpha)
    return dataclasses.replace(ordered, mantissa=mantissa, log_scale=log_scale)


class HeldOutLGC:
    """LGC's held-out decisions for inner cross-validation: for a split of the labelled points into fitted
    T and held-out V, the argmax of F = (1−α)(I − αS)⁻¹Y_T on the rows of V — the same decisions as
    `lgc_solution`'s ``labels`` there, at the cost of the iterations those few rows need
    (`resolved.decide_rows`, which certifies each by its error bound), not those that resolve every row of
    the graph; a split it cannot certify is solved by `lgc_solution` as before. The graph's order, S, its
    weights v and the operator are prepared once for all splits.

    W : (n, n) symmetric sparse; labeled : (ℓ,) row ids; alpha : in (0, 1).
    """

    def __init__(self, W, labeled, alpha: float):
        self.W = sp.csr_matrix(W)
        n = self.W.shape[0]
        self.lab, _ = _split(n, labeled)
        self.alpha = alpha
        self.iterative = n >= solvers.ITERATIVE_MIN_ROWS
        if not self.iterative:
            return
        self.position = np.arange(n)
        Wo = self.W
        if n >= LGC_LOCALITY_MIN_ROWS:
            order, Wo = solvers.locality_order(self.W)
            self.position = np.empty(n, dtype=np.int64)
            self.position[order] = np.arange(n)
        d = degrees(Wo)
        self.v = np.where(d > 0, np.sqrt(d), 1.0)
        self.S = normalized_adjacency(Wo)
        M = self.S.copy()
        M.data *= alpha
        self.operator = solvers.ShiftedAdjacency(M)

    def held_out(self, train, val, Y_t) -> np.ndarray:
        """(|V|, C) scores of the rows ``labeled[val]`` (up to a positive factor per row) fitted on
        ``labeled[train]`` with targets Y_t (|T|, C)."""
        if not self.iterative:
            return lgc_solution(self.W, self.lab[train], Y_t, self.alpha).mantissa[self.lab[val]]
        B = np.zeros((self.W.shape[0], Y_t.shape[1]))
        B[self.position[self.lab[train]]] = Y_t
        X = resolved.decide_rows(self.S, self.alpha, B, self.v, self.position[self.lab[val]], operator=self.operator)
        if X is None:
            return lgc_solution(self.W, self.lab[train], Y_t, self.alpha).mantissa[self.lab[val]]
        return X


def lgc_limit_class(W, labeled, y_l, n_classes: int) -> int:
    """The class LGC assigns to every point of a connected graph as α → 1 (eq. 3.15's limit):
    argmax_c Σ_{j labelled c} √d_j."""
    mass = np.bincount(np.asarray(y_l), weights=np.sqrt(degrees(W)[np.asarray(labeled)]), minlength=n_classes)
    return int(np.argmax(mass))


def propagate(U, Y: np.ndarray, alpha: float, tol: float = 1e-9, max_iter: int = 100000):
    """Iterate f ← αUf + (1−α)y from f = y (eqs. 3.15, 3.19) until max |Δf| < tol.

    Converges to (1−α)(I − αU)⁻¹y for any row-stochastic (or spectral radius ≤ 1) U and α < 1.
    Returns (F, iterations).
    """
    U = sp.csr_matrix(U)
    F = Y.copy()
    base = (1 - alpha) * Y
    for it in range(1, max_iter + 1):  # inherently sequential fixed-point iteration
        new = alpha * (U @ F) + base
        if np.max(np.abs(new - F)) < tol:
            return new, it
        F = new
    warnings.warn(f"label propagation did not converge in max_iter={max_iter} iterations", stacklevel=2)
    return F, max_iter


def simplex_projection(V: np.ndarray) -> np.ndarray:
    """Euclidean projection of every row of V onto the probability simplex (Duchi et al. 2008)."""
    n, k = V.shape
    srt = -np.sort(-V, axis=1)
    css = np.cumsum(srt, axis=1) - 1
    ind = np.arange(1, k + 1)
    cond = srt - css / ind > 0
    rho = k - 1 - np.argmax(cond[:, ::-1], axis=1)
    theta = css[np.arange(n), rho] / (rho + 1)
    return np.maximum(V - theta[:, None], 0)


def neighborhood_inner(X, N: np.ndarray, block: int = 256) -> np.ndarray:
    """Inner products within every neighbourhood: K_i = X_{N_i} X_{N_i}ᵀ, shape (n, m, m) for
    N (n, m). A sparse X (tf-idf) is never densified: blocks of points share one sparse product
    over the rows their neighbourhoods touch, O(block·m) rows at a time."""
    n, m = N.shape
    if not sp.issparse(X):
        P = np.asarray(X, float)[N]
        return np.einsum("nkd,nld->nkl", P, P)
    X = sp.csr_matrix(X, dtype=float)
    K = np.empty((n, m, m))
    for s in range(0, n, block):
        Nb = N[s:s + block]
        rows, inv = np.unique(Nb, return_inverse=True)
        Xr = X[rows]
        Kr = (Xr @ Xr.T).toarray()
        inv = inv.reshape(Nb.shape)
        K[s:s + block] = Kr[inv[:, :, None], inv[:, None, :]]
    return K


def local_gram(X, neighbors: np.ndarray) -> np.ndarray:
    """G_i = (x_i − x_j)ᵀ(x_i − x_l) over the neighbours j, l of i: (n, k, k)
    (from neighbourhood inner products, so a sparse X stays sparse)."""
    n = neighbors.shape[0]
    K = neighborhood_inner(X, np.column_stack([np.arange(n), neighbors]))
    kii, kij = K[:, 0, 0], K[:, 0, 1:]
    return kii[:, None, None] - kij[:, :, None] - kij[:, None, :] + K[:, 1:, 1:]


def lnp_weights(X, neighbors: np.ndarray, iters: int = 300, reg: float = 1e-3) -> sp.csr_matrix:
    """LNP transition matrix U (Wang & Zhang 2006): for every i,

    .. math:: \\min_{u_i} \\|x_i - X_i^N u_i\\|^2 \\;\\text{s.t.}\\; u_i \\ge 0,\\ 1^T u_i = 1

    solved for all points at once by projected gradient (step 1/λ_max(G_i)); ``reg`` adds
    reg·trace(G_i)/k to the diagonal as in LLE. U is row-stochastic and not symmetric.
    """
    n, k = neighbors.shape
    G = local_gram(X, neighbors)
    tr = np.trace(G, axis1=1, axis2=2)
    G = G + (reg * np.where(tr > 0, tr, 1.0) / k)[:, None, None] * np.eye(k)
    step = 1.0 / np.linalg.eigvalsh(G)[:, -1]
    u = np.full((n, k), 1.0 / k)
    for _ in range(iters):  # projected gradient; every step is vectorised over all points
        grad = np.einsum("nkl,nl->nk", G, u)
        u = simplex_projection(u - step[:, None] * grad)
    return sp.csr_matrix((u.ravel(), neighbors.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))


def lle_weights(X, neighbors: np.ndarray, reg: float = 1e-3) -> sp.csr_matrix:
    """LLE reconstruction weights (Roweis & Saul 2000): min ‖x_i − Σ_j w_ij x_j‖², Σ_j w_ij = 1,
    with reg·trace(G_i) on the diagonal of each local Gram matrix (as scikit-learn)."""
    n, k = neighbors.shape
    G = local_gram(X, neighbors)
    tr = np.trace(G, axis1=1, axis2=2)
    G = G + (reg * np.where(tr > 0, tr, 1.0))[:, None, None] * np.eye(k)
    w = np.linalg.solve(G, np.ones((n, k, 1)))[..., 0]
    w /= w.sum(axis=1, keepdims=True)
    return sp.csr_matrix((w.ravel(), neighbors.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))


def lle_matrix(X, neighbors, reg: float = 1e-3) -> sp.csr_matrix:
    """M = (I − W)ᵀ(I − W) of LLE (eq. 3.32)."""
    n = neighbors.shape[0]
    IW = sp.identity(n, format="csr") - lle_weights(X, neighbors, reg)
    return (IW.T @ IW).tocsr()


def ltsa_matrix(X, neighbors: np.ndarray, dim: int = 1) -> sp.csr_matrix:
    """LTSA alignment matrix (Zhang & Zha 2004; eq. 3.34): with N_i = {i} ∪ neighbours(i),

    .. math:: M = \\sum_i S_i (I - G_i G_i^T) S_i^T,\\quad G_i = [1/\\sqrt{k+1},\\, V_i]

    where V_i are the top ``dim`` right singular vectors of the centred neighbourhood. Local SVDs
    are batched over all points.
    """
    n, k = neighbors.shape
    N = np.column_stack([np.arange(n), neighbors])  # (n, k+1)
    d = max(1, min(dim, k - 1, X.shape[1]))  # d ≥ k would leave I − G_iG_iᵀ = 0 (no alignment)
    if sp.issparse(X):
        # left singular vectors of the centred neighbourhood = top eigenvectors of its centred
        # Gram matrix H K_i H (H = I − 11ᵀ/(k+1)); a sparse X is never densified
        H = np.eye(k + 1) - 1.0 / (k + 1)
        _, V = np.linalg.eigh(H @ neighborhood_inner(X, N) @ H)
        U = V[:, :, ::-1]
    else:
        P = np.asarray(X, float)[N]
        P = P - P.mean(axis=1, keepdims=True)
        U, _, _ = np.linalg.svd(P, full_matrices=False)  # (n, k+1, min(k+1, D))
    Gi = np.concatenate([np.full((n, k + 1, 1), 1.0 / np.sqrt(k + 1)), U[:, :, :d]], axis=2)
    B = np.eye(k + 1) - Gi @ Gi.transpose(0, 2, 1)  # (n, k+1, k+1)
    rows = np.repeat(N, k + 1, axis=1).ravel()
    cols = np.tile(N, (1, k + 1)).ravel()
    M = sp.csr_matrix((B.ravel(), (rows, cols)), shape=(n, n))  # duplicates summed
    return ((M + M.T) / 2).tocsr()


def cluster_kernel_embedding(W, dim: int, normalize_rows: bool = True) -> np.ndarray:
    """The ``dim`` leading eigenvectors of S = D^{-1/2} W D^{-1/2} (smallest of L_s), (n, dim).

    With ``normalize_rows`` rows are scaled to unit length (the spectral-clustering embedding).
    """
    S = normalized_adjacency(W)
    n = S.shape[0]
    dim = min(dim, n - 2)
    if n <= 400:
        vals, vecs = np.linalg.eigh(S.toarray())
        V = vecs[:, ::-1][:, :dim]
    else:
        vals, vecs = spla.eigsh(S, k=dim, which="LA", v0=np.ones(n), tol=1e-8)
        V = vecs[:, np.argsort(-vals)]
    if not normalize_rows:
        return V
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    return V / np.where(norms > 0, norms, 1.0)


def random_walk_em(W, labeled, y_l, n_classes: int, steps: int = 8, self_loop: float = 1.0,
                   max_iter: int = 200, tol: float = 1e-8):
    """Markov random walks with EM (Szummer & Jaakkola 2002; §3.3.5, eq. 3.17 and the M step).

    P = D⁻¹(W + self_loop·I); P_{0|m}(i|k) = (P^m)_{ik} / Σ_i' (P^m)_{i'k} (uniform start).
    EM fits Q_ic = P(y=c|x_i) to the labelled points; the class posterior of any point k is
    Σ_i Q_ic P_{0|m}(i|k). Only the ℓ labelled columns of P^m are formed (m sparse products).
    Returns (scores (n, C), EM iterations).
    """
    W = sp.csr_matrix(W)
    n = W.shape[0]
    A = (W + self_loop * sp.identity(n)).tocsr()
    P = (sp.diags(1.0 / np.maximum(degrees(A), 1e-300)) @ A).tocsr()
    PT = P.T.tocsr()
    labeled = np.asarray(labeled)
    E = np.zeros((n, len(labeled)))
    E[labeled, np.arange(len(labeled))] = 1.0
    ones = np.ones(n)
    for _ in range(steps):  # columns of P^m at labelled points, and the column sums of P^m
        E = P @ E
        ones = PT @ ones
    B = E / np.maximum(E.sum(axis=0, keepdims=True), 1e-300)  # B_ik = P_{0|m}(i | k), k labelled
    Yl = one_hot(y_l, n_classes)
    Q = np.full((n, n_classes), 1.0 / n_classes)
    it = 0
    for it in range(1, max_iter + 1):  # EM: each step is two dense (n, ℓ) products
        R = Q[:, y_l] * B  # E step (3.17), unnormalised: Q_{i,y_k} B_ik
        R /= np.maximum(R.sum(axis=0, keepdims=True), 1e-300)
        num = R @ Yl  # M step
        den = num.sum(axis=1, keepdims=True)
        newQ = np.where(den > 0, num / np.maximum(den, 1e-300), 1.0 / n_classes)
        delta = np.max(np.abs(newQ - Q))
        Q = newQ
        if delta < tol:
            break
    num = Q.copy()
    for _ in range(steps):  # Σ_i Q_ic (P^m)_ik for every k
        num = PT @ num
    scores = num / np.maximum(ones, 1e-300)[:, None]
    return scores, it


def check_labels(labeled, n_classes: int, y_l):
    if len(labeled) == 0:
        raise DataError("No labelled points: the semi-supervised split must label at least one point.")
    if np.any((y_l < 0) | (y_l >= n_classes)):
        raise DataError(f"Class ids must lie in 0..{n_classes - 1}.")
