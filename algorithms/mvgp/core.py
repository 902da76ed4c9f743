"""Constrained matrix-variate GP regression (Koyejo, Lee & Ghosh 2014) in the factored form.

The posterior mean of a matrix-variate GP with row covariance C_M = G_M G_Mᵀ and column covariance
C_N = G_N G_Nᵀ (Kronecker prior C_N ⊗ C_M, never formed) under Gaussian noise σ² and a nuclear-norm
constraint is F = G_M B G_Nᵀ with (eq. 11)

    B* = argmin_B ½σ⁻² Σ_{(i,j)∈L} (y_ij − (G_M B G_Nᵀ)_ij)² + ½ ‖B‖²_F + λ ‖B‖_*.

We solve it with B = U Vᵀ and the variational form ‖B‖_* = min ½(‖U‖² + ‖V‖²): the rank grows by
one factor at a time along the top singular pair of −∇ (a new factor is only useful while the
gradient's spectral norm exceeds λ, the optimality condition of eq. 10/11), and all factors are
refined by L-BFGS (intermediate ranks with a short budget, warm-started; the final rank to
convergence). The square roots are never dense: for the diffusion kernel C = exp(−a𝓛) + b I we use
its symmetric root C^{1/2} = √(exp(−a𝓛) + b I) (M × M), applied to a block of vectors by its
Chebyshev series in the sparse normalised adjacency, truncated at 1e-10 relative (``DiffusionRoot``;
``HeatRoot`` is the exact non-square root [exp(−a𝓛/2), √b I], M × 2M, with twice the unknowns). The
optimum of eq. 11 does not depend on which square root is used (every root is C^{1/2} O with O Oᵀ = I,
and both ‖·‖_F and ‖·‖_* are invariant under B ↦ Oᵀ B O). Cost per objective evaluation
O((nnz(graph) K + L) r) with K ≈ 11 Chebyshev terms; memory O(M r + N r + L + nnz(graph)).
KPMF (Zhou et al. 2012) is the same objective with fixed rank and without the ½‖UVᵀ‖²_F term.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, svds

from malt.numerics.kron_observed import Pattern, sampled_products  # noqa: F401  (shared with the PMA ratings path)


def diffusion_sqrt(graph, a: float = 1.0, b: float = 1.0) -> np.ndarray:
    """Square root G (G Gᵀ = C) of the diffusion kernel C = exp(−a 𝓛) + b I of a graph.

    𝓛 = I − D^{-1/2} W D^{-1/2} is the normalised Laplacian of the symmetrised graph W; isolated
    nodes get 𝓛_ii = 1. G = Q diag(√(e^{−a λ} + b)) from the eigenbasis of 𝓛.
    """
    S = normalised_adjacency(graph)
    Lap = np.eye(S.shape[0]) - S.toarray()
    w, Q = np.linalg.eigh(0.5 * (Lap + Lap.T))
    return Q * np.sqrt(np.exp(-a * w) + b)


CHEBYSHEV_TOL = 1e-10  # truncation of the kernel series, relative to the operator's norm (see chebyshev_coefficients)


def normalised_adjacency(graph) -> sp.csr_matrix:
    """S = D^{-1/2} W D^{-1/2} of the symmetrised graph W = |G| + |G|ᵀ without self-loops (isolated nodes:
    zero rows, so 𝓛 = I − S has 𝓛_ii = 1 there). spec(S) ⊂ [−1, 1]."""
    W = sp.csr_matrix(graph, dtype=float)
    W = abs(W) + abs(W).T
    W.setdiag(0)
    W.eliminate_zeros()
    d = np.asarray(W.sum(axis=1)).ravel()
    s = np.where(d > 0, 1.0 / np.sqrt(np.maximum(d, 1e-300)), 0.0)
    return (sp.diags(s) @ W @ sp.diags(s)).tocsr()


def chebyshev_coefficients(f, tol: float = CHEBYSHEV_TOL, max_terms: int = 1024) -> np.ndarray:
    """Coefficients c_0..c_K of f(x) ≈ Σ_k c_k T_k(x) on [−1, 1], truncated where the dropped tail
    Σ_{k>K} |c_k| is below ``tol`` · max|f| (a bound on the operator error ‖f(S) − Σ c_k T_k(S)‖₂ for a
    symmetric S with spec(S) ⊂ [−1, 1], since ‖T_k(S)‖₂ ≤ 1). Interpolation at Chebyshev points,
    degree doubled from 32 until the series has converged within the degree (for the smooth kernels
    here, 10–40 terms)."""
    from numpy.polynomial import chebyshev as C
    deg = 32
    while True:
        c = C.chebinterpolate(f, deg)
        scale = np.max(np.abs(f(np.cos(np.linspace(0, np.pi, 2 * deg + 1)))))
        tail = np.cumsum(np.abs(c[::-1]))[::-1]  # tail[k] = Σ_{j≥k} |c_j|
        keep = np.flatnonzero(tail >= tol * scale)
        K = int(keep[-1]) + 1 if keep.size else 1
        if K < deg - 8 or deg >= max_terms:
            return c[:K]
        deg *= 2


def chebyshev_apply(S, c: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Σ_k c_k T_k(S) X by the three-term recurrence: len(c) − 1 sparse products with the block X."""
    T0 = X
    out = c[0] * X
    if len(c) == 1:
        return out
    T1 = S @ X
    out = out + c[1] * T1
    for ck in c[2:]:
        T0, T1 = T1, 2 * (S @ T1) - T0
        out += ck * T1
    return out


class DiffusionRoot:
    """The symmetric square root C^{1/2} of the diffusion kernel C = exp(−a𝓛) + b I as an (M, M)
    linear operator, 𝓛 = I − S (:func:`normalised_adjacency`).

    C^{1/2} = f(S) with f(x) = √(e^{−a(1−x)} + b), applied to a block X (M, r) as its Chebyshev series
    in S (:func:`chebyshev_coefficients`, truncated at ``tol`` relative to ‖C^{1/2}‖₂; 11 terms at
    a = b = 1, so cost O(nnz(S) · 11 · r)); never dense. Half the columns of :class:`HeatRoot`'s
    non-square root, so the factors U it multiplies are half as long. ``G.T`` is ``G``."""

    def __init__(self, graph, a: float = 1.0, b: float = 1.0, tol: float = CHEBYSHEV_TOL):
        self.S = normalised_adjacency(graph)
        self.a, self.b = a, b
        self.c = chebyshev_coefficients(lambda x: np.sqrt(np.exp(-a * (1 - x)) + b), tol)
        self.shape = self.S.shape

    @property
    def T(self):
        return self

    def __matmul__(self, X):
        return chebyshev_apply(self.S, self.c, np.asarray(X, dtype=float))

    def dense(self) -> np.ndarray:
        """The (M, M) matrix (for tests on small graphs)."""
        return self @ np.eye(self.shape[0])


class HeatRoot:
    """Exact square root G = [exp(−a𝓛/2), √b I] of C = exp(−a𝓛) + b I as a (M, 2M) linear operator.

    𝓛 = I − S with S = D^{-1/2} W D^{-1/2} (:func:`normalised_adjacency`). exp(−t𝓛) X = e^{−t} Σ_k c_k
    T_k(S) X with c_0 = I_0(t), c_k = 2 I_k(t) (Chebyshev–Bessel expansion of e^{tx} on [−1, 1] ⊇
    spec(S)), truncated when c_k < 1e-16. :class:`DiffusionRoot` is the square (M, M) root the models use.
    ``G @ X`` takes (2M, r) and returns (M, r); ``G.T @ Y`` takes (M, r) and returns (2M, r).
    """

    def __init__(self, graph, a: float = 1.0, b: float = 1.0, transposed: bool = False, _S=None, _c=None):
        from scipy.special import iv
        if _S is None:
            _S = normalised_adjacency(graph)
            t = a / 2.0
            c = [iv(0, t)]
            k = 1
            while True:
                ck = 2 * iv(k, t)
                c.append(ck)
                if ck < 1e-16 or k > 60:
                    break
                k += 1
            _c = np.exp(-t) * np.array(c)
        self.S, self.c, self.a, self.b, self.transposed = _S, _c, a, b, transposed
        n = _S.shape[0]
        self.n = n
        self.shape = (2 * n, n) if transposed else (n, 2 * n)

    @property
    def T(self):
        return HeatRoot(None, self.a, self.b, not self.transposed, self.S, self.c)

    def heat(self, X):
        """exp(−a𝓛/2) X for X of shape (M,) or (M, r)."""
        return chebyshev_apply(self.S, self.c, X)

    def __matmul__(self, X):
        X = np.asarray(X, dtype=float)
        n, rb = self.n, np.sqrt(self.b)
        if self.transposed:
            return np.concatenate([self.heat(X), rb * X], axis=0)
        return self.heat(X[:n]) + rb * X[n:]

    def dense(self) -> np.ndarray:
        """The (M, 2M) matrix (for tests on small graphs)."""
        return self @ np.eye(self.shape[1])


class _Workspace:
    """The arrays one objective-and-gradient evaluation writes, allocated once per refinement: numpy maps an
    array above glibc's 32 MiB mmap threshold afresh on each allocation (faulted in and zeroed by the kernel,
    ~13 ms per 56 MB), which at 10⁷ ratings cost kpmf more than the arithmetic in its element-wise steps.
    Three (L,) arrays for the entries and two of each factor's shape: the same operations, written in place."""

    def __init__(self, size: int, U: np.ndarray, V: np.ndarray):
        self.fitted, self.residual, self.scratch = np.empty(size), np.empty(size), np.empty(size)
        self.U, self.V = (np.empty_like(U), np.empty_like(U)), (np.empty_like(V), np.empty_like(V))


def _parts(U, V, GM, GN, rows, cols, y, inv_s2, frob, lam, unrated=0.0, offset=None, work=None):
    """Objective value, the residual at the observed entries (the sparse part of ∂/∂F, before σ⁻²),
    Z = G_M U and W = G_N V.

    ``unrated`` = w > 0 adds w Σ_{(i,j)∉L} F_ij² to the squared loss (every unobserved entry an
    observation of 0 with weight w). That term is w (‖Z Wᵀ‖²_F − Σ_L F²), evaluated as
    w tr(ZᵀZ WᵀW) in O((M + N) r²); its gradient in Z is w Z (WᵀW) plus the sparse −w F_L.

    ``offset`` = (a, b): the model is F + a bᵀ with the rank-one a bᵀ fixed (not fitted, not penalised) —
    the zero-filled ranking fit's item popularity (a = 1, b = the column means). It enters the loss at the
    observed entries (a_i b_j added to F_L) and the unrated term (‖Z Wᵀ + a bᵀ‖² = tr(ZᵀZ WᵀW) +
    2 (aᵀZ)(Wᵀb) + ‖a‖²‖b‖²), at O((M + N) r) more."""
    Z = U if GM is None else GM @ U
    W = V if GN is None else GN @ V
    fitted, residual, scratch, U2, V2 = (None,) * 5 if work is None else \
        (work.fitted, work.residual, work.scratch, work.U[0], work.V[0])
    fl = sampled_products(Z, W, rows, cols, out=fitted)
    if offset is not None:
        fl += offset[0][rows] * offset[1][cols]
    r = np.subtract(fl, y, out=residual)
    f = np.multiply(0.5 * inv_s2, r, out=scratch) @ r + lam * 0.5 * (np.sum(np.multiply(U, U, out=U2))
                                                                      + np.sum(np.multiply(V, V, out=V2)))
    if unrated:
        whole = np.sum((Z.T @ Z) * (W.T @ W))
        if offset is not None:
            a, b = offset
            whole += 2.0 * (a @ Z) @ (W.T @ b) + (a @ a) * (b @ b)
        f += 0.5 * inv_s2 * unrated * (whole - fl @ fl)
        r -= np.multiply(unrated, fl, out=scratch)
    if frob:
        f += 0.5 * frob * np.sum((U.T @ U) * (V.T @ V))
    return f, r, Z, W


def objective(U, V, GM, GN, rows, cols, y, sigma2, lam, frob=1.0, unrated=0.0, offset=None):
    """Factored objective of eq. 11 at B = U Vᵀ (with ½λ(‖U‖²+‖V‖²) in place of λ‖B‖_*); ``unrated``
    = w adds ½σ⁻² w Σ_{(i,j)∉L} F_ij² (the unobserved entries as zeros of weight w); ``offset`` a fixed
    rank-one term of the model (see `_parts`)."""
    return _parts(U, V, GM, GN, rows, cols, y, 1.0 / sigma2, frob, lam, unrated, offset)[0]


def _refine(U, V, GM, GN, rows, cols, y, sigma2, lam, frob, shape, maxiter, ftol=1e-12, unrated=0.0, offset=None):
    M, N = U.shape[0], V.shape[0]
    r_ = U.shape[1]
    inv_s2 = 1.0 / sigma2
    pattern = Pattern(rows, cols, shape, width=r_)
    rows, cols, y = pattern.rows, pattern.cols, y[pattern.order]

    work = _Workspace(rows.size, U, V)

    def fg(x):
        U = x[:M * r_].reshape(M, r_)
        V = x[M * r_:].reshape(N, r_)
        f, r, Z, W = _parts(U, V, GM, GN, rows, cols, y, inv_s2, frob, lam, unrated, offset, work)
        R = pattern.matrix(np.multiply(inv_s2, r, out=r))
        gZ, gW = R @ W, R.T @ Z
        if unrated:
            gZ = gZ + (inv_s2 * unrated) * Z @ (W.T @ W)
            gW = gW + (inv_s2 * unrated) * W @ (Z.T @ Z)
            if offset is not None:  # ∂/∂Z of ½w‖Z Wᵀ + a bᵀ‖² is w (Z Wᵀ + a bᵀ) W
                a, b = offset
                gZ += (inv_s2 * unrated) * np.outer(a, W.T @ b)
                gW += (inv_s2 * unrated) * np.outer(b, Z.T @ a)
        # the gradient is written into one (M + N) r vector: no concatenated copy (same sums, same bits)
        g = np.empty_like(x)
        gU, gV = g[:M * r_].reshape(M, r_), g[M * r_:].reshape(N, r_)
        np.multiply(U, lam, out=gU)
        np.multiply(V, lam, out=gV)
        gU += gZ if GM is None else GM.T @ gZ
        gV += gW if GN is None else GN.T @ gW
        if frob:
            gU += np.matmul(np.multiply(frob, U, out=work.U[0]), V.T @ V, out=work.U[1])
            gV += np.matmul(np.multiply(frob, V, out=work.V[0]), U.T @ U, out=work.V[1])
        return f, g

    res = minimize(fg, np.concatenate([U.ravel(), V.ravel()]), jac=True, method="L-BFGS-B",
                   options={"maxiter": maxiter, "gtol": 1e-9, "ftol": ftol})
    # res.success: L-BFGS met its tolerance (False: the iteration cap stopped it)
    return res.x[:M * r_].reshape(M, r_), res.x[M * r_:].reshape(N, r_), float(res.fun), bool(res.success)


def smooth_gradient_top(U, V, GM, GN, rows, cols, y, sigma2, frob, shape, bshape=None, k=1, unrated=0.0,
                        offset=None):
    """Top singular triple(s) of the smooth part's gradient S = G_Mᵀ (σ⁻² R) G_N + frob·U Vᵀ, where R
    is the residual at the observed entries plus, with ``unrated`` = w, the low-rank w (Z Wᵀ + a bᵀ)
    (``offset`` = (a, b), else without it; applied as a product, never dense).

    k = 1 returns (u, s, v) vectors and a float; k > 1 returns the top k as (M, k), (k,), (N, k),
    largest first.

    shape : data matrix shape (M, N); bshape : shape of B (columns of G_M, G_N), default ``shape``.
    """
    bshape = shape if bshape is None else bshape
    pattern = Pattern(rows, cols, shape)
    rows, cols, y = pattern.rows, pattern.cols, y[pattern.order]
    f, r, Z, W = _parts(U, V, GM, GN, rows, cols, y, 1.0 / sigma2, frob, 0.0, unrated, offset)
    R = pattern.matrix(r / sigma2)
    if unrated and offset is not None:  # the fixed rank-one term joins the low-rank part
        Z, W = np.column_stack([Z, offset[0]]), np.column_stack([W, offset[1]])
    wz, ww = (unrated / sigma2) * Z, (unrated / sigma2) * W
    GMt = (lambda x: x) if GM is None else (lambda x: GM.T @ x)
    GMm = (lambda x: x) if GM is None else (lambda x: GM @ x)
    GNm = (lambda x: x) if GN is None else (lambda x: GN @ x)
    GNt = (lambda x: x) if GN is None else (lambda x: GN.T @ x)

    def mv(x):
        x = np.asarray(x).reshape(bshape[1], -1)
        g = GNm(x)
        out = R @ g
        if unrated:
            out = out + wz @ (W.T @ g)
        return GMt(out) + frob * U @ (V.T @ x)

    def rmv(x):
        x = np.asarray(x).reshape(bshape[0], -1)
        g = GMm(x)
        out = R.T @ g
        if unrated:
            out = out + ww @ (Z.T @ g)
        return GNt(out) + frob * V @ (U.T @ x)

    want = k
    k = max(1, min(k, min(bshape) - 1))
    if want > 1 and k + POWER_OVERSAMPLE < min(bshape):
        return _block_top(mv, rmv, bshape, k)
    op = LinearOperator(bshape, matvec=mv, rmatvec=rmv, matmat=mv, rmatmat=rmv, dtype=float)
    start = np.random.default_rng(0).standard_normal(min(bshape))  # ARPACK's own start is unseeded
    u, s, vt = svds(op, k=k, tol=1e-6, v0=start)
    o = np.argsort(-s)
    if want == 1:
        return u[:, 0], float(s[0]), vt[0]
    return u[:, o], s[o], vt[o].T


POWER_OVERSAMPLE = 10
POWER_ITERATIONS = 8


def _block_top(mv, rmv, bshape, k):
    """Top k singular triples of an operator by randomised block subspace iteration (Halko, Martinsson
    & Tropp 2011, Alg. 4.4: k + POWER_OVERSAMPLE seeded Gaussian vectors, POWER_ITERATIONS
    re-orthonormalised passes). Every pass is one block product each way — sparse matrix × block
    instead of ARPACK's hundreds of single-vector products, which cost 20× more here (the values
    near the growth threshold cluster). Returns (M, k), (k,), (N, k), largest first."""
    X = np.random.default_rng(0).standard_normal((bshape[1], k + POWER_OVERSAMPLE))
    Q = np.linalg.qr(mv(X))[0]
    for _ in range(POWER_ITERATIONS):
        Q = np.linalg.qr(mv(np.linalg.qr(rmv(Q))[0]))[0]
    Ub, s, Vt = np.linalg.svd(rmv(Q).T, full_matrices=False)
    return Q @ Ub[:, :k], s[:k], Vt[:k].T


def truncate_factors(U, V, rank: int):
    """Balanced factors of the best rank-``rank`` approximation of U Vᵀ (U, V unchanged when they have
    at most ``rank`` columns): thin QR of each factor, SVD of the small core, √s to each side, which is
    also the split that minimises ½(‖U‖² + ‖V‖²) for the product (the factored nuclear norm)."""
    if U.shape[1] <= rank:
        return U, V
    Qu, Ru = np.linalg.qr(U)
    Qv, Rv = np.linalg.qr(V)
    a, s, bt = np.linalg.svd(Ru @ Rv.T)
    root = np.sqrt(s[:rank])
    return Qu @ a[:, :rank] * root, Qv @ bt[:rank].T * root


def numerical_rank(U, V) -> int:
    """The rank of U Vᵀ as `numpy.linalg.matrix_rank` counts it (singular values above s_max · max(M, N) · eps),
    from the thin QRs of the factors and the SVD of the small core: O((M + N) r²)."""
    if U.shape[1] == 0:
        return 0
    s = np.linalg.svd(np.linalg.qr(U, mode="r") @ np.linalg.qr(V, mode="r").T, compute_uv=False)
    return int(np.sum(s > s[0] * max(U.shape[0], V.shape[0]) * np.finfo(float).eps))  # s is descending


def fit_mvgp(train: sp.coo_matrix, GM=None, GN=None, **kw):
    """Solve eq. 11 (see :func:`_fit_mvgp` for the parameters) with BLAS limited to one thread.

    The work is many small level-1/2 BLAS calls (L-BFGS two-loop, thin products); on a loaded
    machine multi-threaded BLAS spin-waits dominate (measured 8× slower on the Yamanishi GPCR set).
    """
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit_mvgp(train, GM, GN, **kw)


def _fit_mvgp(train: sp.coo_matrix, GM=None, GN=None, *, sigma2=1.0, lam=1.0, frob=1.0, max_rank=50,
              fixed_rank=None, maxiter=200, grow_iter=30, grow_block=1, tol=1e-6, ftol=1e-12, rng=None,
              unrated=0.0, init=None, offset=None, progress=None):
    """Solve eq. 11 by rank growth + L-BFGS refinement; return factors Z = G_M U, W = G_N V.

    fixed_rank : start at that rank and never grow (KPMF). Otherwise start at rank 1 and add a
    factor along the top singular pair of −∇ while its singular value exceeds λ (eq. 10's
    optimality condition ‖∇‖₂ ≤ λ), up to ``max_rank``, or until the objective stalls (``tol``).
    Each new rank is warm-started from the previous factors and refined with ``grow_iter`` L-BFGS
    iterations; the final rank is refined with up to ``maxiter`` iterations. ``grow_block`` > 1
    adds up to that many factors per step (the top singular pairs of −∇ whose values exceed λ):
    fewer refinement rounds for large problems. ``ftol``: L-BFGS stops when the objective's relative
    decrease per iteration falls below it. ``unrated`` = w > 0: every entry outside ``train`` is an
    observation of 0 with weight w (the zero-filled matrix of top-N recommendation; see
    :func:`_parts`), at no dense cost. ``init`` = (U, V): start from these factors (a warm start,
    e.g. the solution at a neighbouring λ or on part of the data) instead of zero (or, with
    ``fixed_rank``, random) factors; growth then continues from their rank (cut to ``max_rank`` by
    :func:`truncate_factors` if larger). ``offset`` = (a (n,), b (m,)) over the data's rows and columns: a
    fixed rank-one term a bᵀ of the model (see :func:`_parts`); the returned Z, W exclude it.
    ``progress(message)`` is called after every rank-growth step (the rank and the objective).
    GM, GN : None (identity), a dense square root (M, p) or a root operator (:class:`DiffusionRoot`).
    Returns dict with Z, W, U, V, objective trace, rank and three flags: ``converged`` (rank growth
    stopped by eq. 10's optimality condition or a stalled objective), ``rank_capped`` (growth stopped
    at ``max_rank`` with the condition still unmet: the optimum under that rank cap, not of eq. 11)
    and ``solver_converged`` (the final L-BFGS refinement met its tolerance, not its iteration cap).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    train = sp.coo_matrix(train)
    rows, cols, y = train.row, train.col, train.data.astype(float)
    shape = train.shape
    M = shape[0] if GM is None else GM.shape[1]
    N = shape[1] if GN is None else GN.shape[1]
    bshape = (M, N)
    trace, converged, solved = [], False, True
    if fixed_rank is not None:
        if init is None:
            U = 0.1 * rng.standard_normal((M, fixed_rank))
            V = 0.1 * rng.standard_normal((N, fixed_rank))
        else:
            U, V = init
        U, V, f, solved = _refine(U, V, GM, GN, rows, cols, y, sigma2, lam, frob, shape, maxiter * 5, ftol,
                                  unrated, offset)
        trace.append(f)
    else:
        U, V = (np.zeros((M, 0)), np.zeros((N, 0))) if init is None else truncate_factors(*init, max_rank)
        trace.append(objective(U, V, GM, GN, rows, cols, y, sigma2, lam, frob, unrated, offset))
        while U.shape[1] < max_rank:
            kb = min(grow_block, max_rank - U.shape[1])
            u, s, v = smooth_gradient_top(U, V, GM, GN, rows, cols, y, sigma2, frob, shape, bshape, k=kb + 1,
                                          unrated=unrated, offset=offset)
            keep = s > lam * (1 + 1e-6)
            keep[kb:] = False
            if not keep[0]:
                converged = True
                break
            step = np.sqrt(np.maximum(s[keep] - lam, 1e-12) / np.maximum(1.0, s[keep]))
            U = np.column_stack([U, -step * u[:, keep]])
            V = np.column_stack([V, step * v[:, keep]])
            U, V, f, solved = _refine(U, V, GM, GN, rows, cols, y, sigma2, lam, frob, shape, grow_iter, ftol,
                                      unrated, offset)
            trace.append(f)
            if progress is not None:
                progress(f"rank {U.shape[1]}, objective {f:.6g}")
            if trace[-2] - trace[-1] <= tol * abs(trace[-2]):
                converged = True
                break
        if U.shape[1] == 0:
            U, V = np.zeros((M, 1)), np.zeros((N, 1))
        elif maxiter > grow_iter:
            U, V, f, solved = _refine(U, V, GM, GN, rows, cols, y, sigma2, lam, frob, shape, maxiter, ftol, unrated,
                                      offset)
            trace.append(f)
        rank = numerical_rank(U, V)
        if 0 < rank < U.shape[1]:   # a direction growth added that the refinement emptied (rounding is left)
            U, V = truncate_factors(U, V, rank)
    Z = U if GM is None else GM @ U
    W = V if GN is None else GN @ V
    return {"Z": Z, "W": W, "U": U, "V": V, "objective": trace, "rank": U.shape[1], "converged": converged,
            "rank_capped": fixed_rank is None and not converged and U.shape[1] >= max_rank,
            "solver_converged": solved}


def null_edge(train: sp.coo_matrix, GM=None, GN=None, seed: int = 0) -> float:
    """‖G_Mᵀ (S ∘ Y) G_N‖₂ for random signs S: the spectral norm of eq. 11's data gradient at B = 0
    (σ² = 1) when the observed values Y carry no structure — their magnitudes and sampling pattern
    kept, their signs randomised (a Rademacher null). A nuclear-norm fit with λσ² at or above it keeps
    nothing of such data; singular values above it are signal (the idea of Chatterjee's 2015 universal
    singular value thresholding, with the empirical edge in place of the Bai–Yin bound
    √v(√M + √N), which ignores the covariances and the uneven sampling). One top singular value of
    a sparse operator: O((nnz(graph) K + L) · iterations)."""
    train = sp.coo_matrix(train)
    signs = np.random.default_rng(seed).choice((-1.0, 1.0), train.nnz)
    S = sp.coo_matrix((signs * train.data, (train.row, train.col)), shape=train.shape)
    M = train.shape[0] if GM is None else GM.shape[1]
    N = train.shape[1] if GN is None else GN.shape[1]
    return smooth_gradient_top(np.zeros((M, 0)), np.zeros((N, 0)), GM, GN, S.row, S.col, -S.data, 1.0, 0.0,
                               train.shape, (M, N))[1]
