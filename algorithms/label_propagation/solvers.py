"""Linear solves of label propagation: A X = B for a sparse symmetric A and a few right-hand sides.

Every method of the family ends in such a system (GF: A = L_uu, eq. 3.8; LGC: I − αS, eq. 3.15;
TIKREG: ℓγL_u + I_k, eq. 3.11; the embeddings: M_uu or M + αI_k, eqs. 3.37, 3.39). `factor(A)`
returns an object with ``.solve(B)`` chosen by the structure of A:

* fewer than ``ITERATIVE_MIN_ROWS`` rows, or off-diagonal entries of both signs (LLE and LTSA
  alignment matrices, which are not graph Laplacians): a sparse LU, exact.
* otherwise A is a symmetric diagonally dominant M-matrix (a graph Laplacian plus a non-negative
  diagonal): conjugate gradients on all columns at once (one sparse product per iteration for
  all classes), preconditioned by Jacobi when A is well conditioned (``precondition='jacobi'``:
  I − αS has κ ≤ (1+α)/(1−α)) and by an aggregation multigrid V-cycle otherwise
  (``precondition='multigrid'``: kNN graphs of low-dimensional manifolds, where κ(L_uu) grows
  like n^{2/d} and Jacobi-CG needs thousands of iterations). Converges to relative residual
  ``CG_RTOL`` per column; a column that has not after ``CG_MAXITER`` iterations raises
  `SolveError` instead of falling back silently.

Multigrid cost: setup O(nnz · levels) (two pairwise matchings per level, a Galerkin product
Pᵀ A P); each V-cycle O(nnz) (damped Jacobi smoothing, nested coarse levels); the coarsest
level (≤ ``COARSE_ROWS`` rows) is factorised once. Iterations are nearly independent of n.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from malt.errors import DataError

ITERATIVE_MIN_ROWS = 2000
"""From this many rows an M-matrix system is solved by preconditioned CG, below by sparse LU."""
CG_RTOL = 1e-8
"""Relative residual ‖b − A x‖ / ‖b‖ at which a column has converged (labels are argmaxes of
scores whose class gaps are ≫ 1e-8 of their scale)."""
CG_MAXITER = 2000
COARSE_ROWS = 1500
"""Multigrid levels are added until the coarsest has at most this many rows (then an LU)."""
SMOOTHING_STEPS = 2
RIDGE = 1e-10
"""Ridge (relative to the unit diagonal of the scaled system) added when a sparse LU finds A exactly
singular: the minimum-change regularised solution instead of a failure."""
JACOBI_DAMPING = 2.0 / 3.0


class SolveError(ArithmeticError, DataError):
    """An iterative solve did not reach its tolerance."""


def is_m_matrix(A: sp.spmatrix) -> bool:
    """True when every off-diagonal entry of A is ≤ 0 (a graph Laplacian plus a diagonal)."""
    A = sp.coo_matrix(A)
    off = A.row != A.col
    return bool(np.all(A.data[off] <= 0))


def factor(A: sp.spmatrix, precondition: str = "multigrid", rtol: float | None = None):
    """A solver for the symmetric positive definite A (see the module docstring for the choice);
    ``rtol`` overrides ``CG_RTOL`` for an iterative solve."""
    A = sp.csr_matrix(A)
    if A.shape[0] < ITERATIVE_MIN_ROWS or not is_m_matrix(A):
        return DirectSolver(A)
    M = Multigrid(A) if precondition == "multigrid" else Jacobi(A)
    return ConjugateGradients(A, M, CG_RTOL if rtol is None else rtol)


class DirectSolver:
    """Sparse LU (SuperLU) of the symmetrically scaled S A S, S = |diag A|^{-1/2}; exact up to
    rounding. The scaling keeps rows of points joined only by underflowing RBF weights (1e-300,
    far outliers of unscaled features) from making the factor singular in floating point."""

    iterations = 0

    def __init__(self, A: sp.spmatrix):
        A = sp.csr_matrix(A)
        d = np.abs(A.diagonal())
        self.scale = 1.0 / np.sqrt(np.where(d > 0, d, 1.0))
        S = sp.diags(self.scale)
        A = sp.csc_matrix(S @ A @ S)  # unit diagonal
        self.ridge = 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
            try:
                self.lu = spla.splu(A)
            except RuntimeError:  # exactly singular: a null space the labels do not pin (LTSA, LLE)
                self.ridge = RIDGE
                self.lu = spla.splu(sp.csc_matrix(A + RIDGE * sp.identity(A.shape[0])))

    def solve(self, B: np.ndarray) -> np.ndarray:
        B = np.asarray(B, dtype=float)
        s = self.scale.reshape((-1,) + (1,) * (B.ndim - 1))
        return s * self.lu.solve(s * B)


class Jacobi:
    """Diagonal preconditioner x = D⁻¹ r."""

    def __init__(self, A: sp.spmatrix):
        d = A.diagonal()
        self.inv = 1.0 / np.where(d > 0, d, 1.0)

    def __call__(self, R: np.ndarray) -> np.ndarray:
        return self.inv[:, None] * R


class ConjugateGradients:
    """Preconditioned CG on all columns of B at once (each column its own step sizes), from 0.

    A : a sparse SPD matrix, or a function P ↦ A P on (n, c) blocks (A never formed)
    precondition : a function R ↦ M⁻¹ R, or None (plain CG)
    Every iteration is one product with A for all columns and a few in-place block updates; a
    converged column keeps its solution (its step is 0 from then on).
    """

    def __init__(self, A, precondition=None, rtol: float = CG_RTOL, maxiter: int = CG_MAXITER):
        self.matvec = A if callable(A) and not sp.issparse(A) else sp.csr_matrix(A).__matmul__
        self.M, self.rtol, self.maxiter = precondition, rtol, maxiter
        self.iterations = 0

    def solve(self, B: np.ndarray) -> np.ndarray:
        B = np.asarray(B, dtype=float)
        shape = B.shape
        B = B.reshape(shape[0], -1)
        X = np.zeros_like(B)
        R = B.copy()
        goal = (self.rtol * np.linalg.norm(B, axis=0)) ** 2
        rr = np.einsum("ij,ij->j", R, R)
        active = rr > goal
        Z = R if self.M is None else self.M(R)
        rz = rr.copy() if self.M is None else np.einsum("ij,ij->j", R, Z)
        P = Z.copy()
        it = 0
        while active.any():
            if it >= self.maxiter:
                worst = float(np.sqrt(np.max(rr / np.maximum(np.einsum("ij,ij->j", B, B), 1e-300))))
                raise SolveError(f"conjugate gradients did not reach relative residual {self.rtol:g} in "
                                 f"{self.maxiter} iterations (reached {worst:.2e}); the system is singular or "
                                 f"too ill-conditioned for its preconditioner")
            it += 1
            AP = self.matvec(P)
            step = np.where(active, rz / np.where(active, np.einsum("ij,ij->j", P, AP), 1.0), 0.0)
            X += P * step
            AP *= step
            R -= AP
            rr = np.einsum("ij,ij->j", R, R)
            active &= rr > goal
            if not active.any():
                break
            Z = R if self.M is None else self.M(R)
            rz_new = rr if self.M is None else np.einsum("ij,ij->j", R, Z)
            P *= np.where(active, rz_new / rz, 0.0)
            P += Z
            rz = rz_new
        self.iterations = max(self.iterations, it)
        return X.reshape(shape)


def row_argmax(S: sp.csr_matrix) -> np.ndarray:
    """Column of the largest entry of every row of a CSR matrix (the first on ties; -1 for an empty
    row), vectorised in O(nnz)."""
    n = S.shape[0]
    counts = np.diff(S.indptr)
    has = counts > 0
    best = np.full(n, -1, dtype=np.int64)
    if not S.nnz:
        return best
    starts = S.indptr[:-1][has]
    top = np.maximum.reduceat(S.data, starts)
    at_top = S.data == np.repeat(top, counts[has])
    position = np.where(at_top, np.arange(S.nnz), S.nnz)
    best[has] = S.indices[np.minimum.reduceat(position, starts)]
    return best


def pairwise_aggregates(A: sp.csr_matrix) -> np.ndarray:
    """Aggregate id (0..m-1) of every row: rows matched in pairs along their strongest connection
    (largest −a_ij), mutual-strongest pairs first, three rounds over the still unmatched rows; a
    row left over joins the aggregate of its strongest neighbour, or stays alone."""
    n = A.shape[0]
    S = (-A).tocsr()
    S.setdiag(0)
    S.data[S.data < 0] = 0
    S.eliminate_zeros()
    agg = np.full(n, -1, dtype=np.int64)
    next_id = 0
    free = np.ones(n, bool)
    for _ in range(3):
        T = sp.diags(free.astype(float)) @ S @ sp.diags(free.astype(float))
        T = sp.csr_matrix(T)
        T.eliminate_zeros()
        best = row_argmax(T)
        rows = np.flatnonzero((best >= 0) & free)
        pair = rows[(best[best[rows]] == rows) & (rows < best[rows])]
        if not pair.size:
            break
        ids = next_id + np.arange(pair.size)
        agg[pair] = ids
        agg[best[pair]] = ids
        free[pair] = False
        free[best[pair]] = False
        next_id += pair.size
    left = np.flatnonzero(agg < 0)
    if left.size:
        best = row_argmax(S)[left]
        join = (best >= 0) & (agg[np.maximum(best, 0)] >= 0)
        agg[left[join]] = agg[best[join]]
        alone = left[~join]
        agg[alone] = next_id + np.arange(alone.size)
    _, agg = np.unique(agg, return_inverse=True)
    return agg.astype(np.int64)


class Multigrid:
    """Symmetric aggregation-multigrid V-cycle, an SPD preconditioner for an M-matrix A.

    Each level: aggregates from two pairwise matchings (about 4 rows each), piecewise-constant
    prolongation P, Galerkin coarse matrix Pᵀ A P; damped-Jacobi pre- and post-smoothing
    (``SMOOTHING_STEPS`` each, symmetric, so the cycle is a symmetric operator).
    """

    def __init__(self, A: sp.spmatrix, coarse_rows: int = COARSE_ROWS):
        self.levels = []
        A = sp.csr_matrix(A)
        while A.shape[0] > coarse_rows:
            agg = pairwise_aggregates(A)
            P = sp.csr_matrix((np.ones(A.shape[0]), (np.arange(A.shape[0]), agg)))
            Ac = sp.csr_matrix(P.T @ A @ P)
            agg2 = pairwise_aggregates(Ac)
            P = sp.csr_matrix(P @ sp.csr_matrix((np.ones(Ac.shape[0]), (np.arange(Ac.shape[0]), agg2))))
            if P.shape[1] > 0.7 * A.shape[0]:  # the graph no longer coarsens
                break
            d = A.diagonal()
            self.levels.append((A, P, JACOBI_DAMPING / np.where(d > 0, d, 1.0)))
            A = sp.csr_matrix(P.T @ A @ P)
        self.coarse = DirectSolver(A)

    def __call__(self, R: np.ndarray) -> np.ndarray:
        return self._cycle(0, R)

    def _cycle(self, level: int, R: np.ndarray) -> np.ndarray:
        if level == len(self.levels):
            return self.coarse.solve(R)
        A, P, dinv = self.levels[level]
        X = dinv[:, None] * R
        for _ in range(SMOOTHING_STEPS - 1):
            X += dinv[:, None] * (R - A @ X)
        X += P @ self._cycle(level + 1, P.T @ (R - A @ X))
        for _ in range(SMOOTHING_STEPS):
            X += dinv[:, None] * (R - A @ X)
        return X
