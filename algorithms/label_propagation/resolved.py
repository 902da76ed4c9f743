"""LGC's system (I − αS) F = B solved so that every score, however small, is resolved.

LGC's scores (eq. 3.15, F = (1−α)(I − αS)⁻¹Y = (1−α) Σ_t α^t S^t Y) decay geometrically with the
hop distance from the labelled points: on a 300,000-point swiss roll (50 labels, k = 10, α = 0.9)
the largest score of a row runs from 0.1 down to 2e-35 (1,000,000 points: 4e-60). Conjugate
gradients stopped at a relative residual ‖b − A x‖/‖b‖ = ρ guarantee nothing for such rows: the
error bound ρ‖b‖/(1−α) (λ_min(I − αS) ≥ 1 − α) holds for *any* entry, and after k iterations every
row more than k hops from all labels is still exactly 0 (its argmax: class 0). At ρ = 1e-8 that
swiss roll's test error was 0.31 instead of the exact solution's 0.087: 76,424 decisions differed
from a sparse LU's, 76,153 of them rows CG had left at 0.

The solve here decomposes the rows by magnitude (``stages``): A = I − αS is a nonsingular M-matrix,
so for resolved rows R and the rest U

.. math:: F_U = A_{UU}^{-1}\\,(B_U + \\alpha S_{UR} F_R),\\qquad A_{UU}^{-1} \\ge 0,\\ \\alpha S_{UR} \\ge 0,

a Dirichlet problem on U whose data are the resolved scores. Each stage scales its right-hand
side to a largest entry of 1 (the scale is kept as a logarithm per row, ``log_scale``, so nothing
underflows), runs CG from the previous stage's iterate to an absolute residual
``STAGE_RTOL``·max_c ‖b_c‖₂ and bounds every entry's error by its residual r = b − A_UU x: with
v > 0 such that S v ≤ v (v = D^{1/2}1 for S = D^{-1/2}WD^{-1/2}: S v = v), S_UU v_U ≤ v_U, so
‖(I − αS_UU)⁻¹‖ ≤ 1/(1 − α) in the norm max_i |x_i|/v_i and

.. math:: |x_i - x^*_i| \\le e_i = \\frac{v_i}{1-\\alpha}\\,\\max_j \\frac{|r_j|}{v_j}

(|r_j| bounded with the rounding of its own evaluation, γ(|b| + |x| + αS|x|), γ = (row length + 3)·ε).
Rows whose largest entry is at least e_i / ``RESOLUTION`` are resolved — their scores are known to
within ``RESOLUTION`` of their largest — and leave U; the next stage solves the rest, whose scores
lie below that level, on its own scale. Stage 1 is the whole system (U = all rows). Every stage
resolves at least the row of its largest right-hand side (A_UU⁻¹ ≥ I entrywise, so x ≥ b), and the
solve ends when U is empty or its right-hand side is exactly 0 (rows no label reaches: their scores
are exactly 0).

Error bound, relative to a row's score sum s_i = Σ_c F_ic: an error ≤ ε s in the data F_R gives
an error ≤ ε s in F_U (A_UU⁻¹ αS_UR ≥ 0 maps s_R to the part of s_U fed by R), and each stage adds
≤ δ/(1−δ) (δ = ``RESOLUTION``): after K stages every score is within K·δ·s_i/(1−δ) of the exact
one (``error_bound``). A row whose two largest scores differ by less than twice that is counted in
``uncertain_rows`` (its decision is as fragile in the exact solution).

Cost: each stage costs its CG iterations (one product with S_UU for all classes at once; κ(A_UU) ≤
(1+α)/(1−α); at α = 0.9 ~53 iterations for stage 1, ~20 for the later ones, which start from the
previous stage's iterate) plus one pass over the rows U of S to split off S_UU and S_UR. Each stage
resolves ~7 orders of magnitude, so the number of stages grows with the scores' range: on the swiss
roll of tests/benchmarks/bench_label_propagation_scale.py (50 labels; scores fall ~0.42 orders of
magnitude per hop, up to 138 hops from a label at 10⁶ points) 3, 6 and 11 stages at 10⁵, 3·10⁵ and
10⁶ points, Σ_stages |U|·iterations = 64 n and 104 n.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import solvers

RESOLUTION = 1e-6
"""δ: a stage resolves a row once the bound on its entries' error is at most δ × its largest score."""
STAGE_RTOL = 1e-13
"""Each stage's CG stops at an absolute residual of STAGE_RTOL × its largest right-hand-side column
norm (near the rounding floor of float64: the smaller, the more orders of magnitude a stage resolves)."""
MAX_STAGES = 10000
"""A guard: every stage resolves at least one row, so more stages than this means a defect."""


@dataclass(frozen=True)
class ResolvedScores:
    """The solution F = mantissa · exp(log_scale) of (I − αS) F = B, row by row.

    mantissa : (n, C), each resolved row's largest entry between ~e/δ and ~1/(1−α) of its stage's
        scale; log_scale : (n,) natural logarithm of every row's scale.
    """

    mantissa: np.ndarray
    log_scale: np.ndarray
    stages: int
    iterations: int
    error_bound: float
    """K·δ/(1−δ) after K stages: every score is within this fraction of its row's score sum of the
    exact one."""

    @property
    def scores(self) -> np.ndarray:
        """F in float64 (rows below ~1e-308 underflow to 0; `labels` does not need them)."""
        with np.errstate(under="ignore"):
            return self.mantissa * np.exp(self.log_scale)[:, None]

    @property
    def labels(self) -> np.ndarray:
        """argmax_c F_ic of every row (from the mantissa: the same for any row scale)."""
        return np.argmax(self.mantissa, axis=1)

    @property
    def uncertain_rows(self) -> int:
        """Rows whose two largest scores are closer than twice the error bound."""
        if self.mantissa.shape[1] < 2:
            return 0
        top = -np.sort(-self.mantissa, axis=1)[:, :2]
        total = self.mantissa.sum(axis=1)
        return int(np.count_nonzero((top[:, 0] > 0) & (top[:, 0] - top[:, 1] < 2 * self.error_bound * total)))


def resolve(S: sp.csr_matrix, alpha: float, B: np.ndarray, weights: np.ndarray, *, resolution: float = RESOLUTION,
            stage_rtol: float = STAGE_RTOL, progress=None) -> ResolvedScores:
    """Solve (I − αS) F = B, every row resolved to ``resolution`` (see the module docstring).

    Parameters
    ----------
    S : (n, n) sparse
        Symmetric, non-negative; best in a bandwidth-reducing order (`solvers.locality_order`).
    alpha : float in (0, 1)
    B : (n, C) array, ≥ 0
    weights : (n,) array
        v > 0 with S v ≤ v (for S = D^{-1/2} W D^{-1/2}: v = √d, and 1 on isolated rows).
    progress : callable, optional
        Called as progress(fraction of rows resolved, message) after every CG iteration (the fraction at
        least 1/n, so a progress line shows stage 1's iterations too).
    """
    S = sp.csr_matrix(S)
    B = np.asarray(B, dtype=float)
    v = np.asarray(weights, dtype=float)
    n, C = B.shape
    mantissa = np.zeros((n, C))
    log_scale = np.zeros(n)
    resolved = np.zeros(n, bool)
    U = np.arange(n)
    x0 = None
    previous_scale = 0.0
    iterations = stage = 0
    while U.size:
        if stage >= MAX_STAGES:
            raise solvers.SolveError(f"the LGC solve did not resolve every row in {MAX_STAGES} stages")
        S_UU, S_UR = (S, None) if U.size == n else _split_rows(S, U, ~resolved)
        b, scale = _stage_rhs(alpha, B[U], S_UR, mantissa, log_scale)
        if scale is None:  # no label reaches the rows left: their scores are exactly 0
            break

        def operator(P, S_UU=S_UU):
            AP = S_UU @ P
            AP *= -alpha
            AP += P
            return AP

        def report(it, residual, goal, stage=stage, done=int(resolved.sum())):
            if progress is not None:
                progress(max(done, 1) / n, f"stage {stage + 1}: CG iteration {it}, residual {residual:.1e} "
                                           f"(goal {goal:.1e}); {done:,}/{n:,} rows resolved")

        goal = stage_rtol * float(np.linalg.norm(b, axis=0).max())
        cg = solvers.ConjugateGradients(operator, None, rtol=0.0, atol=goal, callback=report)
        if x0 is not None:
            x0 *= np.exp(previous_scale - scale)
        X = cg.solve(b, x0)
        iterations += cg.iterations
        # |x − x*| ≤ v · max_j |r_j| / v_j / (1 − α) entrywise: ‖(I − αS_UU)⁻¹‖ ≤ 1/(1 − α) in the
        # norm max_i |x_i| / v_i, since S_UU v_U ≤ (S v)_U ≤ v_U
        vU = v[U]
        error = vU * (float(np.max(_residual_bound(S_UU, alpha, b, X) / vU[:, None])) / (1 - alpha))
        done = X.max(axis=1) >= error / resolution
        if not done.any():
            raise solvers.SolveError(f"stage {stage + 1} of the LGC solve resolved no row (error bound up to "
                                     f"{error.max():.1e} of a largest score ≥ 1); the rounding floor is above "
                                     f"{resolution:g}")
        rows = U[done]
        mantissa[rows] = X[done]
        log_scale[rows] = scale
        resolved[rows] = True
        U, x0, previous_scale = U[~done], X[~done], scale
        stage += 1
    if progress is not None:
        progress(1.0, f"{stage} stages, {iterations} CG iterations")
    return ResolvedScores(mantissa, log_scale, stage, iterations, stage * resolution / (1 - resolution))


def _residual_bound(S_UU, alpha, b, X) -> np.ndarray:
    """|b − (I − αS_UU) X| entrywise, plus a bound on the rounding of its evaluation in float64
    (γ(|b| + |X| + αS_UU|X|), γ = (longest row + 3)·ε, the error bound of a dot product)."""
    absX = np.abs(X)
    r = np.abs(b - X + alpha * (S_UU @ X))
    gamma = (np.diff(S_UU.indptr).max(initial=0) + 3) * np.finfo(float).eps
    r += gamma * (np.abs(b) + absX + alpha * (S_UU @ absX))
    return r


def _split_rows(S: sp.csr_matrix, U: np.ndarray, in_U: np.ndarray) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """The rows U of S in two parts, one pass over them: S_UU (|U|, |U|) and the rest (|U|, n), whose
    columns outside U keep their ids. O(nnz of the rows U)."""
    rows = S[U]
    keep = in_U[rows.indices]
    kept_before = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(keep, out=kept_before[1:])
    indptr_UU = kept_before[rows.indptr]  # entries of each row kept, counted from the start
    position = np.cumsum(in_U) - 1
    S_UU = sp.csr_matrix((rows.data[keep], position[rows.indices[keep]], indptr_UU), shape=(U.size, U.size))
    rest = ~keep
    S_UR = sp.csr_matrix((rows.data[rest], rows.indices[rest], rows.indptr - indptr_UU), shape=(U.size, S.shape[0]))
    return S_UU, S_UR


def _stage_rhs(alpha, B_U, S_UR, mantissa, log_scale):
    """The right-hand side B_U + αS_UR F_R of the rows left, scaled to a largest entry of 1, and its
    scale (natural log); (None, None) when it is exactly 0. S_UR None: stage 0 (nothing resolved)."""
    labelled = bool(B_U.any())  # rows of B ≠ 0 resolve in stage 0 (x ≥ b), unless B spans > 1/δ
    if S_UR is None:
        top = float(B_U.max()) if labelled else 0.0
        return (B_U / top, float(np.log(top))) if top > 0 else (None, None)
    touching = np.unique(S_UR.indices)  # the resolved rows next to U
    if not touching.size and not labelled:
        return None, None
    reference = float(max(log_scale[touching].max(initial=-np.inf), 0.0 if labelled else -np.inf))
    F_R = np.zeros_like(mantissa)
    with np.errstate(under="ignore"):
        F_R[touching] = mantissa[touching] * np.exp(log_scale[touching] - reference)[:, None]
        b = alpha * (S_UR @ F_R)
        if labelled:
            b += B_U * np.exp(-reference)
    top = float(b.max())
    if not top > 0:
        return None, None
    return b / top, reference + float(np.log(top))
