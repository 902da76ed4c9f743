"""SoftImpute: nuclear-norm regularised matrix completion (Mazumder, Hastie & Tibshirani, JMLR 2010)
and its alternating-least-squares form for large sparse matrices (Hastie, Mazumder, Lee & Zadeh,
JMLR 2015), the first matrix-completion baseline a reviewer asks for.

Both solve, for the observed entries Ω of X (after removing an offset: column means or biases),

.. math::

    \\min_Z \\; \\tfrac12 \\lVert P_Ω(X - Z) \\rVert_F^2 + λ \\lVert Z \\rVert_*        (MHT 2010, eq. 10)

* ``soft_impute`` — MHT 2010 Algorithm 1: Z ← S_λ(P_Ω(X) + P_Ω⊥(Z)) until the relative change
  ‖Z_new − Z‖²_F / ‖Z‖²_F falls below ``tol``, with S_λ(W) = U diag((d − λ)₊) Vᵀ the soft-thresholded
  SVD (their Lemma 1: the proximal map of λ‖·‖_*). One dense SVD per iteration, O(nm·min(n, m)): for
  matrices that fit in memory densely (the missing task's label matrices).
* ``soft_impute_als`` — HMLZ 2015 Algorithm 3.1 (softImpute-ALS): rank-restricted factors A = U D,
  B = V D of X̂ = A Bᵀ, alternating ridge updates of B and A against the sparse-plus-low-rank
  X* = P_Ω(X − ABᵀ) + ABᵀ, each followed by a small SVD that keeps U, V orthonormal; a final
  soft-thresholded SVD of X* V (their step 5). O(|Ω| r + (n + m) r²) per iteration, nothing dense
  in n × m: for rating matrices. With r at least the rank of the nuclear-norm solution its fixed
  point is that solution (their Theorem 3; tested against ``soft_impute``).
* ``lambda_path`` — the decreasing grid λ_max · ratio^(k/(K−1)) from λ_max = ‖P_Ω(X)‖₂, the smallest
  λ whose solution is Z = 0 (MHT 2010 §5.1); each λ warm-starts from the previous solution.

The registered ``softimpute`` chooses λ / λ_max on that path on a holdout of the *training* entries
(1/``inner_folds`` of them; squared hinge loss on the labels' sign, squared error on real values:
`malt.algorithms.completion`), then walks the path on all training entries down to that fraction of
their own λ_max.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import scipy.sparse as sp

from malt.errors import DataError
from malt.params import Interval, Options, param
from malt.registry import Algorithm, register
from malt.numerics.selection import InnerCVParams, inner_fold_ids
from malt.splits import Prediction, RatingsSplit, RowScores

from .baselines import column_means
from .completion import holdout_loss, observed_entries
from .recommenders import fit_biases

PATH_PATIENCE = 3
"""The λ path stops once the validation loss has risen at this many consecutive λ past its minimum
(the loss along a warm-started nuclear-norm path is unimodal in practice; smaller λ only cost more)."""

DENSE_MAX_ENTRIES = 4_000_000
"""solver='auto' completes matrices with at most this many entries by dense SVDs (``soft_impute``),
larger ones by ``soft_impute_als``."""


# --------------------------------------------------------------------------------------------- #
# the numerics


def svd_soft_threshold(W: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """S_λ(W) = U diag((d − λ)₊) Vᵀ (MHT 2010, Lemma 1) as its factors (U, d, Vt), zero singular values
    dropped. W (n, m); cost one thin SVD, O(nm·min(n, m))."""
    U, d, Vt = np.linalg.svd(W, full_matrices=False)
    d = d - lam
    keep = d > 0
    return U[:, keep], d[keep], Vt[keep]


def lambda_max(M: np.ndarray) -> float:
    """‖P_Ω(X)‖₂ (Ω: the non-NaN entries of M): for λ ≥ this, Z = 0 solves the problem."""
    Xo = np.where(np.isnan(M), 0.0, M)
    return float(np.linalg.norm(Xo, 2)) if Xo.size else 0.0


def soft_impute(M: np.ndarray, lam: float, *, Z: np.ndarray | None = None, max_iter: int = 100,
                tol: float = 1e-4) -> dict:
    """MHT 2010 Algorithm 1 at one λ: Z ← S_λ(P_Ω(X) + P_Ω⊥(Z)), warm-started at ``Z``.

    Parameters
    ----------
    M : (n, m) with NaN at unobserved entries
    Z : (n, m) warm start (the solution at a larger λ), zeros when None
    tol : stop when ‖Z_new − Z‖²_F / ‖Z‖²_F < tol (their step 2(a)ii)

    Returns dict with 'Z' (n, m), 'rank', 'iterations'. Cost: one thin SVD per iteration.
    """
    M = np.asarray(M, dtype=float)
    observed = ~np.isnan(M)
    Xo = np.where(observed, M, 0.0)
    Z = np.zeros_like(Xo) if Z is None else np.array(Z, dtype=float)
    rank, it = 0, 0
    for it in range(1, max_iter + 1):
        U, d, Vt = svd_soft_threshold(np.where(observed, Xo, Z), lam)
        Z_new = (U * d) @ Vt
        change = float(np.sum((Z_new - Z) ** 2)) / max(float(np.sum(Z ** 2)), 1e-300)
        Z, rank = Z_new, d.size
        if change < tol:
            break
    return {"Z": Z, "rank": rank, "iterations": it}


def lambda_path(lam_max: float, n_lambdas: int, ratio: float) -> np.ndarray:
    """n_lambdas values from lam_max down to ratio · lam_max, evenly spaced on a log scale."""
    return lam_max * np.geomspace(1.0, ratio, n_lambdas)


@dataclass
class LowRank:
    """Z = U diag(d) Vᵀ with orthonormal U (n, r) and V (m, r)."""

    U: np.ndarray
    d: np.ndarray
    V: np.ndarray

    def at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Z at the entries (rows[k], cols[k]), O(len · r)."""
        return np.einsum("ij,ij->i", self.U[rows] * self.d, self.V[cols])

    def dense(self, rows: np.ndarray | None = None) -> np.ndarray:
        U = self.U if rows is None else self.U[rows]
        return (U * self.d) @ self.V.T

    @property
    def rank(self) -> int:
        return int(np.count_nonzero(self.d > 0))


def _orthonormal(rng: np.random.Generator, n: int, r: int) -> np.ndarray:
    Q, _ = np.linalg.qr(rng.standard_normal((n, r)))
    return Q


def _low_rank_frobenius_change(U0, d0, V0, U1, d1, V1) -> float:
    """‖U0 d0 V0ᵀ − U1 d1 V1ᵀ‖²_F / ‖U0 d0 V0ᵀ‖²_F from the factors, O((n + m) r²): with thin QRs
    [U0, U1] = Qu Ru and [V0, V1] = Qv Rv the difference is Qu (Ru diag(d0, −d1) Rvᵀ) Qvᵀ, whose norm is the
    2r × 2r core's. Expanding ‖A‖² + ‖B‖² − 2⟨A, B⟩ instead cancels to rounding near convergence (a floor
    ~1e-16 relative, below which the change came out as any number, negative ones included, and a tighter
    tol stopped at random)."""
    Ru = np.linalg.qr(np.hstack([U0, U1]), mode="r")
    Rv = np.linalg.qr(np.hstack([V0, V1]), mode="r")
    core = (Ru * np.concatenate([d0, -d1])) @ Rv.T
    return float(np.sum(core * core)) / max(float(d0 @ d0), 1e-300)


def soft_impute_als(rows: np.ndarray, cols: np.ndarray, y: np.ndarray, shape: tuple[int, int], lam: float,
                    rank: int, *, start: LowRank | None = None, rng: np.random.Generator | None = None,
                    max_iter: int = 100, tol: float = 1e-4) -> tuple[LowRank, int]:
    """HMLZ 2015 Algorithm 3.1 (softImpute-ALS) on the observed entries (rows[k], cols[k]) = y[k].

    With A = U D, B = V D (D = diag(√σ)) and X* = P_Ω(X − ABᵀ) + ABᵀ (sparse plus low rank):

    * B̃ = X*ᵀ U D (D² + λI)⁻¹, then the SVD B̃ D = Ṽ Σ Rᵀ gives V ← Ṽ, D² ← Σ, U ← U R;
    * Ã = X* V D (D² + λI)⁻¹, then Ã D = Ũ Σ Rᵀ gives U ← Ũ, D² ← Σ, V ← V R;

    until ‖ABᵀ_new − ABᵀ‖²_F / ‖ABᵀ‖²_F < tol; then (step 5) the SVD X* V = Ũ σ Rᵀ gives the solution
    Ũ diag((σ − λ)₊) (V R)ᵀ. ``start`` warm-starts from a previous λ's solution (its factors padded to
    ``rank`` by random orthonormal directions with D = 0). Each X* product is a sparse product with the
    residual on Ω plus r × r algebra: O(|Ω| r + (n + m) r²) per iteration.

    Returns (the solution as a `LowRank`, iterations).
    """
    n, m = shape
    rank = max(1, min(int(rank), n, m))
    rng = np.random.default_rng(0) if rng is None else rng
    if start is None or start.U.shape[1] == 0:
        U, V, dd = _orthonormal(rng, n, rank), np.zeros((m, rank)), np.ones(rank)
    else:
        k = min(start.U.shape[1], rank)
        U = np.linalg.qr(np.hstack([start.U[:, :k], rng.standard_normal((n, rank - k))]))[0]
        V = np.linalg.qr(np.hstack([start.V[:, :k], rng.standard_normal((m, rank - k))]))[0]
        U[:, :k], V[:, :k] = start.U[:, :k], start.V[:, :k]
        dd = np.concatenate([np.maximum(start.d[:k], 0.0), np.zeros(rank - k)])  # D² = σ
        dd = np.where(dd > 0, dd, 1e-3 * max(float(dd.max(initial=0.0)), 1.0))
    pattern = sp.csr_matrix((np.ones_like(y), (rows, cols)), shape=shape)
    order = np.lexsort((cols, rows))  # CSR order of (rows, cols): residual values go straight into .data
    if pattern.nnz != y.size:
        raise DataError("soft_impute_als: the observed entries contain duplicates; sum them first.")
    r_sorted, c_sorted, y_sorted = rows[order], cols[order], y[order]

    def residual(U, dd, V) -> sp.csr_matrix:
        S = pattern.copy()
        S.data = y_sorted - np.einsum("ij,ij->i", U[r_sorted] * dd, V[c_sorted])
        return S

    it = 0
    for it in range(1, max_iter + 1):
        U0, d0, V0 = U, dd, V
        d = np.sqrt(dd)
        S = residual(U, dd, V)
        B = (S.T @ U + V * dd) * (d / (dd + lam))  # X*ᵀ U D (D² + λI)⁻¹
        Vn, s, Rt = np.linalg.svd(B * d, full_matrices=False)
        V, dd, U = Vn, s, U @ Rt.T
        d = np.sqrt(dd)
        S = residual(U, dd, V)
        A = (S @ V + U * dd) * (d / (dd + lam))  # X* V D (D² + λI)⁻¹
        Un, s, Rt = np.linalg.svd(A * d, full_matrices=False)
        U, dd, V = Un, s, V @ Rt.T
        if _low_rank_frobenius_change(U0, d0, V0, U, dd, V) < tol:
            break
    S = residual(U, dd, V)
    Ut, sigma, Rt = np.linalg.svd(S @ V + U * dd, full_matrices=False)  # X* V
    return LowRank(Ut, np.maximum(sigma - lam, 0.0), V @ Rt.T), it


def sparse_lambda_max(rows, cols, y, shape) -> float:
    """‖P_Ω(X)‖₂ of a sparse set of observed entries (one Lanczos singular value)."""
    from scipy.sparse.linalg import svds

    X = sp.csr_matrix((y, (rows, cols)), shape=shape)
    if min(shape) <= 2:
        return float(np.linalg.norm(X.toarray(), 2))
    return float(svds(X, k=1, return_singular_vectors=False, random_state=0)[0])


# --------------------------------------------------------------------------------------------- #
# the path over λ on observed triplets (both solvers)


class Completion:
    """Observed entries (rows, cols, y) of an (n, m) matrix, completed along a λ path by either solver.

    ``path(lambdas)`` yields (λ, estimate) where estimate(rows, cols) evaluates the solution at any
    entries; every λ warm-starts from the previous one."""

    def __init__(self, rows, cols, y, shape, *, solver: str, rank: int, max_iter: int, tol: float,
                 rng: np.random.Generator):
        self.rows, self.cols, self.y, self.shape = rows, cols, y, shape
        self.solver, self.rank, self.max_iter, self.tol, self.rng = solver, rank, max_iter, tol, rng
        self.iterations: list[int] = []
        self.ranks: list[int] = []

    def lambda_max(self) -> float:
        if self.solver == "svd":
            return lambda_max(self._dense())
        return sparse_lambda_max(self.rows, self.cols, self.y, self.shape)

    def _dense(self) -> np.ndarray:
        M = np.full(self.shape, np.nan)
        M[self.rows, self.cols] = self.y
        return M

    def path(self, lambdas) -> Iterator[tuple[float, object]]:
        if self.solver == "svd":
            M, Z = self._dense(), None
            for lam in lambdas:
                fit = soft_impute(M, lam, Z=Z, max_iter=self.max_iter, tol=self.tol)
                Z = fit["Z"]
                self.iterations.append(fit["iterations"])
                self.ranks.append(fit["rank"])
                yield lam, _DenseEstimate(Z)
        else:
            state = None
            for lam in lambdas:
                state, it = soft_impute_als(self.rows, self.cols, self.y, self.shape, lam, self.rank, start=state,
                                            rng=self.rng, max_iter=self.max_iter, tol=self.tol)
                self.iterations.append(it)
                self.ranks.append(state.rank)
                yield lam, state


class _DenseEstimate:
    def __init__(self, Z):
        self.Z = Z

    def at(self, rows, cols):
        return self.Z[rows, cols]

    def dense(self, rows=None):
        return self.Z if rows is None else self.Z[rows]


def choose_lambda(rows, cols, y, shape, val: np.ndarray, center: str, kind: str, n_lambdas: int, ratio: float,
                  **solver) -> tuple[float, np.ndarray]:
    """The λ / λ_max of the path with the smallest `holdout_loss` on the held-out training entries ``val``
    (indices into the triplets) when the offsets and the path come from the others; the losses (NaN
    where the path stopped early, `PATH_PATIENCE`)."""
    fit = np.setdiff1d(np.arange(y.size), val)
    row_off, col_off = offsets(rows[fit], cols[fit], y[fit], shape, center)
    completion = Completion(rows[fit], cols[fit], y[fit] - row_off[rows[fit]] - col_off[cols[fit]], shape, **solver)
    lam_max = completion.lambda_max()
    lambdas = lambda_path(lam_max, n_lambdas, ratio)
    losses = np.full(len(lambdas), np.nan)
    best, rising = 0, 0
    base = row_off[rows[val]] + col_off[cols[val]]
    for k, (_, estimate) in enumerate(completion.path(lambdas)):
        losses[k] = holdout_loss(base + estimate.at(rows[val], cols[val]), y[val], kind)
        if losses[k] < losses[best]:
            best, rising = k, 0
        elif k > best:
            rising += 1
            if rising >= PATH_PATIENCE:
                break
    return float(lambdas[best] / lam_max) if lam_max > 0 else 1.0, losses


# --------------------------------------------------------------------------------------------- #
# the registered algorithm


@dataclass(frozen=True, kw_only=True)
class SoftImputeParams(InnerCVParams):
    select: str = param("inner-cv", "'inner-cv': choose λ / λ_max on the path on a holdout of 1/inner_folds of the "
                        "training entries (squared hinge loss on the labels' sign, squared error on real values), "
                        "then walk the path on all of them; 'none': use lam_ratio",
                        Options("none", "inner-cv"))
    lam_ratio: float = param(0.1, "λ as a fraction of λ_max = ‖P_Ω(X)‖₂, the smallest λ whose solution is zero "
                             "(select=none)", Interval(0, 1, "right"))
    n_lambdas: int = param(20, "length of the λ path from λ_max down to path_ratio · λ_max (log-spaced)",
                           Interval(2, None))
    path_ratio: float = param(1e-3, "smallest λ of the path as a fraction of λ_max", Interval(0, 1, "neither"))
    solver: str = param("auto", "'svd': MHT 2010 Algorithm 1 with dense SVDs; 'als': softImpute-ALS (HMLZ 2015), "
                        "sparse, rank-restricted; 'auto': svd up to 4 million entries on the missing task, else als",
                        Options("auto", "svd", "als"))
    rank: int = param(50, "solver als: largest rank of the factors (the solution is the nuclear-norm one while "
                      "its rank stays below this); a cap, so one above the smaller side is clamped to it, with "
                      "a notice in the diagnostics", Interval(1, None), max_from="min_side", clamp=True)
    center: str = param("auto", "offset removed before completing: observed 'column' means, regularised row + "
                        "column 'biases' (Koren 2010; penalties 15 and 10), or 'none'; 'auto': column means on the "
                        "missing task, biases on the ratings task", Options("auto", "column", "biases", "none"))
    max_iter: int = param(100, "maximum iterations at each λ", Interval(1, None))
    tol: float = param(1e-4, "stop at a λ when the relative squared change of the solution falls below this",
                       Interval(0, None, "neither"))


def offsets(rows, cols, y, shape, center: str) -> tuple[np.ndarray, np.ndarray]:
    """(row offset (n,), column offset (m,)) removed before completion."""
    n, m = shape
    if center == "column":
        M = np.full(shape, np.nan)
        M[rows, cols] = y
        return np.zeros(n), column_means(M)
    if center == "biases":
        b = fit_biases(sp.coo_matrix((y, (rows, cols)), shape=shape))
        return b.user, b.mu + b.item
    return np.zeros(n), np.zeros(m)


@register
class SoftImpute(Algorithm):
    """SoftImpute: nuclear-norm matrix completion (Mazumder, Hastie & Tibshirani 2010; ALS form of Hastie et al.
    2015), λ chosen on its path by held-out training entries."""

    name = "softimpute"
    tasks = frozenset({"missing", "ratings"})
    Params = SoftImputeParams
    version = "1"

    def run(self, split, params, ctx):
        ratings = isinstance(split, RatingsSplit)
        rows, cols, y, shape, kind = observed_entries(split, "SoftImpute")
        center = params.center if params.center != "auto" else ("biases" if ratings else "column")
        row_off, col_off = offsets(rows, cols, y, shape, center)
        r = y - row_off[rows] - col_off[cols]
        solver = params.solver
        if solver == "auto":
            solver = "als" if ratings or shape[0] * shape[1] > DENSE_MAX_ENTRIES else "svd"
        options = dict(solver=solver, rank=params.rank, max_iter=params.max_iter, tol=params.tol, rng=ctx.rng)
        lam_max = Completion(rows, cols, r, shape, **options).lambda_max()
        diagnostics = {"lambda_max": lam_max}
        ratio = params.lam_ratio
        if params.select == "inner-cv":
            ids = inner_fold_ids(y.size, params.inner_folds, ctx.rng)
            ctx.progress(0.0, "λ path on the inner training entries")
            ratio, losses = choose_lambda(rows, cols, y, shape, np.flatnonzero(ids == 0), center, kind,
                                          params.n_lambdas, params.path_ratio, **options)
            diagnostics.update(selected_lam_ratio=ratio, inner_cv_score=float(np.nanmin(losses)),
                               inner_cv_losses=[round(float(v), 5) for v in losses if np.isfinite(v)])
        lambdas = lambda_path(lam_max, params.n_lambdas, params.path_ratio)
        lambdas = np.append(lambdas[lambdas > ratio * lam_max * (1 + 1e-12)], ratio * lam_max)
        ctx.progress(0.5, "λ path on all training entries")
        completion = Completion(rows, cols, r, shape, **options)
        for _, estimate in completion.path(lambdas):
            pass
        diagnostics.update(lam=float(lambdas[-1]), rank=completion.ranks[-1], iterations=completion.iterations[-1],
                           path_iterations=int(sum(completion.iterations)), solver=solver)
        if ratings:
            urows = np.unique(split.test_rows)
            values = row_off[split.test_rows] + col_off[split.test_cols] + estimate.at(split.test_rows,
                                                                                        split.test_cols)
            scores = RowScores(urows, col_off.size,
                               lambda r: row_off[r][:, None] + col_off[None, :] + estimate.dense(r))
            return Prediction(values=values, scores=scores, diagnostics=diagnostics)
        values = row_off[:, None] + col_off[None, :] + estimate.dense()
        return Prediction(values=values, diagnostics=diagnostics)
