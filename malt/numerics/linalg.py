"""Small linear-algebra pieces shared by the numeric cores: feature scaling (one standardiser with an
explicit choice of statistics), distances and RBF kernels, jitter, symmetric eigendecompositions.
Kronecker-structured solves live in `malt.numerics.eigenbasis`.

Numeric settings are named here rather than buried as literals.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

JITTER = 1e-8
"""Relative diagonal jitter added to kernels that must be positive definite."""


SCALINGS = ("standardize", "minmax", "none")


@dataclass(frozen=True)
class Scaling:
    """Column-wise affine feature scaling x ↦ (x − shift) / divisor, with statistics fitted on chosen rows.

    shift, divisor : (d,) arrays. Constant columns get divisor 1 (they map to zero, never to NaN).
    fitted_on : 'all rows' or 'n rows' — which rows the statistics came from (for diagnostics).
    """

    shift: np.ndarray
    divisor: np.ndarray
    fitted_on: str = "all rows"

    def __call__(self, X) -> np.ndarray:
        """The scaled (n, d) dense float array (a sparse X is densified)."""
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
        return (X - self.shift) / self.divisor


def scaling(X, scale: str = "standardize", fit_rows=None) -> Scaling:
    """Fit a `Scaling` of X's columns on ``fit_rows`` (indices or a boolean mask; None = all rows).

    scale : 'standardize' (mean 0, population std 1 — ``X.std(0)``, ddof 0, as scikit-learn's
        StandardScaler), 'minmax' (range [0, 1]) or 'none' (identity).
    fit_rows : the rows whose statistics define the scaling. An inductive protocol (test rows are
        unseen points: the multilabel task) passes the training rows; a transductive one (every row is
        part of the problem, as in the missing-value task) passes None.

    Cost O(nd).
    """
    if scale not in SCALINGS:
        raise ValueError(f"unknown feature scaling {scale!r}; use 'standardize', 'minmax' or 'none'")
    n, d = X.shape
    if scale == "none":
        return Scaling(np.zeros(d), np.ones(d), "all rows")
    Xf = X[fit_rows] if fit_rows is not None else X
    Xf = Xf.toarray() if sp.issparse(Xf) else np.asarray(Xf, dtype=float)
    if Xf.shape[0] == 0:
        raise ValueError("cannot fit a feature scaling on zero rows")
    where = "all rows" if fit_rows is None else f"{Xf.shape[0]} rows"
    if scale == "standardize":
        std = Xf.std(axis=0)
        return Scaling(Xf.mean(axis=0), np.where(std > 0, std, 1.0), where)
    low, span = Xf.min(axis=0), np.ptp(Xf, axis=0)
    return Scaling(low, np.where(span > 0, span, 1.0), where)


def standardize(X, scale: str = "standardize", fit_rows=None):
    """Column-wise feature scaling of every row of X with statistics from ``fit_rows`` (None: all rows,
    the transductive choice). ``scale='none'`` returns X unchanged (sparse stays sparse).
    See `scaling` for the options."""
    if scale == "none":
        return X
    return scaling(X, scale, fit_rows)(X)


def standardize_train_test(X_train, X_test, scale: str = "standardize"):
    """(X_train, X_test) scaled with the training rows' statistics — the inductive protocol every
    multilabel baseline uses. Dense float arrays out."""
    fitted = scaling(X_train, scale)
    return fitted(X_train), fitted(X_test)


def sq_dists(A, B=None) -> np.ndarray:
    """Squared Euclidean distances between rows, ``(n_a, n_b)``, clipped at zero."""
    A = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)
    B = A if B is None else (B.toarray() if sp.issparse(B) else np.asarray(B, dtype=float))
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    np.maximum(d, 0.0, out=d)
    if B is A:
        np.fill_diagonal(d, 0.0)
    return d


def median_width(D2: np.ndarray) -> float:
    """Median heuristic: the median of the pairwise distances (off-diagonal), as an RBF width.

    ``D2`` holds squared distances (n_a, n_b). When it is square with a zero diagonal (distances within
    one set, `sq_dists`), those n zeros are its n smallest entries, so the off-diagonal median is read
    off one partition of the whole matrix at ranks n + N/2 − 1 and n + N/2 (N = n(n − 1) entries off
    the diagonal): the same value as masking the diagonal out, without the copy. O(n²).
    """
    n = D2.shape[0]
    if D2.shape[0] != D2.shape[1]:
        off = D2.ravel()
    elif not np.any(np.diagonal(D2)):
        half = n * (n - 1) // 2
        if half == 0:
            return 1.0
        part = np.partition(D2.ravel(), [n + half - 1, n + half])
        med = float(np.sqrt((part[n + half - 1] + part[n + half]) / 2))
        return med if med > 0 else 1.0
    else:
        off = D2[~np.eye(n, dtype=bool)]
    med = float(np.sqrt(np.median(off))) if off.size else 1.0
    return med if med > 0 else 1.0


def rbf_from_sq_dists(D2: np.ndarray, width: float) -> np.ndarray:
    """k(x, y) = exp(-||x - y||² / (2 width²)), a new array (one temporary, exponentiated in place)."""
    K = np.divide(D2, -2.0 * width * width, dtype=float)
    return np.exp(K, out=K)


def add_jitter(K: np.ndarray, jitter: float = JITTER) -> np.ndarray:
    """Return K + jitter·mean(diag K)·I (a new array): makes a PSD kernel safely PD."""
    K = np.array(K, dtype=float, copy=True)
    K[np.diag_indices_from(K)] += jitter * max(float(np.mean(np.diag(K))), 1e-300)
    return K


def batched_cholesky_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Solve (L Lᵀ) x = b for a stack of lower Cholesky factors: L (n, k, k), B (n, k) → (n, k).

    Forward then back substitution vectorised over the stack (k steps of O(nk) each, O(nk²) in
    all): no explicit inverse and no per-matrix Python loop.
    """
    return batched_triangular_solve(L, batched_triangular_solve(L, B), transpose=True)


def batched_triangular_solve(L: np.ndarray, B: np.ndarray, transpose: bool = False) -> np.ndarray:
    """x with L x = b (``transpose``: Lᵀ x = b) for a stack of lower-triangular L (n, k, k), B (n, k)."""
    n, k = B.shape
    x = np.empty_like(B, dtype=float)
    if not transpose:
        for j in range(k):
            x[:, j] = (B[:, j] - np.einsum("nl,nl->n", L[:, j, :j], x[:, :j])) / L[:, j, j]
    else:
        for j in range(k - 1, -1, -1):
            x[:, j] = (B[:, j] - np.einsum("nl,nl->n", L[:, j + 1:, j], x[:, j + 1:])) / L[:, j, j]
    return x


def to_dense(X) -> np.ndarray:
    """``X`` as a dense array (a scipy sparse matrix is expanded; anything else goes through np.asarray)."""
    return X.toarray() if sp.issparse(X) else np.asarray(X)


ENTRY_CHUNK = 1 << 16
"""Ratings that a pass of `malt.algorithms.als_blocks` over all of them handles at once (its float32 check, its runs
of whole rows), so its temporaries hold ENTRY_CHUNK floats, never one per rating."""

DOT_BLOCK = 8192
"""Entries per block of `dot_at`: its two (block, k) gathers stay in cache."""


def dot_at(P: np.ndarray, Q: np.ndarray, rows: np.ndarray, cols: np.ndarray, out=None) -> np.ndarray:
    """p_rowsᵀ q_cols at every (row, col) pair, (L,): the entries of the factored matrix P Qᵀ at given positions,
    by blocks of `DOT_BLOCK` pairs (gathering all L rows of P and Q at once writes 2·L·k floats to memory and runs
    4× slower). Rows are gathered by `numpy.take`, which copies whole rows where fancy indexing goes element by
    element (3–4× faster at k = 10: 7·10⁶ entries of two 500,000 × 10 factors, one thread, 0.73 → 0.23 s), into
    two block buffers allocated once per call: a fresh pair per block is a fresh mapping wherever the allocator
    returns large blocks at once (a Dask worker's nanny sets ``MALLOC_TRIM_THRESHOLD_``), and faulting its pages in
    cost the workers of a split pma-map solve more system time than the products themselves.
    ``out``: an (L,) array to write into. Positions outside P's or Q's rows raise IndexError (checked once, as
    the gathers clip). Cost O(L k) time, O(DOT_BLOCK · k) extra memory."""
    P, Q = np.ascontiguousarray(P), np.ascontiguousarray(Q)
    rows, cols = np.asarray(rows), np.asarray(cols)
    out = np.empty(len(rows)) if out is None else out
    for index, factor, name in ((rows, P, "row"), (cols, Q, "column")):
        if len(index) and (index.min() < 0 or index.max() >= factor.shape[0]):
            raise IndexError(f"dot_at: a {name} position outside 0..{factor.shape[0] - 1}")
    size = min(DOT_BLOCK, len(rows))
    left, right = np.empty((size, P.shape[1]), P.dtype), np.empty((size, Q.shape[1]), Q.dtype)
    for start in range(0, len(rows), DOT_BLOCK):
        block = slice(start, start + DOT_BLOCK)
        r, c = rows[block], cols[block]
        k = len(r)  # mode='clip' gathers straight into the buffer (mode='raise' buffers again); checked above
        out[block] = np.einsum("ij,ij->i", np.take(P, r, axis=0, out=left[:k], mode="clip"),
                               np.take(Q, c, axis=0, out=right[:k], mode="clip"))
    return out
