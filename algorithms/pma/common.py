"""Pieces shared by the PMA family: kernel parameters, K1 from the run context (features scaled with
an explicit choice of statistics), K2 estimates, eigenbases (`malt.numerics.eigenbasis`), and the batched
Gaussian conditional of the missing entries of each row.

Notation (dissertation ch. 5): X (n × m) = F + G, columns of F ~ N(0, K1), rows of G ~ N(0, K2),
so Cov(vec X) = K1 ⊕ K2 (eq. 5.12). NaN marks unobserved entries.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.numerics import linalg
from malt.numerics.eigenbasis import Eigenbasis
from malt.errors import DataError
from malt.params import Interval, Options, Params, When, param


class WidthSpec:
    """Allowed RBF widths: the string 'median' (median heuristic) or a positive number."""

    def __contains__(self, value) -> bool:
        if value == "median":
            return True
        try:
            number = float(value)
        except (TypeError, ValueError):
            return False
        return np.isfinite(number) and number > 0

    def __str__(self) -> str:
        return "'median' or a positive number"

    def describe(self) -> str:
        return "'median' or a positive number"


@dataclass(frozen=True, kw_only=True)
class KernelParams(Params):
    """Row kernel K1 (from the dataset's features) and the regularisation shared by the family."""

    k1: str = param("rbf", "row kernel K1: 'rbf' or 'linear' of the features, or 'estimate' it from the "
                    "matrix like K2 (used automatically when the dataset has no features)",
                    Options("rbf", "linear", "estimate"))
    width: str = param("median", "RBF width of K1: 'median' (median pairwise distance) or a number",
                       WidthSpec(),
                       active_when=When(k1="rbf"))
    scale: str = param("standardize", "feature scaling before K1 is built",
                       Options("standardize", "minmax", "none"),
                       active_when=When(k1=Options("rbf", "linear")))
    k1_scale: float = param(1.0, "amplitude multiplying K1 (its diagonal for the RBF kernel)",
                            Interval(0, None, "neither"),
                            active_when=When(k1=Options("rbf", "linear")))
    jitter: float = param(1e-2, "relative diagonal jitter (nugget) added to K1 and to every kernel estimate "
                          "(keeps them positive definite and the prediction stable)", Interval(0, None))


@dataclass(frozen=True, kw_only=True)
class LabelCoding(Params):
    """For the algorithms that also run the multilabel task: how its labels enter the matrix."""

    c: float = param(1.0, "multilabel task only: labels enter as truncated log-odds ±c",
                     Interval(0, None, "neither"),
                     active_when=When(task="multilabel"))


@dataclass(frozen=True, kw_only=True)
class PMAParams(KernelParams):
    kernel_updates: int = param(3, "number of re-estimations of K2 (and of K1 when k1=estimate)",
                                Interval(0, None))


KERNEL_PRODUCER = "pma-kernel@2"
"""Producer of the cached K1 artifacts (shared by every PMA algorithm; bump when their computation changes)."""


def row_kernel(params: KernelParams, ctx, rows: np.ndarray | None, fit_rows: np.ndarray | None = None
               ) -> np.ndarray | None:
    """K1 over dataset ``rows`` from the run context's features (scaled by ``k1_scale`` and jittered),
    or None when it must be estimated (``k1='estimate'`` or no features).

    Feature statistics (standardisation and the median width) come from ``fit_rows`` — positions
    within ``rows`` — or from all of ``rows`` when None. The missing-value task is transductive (every
    row of the matrix is part of the problem and its features are known): all rows, the run
    context's shared kernel. Predicting new rows (multilabel) is inductive: the training rows only.
    """
    if params.k1 == "estimate" or ctx is None or ctx.X is None:
        return None
    width = params.width if params.width == "median" else float(params.width)
    whole = rows is None or (len(rows) == ctx.X.shape[0] and np.array_equal(rows, np.arange(ctx.X.shape[0])))
    if fit_rows is None and whole:
        K = ctx.kernel(params.k1, width=width, scale=params.scale)
    else:
        rows = np.arange(ctx.X.shape[0]) if rows is None else np.asarray(rows)
        spec = {"kind": params.k1, "width": width, "scale": params.scale, "rows": _digest(rows),
                "fit_rows": None if fit_rows is None else _digest(fit_rows)}
        K = ctx.cached("pma-k1", spec, lambda: _feature_kernel(ctx.X, rows, fit_rows, params.k1, width, params.scale),
                       producer=KERNEL_PRODUCER)
    return linalg.add_jitter(K if params.k1_scale == 1.0 else params.k1_scale * K, params.jitter)  # a new array


def _digest(index) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(np.asarray(index, dtype=np.int64)).tobytes()).hexdigest()


def _feature_kernel(X, rows, fit_rows, kind: str, width, scale: str) -> np.ndarray:
    """RBF or linear kernel over ``X[rows]`` with scaling and median width fitted on ``fit_rows``."""
    Z = linalg.standardize(X[rows], scale, fit_rows=fit_rows)
    if kind == "linear":
        return Z @ Z.T
    D2 = linalg.sq_dists(Z)
    if width == "median":
        width = linalg.median_width(D2 if fit_rows is None else D2[np.ix_(fit_rows, fit_rows)])
    return linalg.rbf_from_sq_dists(D2, float(width))


def check_matrix(M) -> tuple[np.ndarray, np.ndarray]:
    """(M as a C-ordered float array — the solvers write through ``ravel`` views — and its observed mask);
    errors a user can act on for bad input."""
    M = np.ascontiguousarray(M, dtype=float)
    if M.ndim != 2:
        raise DataError(f"PMA needs a 2-D matrix, got an array of shape {M.shape}.")
    observed = ~np.isnan(M)
    if np.isinf(M[observed]).any():
        raise DataError("The matrix contains inf; replace it by NaN (unobserved) or a finite value.")
    if not observed.any():
        raise DataError("The matrix has no observed entry; nothing can be learned from it.")
    return M, observed


def check_kernel(K, size: int, name: str) -> np.ndarray:
    K = np.asarray(K, dtype=float)
    if K.shape != (size, size):
        raise DataError(f"{name} must be {size} × {size} to match the matrix, got {K.shape}.")
    if not np.all(np.isfinite(K)):
        raise DataError(f"{name} contains NaN or inf.")
    return 0.5 * (K + K.T)


def pd_eigh(K: np.ndarray, name: str, floor_rel: float = 1e-12, single: bool = False) -> Eigenbasis:
    """Eigenbasis of a symmetric kernel (eigenvalues floored at a tiny relative level); DataError when
    the kernel is clearly not positive semidefinite. ``single``: decomposed in single precision. See
    `malt.numerics.eigenbasis.Eigenbasis.symmetric`."""
    return Eigenbasis.symmetric(K, floor_rel=floor_rel, name=name, single=single)


def second_moments(M: np.ndarray, observed: np.ndarray, axis: int, jitter: float) -> np.ndarray:
    """Initial kernel: pairwise-complete second moments of the columns (axis=0, m × m) or rows (axis=1,
    n × n), projected onto the PSD cone, plus relative jitter."""
    return second_moments_eig(M, observed, axis, jitter)[0]


def second_moments_eig(M: np.ndarray, observed: np.ndarray, axis: int, jitter: float,
                       single: bool = False) -> tuple[np.ndarray, Eigenbasis]:
    """`second_moments` and its `Eigenbasis`, read off the eigendecomposition that projects the moments
    onto the PSD cone (K = U diag(d⁺) Uᵀ + jitter·mean(d⁺)·I has eigenvalues d⁺ + jitter·mean(d⁺)): one
    eigendecomposition instead of two. ``single``: moments and decomposition in single precision."""
    dtype = np.float32 if single else float  # the counts OᵀO are exact in either
    X0 = np.where(observed, M, 0.0).astype(dtype)
    O = observed.astype(dtype)
    if axis == 1:
        X0, O = X0.T, O.T
    S = (X0.T @ X0 / np.maximum(O.T @ O, 1.0)).astype(float)
    moments = Eigenbasis.symmetric(S, floor_rel=0.0, check_psd=False, single=single)  # d⁺ = max(d, 0): PSD projection
    d, U = moments.values, moments.vectors
    if not np.any(d > 0):
        d, U = np.full(S.shape[0], max(float(np.mean(X0 ** 2)), 1e-3)), np.eye(S.shape[0])
    K = linalg.add_jitter((U * d) @ U.T, max(jitter, 1e-10))
    values = d + max(jitter, 1e-10) * max(float(np.mean(d)), 1e-300)
    return K, Eigenbasis(np.maximum(values, 1e-12 * values.max()), U, dense=0.5 * (K + K.T))


def column_means(M: np.ndarray, observed: np.ndarray) -> np.ndarray:
    total = np.where(observed, M, 0.0).sum(axis=0)
    count = observed.sum(axis=0)
    overall = float(M[observed].mean())
    return np.where(count > 0, total / np.maximum(count, 1), overall)


def cov_estimate(Z: np.ndarray, jitter: float, extra: np.ndarray | None = None) -> np.ndarray:
    """K̂ = ZᵀZ / n (+ ``extra``) + relative jitter: the kernel updates of §5.3.1–5.3.2."""
    K = Z.T @ Z / Z.shape[0]
    if extra is not None:
        K = K + extra
    return linalg.add_jitter(0.5 * (K + K.T), max(jitter, 1e-10))


def jittered(K: np.ndarray, jitter: float) -> np.ndarray:
    """A kernel estimate made safely positive definite: symmetrised, plus relative jitter."""
    return linalg.add_jitter(0.5 * (K + K.T), max(jitter, 1e-10))


class RowConditional:
    """Gaussian conditional of the missing entries of each row given its observed ones, for rows ~
    N(0, K) (eqs. 5.20–5.21 and 5.23 jointly over a row): all rows at once.

    With the precision P = K⁻¹ (from K's eigenbasis), the missing part g_u of a row given the observed
    part g_o is N(−P_uu⁻¹ P_uo g_o, P_uu⁻¹). The P_uu blocks of every row (padded to the largest
    number k of missing entries) are Cholesky-factorised once per kernel, O(n k³ + m³); every call
    then costs O(n m²) for P g plus O(n k²) for the batched substitutions. No explicit inverse.
    """

    def __init__(self, K: np.ndarray, missing: np.ndarray, chunk_elems: int = 20_000_000, eig=None):
        self.missing = missing
        n, m = missing.shape
        basis = eig if eig is not None else pd_eigh(K, "K2")
        self.P = basis.function(lambda d: 1.0 / d)
        counts = missing.sum(axis=1)
        self.k = k = int(counts.max()) if n else 0
        if k == 0:
            return
        order = np.argsort(~missing, axis=1, kind="stable")[:, :k]  # missing columns first
        self.valid = np.arange(k)[None, :] < counts[:, None]
        self.idx = np.where(self.valid, order, 0)
        self.L = np.empty((n, k, k))
        step = max(1, chunk_elems // max(k * k, 1))
        eye = np.eye(k)
        for start in range(0, n, step):  # chunks of rows bound the memory of the stacked blocks
            sl = slice(start, start + step)
            idx, valid = self.idx[sl], self.valid[sl]
            A = self.P[idx[:, :, None], idx[:, None, :]] * (valid[:, :, None] & valid[:, None, :])
            A += eye * (~valid)[:, None, :]  # identity on padded slots
            self.L[sl] = np.linalg.cholesky(A)
        rows = np.broadcast_to(np.arange(n)[:, None], self.idx.shape)
        self._at = (rows[self.valid], self.idx[self.valid])

    def mean_and_draw(self, Gobs: np.ndarray, rng: np.random.Generator | None):
        """Conditional mean of the missing entries (n, m; zero elsewhere) and, with ``rng``, a draw.

        Gobs : (n, m) rows with observed entries set and missing entries ignored.
        """
        n, m = self.missing.shape
        mean = np.zeros((n, m))
        draw = None if rng is None else np.zeros((n, m))
        if self.k == 0:
            return mean, draw
        R = np.where(self.missing, 0.0, Gobs) @ self.P  # P_uo g_o lives in the missing columns
        rhs = -np.take_along_axis(R, self.idx, axis=1) * self.valid
        w = linalg.batched_triangular_solve(self.L, rhs)
        mu = linalg.batched_triangular_solve(self.L, w, transpose=True)
        mean[self._at] = mu[self.valid]
        if rng is not None:
            eps = rng.standard_normal(self.idx.shape)
            z = linalg.batched_triangular_solve(self.L, eps, transpose=True)  # L⁻ᵀ ε ~ N(0, P_uu⁻¹)
            draw[self._at] = (mu + z)[self.valid]
        return mean, draw

    def variance(self) -> np.ndarray:
        """Conditional variances of the missing entries, diag(P_uu⁻¹) = squared column norms of L⁻¹
        (forward substitution of the identity, once), as an (n, m) array."""
        n, m = self.missing.shape
        out = np.zeros((n, m))
        if self.k == 0:
            return out
        v = np.zeros(self.idx.shape)
        for j in range(self.k):  # forward substitution of e_j for every row at once
            e = np.zeros(self.idx.shape)
            e[:, j] = 1.0
            col = linalg.batched_triangular_solve(self.L, e)  # column j of L⁻¹
            v[:, j] = np.einsum("nl,nl->n", col, col)  # diag(P_uu⁻¹)_j = ‖L⁻¹ e_j‖²
        out[self._at] = v[self.valid]
        return out


def labels_to_logodds(Y: np.ndarray, c: float) -> np.ndarray:
    """0/1 labels (NaN unknown) to truncated log-odds ±c (§5.3.3)."""
    return np.where(np.isnan(Y), np.nan, c * (2.0 * Y - 1.0))


def stack_for_new_rows(split, c: float):
    """A multilabel split as one matrix: training label rows (±c, NaN unknown) over all-NaN test rows,
    with the dataset rows of both (new rows are predicted as missing entries, §5.4)."""
    Y = labels_to_logodds(np.asarray(split.Y_train, dtype=float), c)
    n_test = split.X_test.shape[0]
    M = np.vstack([Y, np.full((n_test, Y.shape[1]), np.nan)])
    rows = np.concatenate([np.asarray(split.train_index), np.asarray(split.test_index)])
    return M, rows, n_test


@dataclass(frozen=True)
class MatrixInputs:
    """What a PMA algorithm completes: M (n, m) with NaN where unobserved, the dataset ``rows`` of its
    rows, ``n_new`` trailing all-missing new rows (multilabel task), and ``fit_rows`` — the positions
    whose features define the feature scaling (None: all rows, transductive)."""

    M: np.ndarray
    rows: np.ndarray
    n_new: int
    fit_rows: np.ndarray | None


def matrix_inputs(split, params) -> MatrixInputs:
    """MatrixInputs for either task: the new rows of a multilabel split are all-missing rows, and its
    feature statistics come from the training rows only (inductive); the missing task uses all rows."""
    if hasattr(split, "Y_train"):
        M, rows, n_new = stack_for_new_rows(split, params.c)
        return MatrixInputs(M, rows, n_new, np.arange(M.shape[0] - n_new))
    rows = split.rows if split.rows is not None else np.arange(split.M.shape[0])
    return MatrixInputs(np.asarray(split.M, dtype=float), rows, 0, None)


def prediction(values, n_new, variance=None, diagnostics=None):
    """The task's Prediction: the new rows' scores and signs (multilabel) or the completed matrix."""
    from malt.splits import Prediction

    if n_new:
        scores = values[-n_new:]
        return Prediction(scores=scores, labels=(scores > 0).astype(float), diagnostics=diagnostics or {})
    return Prediction(values=values, variance=variance, diagnostics=diagnostics or {})


def row_kernel_eig(params: KernelParams, ctx, rows: np.ndarray | None, fit_rows: np.ndarray | None = None,
                   single: bool = False):
    """(K1, its Eigenbasis) with the eigendecomposition cached in the run context (shared by folds and
    by every PMA algorithm using the same kernel), or (None, None) when K1 is to be estimated.
    ``single``: decomposed in single precision (`pd_eigh`), cached apart from the double one."""
    K1 = row_kernel(params, ctx, rows, fit_rows)
    if K1 is None:
        return None, None
    spec = {"k1": params.k1, "width": params.width, "scale": params.scale, "k1_scale": params.k1_scale,
            "jitter": params.jitter, "rows": _digest(rows if rows is not None else []),
            "fit_rows": None if fit_rows is None else _digest(fit_rows)}
    if single:
        spec["single"] = True

    def compute():
        basis = pd_eigh(K1, "K1", single=single)
        return {"d": basis.values, "U": basis.vectors}

    eig = ctx.cached("pma-k1-eigh", spec, compute, producer=KERNEL_PRODUCER)
    return K1, Eigenbasis(eig["d"], eig["U"], dense=0.5 * (K1 + K1.T))
