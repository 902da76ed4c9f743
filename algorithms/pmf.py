"""Probabilistic matrix factorisation (Salakhutdinov & Mnih, NIPS 2007): M ≈ μ + U Vᵀ with Gaussian
priors on the factors, fitted as the MAP estimate

    min_{U,V} Σ_{(i,j) observed} (m_ij − μ_j − u_iᵀ v_j)² + λ (‖U‖²_F + ‖V‖²_F)

(λ = σ²/σ_U² = σ²/σ_V² in the paper's notation). The paper used gradient descent with momentum; here
the same objective is minimised by alternating least squares, each half-step an exact ridge solve for
all rows (columns) at once: O(|obs| r² + (n + m) r³) per iteration, batched with no loop over entries.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.errors import DataError
from malt.params import Interval, Options, Params, param
from malt.registry import Algorithm, register
from malt.splits import Prediction, RatingsSplit


def _ridge_rows(R: np.ndarray, O: np.ndarray, V: np.ndarray, reg: float) -> np.ndarray:
    """For every row i: argmin_u Σ_j O_ij (R_ij − uᵀ v_j)² + reg ‖u‖², solved in one batch."""
    r = V.shape[1]
    A = np.einsum("ij,jk,jl->ikl", O, V, V) + reg * np.eye(r)
    b = (O * R) @ V
    return np.linalg.solve(A, b[..., None])[..., 0]


def pmf_fit(M, rank: int = 3, reg: float = 10.0, *, iterations: int = 100, tol: float = 1e-6,
            center: str = "column", rng: np.random.Generator | None = None, init_scale: float = 0.1) -> dict:
    """Fit PMF to the observed (non-NaN) entries of M by alternating ridge regressions.

    Parameters
    ----------
    M : (n, m) array, NaN where unobserved
    rank : number of latent factors r
    reg : λ, the ridge penalty on both factor matrices (ratio of noise to prior variance)
    center : 'column' (subtract observed column means μ_j), 'global' (one mean) or 'none'
    tol : stop when the relative decrease of the objective falls below tol

    Returns
    -------
    dict with 'values' (n, m) = μ + U Vᵀ, 'U' (n, r), 'V' (m, r), 'offset' (m,), 'objective' (list).
    """
    M = np.asarray(M, dtype=float)
    if M.ndim != 2:
        raise DataError(f"PMF needs a 2-D matrix, got shape {M.shape}.")
    observed = ~np.isnan(M)
    if not observed.any():
        raise DataError("The matrix has no observed entry; PMF has nothing to fit.")
    n, m = M.shape
    O = observed.astype(float)
    if center == "column":
        count = O.sum(0)
        overall = float(M[observed].mean())
        offset = np.where(count > 0, np.where(observed, M, 0.0).sum(0) / np.maximum(count, 1), overall)
    elif center == "global":
        offset = np.full(m, float(M[observed].mean()))
    else:
        offset = np.zeros(m)
    R = np.where(observed, M - offset[None, :], 0.0)
    rng = rng if rng is not None else np.random.default_rng(0)
    U = init_scale * rng.standard_normal((n, rank))
    V = init_scale * rng.standard_normal((m, rank))
    objective = []
    for _ in range(iterations):
        U = _ridge_rows(R, O, V, reg)
        V = _ridge_rows(R.T, O.T, U, reg)
        resid = O * (R - U @ V.T)
        objective.append(float((resid ** 2).sum() + reg * ((U ** 2).sum() + (V ** 2).sum())))
        if len(objective) > 1 and objective[-2] - objective[-1] <= tol * max(objective[-2], 1e-300):
            break
    return {"values": offset[None, :] + U @ V.T, "U": U, "V": V, "offset": offset, "objective": objective}


def _ridge_sparse(rows, cols, r, V, n, reg):
    """For every row i: argmin_u Σ_{j:(i,j)∈L} (r_ij − uᵀ v_j)² + reg ‖u‖², batched over rows (COO)."""
    k = V.shape[1]
    Vc = V[cols]
    A = np.zeros((n, k, k))
    np.add.at(A, rows, Vc[:, :, None] * Vc[:, None, :])
    A += reg * np.eye(k)
    b = np.zeros((n, k))
    np.add.at(b, rows, r[:, None] * Vc)
    return np.linalg.solve(A, b[..., None])[..., 0]


def pmf_fit_sparse(train, rank: int = 3, reg: float = 10.0, *, iterations: int = 100, tol: float = 1e-6,
                   center: str = "column", rng: np.random.Generator | None = None, init_scale: float = 0.1) -> dict:
    """PMF on a sparse COO matrix of observed entries (the `ratings` task): the same objective and
    alternating ridge solves as :func:`pmf_fit`, O(L r² + (n + m) r³) per iteration, never dense.

    Returns dict with 'U', 'V', 'offset' (m,) and 'objective'; the estimate is offset_j + u_iᵀ v_j
    (rows with no training entry get u_i = 0, i.e. the column offsets).
    """
    import scipy.sparse as sp
    T = sp.coo_matrix(train)
    rows, cols, y = T.row, T.col, T.data.astype(float)
    if y.size == 0:
        raise DataError("The training matrix has no observed entry; PMF has nothing to fit.")
    n, m = T.shape
    overall = float(y.mean())
    if center == "column":
        cnt = np.bincount(cols, minlength=m)
        offset = np.where(cnt > 0, np.bincount(cols, y, minlength=m) / np.maximum(cnt, 1), overall)
    elif center == "global":
        offset = np.full(m, overall)
    else:
        offset = np.zeros(m)
    r = y - offset[cols]
    rng = rng if rng is not None else np.random.default_rng(0)
    U = init_scale * rng.standard_normal((n, rank))
    V = init_scale * rng.standard_normal((m, rank))
    objective = []
    for _ in range(iterations):
        U = _ridge_sparse(rows, cols, r, V, n, reg)
        V = _ridge_sparse(cols, rows, r, U, m, reg)
        e = r - np.einsum("ij,ij->i", U[rows], V[cols])
        objective.append(float(e @ e + reg * ((U ** 2).sum() + (V ** 2).sum())))
        if len(objective) > 1 and objective[-2] - objective[-1] <= tol * max(objective[-2], 1e-300):
            break
    return {"U": U, "V": V, "offset": offset, "objective": objective}


@dataclass(frozen=True, kw_only=True)
class PMFParams(Params):
    rank: int = param(3, "number of latent factors", Interval(1, None))
    reg: float = param(10.0, "ridge penalty λ on both factor matrices (noise / prior variance)",
                       Interval(0, None, "neither"))
    iterations: int = param(100, "maximum alternating least-squares iterations", Interval(1, None))
    tol: float = param(1e-6, "stop when the objective's relative decrease falls below this", Interval(0, None))
    center: str = param("column", "offset removed before factorising: observed 'column' means, one 'global' "
                        "mean or 'none'", Options("column", "global", "none"))


@register
class PMF(Algorithm):
    """PMF: probabilistic matrix factorisation (Salakhutdinov & Mnih 2007), MAP by alternating least squares."""

    name = "pmf"
    tasks = frozenset({"missing", "ratings"})
    Params = PMFParams
    version = "1"

    def run(self, split, params, ctx):
        if isinstance(split, RatingsSplit):
            fit = pmf_fit_sparse(split.train, params.rank, params.reg, iterations=params.iterations,
                                 tol=params.tol, center=params.center, rng=ctx.rng)
            U, V, off = fit["U"], fit["V"], fit["offset"]
            values = np.einsum("ij,ij->i", U[split.test_rows], V[split.test_cols]) + off[split.test_cols]
            urows = np.unique(split.test_rows)
            return Prediction(values=values, scores=U[urows] @ V.T + off[None, :],
                              diagnostics={"iterations": len(fit["objective"]), "objective": fit["objective"][-1]})
        fit = pmf_fit(split.M, params.rank, params.reg, iterations=params.iterations, tol=params.tol,
                      center=params.center, rng=ctx.rng)
        return Prediction(values=fit["values"], diagnostics={"iterations": len(fit["objective"]),
                                                             "objective": fit["objective"][-1]})
