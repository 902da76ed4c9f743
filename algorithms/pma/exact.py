"""Exact Gaussian prediction of hidden entries: PMA-EXACT (covariance K1 ⊕ K2, eq. 5.12), intrinsic
LMC (K1 ⊗ K2) and single GPs over rows or columns (GPR-D1 / GPR-D2), dissertation §5.3.3.

The hidden entries' posterior mean under vec X ~ N(0, Σ + σ²I) solves Λ_UU x_U = −Λ_UO x_O with the
precision Λ diagonal in the kernels' eigenbasis (`malt.numerics.eigenbasis.KroneckerEigenbasis.conditional_mean`:
conjugate gradients on the hidden entries, preconditioned by the exact diagonal of Λ_UU), so nothing
of size nm × nm is ever formed: O(nm(n + m)) per iteration, O(nm) memory beyond the kernels. The
posterior means of the parts, E[F | X_O] = K1 Σ'⁻¹ X̃ and E[G | X_O] = Σ'⁻¹ X̃ K2, are elementwise in the
same basis.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis
from malt.errors import InvalidParameterError
from malt.params import Interval, Options, When, param
from malt.numerics.decisions import NaturalThresholdParams, decide_by_refits
from malt.splits import MultilabelSplit
from malt.registry import Algorithm, register

from .common import (KernelParams, LabelCoding, PMAParams, check_kernel, check_matrix, cov_estimate, matrix_inputs,
                     pd_eigh, prediction, row_kernel_eig, second_moments)

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


def solve_conditional(basis: KroneckerEigenbasis, M: np.ndarray, *, kind: str = "sum", noise: float = 0.0,
                      tol: float = CG_TOL, max_iter: int = CG_MAX_ITER, x0=None):
    """Posterior means under vec X ~ N(0, Σ + noise·I), Σ = K1 ⊕ K2 ('sum') or K1 ⊗ K2 ('product').

    Returns (signal, F, G, X̃, info): ``signal`` = E[Σ-part | X_O] (n, m) — the hidden entries' prediction,
    the observed ones smoothed by the noise; for 'sum' F = E[F | X_O], G = E[G | X_O] (signal = F + G),
    else None; X̃ the completed matrix (warm start of a later solve). Warns when CG stops at max_iter.
    """
    Xt, Xh, info = basis.conditional_mean(M, kind=kind, noise=noise, tol=tol, max_iter=max_iter, x0=x0)
    if not info["converged"]:
        warnings.warn(f"conjugate gradients reached max_iter={max_iter} before the tolerance {tol:g} "
                      f"(relative residual {info['residual']:.2g}); raise max_iter or noise",
                      CGConvergenceWarning, stacklevel=3)
    a, b = basis.a[:, None], basis.b[None, :]
    if kind == "product":
        return basis.unrotate(Xh * (a * b / (a * b + noise))), None, None, Xt, info
    S = a + b + noise
    F, G = basis.unrotate(Xh * (a / S)), basis.unrotate(Xh * (b / S))
    return F + G, F, G, Xt, info


def pma_exact(M, K1=None, K2=None, *, noise: float = 1e-4, kernel_updates: int = 3, jitter: float = 1e-2,
              eig1=None, tol: float = CG_TOL, max_iter: int = CG_MAX_ITER) -> dict:
    """PMA-EXACT: exact prediction of the unobserved entries of M under Cov(vec X) = K1 ⊕ K2 + noise·I.

    K2 (and K1 when None) is estimated by this method itself: starting from the pairwise-complete
    second moments of the columns (rows), each of ``kernel_updates`` rounds solves the exact posterior
    and sets K2 = ĜᵀĜ / n (K1 = F̂F̂ᵀ / m) from the posterior means Ĝ = E[G | X_O], F̂ = E[F | X_O] — the
    point-estimate update of §5.3.2 applied to the exact posterior.

    Parameters
    ----------
    M : (n, m) array, NaN where unobserved
    K1 : (n, n) row kernel or None (estimated)
    K2 : (m, m) column kernel or None (estimated)
    eig1 : K1's `Eigenbasis`, when already known (cached across folds)

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
    basis1 = eig1 if (eig1 is not None and not estimate_k1) else pd_eigh(K1, "K1")
    iterations = []
    Xt = None
    for round_ in range(kernel_updates + 1):
        basis = KroneckerEigenbasis(basis1, pd_eigh(K2, "K2"))
        values, F, G, Xt, info = solve_conditional(basis, M, noise=noise, tol=tol, max_iter=max_iter, x0=Xt)
        iterations.append(info["iterations"])
        if round_ == kernel_updates:
            break
        if estimate_k2:
            K2 = cov_estimate(G, jitter)
        if estimate_k1:
            K1 = cov_estimate(F.T, jitter)
            basis1 = pd_eigh(K1, "K1")
    return {"values": values, "F": F, "G": G, "K1": K1, "K2": K2, "iterations": iterations}


def ilmc(M, K1=None, K2=None, *, noise: float = 1e-4, kernel_updates: int = 3, jitter: float = 1e-2,
         eig1=None, tol: float = CG_TOL, max_iter: int = CG_MAX_ITER) -> dict:
    """Intrinsic LMC: exact prediction with Cov(vec X) = K1 ⊗ K2 + noise·I (the separable model).

    As in the dissertation (§5.3.3, "K2 as obtained" by the PMA fit), K2 (and K1 when None) come from
    the Kronecker-sum fit of `pma_exact`; only the prediction step uses the Kronecker product.
    """
    fit = pma_exact(M, K1, K2, noise=noise, kernel_updates=kernel_updates, jitter=jitter, eig1=eig1, tol=tol,
                    max_iter=max_iter)
    basis1 = eig1 if (eig1 is not None and K1 is not None) else pd_eigh(fit["K1"], "K1")
    basis = KroneckerEigenbasis(basis1, pd_eigh(fit["K2"], "K2"))
    values, _, _, _, info = solve_conditional(basis, np.asarray(M, dtype=float), kind="product", noise=noise,
                                              tol=tol, max_iter=max_iter)
    return {"values": values, "K1": fit["K1"], "K2": fit["K2"], "iterations": fit["iterations"] + [info["iterations"]]}


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
    if noise <= 0:
        raise InvalidParameterError("gpr needs noise > 0 (a single GP's kernel may be singular)")
    if axis == "rows":
        K1 = second_moments(M, observed, 1, jitter) if K is None else check_kernel(K, n, "K1")
        left = eig if (eig is not None and K is not None) else pd_eigh(K1, "K1")
        right = Eigenbasis(np.zeros(m), np.eye(m), dense=np.zeros((m, m)))
    elif axis == "columns":
        K2 = second_moments(M, observed, 0, jitter) if K is None else check_kernel(K, m, "K2")
        left = Eigenbasis(np.zeros(n), np.eye(n), dense=np.zeros((n, n)))
        right = pd_eigh(K2, "K2")
    else:
        raise InvalidParameterError(f"axis must be 'rows' or 'columns', got {axis!r}")
    values, _, _, _, info = solve_conditional(KroneckerEigenbasis(left, right), M, noise=noise, tol=tol,
                                              max_iter=max_iter)
    return {"values": values, "iterations": info["iterations"]}


# ---- registered algorithms -------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ExactParams(PMAParams):
    noise: float = param(1e-4, "observation noise variance added to the observed entries (also keeps the "
                         "conjugate-gradient system well conditioned)", Interval(0, None))
    tol: float = param(CG_TOL, "relative residual at which conjugate gradients stop", Interval(0, 1, "neither"))
    max_iter: int = param(CG_MAX_ITER, "maximum conjugate-gradient iterations per solve", Interval(1, None))


@register
class PMAExact(Algorithm):
    """PMA-EXACT: exact Gaussian prediction with covariance K1 ⊕ K2; K2 re-estimated as ĜᵀĜ/n from its own posterior.

    Conjugate gradients with Kronecker-sum mat-vecs; K2 starts from the columns' pairwise-complete second
    moments and is re-estimated kernel_updates times from the exact posterior mean Ĝ = E[G | X_obs]."""

    name = "pma-exact"
    tasks = frozenset({"missing"})
    Params = ExactParams
    version = "2"

    def run(self, split, params, ctx):
        data = matrix_inputs(split, params)
        K1, eig1 = row_kernel_eig(params, ctx, data.rows, data.fit_rows)
        fit = pma_exact(data.M, K1, None, noise=params.noise, kernel_updates=params.kernel_updates,
                        jitter=params.jitter, eig1=eig1, tol=params.tol, max_iter=params.max_iter)
        return prediction(fit["values"], data.n_new, diagnostics={"cg_iterations": fit["iterations"],
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
    version = "2"

    def run(self, split, params, ctx):
        data = matrix_inputs(split, params)
        K1, eig1 = row_kernel_eig(params, ctx, data.rows, data.fit_rows)
        fit = ilmc(data.M, K1, None, noise=params.noise, kernel_updates=params.kernel_updates, jitter=params.jitter,
                   eig1=eig1, tol=params.tol, max_iter=params.max_iter)
        return prediction(fit["values"], data.n_new, diagnostics={"cg_iterations": fit["iterations"]})


@dataclass(frozen=True, kw_only=True)
class GPRParams(KernelParams, LabelCoding, NaturalThresholdParams):
    axis: str = param("rows", "data points of the single GP: 'rows' (GPR-D1, kernel K1 from the features) "
                      "or 'columns' (GPR-D2, kernel from the columns' second moments)", Options("rows", "columns"))
    noise: float = param(0.1, "observation noise variance of the GP", Interval(0, None, "neither"))
    tol: float = param(CG_TOL, "relative residual at which conjugate gradients stop", Interval(0, 1, "neither"))
    max_iter: int = param(CG_MAX_ITER, "maximum conjugate-gradient iterations", Interval(1, None))

    @classmethod
    def implied_condition(cls, name: str) -> When | None:
        """K1 (and what builds it) is the kernel of axis='rows'; axis='columns' estimates its own."""
        return When(axis="rows") if name == "k1" else super().implied_condition(name)


@register
class GPR(Algorithm):
    """GPR: one Gaussian process over rows (GPR-D1, K1 from features) or over columns (GPR-D2)."""

    name = "gpr"
    tasks = frozenset({"missing", "multilabel"})
    Params = GPRParams
    version = "2"

    def run(self, split, params, ctx):
        if isinstance(split, MultilabelSplit):
            return decide_by_refits(self.fit_predict, split, params, ctx, 0.0)
        return self.fit_predict(split, params, ctx)

    def fit_predict(self, split, params, ctx):
        data = matrix_inputs(split, params)
        if data.n_new and params.axis == "columns":
            raise InvalidParameterError("gpr with axis=columns cannot predict new rows (they have no observed "
                                        "entry); use axis=rows for the multilabel task")
        K, eig = (row_kernel_eig(params, ctx, data.rows, data.fit_rows) if params.axis == "rows" else (None, None))
        fit = gpr(data.M, K, axis=params.axis, noise=params.noise, jitter=params.jitter, eig=eig, tol=params.tol,
                  max_iter=params.max_iter)
        return prediction(fit["values"], data.n_new, diagnostics={"cg_iterations": fit["iterations"]})
