"""Constrained matrix-variate GP regression (Koyejo, Lee & Ghosh 2014) in the factored form.

The posterior mean of a matrix-variate GP with row covariance C_M = G_M G_Mᵀ and column covariance
C_N = G_N G_Nᵀ (Kronecker prior C_N ⊗ C_M, never formed) under Gaussian noise σ² and a nuclear-norm
constraint is F = G_M B G_Nᵀ with (eq. 11)

    B* = argmin_B ½σ⁻² Σ_{(i,j)∈L} (y_ij − (G_M B G_Nᵀ)_ij)² + ½ ‖B‖²_F + λ ‖B‖_*.

We solve it with B = U Vᵀ and the variational form ‖B‖_* = min ½(‖U‖² + ‖V‖²): the rank grows by
one factor at a time along the top singular pair of −∇ (a new factor is only useful while the
gradient's spectral norm exceeds λ, the optimality condition of eq. 10/11), and all factors are
refined by L-BFGS. Memory O(M r + N r + L) beyond the square roots G (O(M² + N²)).
KPMF (Zhou et al. 2012) is the same objective with fixed rank and without the ½‖UVᵀ‖²_F term.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, svds


def diffusion_sqrt(graph, a: float = 1.0, b: float = 1.0) -> np.ndarray:
    """Square root G (G Gᵀ = C) of the diffusion kernel C = exp(−a 𝓛) + b I of a graph.

    𝓛 = I − D^{-1/2} W D^{-1/2} is the normalised Laplacian of the symmetrised graph W; isolated
    nodes get 𝓛_ii = 1. G = Q diag(√(e^{−a λ} + b)) from the eigenbasis of 𝓛.
    """
    W = sp.csr_matrix(graph, dtype=float)
    W = abs(W) + abs(W).T
    W.setdiag(0)
    d = np.asarray(W.sum(axis=1)).ravel()
    s = np.where(d > 0, 1.0 / np.sqrt(np.maximum(d, 1e-300)), 0.0)
    Lap = np.eye(W.shape[0]) - (sp.diags(s) @ W @ sp.diags(s)).toarray()
    w, Q = np.linalg.eigh(0.5 * (Lap + Lap.T))
    return Q * np.sqrt(np.exp(-a * w) + b)


def _parts(U, V, GM, GN, rows, cols, y, inv_s2, frob, lam):
    Z = U if GM is None else GM @ U
    W = V if GN is None else GN @ V
    r = np.einsum("ij,ij->i", Z[rows], W[cols]) - y
    f = 0.5 * inv_s2 * r @ r + lam * 0.5 * (np.sum(U * U) + np.sum(V * V))
    if frob:
        f += 0.5 * frob * np.sum((U.T @ U) * (V.T @ V))
    return f, r, Z, W


def objective(U, V, GM, GN, rows, cols, y, sigma2, lam, frob=1.0):
    """Factored objective of eq. 11 at B = U Vᵀ (with ½λ(‖U‖²+‖V‖²) in place of λ‖B‖_*)."""
    return _parts(U, V, GM, GN, rows, cols, y, 1.0 / sigma2, frob, lam)[0]


def _refine(U, V, GM, GN, rows, cols, y, sigma2, lam, frob, shape, maxiter):
    M, N = shape
    r_ = U.shape[1]
    inv_s2 = 1.0 / sigma2

    def fg(x):
        U = x[:M * r_].reshape(M, r_)
        V = x[M * r_:].reshape(N, r_)
        f, r, Z, W = _parts(U, V, GM, GN, rows, cols, y, inv_s2, frob, lam)
        R = sp.csr_matrix((inv_s2 * r, (rows, cols)), shape=shape)
        gZ, gW = R @ W, R.T @ Z
        gU = gZ if GM is None else GM.T @ gZ
        gV = gW if GN is None else GN.T @ gW
        gU = gU + lam * U
        gV = gV + lam * V
        if frob:
            gU += frob * U @ (V.T @ V)
            gV += frob * V @ (U.T @ U)
        return f, np.concatenate([gU.ravel(), gV.ravel()])

    res = minimize(fg, np.concatenate([U.ravel(), V.ravel()]), jac=True, method="L-BFGS-B",
                   options={"maxiter": maxiter, "gtol": 1e-9, "ftol": 1e-12})
    return res.x[:M * r_].reshape(M, r_), res.x[M * r_:].reshape(N, r_), float(res.fun)


def smooth_gradient_top(U, V, GM, GN, rows, cols, y, sigma2, frob, shape):
    """Top singular triple of the smooth part's gradient S = G_Mᵀ (σ⁻² R) G_N + frob·U Vᵀ."""
    f, r, Z, W = _parts(U, V, GM, GN, rows, cols, y, 1.0 / sigma2, frob, 0.0)
    R = sp.csr_matrix((r / sigma2, (rows, cols)), shape=shape)
    GMt = (lambda x: x) if GM is None else (lambda x: GM.T @ x)
    GMm = (lambda x: x) if GM is None else (lambda x: GM @ x)
    GNm = (lambda x: x) if GN is None else (lambda x: GN @ x)
    GNt = (lambda x: x) if GN is None else (lambda x: GN.T @ x)

    def mv(x):
        x = np.asarray(x).reshape(shape[1], -1)
        return GMt(R @ GNm(x)) + frob * U @ (V.T @ x)

    def rmv(x):
        x = np.asarray(x).reshape(shape[0], -1)
        return GNt(R.T @ GMm(x)) + frob * V @ (U.T @ x)

    op = LinearOperator(shape, matvec=mv, rmatvec=rmv, matmat=mv, rmatmat=rmv, dtype=float)
    start = np.random.default_rng(0).standard_normal(min(shape))  # ARPACK's own start is unseeded
    u, s, vt = svds(op, k=1, tol=1e-6, v0=start)
    return u[:, 0], float(s[0]), vt[0]


def fit_mvgp(train: sp.coo_matrix, GM=None, GN=None, *, sigma2=1.0, lam=1.0, frob=1.0, max_rank=50,
             fixed_rank=None, maxiter=200, tol=1e-6, rng=None):
    """Solve eq. 11 by rank growth + L-BFGS refinement; return factors Z = G_M U, W = G_N V.

    fixed_rank : start at that rank and never grow (KPMF). Otherwise start at rank 1 and add a
    factor along the top singular pair of −∇ while its singular value exceeds λ (eq. 10's
    optimality condition ‖∇‖₂ ≤ λ), up to ``max_rank``, or until the objective stalls (``tol``).
    Returns dict with Z, W, U, V, objective trace, rank, converged flag.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    train = sp.coo_matrix(train)
    rows, cols, y = train.row, train.col, train.data.astype(float)
    shape = train.shape
    M, N = shape
    trace, converged = [], False
    if fixed_rank is not None:
        U = 0.1 * rng.standard_normal((M, fixed_rank))
        V = 0.1 * rng.standard_normal((N, fixed_rank))
        U, V, f = _refine(U, V, GM, GN, rows, cols, y, sigma2, lam, frob, shape, maxiter * 5)
        trace.append(f)
    else:
        U, V = np.zeros((M, 0)), np.zeros((N, 0))
        trace.append(objective(U, V, GM, GN, rows, cols, y, sigma2, lam, frob))
        while U.shape[1] < max_rank:
            u, s, v = smooth_gradient_top(U, V, GM, GN, rows, cols, y, sigma2, frob, shape)
            if s <= lam * (1 + 1e-6):
                converged = True
                break
            step = np.sqrt(max(s - lam, 1e-12) / max(1.0, s))
            U = np.column_stack([U, -step * u])
            V = np.column_stack([V, step * v])
            U, V, f = _refine(U, V, GM, GN, rows, cols, y, sigma2, lam, frob, shape, maxiter)
            trace.append(f)
            if trace[-2] - trace[-1] <= tol * abs(trace[-2]):
                converged = True
                break
        if U.shape[1] == 0:
            U, V = np.zeros((M, 1)), np.zeros((N, 1))
    Z = U if GM is None else GM @ U
    W = V if GN is None else GN @ V
    return {"Z": Z, "W": W, "U": U, "V": V, "objective": trace, "rank": U.shape[1], "converged": converged}
