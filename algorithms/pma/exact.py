"""Exact Gaussian prediction of hidden entries: PMA-EXACT (covariance K1 ⊕ K2, eq. 5.12), intrinsic
LMC (K1 ⊗ K2) and single GPs over rows or columns (GPR-D1 / GPR-D2), dissertation §5.3.3.

The hidden entries' posterior mean is Σ_HO (Σ_OO + σ²I)⁻¹ x_O. The system is solved by conjugate
gradients whose mat-vecs use the Kronecker structure — (K1 ⊕ K2) vec V = vec(K1 V + V K2),
(K1 ⊗ K2) vec V = vec(K1 V K2) — restricted to the observed entries, so nothing of size nm × nm is
ever formed: O(nm(n + m)) per iteration, O(nm) memory beyond the kernels. The preconditioner is the
inverse of the full (unmasked) covariance, diagonal in the eigenbasis of (K1, K2).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from malt.errors import InvalidParameterError
from malt.params import Interval, Options, param
from malt.registry import Algorithm, register
from malt.splits import Prediction

from .common import (KernelParams, PMAParams, check_kernel, check_matrix, cov_estimate, pd_eigh,
                     row_kernel_eig, second_moments, stack_for_new_rows)

CG_TOL = 1e-6
CG_MAX_ITER = 2000


class CGConvergenceWarning(UserWarning):
    """Conjugate gradients stopped at max_iter before reaching the tolerance."""


def kron_sum_matvec(K1: np.ndarray, K2: np.ndarray, V: np.ndarray) -> np.ndarray:
    """(K1 ⊕ K2) vec(V) = vec(K1 V + V K2) for V of shape (n, m) (column-major vec, eq. 5.12)."""
    return K1 @ V + V @ K2


def kron_prod_matvec(K1: np.ndarray, K2: np.ndarray, V: np.ndarray) -> np.ndarray:
    """(K2 ⊗ K1) vec(V) = vec(K1 V K2): the intrinsic-LMC covariance Cov(x_ij, x_lk) = K1(i,l) K2(j,k)."""
    return K1 @ V @ K2


def masked_pcg(matvec, B: np.ndarray, observed: np.ndarray, precondition=None, *, tol: float = CG_TOL,
               max_iter: int = CG_MAX_ITER, x0: np.ndarray | None = None):
    """Solve (S_OO) a = b_O by preconditioned conjugate gradients, S given by ``matvec`` on (n, m)
    arrays and O the ``observed`` mask; unobserved entries of the solution are zero.

    Returns (A, iterations, converged).
    """
    mask = observed.astype(float)
    b = B * mask
    norm_b = np.linalg.norm(b)
    A = np.zeros_like(b) if x0 is None else x0 * mask
    if norm_b == 0:
        return A, 0, True
    r = b - matvec(A) * mask if x0 is not None else b.copy()
    z = precondition(r) * mask if precondition is not None else r
    p = z.copy()
    rz = float(np.vdot(r, z))
    for it in range(1, max_iter + 1):
        Ap = matvec(p) * mask
        alpha = rz / float(np.vdot(p, Ap))
        A += alpha * p
        r -= alpha * Ap
        if np.linalg.norm(r) <= tol * norm_b:
            return A, it, True
        z = precondition(r) * mask if precondition is not None else r
        rz_new = float(np.vdot(r, z))
        p = z + (rz_new / rz) * p
        rz = rz_new
    return A, max_iter, False


def gaussian_conditional_mean(M: np.ndarray, K1: np.ndarray, K2: np.ndarray, *, covariance: str = "sum",
                              noise: float = 0.0, eig1=None, eig2=None, tol: float = CG_TOL,
                              max_iter: int = CG_MAX_ITER, x0=None):
    """Posterior mean E[X | X_O] under vec X ~ N(0, Σ), Σ = K1 ⊕ K2 ('sum', PMA, eq. 5.12) or
    K1 ⊗ K2 ('product', intrinsic LMC), observations with noise variance ``noise``.

    Returns (Xhat, A, info): Xhat = Σ_{·O} A with A = (Σ_OO + noise I)⁻¹ x_O padded with zeros.
    For 'sum', F = K1 A and G = A K2 are E[F | X_O] and E[G | X_O].
    """
    observed = ~np.isnan(M)
    X0 = np.where(observed, M, 0.0)
    if covariance == "sum":
        def matvec(V):
            return kron_sum_matvec(K1, K2, V) + noise * V
    elif covariance == "product":
        def matvec(V):
            return kron_prod_matvec(K1, K2, V) + noise * V
    else:
        raise InvalidParameterError(f"covariance must be 'sum' or 'product', got {covariance!r}")
    d1, U1 = eig1 if eig1 is not None else pd_eigh(K1, "K1")
    d2, U2 = eig2 if eig2 is not None else pd_eigh(K2, "K2")
    spectrum = d1[:, None] + d2[None, :] if covariance == "sum" else d1[:, None] * d2[None, :]
    inv_spectrum = 1.0 / (spectrum + noise + 1e-12 * spectrum.max())

    def precondition(R):  # inverse of the full covariance: elementwise in the eigenbasis
        return U1 @ ((U1.T @ R @ U2) * inv_spectrum) @ U2.T

    A, iterations, converged = masked_pcg(matvec, X0, observed, precondition, tol=tol, max_iter=max_iter,
                                          x0=x0)
    if not converged:
        warnings.warn(f"conjugate gradients reached max_iter={max_iter} before the tolerance {tol:g}; "
                      "raise max_iter or noise", CGConvergenceWarning, stacklevel=2)
    Xhat = kron_sum_matvec(K1, K2, A) if covariance == "sum" else kron_prod_matvec(K1, K2, A)
    return Xhat, A, {"iterations": iterations, "converged": converged}


def pma_exact(M, K1=None, K2=None, *, noise: float = 1e-4, kernel_updates: int = 3, jitter: float = 1e-2,
              eig1=None, tol: float = CG_TOL, max_iter: int = CG_MAX_ITER) -> dict:
    """PMA-EXACT: exact prediction of the unobserved entries of M under Cov(vec X) = K1 ⊕ K2 + noise·I.

    K2 (and K1 when None) is estimated by this method itself: starting from the pairwise-complete
    second moments of the columns (rows), each of ``kernel_updates`` rounds solves the exact posterior
    and sets K2 = ĜᵀĜ / n (K1 = F̂F̂ᵀ / m) from the posterior means Ĝ = A K2, F̂ = K1 A — the
    point-estimate update of §5.3.2 applied to the exact posterior.

    Parameters
    ----------
    M : (n, m) array, NaN where unobserved
    K1 : (n, n) row kernel or None (estimated)
    K2 : (m, m) column kernel or None (estimated)

    Returns
    -------
    dict with 'values' (n, m) posterior means (observed entries smoothed by the noise), 'F', 'G',
    'K1', 'K2', 'iterations' (CG iterations per round).
    """
    M, observed = check_matrix(M)
    n, m = M.shape
    estimate_k1 = K1 is None
    estimate_k2 = K2 is None
    K1 = second_moments(M, observed, 1, jitter) if estimate_k1 else check_kernel(K1, n, "K1")
    K2 = second_moments(M, observed, 0, jitter) if estimate_k2 else check_kernel(K2, m, "K2")
    if estimate_k1:
        eig1 = None
    iterations = []
    A = None
    for round_ in range(kernel_updates + 1):
        Xhat, A, info = gaussian_conditional_mean(M, K1, K2, covariance="sum", noise=noise, eig1=eig1, tol=tol,
                                                  max_iter=max_iter, x0=A)
        iterations.append(info["iterations"])
        if round_ == kernel_updates:
            break
        if estimate_k2:
            K2 = cov_estimate(A @ K2, jitter)
        if estimate_k1:
            K1 = cov_estimate((K1 @ A).T, jitter)
            eig1 = None
    return {"values": Xhat, "F": K1 @ A, "G": A @ K2, "K1": K1, "K2": K2, "iterations": iterations}


def ilmc(M, K1=None, K2=None, *, noise: float = 1e-4, kernel_updates: int = 3, jitter: float = 1e-2,
         eig1=None, tol: float = CG_TOL, max_iter: int = CG_MAX_ITER) -> dict:
    """Intrinsic LMC: exact prediction with Cov(vec X) = K1 ⊗ K2 + noise·I (the separable model).

    As in the dissertation (§5.3.3, "K2 as obtained" by the PMA fit), K2 (and K1 when None) come from
    the Kronecker-sum fit of `pma_exact`; only the prediction step uses the Kronecker product.
    """
    fit = pma_exact(M, K1, K2, noise=noise, kernel_updates=kernel_updates, jitter=jitter, eig1=eig1, tol=tol,
                    max_iter=max_iter)
    Xhat, A, info = gaussian_conditional_mean(np.asarray(M, dtype=float), fit["K1"], fit["K2"],
                                              covariance="product", noise=noise,
                                              eig1=eig1 if K1 is not None else None, tol=tol, max_iter=max_iter)
    return {"values": Xhat, "K1": fit["K1"], "K2": fit["K2"], "iterations": fit["iterations"] + [info["iterations"]]}


def gpr(M, K=None, *, axis: str = "rows", noise: float = 0.1, jitter: float = 1e-2, eig=None,
        tol: float = CG_TOL, max_iter: int = CG_MAX_ITER) -> dict:
    """A single GP (GPR-D1 / GPR-D2 of §5.3.3).

    axis='rows': rows are the data points; every column is an independent GP over rows with kernel K
    (n × n, the row kernel K1; estimated from the pairwise-complete second moments of the rows when
    None). axis='columns': columns are the data points; every row is an independent GP over columns
    with K (m × m; estimated likewise when None). Covariance K1 ⊕ 0 or 0 ⊕ K2 plus noise.
    """
    M, observed = check_matrix(M)
    n, m = M.shape
    if axis == "rows":
        K1 = second_moments(M, observed, 1, jitter) if K is None else check_kernel(K, n, "K1")
        K2 = np.zeros((m, m))
        eig2 = (np.zeros(m), np.eye(m))
        eig1 = eig if K is not None else None
    elif axis == "columns":
        K2 = second_moments(M, observed, 0, jitter) if K is None else check_kernel(K, m, "K2")
        K1 = np.zeros((n, n))
        eig1 = (np.zeros(n), np.eye(n))
        eig2 = None
    else:
        raise InvalidParameterError(f"axis must be 'rows' or 'columns', got {axis!r}")
    if noise <= 0:
        raise InvalidParameterError("gpr needs noise > 0 (a single GP's kernel may be singular)")
    Xhat, A, info = gaussian_conditional_mean(M, K1, K2, covariance="sum", noise=noise, eig1=eig1, eig2=eig2,
                                              tol=tol, max_iter=max_iter)
    return {"values": Xhat, "iterations": info["iterations"]}


# ---- registered algorithms -------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ExactParams(PMAParams):
    noise: float = param(1e-4, "observation noise variance added to the observed entries (also keeps the "
                         "conjugate-gradient system well conditioned)", Interval(0, None))
    tol: float = param(CG_TOL, "relative residual at which conjugate gradients stop", Interval(0, 1, "neither"))
    max_iter: int = param(CG_MAX_ITER, "maximum conjugate-gradient iterations per solve", Interval(1, None))


def _missing_inputs(split, params, ctx):
    """(M, rows, n_new) for either task: new rows of a multilabel split are all-missing rows."""
    if hasattr(split, "Y_train"):
        return stack_for_new_rows(split, params.c)
    rows = split.rows if split.rows is not None else np.arange(split.M.shape[0])
    return np.asarray(split.M, dtype=float), rows, 0


def _prediction(values, n_new, variance=None, diagnostics=None):
    if n_new:
        scores = values[-n_new:]
        return Prediction(scores=scores, labels=(scores > 0).astype(float), diagnostics=diagnostics or {})
    return Prediction(values=values, variance=variance, diagnostics=diagnostics or {})


@register
class PMAExact(Algorithm):
    """PMA-EXACT: exact Gaussian prediction with covariance K1 ⊕ K2; K2 re-estimated as ĜᵀĜ/n from its own posterior.

    Conjugate gradients with Kronecker-sum mat-vecs; K2 starts from the columns' pairwise-complete second
    moments and is re-estimated kernel_updates times from the exact posterior mean Ĝ = E[G | X_obs]."""

    name = "pma-exact"
    tasks = frozenset({"missing"})
    Params = ExactParams
    version = "1"

    def run(self, split, params, ctx):
        M, rows, n_new = _missing_inputs(split, params, ctx)
        K1, eig1 = row_kernel_eig(params, ctx, rows)
        fit = pma_exact(M, K1, None, noise=params.noise, kernel_updates=params.kernel_updates,
                        jitter=params.jitter, eig1=eig1, tol=params.tol, max_iter=params.max_iter)
        return _prediction(fit["values"], n_new, diagnostics={"cg_iterations": fit["iterations"],
                                                              "k2_diag": np.diag(fit["K2"]).round(4).tolist()[:20]})


@dataclass(frozen=True, kw_only=True)
class ILMCParams(ExactParams):
    pass


@register
class ILMC(Algorithm):
    """I-LMC: exact prediction with covariance K1 ⊗ K2 (intrinsic LMC); K2 from the pma-exact fit, as in §5.3.3."""

    name = "ilmc"
    tasks = frozenset({"missing"})
    Params = ILMCParams
    version = "1"

    def run(self, split, params, ctx):
        M, rows, n_new = _missing_inputs(split, params, ctx)
        K1, eig1 = row_kernel_eig(params, ctx, rows)
        fit = ilmc(M, K1, None, noise=params.noise, kernel_updates=params.kernel_updates, jitter=params.jitter,
                   eig1=eig1, tol=params.tol, max_iter=params.max_iter)
        return _prediction(fit["values"], n_new, diagnostics={"cg_iterations": fit["iterations"]})


@dataclass(frozen=True, kw_only=True)
class GPRParams(KernelParams):
    axis: str = param("rows", "data points of the single GP: 'rows' (GPR-D1, kernel K1 from the features) "
                      "or 'columns' (GPR-D2, kernel from the columns' second moments)", Options("rows", "columns"))
    noise: float = param(0.1, "observation noise variance of the GP", Interval(0, None, "neither"))
    tol: float = param(CG_TOL, "relative residual at which conjugate gradients stop", Interval(0, 1, "neither"))
    max_iter: int = param(CG_MAX_ITER, "maximum conjugate-gradient iterations", Interval(1, None))


@register
class GPR(Algorithm):
    """GPR: one Gaussian process over rows (GPR-D1, K1 from features) or over columns (GPR-D2)."""

    name = "gpr"
    tasks = frozenset({"missing", "multilabel"})
    Params = GPRParams
    version = "1"

    def run(self, split, params, ctx):
        M, rows, n_new = _missing_inputs(split, params, ctx)
        if n_new and params.axis == "columns":
            raise InvalidParameterError("gpr with axis=columns cannot predict new rows (they have no observed "
                                        "entry); use axis=rows for the multilabel task")
        K, eig = (row_kernel_eig(params, ctx, rows) if params.axis == "rows" else (None, None))
        fit = gpr(M, K, axis=params.axis, noise=params.noise, jitter=params.jitter, eig=eig, tol=params.tol,
                  max_iter=params.max_iter)
        return _prediction(fit["values"], n_new, diagnostics={"cg_iterations": fit["iterations"]})
