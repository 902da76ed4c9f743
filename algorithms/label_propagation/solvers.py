"""Linear solves of label propagation: A X = B for a sparse symmetric A and a few right-hand sides.

Every method of the family ends in such a system (GF: A = L_uu, eq. 3.8; LGC: I − αS, eq. 3.15;
TIKREG: ℓγL_u + I_k, eq. 3.11; the embeddings: M_uu or M + αI_k, eqs. 3.37, 3.39). `factor(A)`
returns an object with ``.solve(B)`` chosen by the structure of A:

* fewer than ``ITERATIVE_MIN_ROWS`` rows, or off-diagonal entries of both signs (LLE and LTSA
  alignment matrices, which are not graph Laplacians): a sparse LU, exact.
* otherwise A is a symmetric diagonally dominant M-matrix (a graph Laplacian plus a non-negative
  diagonal): conjugate gradients on all columns at once (one sparse product per iteration for
  all classes), preconditioned by Jacobi when A is well conditioned (``precondition='jacobi'``:
  I − αS has κ ≤ (1+α)/(1−α)) and by an aggregation multigrid K-cycle otherwise
  (``precondition='multigrid'``: kNN graphs of low-dimensional manifolds, where κ(L_uu) grows
  like n^{2/d} and Jacobi-CG needs thousands of iterations). Converges to relative residual
  ``CG_RTOL`` per column; a column that has not after ``CG_MAXITER`` iterations raises
  `SolveError` instead of falling back silently.

The iterative solve runs on A with its rows and columns in reverse Cuthill–McKee order
(`Reordered`): a kNN graph of points in arbitrary order touches X at random rows in every product,
so from ~10⁵ rows (X and A no longer fit in the core's cache) each product is memory-bound; in a
bandwidth-reducing order neighbours sit in nearby rows (W @ Y at 100,000 swiss-roll points: 4×
faster). The order costs one breadth-first sweep, O(nnz).

Multigrid cost: setup O(nnz · levels) (two pairwise matchings per level, a Galerkin product
Pᵀ A P); each cycle O(nnz) (damped Jacobi smoothing; on every intermediate level two steps of a
Krylov method preconditioned by the next level, Notay's K-cycle, so the number of CG iterations does
not grow with the number of levels as a V-cycle's does); the coarsest level (≤ ``COARSE_ROWS``
rows) is factorised once. Iterations are nearly independent of n (swiss roll, rtol 1e-8: 13, 14, 14
at 10k, 30k, 100k points, against 18, 20, 27 with a V-cycle).
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.linalg.blas import daxpy as _axpy, dscal as _scal  # in place on contiguous float64 vectors

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


def factor(A: sp.spmatrix, precondition: str = "multigrid", rtol: float | None = None, progress=None):
    """A solver for the symmetric positive definite A (see the module docstring for the choice);
    ``rtol`` overrides ``CG_RTOL`` for an iterative solve, whose iterations are reported to
    progress(fraction, message) (`cg_progress`)."""
    A = sp.csr_matrix(A)
    if A.shape[0] < ITERATIVE_MIN_ROWS or not is_m_matrix(A):
        return DirectSolver(A)
    order, A = locality_order(A)
    M = Multigrid(A) if precondition == "multigrid" else Jacobi(A)
    callback = None if progress is None else cg_progress(progress)
    return Reordered(ConjugateGradients(A, M, CG_RTOL if rtol is None else rtol, callback=callback), order)


def cg_progress(progress):
    """A `ConjugateGradients` callback reporting to progress(fraction, message): the iteration, the
    residual and its goal; the fraction is how far the residual has come from its first value to the
    goal on a log scale (the largest so far: CG's residual need not fall monotonically)."""
    state = {"first": None, "fraction": 0.0}

    def callback(iteration, residual, goal):
        first = state["first"] = state["first"] or residual
        if first > goal > 0 and residual > 0:
            state["fraction"] = max(state["fraction"], min(1.0, np.log(first / residual) / np.log(first / goal)))
        progress(state["fraction"], f"CG iteration {iteration}, residual {residual:.1e} (goal {goal:.1e})")

    return callback


def locality_order(A: sp.spmatrix) -> tuple[np.ndarray, sp.csr_matrix]:
    """The reverse Cuthill–McKee order of the symmetric A and A in it (Π A Πᵀ, CSR), O(nnz).

    Π A Πᵀ is the rows in ``order`` with every column index mapped through the inverse permutation
    (one gather; the entries of each row keep their order, as scipy's A[order][:, order] does, whose
    general column indexing cost ~4× more on a 10⁶-row kNN graph in arbitrary order)."""
    A = sp.csr_matrix(A)
    order = reverse_cuthill_mckee(A, symmetric_mode=True)
    rows = A[order]
    position = np.empty(A.shape[0], dtype=rows.indices.dtype)
    position[order] = np.arange(A.shape[0], dtype=rows.indices.dtype)
    return order, sp.csr_matrix((rows.data, position[rows.indices], rows.indptr), shape=A.shape)


class Reordered:
    """A solver of Π A Πᵀ used for A: solve(B) = Πᵀ inner.solve(Π B) (rows taken in ``order``)."""

    def __init__(self, inner, order: np.ndarray):
        self.inner, self.order = inner, np.asarray(order)

    @property
    def iterations(self) -> int:
        return self.inner.iterations

    def solve(self, B: np.ndarray) -> np.ndarray:
        B = np.asarray(B, dtype=float)
        X = np.empty_like(B)
        X[self.order] = self.inner.solve(B[self.order])
        return X


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


def _dots(U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Column-wise inner products uⱼᵀvⱼ of two (n, c) blocks."""
    return np.einsum("ij,ij->j", U, V)


class ConjugateGradients:
    """Preconditioned CG on all columns of B at once (each column its own step sizes), from 0.

    A : a sparse SPD matrix, or a function P ↦ A P on (n, c) blocks (A never formed)

    precondition : a function R ↦ M⁻¹ R, or None (plain CG). A preconditioner with a true
        ``nonlinear`` attribute (the multigrid K-cycle: its inner Krylov steps make M⁻¹ depend on R)
        gets flexible CG (Notay 2000): the Polak–Ribière direction update
        β = z₊ᵀ(r₊ − r) / zᵀr, which equals the Fletcher–Reeves β = z₊ᵀr₊ / zᵀr of standard CG when
        M is linear and keeps the iteration convergent when it is not.
    atol : a column has also converged once ‖b − A x‖ ≤ atol (an absolute residual shared by the
        columns: their scale then need not be resolved below it).
    callback : called after every iteration as callback(iteration, largest residual ‖b − A x‖ of a
        column still iterating, its goal) — the recurrence's residual, for progress reports.

    Every iteration is one product with A for all columns and a few in-place block updates; a
    converged column keeps its solution (its step is 0 from then on).
    """

    def __init__(self, A, precondition=None, rtol: float = CG_RTOL, maxiter: int = CG_MAXITER, *,
                 atol: float = 0.0, callback=None):
        self.matvec = A if callable(A) and not sp.issparse(A) else sp.csr_matrix(A).__matmul__
        self.M, self.rtol, self.maxiter, self.atol = precondition, rtol, maxiter, atol
        self.flexible = bool(getattr(precondition, "nonlinear", False))
        self.callback = callback
        self.iterations = 0

    def solve(self, B: np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
        """A⁻¹B, from X = 0 or from the guess ``x0`` (the shape of B)."""
        B = np.asarray(B, dtype=float)
        shape = B.shape
        B = B.reshape(shape[0], -1)
        if x0 is None:
            X = np.zeros_like(B)
            R = B.copy()
        else:
            X = np.array(x0, dtype=float).reshape(B.shape)
            R = B - self.matvec(X)
        goal = np.maximum(self.rtol * np.linalg.norm(B, axis=0), self.atol) ** 2
        rr = _dots(R, R)
        active = rr > goal
        Z = R if self.M is None else self.M(R)
        rz = rr.copy() if self.M is None else _dots(R, Z)
        P = Z.copy()
        scratch = np.empty_like(P)  # a step's update, written into one array rather than a fresh one per iteration
        it = 0
        while active.any():
            if it >= self.maxiter:
                worst = float(np.sqrt(np.max(rr / np.maximum(_dots(B, B), 1e-300))))
                raise SolveError(f"conjugate gradients did not reach relative residual {self.rtol:g} in "
                                 f"{self.maxiter} iterations (reached {worst:.2e}); the system is singular or "
                                 f"too ill-conditioned for its preconditioner")
            it += 1
            AP = self.matvec(P)
            step = np.where(active, rz / np.where(active, _dots(P, AP), 1.0), 0.0)
            X += np.multiply(P, step, out=scratch)
            AP *= step  # = r − r₊
            R -= AP
            rr = _dots(R, R)
            if self.callback is not None:
                worst = int(np.argmax(np.where(active, rr / np.maximum(goal, 1e-300), -1.0)))
                self.callback(it, float(np.sqrt(rr[worst])), float(np.sqrt(goal[worst])))
            active &= rr > goal
            if not active.any():
                break
            Z = R if self.M is None else self.M(R)
            rz_new = rr if self.M is None else _dots(R, Z)
            numerator = -_dots(Z, AP) if self.flexible else rz_new  # z₊ᵀ(r₊ − r), or z₊ᵀr₊
            P *= np.where(active, numerator / np.where(active, rz, 1.0), 0.0)
            P += Z
            rz = rz_new
        self.iterations = max(self.iterations, it)
        return X.reshape(shape)


CHEBYSHEV_CHECK = 4
"""Iterations of `Chebyshev` between two residual checks (each check is one inner product per column)."""


def accumulate_product(A: sp.csr_matrix, X: np.ndarray, Y: np.ndarray) -> None:
    """Y += A X in place for a CSR A (m, n) and C-contiguous float64 blocks X (n, c), Y (m, c): scipy's own
    kernel writing into Y (``A @ X`` allocates its (m, c) result, at 10⁵ rows a fresh 3 MB block, and page
    faults, per product); the public ``Y += A @ X`` when that kernel is not there. O(nnz · c)."""
    if _csr_matvecs is None or A.dtype != np.float64 or not (X.flags.c_contiguous and Y.flags.c_contiguous):
        Y += A @ X
        return
    X2, Y2 = X.reshape(X.shape[0], -1), Y.reshape(Y.shape[0], -1)
    _csr_matvecs(A.shape[0], A.shape[1], X2.shape[1], A.indptr, A.indices, A.data, X2.ravel(), Y2.ravel())


try:  # scipy's CSR × dense-block kernel (Y += A X): private, so optional
    from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs
except ImportError:  # pragma: no cover - another scipy
    _csr_matvecs = None


class ShiftedAdjacency:
    """The operator A = I − αS for a sparse symmetric S ≥ 0, given as the CSR matrix αS, applied without
    forming A: ``A @ P`` (a new
    block) and ``subtract_product(R, P)``, R −= A P in place (R −= P, then R += αS P by
    `accumulate_product`: two passes over R, no temporary)."""

    def __init__(self, alpha_S: sp.csr_matrix):
        self.S = alpha_S  # αS, scaled by the caller (no copy here)
        self.shape = alpha_S.shape

    def __matmul__(self, P: np.ndarray) -> np.ndarray:
        return P - self.S @ P

    def subtract_product(self, R: np.ndarray, P: np.ndarray) -> None:
        R -= P
        accumulate_product(self.S, P, R)


class Chebyshev:
    """Chebyshev semi-iteration (Golub & Varga 1961; Saad 2003, Alg. 12.1) for an SPD A whose
    spectrum is known to lie in [lower, upper], on all columns of B at once.

    Its step sizes come from the interval, not from inner products, so an iteration is one product
    with A and three in-place block updates (conjugate gradients also need two inner products per
    column and per-column steps); the residual is checked every ``CHEBYSHEV_CHECK`` iterations. The
    error falls at least as 2σᵏ with σ = (√κ − 1)/(√κ + 1), κ = upper/lower: CG's worst-case rate, which
    CG beats only when the spectrum clusters. LGC's I − αS has its spectrum in [1 − α, 1 + α] (S's in
    [−1, 1], and any principal submatrix's too, by interlacing), so the bound is exact there.

    A : a function P ↦ A P on (n, c) blocks, a sparse matrix, or an object with ``@`` and
    ``subtract_product(R, P)`` (R −= A P in place: `ShiftedAdjacency`, no temporary per iteration);
    atol : stop once every column's residual ‖b − A x‖₂ ≤ atol; settled : optionally, a function
    (X, R, residual) ↦ bool asked at every check (residual: the largest column norm of R), True to stop there (the caller's own goal reached before atol's:
    `resolved`'s "every row resolved"); callback(iteration, largest residual, goal) at every check.
    """

    def __init__(self, A, lower: float, upper: float, *, atol: float, maxiter: int = CG_MAXITER, callback=None,
                 settled=None):
        if not 0 < lower < upper:
            raise ValueError(f"Chebyshev needs 0 < lower < upper, got [{lower}, {upper}]")
        if hasattr(A, "subtract_product"):
            self.matvec, self.subtract = A.__matmul__, A.subtract_product
        else:
            self.matvec = A if callable(A) and not sp.issparse(A) else sp.csr_matrix(A).__matmul__
            self.subtract = None
        self.lower, self.upper, self.atol, self.maxiter, self.callback = lower, upper, atol, maxiter, callback
        self.settled = settled
        self.iterations = 0

    def solve(self, B: np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
        """A⁻¹B to the residual ``atol`` (or until ``settled``), from X = 0 or from the guess ``x0``."""
        B = np.asarray(B, dtype=float)
        X = np.zeros(B.shape) if x0 is None else np.array(x0, dtype=float, order="C").reshape(B.shape)
        R = np.array(B, order="C") if x0 is None else np.ascontiguousarray(B - self.matvec(X))
        theta, delta = (self.upper + self.lower) / 2, (self.upper - self.lower) / 2
        sigma = theta / delta
        rho = 1.0 / sigma
        goal = self.atol ** 2
        worst = float(np.max(_dots(R, R), initial=0.0))
        it = 0
        if worst > goal and not (self.settled is not None and self.settled(X, R, np.sqrt(worst))):
            D = R / theta
            d, r = D.reshape(-1), R.reshape(-1)  # views (both C-contiguous) for the in-place BLAS update of D
            while True:
                if it >= self.maxiter:
                    raise SolveError(f"Chebyshev iteration did not reach residual {self.atol:g} in {self.maxiter} "
                                     f"iterations (reached {np.sqrt(worst):.2e}); the spectrum is outside "
                                     f"[{self.lower:g}, {self.upper:g}]")
                it += 1
                X += D
                if self.subtract is not None:
                    self.subtract(R, D)
                else:
                    R -= self.matvec(D)
                if it % CHEBYSHEV_CHECK == 0:
                    worst = float(np.max(_dots(R, R)))
                    if self.callback is not None:
                        self.callback(it, np.sqrt(worst), self.atol)
                    if worst <= goal or (self.settled is not None and self.settled(X, R, np.sqrt(worst))):
                        break
                rho_next = 1.0 / (2.0 * sigma - rho)
                _scal(rho_next * rho, d)  # D ← ρ₊ρ D + (2ρ₊/δ) R: two passes, no temporary
                _axpy(r, d, a=2.0 * rho_next / delta)
                rho = rho_next
        self.iterations = max(self.iterations, it)
        return X


def row_argmax(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Column of the largest positive weight of every row of a CSR structure (the first on ties;
    -1 for a row without a positive weight), vectorised in O(nnz)."""
    n = len(indptr) - 1
    counts = np.diff(indptr)
    has = counts > 0
    best = np.full(n, -1, dtype=np.int64)
    if not len(weights):
        return best
    starts = indptr[:-1][has]
    top = np.maximum.reduceat(weights, starts)
    at_top = weights == np.repeat(top, counts[has])
    position = np.where(at_top, np.arange(len(weights)), len(weights))
    best[has] = np.where(top > 0, indices[np.minimum.reduceat(position, starts)], -1)
    return best


def _row_ids(A: sp.csr_matrix) -> np.ndarray:
    """Row index of every stored entry of a CSR matrix."""
    return np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))


def galerkin(A: sp.csr_matrix, aggregate: np.ndarray, m: int) -> sp.csr_matrix:
    """Pᵀ A P for the piecewise-constant prolongation P (p_ij = 1 when row i is in aggregate j):
    the entries of A summed over pairs of aggregates, O(nnz) (no sparse matrix product)."""
    C = sp.coo_matrix((A.data, (aggregate[_row_ids(A)], aggregate[A.indices])), shape=(m, m))
    return C.tocsr()


TIE_BREAK = 1e-6
"""Relative size of the symmetric perturbation that orders equal couplings (`_edge_hash`)."""


def _edge_hash(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """A pseudo-random number in [0, 1) per edge, the same for (i, j) and (j, i). With equal weights
    every row's strongest coupling is otherwise its first neighbour and few of those choices are
    mutual: a shuffled 2-D grid did not coarsen at all (no level: the whole system went to the coarse
    LU), a binary kNN graph less (2 levels instead of 3 at 100,000 swiss-roll points). Perturbed by
    these numbers the couplings are distinct and the mutually strongest ones pair most rows."""
    lo, hi = np.minimum(rows, cols).astype(np.uint64), np.maximum(rows, cols).astype(np.uint64)
    h = (lo * np.uint64(0x9E3779B97F4A7C15)) ^ (hi * np.uint64(0xC2B2AE3D27D4EB4F))
    h ^= h >> np.uint64(29)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(32)
    return (h >> np.uint64(11)).astype(float) / float(1 << 53)


def pairwise_aggregates(A: sp.csr_matrix) -> np.ndarray:
    """Aggregate id (0..m-1) of every row: rows matched in pairs along their strongest connection
    (largest −a_ij), mutual-strongest pairs first, three rounds over the still unmatched rows; a
    row left over joins the aggregate of its strongest neighbour, or stays alone."""
    A = sp.csr_matrix(A)
    n = A.shape[0]
    rows = _row_ids(A)
    strength = np.maximum(-A.data, 0.0)  # the diagonal of an M-matrix is ≥ 0: only couplings count
    strength *= 1.0 + TIE_BREAK * _edge_hash(rows, A.indices)
    agg = np.full(n, -1, dtype=np.int64)
    next_id = 0
    free = np.ones(n, bool)
    for _ in range(3):
        best = row_argmax(A.indptr, A.indices, np.where(free[rows] & free[A.indices], strength, 0.0))
        candidates = np.flatnonzero((best >= 0) & free)
        pair = candidates[(best[best[candidates]] == candidates) & (candidates < best[candidates])]
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
        best = row_argmax(A.indptr, A.indices, strength)[left]
        join = (best >= 0) & (agg[np.maximum(best, 0)] >= 0)
        agg[left[join]] = agg[best[join]]
        alone = left[~join]
        agg[alone] = next_id + np.arange(alone.size)
    _, agg = np.unique(agg, return_inverse=True)
    return agg.astype(np.int64)


class Multigrid:
    """Aggregation-multigrid K-cycle (Notay & Vassilevski 2008), a preconditioner for an SPD M-matrix
    A (Notay 2010's pairwise aggregation, vectorised: mutually strongest pairs instead of a sequential
    sweep).

    Each level: aggregates from two pairwise matchings (about 4 rows each), piecewise-constant
    prolongation P (row i of the coarse vector goes to every row of aggregate i), Galerkin coarse
    matrix Pᵀ A P; damped-Jacobi pre- and post-smoothing (``SMOOTHING_STEPS`` each). The coarse
    correction of the finest level is solved on every intermediate level by two steps of flexible
    CG preconditioned by the next level's cycle (the K-cycle; with a single level above the coarse
    LU it is the two-grid cycle). Those steps make the preconditioner nonlinear (``nonlinear``), so
    the outer CG is the flexible one. Cost per application: ≈ 2·(1 + 2/4 + 4/16 + …) fine-level
    smoothing sweeps.
    """

    nonlinear = True

    def __init__(self, A: sp.spmatrix, coarse_rows: int = COARSE_ROWS):
        self.levels = []
        A = sp.csr_matrix(A)
        while A.shape[0] > coarse_rows:
            n = A.shape[0]
            agg = pairwise_aggregates(A)
            Ac = galerkin(A, agg, int(agg.max()) + 1)
            agg2 = pairwise_aggregates(Ac)
            m = int(agg2.max()) + 1
            if m > 0.7 * n:  # the graph no longer coarsens
                break
            aggregate = agg2[agg]
            restrict = sp.csr_matrix((np.ones(n), (aggregate, np.arange(n))), shape=(m, n))  # Pᵀ
            d = A.diagonal()
            self.levels.append((A, aggregate, restrict, JACOBI_DAMPING / np.where(d > 0, d, 1.0)))
            A = galerkin(Ac, agg2, m)
        self.coarse = DirectSolver(A)

    def __call__(self, R: np.ndarray) -> np.ndarray:
        return self._cycle(0, R)

    def _cycle(self, level: int, R: np.ndarray) -> np.ndarray:
        if level == len(self.levels):
            return self.coarse.solve(R)
        A, aggregate, restrict, dinv = self.levels[level]
        dinv = dinv[:, None]
        X = dinv * R
        for _ in range(SMOOTHING_STEPS - 1):
            X += dinv * (R - A @ X)
        Rc = restrict @ (R - A @ X)
        inner = 0 < level + 1 < len(self.levels)
        X += (self._krylov(level + 1, Rc) if inner else self._cycle(level + 1, Rc))[aggregate]
        for _ in range(SMOOTHING_STEPS):
            X += dinv * (R - A @ X)
        return X

    def _krylov(self, level: int, R: np.ndarray) -> np.ndarray:
        """Two steps of flexible CG from 0 on level ``level``'s A X = R, preconditioned by its cycle
        (Notay & Vassilevski 2008, Algorithm 3.1, per column)."""
        A = self.levels[level][0]
        C1 = self._cycle(level, R)
        V1 = A @ C1
        rho1 = _dots(C1, V1)
        rho1 = np.where(rho1 > 0, rho1, 1.0)
        s1 = _dots(C1, R) / rho1
        R2 = R - s1 * V1
        C2 = self._cycle(level, R2)
        V2 = A @ C2
        gamma = _dots(C2, V1)
        rho2 = _dots(C2, V2) - gamma ** 2 / rho1
        rho2 = np.where(rho2 > 0, rho2, 1.0)
        s2 = _dots(C2, R2) / rho2
        return (s1 - gamma * s2 / rho1) * C1 + s2 * C2
