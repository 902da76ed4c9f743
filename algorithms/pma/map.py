"""PMA-MAP (dissertation §5.3.2): the MAP completion X̃ for fixed kernels — the fixed point of the
alternation of the Sylvester equation for F given X̃ (eq. 5.22) and the mode of the missing entries
given F (eq. 5.23) — then the kernel re-estimation K2 = GᵀG / n, ``kernel_updates`` times.

With fixed kernels the alternation is two-block coordinate ascent on the Gaussian p(F, X_missing |
X_observed), so its fixed point is the exact conditional mean E[X_missing | X_observed] under
K1 ⊕ K2 (eq. 5.12). The default solver computes that fixed point directly: conjugate gradients on
the missing entries' normal equations in the kernels' eigenbasis, preconditioned by the diagonal
of the precision (to 1 %, `MissingEntrySolver`). The alternation
itself — a Richardson iteration with the rows' K2-conditionals as preconditioner — needs hundreds of
steps on CAL500 to get close to that fixed point, and its step-size stopping rule stops far from it;
it is kept as ``solver='alternate'`` (Anderson-accelerated, or over-relaxed).

Cost: eigendecompositions of K1 (cached across folds) and of K2 once per kernel setting, O(n³ + m³)
(the first K2's is the one that projects the initial moments onto the PSD cone); then four n × m
rotations, O(nm(n + m)), per conjugate-gradient iteration. At the default tolerance (≥ ``SINGLE_TOL``)
both run in single precision: LAPACK's divide-and-conquer eigensolver takes half the time in single
precision, and its basis is exact for a kernel within ~1e-7 of its norm (backward stability) — on
CAL500 that is 1e-5 of the jitter K1 already carries, and it moves the answer by at most 0.006, a
sixth of what the solver's tolerance allows (distance to the converged fixed point: 0.037). K1 stays
fixed across kernel settings, so each setting warm-starts from the previous fixed point, already
rotated (an m × m change of basis, not a fresh rotation), and the settings before the last — whose
fixed points only feed the K2 re-estimation — are solved to 10 × ``tol``. The kernel update
decomposes ĜᵀĜ/n in the current right basis (GᵀG = U2 ĜᵀĜ U2ᵀ), so neither G nor K2 is rotated back.
Nothing of size nm × nm is formed and no inverse is taken. The missing task's inner selection walks its grid
on one factorisation (`fixed_kernel_path`: a setting only rescales K1's eigenvalues; on a wide matrix a subset of
its columns and rows; see missing.py). On CAL500 (502 × 174, 25 % hidden,
3 kernel updates) a whole fit — K1 built from the features, all eigendecompositions, 20 iterations in
all — costs 2.9× the floor of two double-precision eigendecompositions and one Sylvester solve (wall
seconds, one BLAS thread, same process; version 6 measured 3.6× on the same benchmark), against
about 42× for the Anderson-accelerated alternation (tests/benchmarks/bench_pma.py). About 45 % of it
is the iterations' rotations, 10 % each setting's starting residual and right-hand side; the
preconditioner's diagonal comes from an exponential-sum factorisation of 1/(a ⊕ b)
(`KroneckerEigenbasis.inverse_diagonal` with ``rel_err``), O(n²r) with r ≈ 16 instead of O(n²m).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from malt.numerics import linalg
from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis, inverse_sum_factors
from malt.errors import DataError
from malt.params import Includes, Interval, Options, When, param
from malt.numerics.decisions import NaturalThresholdParams, decide_by_refits
from malt.splits import MultilabelSplit
from malt.registry import Algorithm, register
from malt.numerics.selection import InnerCVParams

from .common import (LabelCoding, PMAParams, RowConditional, check_kernel, check_matrix, column_means, cov_estimate,
                     matrix_inputs, pd_eigh, prediction, row_kernel_eig, second_moments,
                     second_moments_eig)
from .missing import run_missing


def map_f(Xt: np.ndarray, eig1, eig2) -> np.ndarray:
    """MAP F given a complete X̃: the solution of F K2 + K1 F = K1 X̃ (eq. 5.22).

    ``eig1``, ``eig2`` are the kernels' `Eigenbasis` objects. In the rotated basis the equation is
    elementwise: F̂_ab = d1_a X̂_ab / (d1_a + d2_b) (`KroneckerEigenbasis.split_sum`). O(n²m + nm²).
    """
    basis = KroneckerEigenbasis(eig1, eig2)
    G, _ = basis.split_sum(Xt)
    return Xt - G


def anderson_step(history_f: list, history_g: list, f: np.ndarray, g: np.ndarray, depth: int) -> np.ndarray:
    """Anderson acceleration (type II) of a fixed-point iteration x ← T(x): with residuals f = T(x) − x
    and images g = T(x) of the last ``depth`` + 1 iterates, return g − ΔG γ, γ = argmin ‖f − ΔF γ‖.

    For a linear T this is GMRES on (I − T) x = c in disguise; the histories are updated in place.
    """
    history_f.append(f)
    history_g.append(g)
    if len(history_f) > depth + 1:
        history_f.pop(0)
        history_g.pop(0)
    if len(history_f) < 2:
        return g
    dF = np.diff(np.stack(history_f, axis=1), axis=1)
    dG = np.diff(np.stack(history_g, axis=1), axis=1)
    gamma = np.linalg.lstsq(dF, f, rcond=None)[0]
    return g - dG @ gamma


def _alternate(basis: KroneckerEigenbasis, K2, Xt, missing, *, iterations, tol, scale, anderson, relax):
    """The paper's alternation for fixed kernels: F from eq. 5.22, then every row's missing entries
    jointly from eq. 5.23 (the fixed point of iterating 5.23), until no missing entry moves more than
    ``tol`` × ``scale``. Returns the iteration count; updates Xt in place."""
    conditional = RowConditional(K2, missing, eig=basis.right)
    history_f, history_g = [], []
    it = 0
    for it in range(1, iterations + 1):
        G, _ = basis.split_sum(Xt)
        F = Xt - G
        g_missing, _ = conditional.mean_and_draw(G, None)
        image = F[missing] + g_missing[missing]  # eq. 5.23 for every missing entry (jointly per row)
        step = image - Xt[missing]
        change = float(np.max(np.abs(step))) if step.size else 0.0
        if anderson:
            Xt[missing] = anderson_step(history_f, history_g, step, image, anderson)
        else:
            Xt[missing] += relax * step
        if change <= tol * scale:
            break
    return it


SINGLE_TOL = 1e-4
"""At a tolerance of at least this, solver 'cg' works in single precision: the eigendecompositions (each basis
exact for its kernel plus a perturbation of ~1e-7 of its norm, 1e-5 of K1's jitter on CAL500) and the
conjugate gradients' rotations (relative error ~1e-6)."""

PRECONDITIONER_REL_ERR = 1e-2
"""Relative accuracy of the preconditioner's diagonal diag(Λ_UU) = U1² (1 / (a ⊕ b)) U2²ᵀ, built from
`KroneckerEigenbasis.inverse_diagonal` in O(n²r) instead of O(n²m): a Jacobi preconditioner off by 1 % converges as
the exact one does (CAL500 and emotions: the same iterations per kernel setting)."""

UPDATE_TOL_FACTOR = 10.0
"""Kernel settings before the last are solved to this × ``tol``: their fixed points only feed the K2
re-estimation (an average over rows), and the last setting is solved to ``tol`` from their warm start."""


class MissingEntrySolver:
    """The fixed point of eqs. 5.22–5.23 — E[X_U | X_O] under K1 ⊕ K2, U the missing entries — for a
    sequence of kernel settings, each warm-started from the previous one.

    The missing entries solve Λ_UU x_U = −Λ_UO x_O with Λ = (K1 ⊕ K2)⁻¹ = U1 (1 / (a ⊕ b)) U2ᵀ
    (the kernels' `KroneckerEigenbasis`), by conjugate gradients preconditioned with the diagonal of
    Λ_UU (to ``PRECONDITIONER_REL_ERR``). One application of Λ is four n × m rotations, in single
    precision when ``single`` (relative error ~1e-6, far below a tolerance ≥ 1e-4). The vectors of the
    iteration live on U only, in double precision; the iterate X̃ (n, m) in double, its rotation
    X̂ = U1ᵀ X̃ U2 in the rotations' precision.

    Between kernel settings with the same K1 only U2 changes, so X̂ and the rotated observed part move
    to the new basis by one product with U2_oldᵀ U2_new (O(nm²)) instead of fresh rotations (O(n²m)).
    A setting then costs, before its iterations, one preconditioner diagonal and one unrotation of the
    residual and the right-hand side together. Nothing of size nm × nm; no inverse.
    """

    def __init__(self, M: np.ndarray, missing: np.ndarray, Xt: np.ndarray, *, single: bool = True):
        self.shape = M.shape
        self.idx = np.flatnonzero(missing.ravel())
        self.Xt = Xt
        self.Xo = np.where(missing, 0.0, M)
        self.dtype = np.float32 if single else np.float64
        self.basis = None
        self.both_h = None  # [X̂; rotated observed part; rotated previous fixed point], (3n, m), in dtype
        self.previous = None  # the previous kernel setting's fixed point on U
        self.solves = 0  # kernel settings solved since the left basis was set

    @property
    def Xh(self) -> np.ndarray:
        """X̂ = U1ᵀ X̃ U2 in the current basis (kept up to date by the iteration), in ``dtype``."""
        return self.both_h[:self.shape[0]]

    def set_basis(self, basis: KroneckerEigenbasis, change: np.ndarray | None = None) -> None:
        """Move to new kernels; the rotated iterate is carried over when K1 (the left basis) is unchanged,
        by ``change`` = U2_oldᵀ U2_new (computed here when not given)."""
        old, self.basis = self.basis, basis
        n, m = self.shape
        same_left = old is not None and old.left.vectors is basis.left.vectors
        if same_left and old.right.vectors is basis.right.vectors:  # only the eigenvalues moved: X̂ stays
            return
        self.U2 = np.ascontiguousarray(basis.right.vectors, dtype=self.dtype)
        self.U2_sq = self.U2 * self.U2  # the squared bases of the preconditioner's diagonal, kept with the bases
        if same_left:
            if change is None:
                change = old.right.vectors.T @ basis.right.vectors
            self.both_h = self.both_h @ change.astype(self.dtype)
            return
        self.U1 = np.asarray(basis.left.vectors, dtype=self.dtype)
        self.U1_sq = self.U1 * self.U1
        left = self.U1.T @ np.hstack([self.Xt.astype(self.dtype), self.Xo.astype(self.dtype)])
        self.both_h = np.empty((3 * n, m), dtype=self.dtype)
        np.matmul(left[:, :m], self.U2, out=self.both_h[:n])
        np.matmul(left[:, m:], self.U2, out=self.both_h[n:2 * n])
        self.both_h[2 * n:] = self.both_h[:n]
        self.solves = 0

    def _warm_start(self) -> None:
        """Start a kernel setting from the last fixed point x_r, or — from the third setting on — from its
        linear extrapolation 2 x_r − x_{r−1} (the fixed points drift steadily as K2 settles); X̂ follows,
        the rotation being linear. Any start reaches the same fixed point; this one is nearer."""
        n = self.shape[0]
        if self.solves == 0:
            return
        x = self.Xt.ravel()[self.idx]
        Xh, previous_h = self.both_h[:n], self.both_h[2 * n:]
        last = (x, Xh.copy())
        if self.solves >= 2:
            self.Xt.ravel()[self.idx] = 2.0 * x - self.previous
            Xh *= 2.0
            Xh -= previous_h
        self.previous, previous_h[...] = last[0], last[1]

    def _spectrum(self) -> np.ndarray:
        """a ⊕ b, the eigenvalues of K1 ⊕ K2, (n, m), in ``dtype``."""
        return self.basis.a.astype(self.dtype)[:, None] + self.basis.b.astype(self.dtype)[None, :]

    def _inverse_diagonal(self) -> np.ndarray:
        """diag(Λ) = U1² (1 / (a ⊕ b)) U2²ᵀ to `PRECONDITIONER_REL_ERR`, (n, m) in ``dtype``: what
        `KroneckerEigenbasis.inverse_diagonal` computes, from the squared bases kept since the bases last changed
        (a kernel setting that only moves the eigenvalues costs O(n²r + m²r + nmr), r ≈ 16, and no squaring)."""
        Phi, Psi = inverse_sum_factors(self.basis.a, self.basis.b, PRECONDITIONER_REL_ERR)
        return (self.U1_sq @ Phi.astype(self.dtype)) @ (self.U2_sq @ Psi.astype(self.dtype)).T

    def f(self) -> np.ndarray:
        """F = U1 (X̂ ⊙ a / (a ⊕ b)) U2ᵀ: eq. 5.22 at the current iterate (two rotations)."""
        basis = self.basis
        Fh = self.Xh * (basis.a.astype(self.dtype)[:, None] / self._spectrum())
        return (self.U1 @ (Fh @ self.U2.T)).astype(float)

    def solve(self, tol: float, max_iter: int) -> dict:
        """Conjugate gradients from the current X̃ to a relative preconditioned residual ``tol``
        (√(rᵀD⁻¹r) ≤ tol × that of the right-hand side), at most ``max_iter`` iterations. Updates X̃
        and X̂; returns the iteration count, the final residual and whether it converged."""
        basis, idx, dtype = self.basis, self.idx, self.dtype
        n, m = self.shape
        if idx.size == 0:
            return {"iterations": 0, "residual": 0.0, "converged": True}
        self._warm_start()
        self.solves += 1
        U1, U2 = self.U1, self.U2
        inv_S = 1.0 / self._spectrum()
        D = self._inverse_diagonal().ravel().take(idx).astype(float)  # diag(Λ_UU), to 1 %
        scaled = (self.both_h[:2 * n].reshape(2, n, m) * inv_S) @ U2.T
        start = U1 @ np.hstack([scaled[0], scaled[1]])
        R = -start[:, :m].ravel().take(idx).astype(float)  # −Λ_U· X̃: the residual at the warm start
        B = -start[:, m:].ravel().take(idx).astype(float)  # −Λ_UO x_O: the right-hand side
        b_norm = float(np.sqrt(B @ (B / D)))
        if b_norm == 0.0:  # nothing observed informs the missing entries: their mean is zero
            self.Xt.ravel()[idx] = 0.0
            self.both_h[:n] = basis.rotate(self.Xt)
            return {"iterations": 0, "residual": 0.0, "converged": True}
        Z = R / D
        P = Z.copy()
        rz = float(R @ Z)
        residual = np.sqrt(max(rz, 0.0)) / b_norm
        if getattr(self, "_buffer", None) is None:  # zero off U, written on U only: reused by every setting
            self._buffer = np.zeros((n, m), dtype=dtype)
        full = self._buffer
        flat, Xh = full.ravel(), self.Xh
        x = self.Xt.ravel()[idx]
        it = 0
        while residual > tol and it < max_iter:
            it += 1
            flat[idx] = P
            P_h = U1.T @ (full @ U2)
            AP = (U1 @ ((P_h * inv_S) @ U2.T)).ravel().take(idx).astype(float)
            alpha = rz / float(P @ AP)
            x += alpha * P
            P_h *= alpha
            Xh += P_h
            R -= alpha * AP
            Z = R / D
            rz_new = float(R @ Z)
            residual = np.sqrt(max(rz_new, 0.0)) / b_norm
            P = Z + (rz_new / rz) * P
            rz = rz_new
        self.Xt.ravel()[idx] = x
        return {"iterations": it, "residual": float(residual), "converged": bool(residual <= tol)}


def fixed_kernel_path(M: np.ndarray, eig1: Eigenbasis, settings, *, tol: float, iterations: int, jitter: float,
                      single: bool = True, kernel_updates: int = 0, update_tol: float | None = None):
    """The fixed points of eqs. 5.22–5.23 for a sequence of row-kernel spectra on one shared factorisation:
    K1 = U1 diag(s·d1 + c) U1ᵀ for each (s, c) in ``settings`` (``eig1`` = (d1, U1)), K2 the initial
    second-moment estimate, re-estimated ``kernel_updates`` times per setting as `pma_map` does (the solves before
    each setting's last to ``update_tol``, `pma_map`'s `UPDATE_TOL_FACTOR` × ``tol``, or ``tol`` when None; its
    last to ``tol``). Yields X̃ (n, m) after each
    setting — one array, updated in place, so read it before the next one.

    Every setting shares U1, U2 and the rotated data: a setting changes only the eigenvalues a ⊕ b, so it
    costs one conjugate-gradient solve (its starting residual and right-hand side, one application of Λ,
    then its iterations), warm-started from the previous setting's fixed point in the same basis, with no
    eigendecomposition, no fresh rotation of the data and no new n × m array but the solve's own. Cost:
    one m × m eigendecomposition in all, then O(nm(n + m)) per iteration."""
    M, observed = check_matrix(M)
    _, basis2 = second_moments_eig(M, observed, 0, jitter, single=single)
    Xt = np.where(observed, M, column_means(M, observed)[None, :])
    solver = MissingEntrySolver(M, ~observed, Xt, single=single)
    n = M.shape[0]
    for scale, nugget in settings:
        left = Eigenbasis(eig1.values * scale + nugget, eig1.vectors)
        basis, change = KroneckerEigenbasis(left, basis2), None
        for update in range(kernel_updates + 1):
            if update:  # K2 = ĜᵀĜ/n decomposed in the current right basis, as in `pma_map`
                Gh = solver.Xh * (basis.b / basis.spectrum("sum")).astype(solver.Xh.dtype)
                right, change = _update_in_basis(basis.right, Gh.T @ Gh / n, jitter, single)
                basis = KroneckerEigenbasis(left, right)
            solver.set_basis(basis, change)
            solver.solves = min(solver.solves, 1)  # warm start from the last fixed point, no extrapolation
            solver.solve(tol if update == kernel_updates or update_tol is None else update_tol, iterations)
        yield Xt


def _update_in_basis(right, C: np.ndarray, jitter: float, single: bool):
    """The Eigenbasis of K2 = U2 C U2ᵀ + jitter (`jittered`) for C = ĜᵀĜ / n in the old right basis U2,
    decomposed there: C + jitter·tr(C)/m·I = V diag(c) Vᵀ gives K2 = (U2 V) diag(c) (U2 V)ᵀ — the
    eigendecomposition of an m × m matrix as before, without rotating K2 out and back (K2 itself is
    `Eigenbasis.matrix`, rebuilt only when asked for). Returns (the Eigenbasis, V = U2ᵀ U2_new)."""
    C = np.asarray(C, dtype=float)
    C = linalg.add_jitter(0.5 * (C + C.T), max(jitter, 1e-10))  # U2 orthogonal: tr(U2 C U2ᵀ) = tr(C)
    in_old = pd_eigh(C, "K2", single=single)
    return Eigenbasis(in_old.values, right.vectors @ in_old.vectors), in_old.vectors


def pma_map(M, K1=None, K2=None, *, kernel_updates: int = 3, iterations: int = 500, tol: float = 1e-3,
            jitter: float = 1e-2, eig1=None, solver: str = "cg", init: str = "mean", relax: float = 1.5,
            anderson: int = 5, alternate_tol: float = 1e-3, rng: np.random.Generator | None = None,
            parts: bool = True, start: np.ndarray | None = None) -> dict:
    """PMA-MAP: complete M by the MAP fixed point of eqs. 5.22–5.23 for the current kernels, re-estimating
    K2 = GᵀG/n (and K1 = FFᵀ/m when K1 is None) ``kernel_updates`` times from it.

    Parameters
    ----------
    M : (n, m) array, NaN where unobserved
    K1, K2 : (n, n), (m, m) kernels or None (estimated; initialised from pairwise-complete second moments)
    eig1 : K1's `Eigenbasis` when known (cached across folds)
    solver : 'cg' — conjugate gradients for the fixed point (the conditional mean under K1 ⊕ K2), to a
        relative preconditioned residual ``tol`` for the last kernel setting and ``UPDATE_TOL_FACTOR`` ×
        ``tol`` for those before it; 'alternate' — the paper's alternation of 5.22 and
        5.23, stopped when no missing entry moves more than ``alternate_tol`` × the data's std,
        Anderson-accelerated (depth ``anderson``) or over-relaxed by ``relax`` when anderson = 0.
    iterations : maximum iterations per kernel setting (either solver)
    init : 'mean' (observed column means) or 'random' (the paper's random fill) for the missing entries;
        the starting point only (and each kernel setting warm-starts from the previous one)
    start : (n, m) values to start the missing entries from instead (a nearby problem's fixed point: the
        inner selection's; any start reaches the same fixed point)

    Returns
    -------
    dict with 'values' (X̃), 'F', 'G' (unless ``parts`` is False: two rotations saved), 'K1', 'K2',
    'iterations' (per kernel setting), 'residuals' (final relative residual per kernel setting, solver 'cg').
    """
    M, observed = check_matrix(M)
    n, m = M.shape
    missing = ~observed
    estimate_k1, estimate_k2 = K1 is None, K2 is None
    if estimate_k1:
        K1 = second_moments(M, observed, 1, jitter)
    elif eig1 is None:
        K1 = check_kernel(K1, n, "K1")
    elif eig1.size != n or np.shape(K1) != (n, n):  # K1 is only returned: its basis does the work
        raise DataError(f"K1 must be {n} × {n} to match the matrix, got {np.shape(K1)}.")
    single = solver == "cg" and tol >= SINGLE_TOL
    K2, basis2 = (second_moments_eig(M, observed, 0, jitter, single=single) if estimate_k2
                  else (check_kernel(K2, m, "K2"), None))
    basis1 = eig1 if (eig1 is not None and not estimate_k1) else pd_eigh(K1, "K1", single=single)
    Xt = np.where(observed, M, column_means(M, observed)[None, :])
    scale = (float(np.std(M[observed])) or 1.0) if (init == "random" or solver == "alternate") else None
    if start is not None:
        Xt[missing] = np.asarray(start, dtype=float)[missing]
    elif init == "random":
        rng = rng if rng is not None else np.random.default_rng(0)
        Xt[missing] = rng.normal(0.0, scale, int(missing.sum()))
    counts, residuals = [], []
    fixed_point = MissingEntrySolver(M, missing, Xt, single=single)
    change = None  # U2_oldᵀ U2_new when the K2 update was decomposed in the old basis
    for round_ in range(kernel_updates + 1):
        last = round_ == kernel_updates
        basis = KroneckerEigenbasis(basis1, basis2 if basis2 is not None else pd_eigh(K2, "K2", single=single))
        basis2 = None
        if solver == "cg":
            fixed_point.set_basis(basis, change)
            info = fixed_point.solve(tol if last else UPDATE_TOL_FACTOR * tol, iterations)
            Xh = fixed_point.Xh
            counts.append(info["iterations"])
            residuals.append(info["residual"])
        else:
            counts.append(_alternate(basis, K2, Xt, missing, iterations=iterations, tol=alternate_tol,
                                     scale=scale, anderson=anderson, relax=relax))
            Xh = basis.rotate(Xt)
        if not (parts or estimate_k1):
            F = None
        elif (last or estimate_k1) and solver == "cg":
            F = fixed_point.f()  # eq. 5.22 at the fixed point
        elif last or estimate_k1:
            a, b = basis.a[:, None], basis.b[None, :]
            F = basis.unrotate(Xh * (a / (a + b)))
        if last:
            break
        if estimate_k2:  # GᵀG = U2 ĜᵀĜ U2ᵀ with Ĝ = X̂ ⊙ d2/(d1 + d2): no rotation back to G
            Gh = Xh * (basis.b / basis.spectrum("sum")).astype(Xh.dtype)
            basis2, change = _update_in_basis(basis.right, Gh.T @ Gh / n, jitter, single)
            K2 = None if solver == "cg" else basis2.matrix()  # the alternation's row conditionals need it
        if estimate_k1:
            K1 = cov_estimate(F.T, jitter)
            basis1 = pd_eigh(K1, "K1", single=single)
    K2 = basis.right.matrix() if K2 is None else K2
    fit = {"values": Xt, "K1": K1, "K2": K2, "iterations": counts, "residuals": residuals}
    return {**fit, "F": F, "G": Xt - F} if parts else fit


MATRIX_TASKS = When(task=Options("missing", "multilabel"))
"""The tasks pma-map completes a matrix on with K1 ⊕ K2 (the ratings task fits moment kernels instead)."""


@dataclass(frozen=True, kw_only=True)
class MAPParams(PMAParams, LabelCoding, InnerCVParams, NaturalThresholdParams):
    """Two fits in one algorithm: K1 ⊕ K2 completion on the matrix tasks, moment kernels on the ratings
    task; each task's fields are refused on the other."""

    solver: str = param("cg", "'cg': conjugate gradients for the fixed point of eqs. 5.22-5.23 (the conditional "
                        "mean under K1 ⊕ K2); 'alternate': the paper's alternation of 5.22 and 5.23",
                        Options("cg", "alternate"),
                        active_when=MATRIX_TASKS)
    iterations: int = param(500, "maximum iterations per kernel setting (either solver)", Interval(1, None),
                            active_when=MATRIX_TASKS)
    tol: float = param(1e-3, "solver 'cg': relative preconditioned residual at which conjugate gradients stop "
                       "(kernel settings before the last: 10 × tol)", Interval(0, 1, "neither"),
                       active_when=When(solver="cg"))
    alternate_tol: float = param(1e-3, "solver 'alternate': stop when no missing entry moves more than this × "
                                 "the data's std (a step size, not a distance to the fixed point)",
                                 Interval(0, None),
                                 active_when=When(solver="alternate"))
    anderson: int = param(5, "solver 'alternate': depth of Anderson acceleration (0 = off: plain alternation "
                          "over-relaxed by `relax`)", Interval(0, None),
                          active_when=When(solver="alternate"))
    relax: float = param(1.5, "solver 'alternate': over-relaxation ω of the missing-entry update when anderson=0 "
                         "(any 0 < ω < 2 converges to the same fixed point; ω = 1 is the paper's plain "
                         "alternation)", Interval(0, 2, "neither"),
                         active_when=When(solver="alternate", anderson=0))
    init: str = param("mean", "initial fill of missing entries: observed column 'mean' or 'random' (paper)",
                      Options("mean", "random"),
                      active_when=MATRIX_TASKS)
    shrink: float = param(300.0, "ratings task: co-rating count at which a moment-kernel entry keeps half its "
                          "value (shrinkage n / (n + shrink)); 300 was best of 30, 100, 300, 1000 on MovieLens-100K "
                          "and FilmTrust. Above 10⁹ co-rating pairs on a side (ratings.PAIR_LIMIT) n is each pair's "
                          "expected count from the two rating counts (`--diagnostics`: moment_kernels 'separable')",
                          Interval(0, None),
                          active_when=When(task="ratings"))
    kernel_power: float = param(3.0, "ratings task: exponent of the moment kernels' eigenvalues, trace kept "
                                "(`ratings.sharpen`; > 1 moves the prior's variance to the directions shared by "
                                "many co-ratings; 1 = the plain PSD projection)", Interval(0, None, "neither"),
                                active_when=When(task="ratings"))
    signal: float = param(0.5, "ratings task: multiplier of the moment kernels K1, K2 (the noise takes the rest "
                          "of the residual variance)", Interval(0, None, "neither"),
                          active_when=When(task="ratings"))
    signal_grid: tuple[float, ...] = param((0.35, 0.5, 0.7), "ratings task: candidate `signal` values for "
                                           "select=inner-cv")
    residual_signal_grid: tuple[float, ...] = param((0.05, 0.1, 0.2, 0.35, 0.5, 0.7),
                                                    "ratings task, mf_term='auto': candidate `signal` values of "
                                                    "the kernel term on the MF term's residual, chosen on the "
                                                    "validation split of the training ratings (one GP solve each on "
                                                    "shared kernels, walked in grid order and stopped at the first "
                                                    "value that scores worse than the one before it; empty: "
                                                    "`signal`). On fold 0's training ratings "
                                                    "it chose 0.2 (MovieLens-100K, CiaoDVD), 0.35 (FilmTrust) and "
                                                    "0.05 (Jester): the MF residual is mostly noise",
                                                    active_when=When(task="ratings"))
    bias_scale: float = param(1.0, "ratings task: multiplier of the ridge penalties of the user and item biases "
                              "(15 and 10: Koren 2010, Surprise's BaselineOnly)", Interval(0, None, "neither"),
                              active_when=When(task="ratings"))
    bias_scale_grid: tuple[float, ...] = param((0.25, 0.5, 1.0), "ratings task: candidate `bias_scale` values for "
                                               "select=inner-cv (lower penalties cut RMSE on MovieLens-100K, "
                                               "FilmTrust and CiaoDVD; the ranking comes from the zero-filled "
                                               "fit, so rarely rated items with high estimates do not top it)")
    mf_term: str = param("auto", "ratings task: a low-rank term beside the kernel term — where users share few items "
                         "the co-rating moments carry almost nothing and a biased MF recovers the low-rank part "
                         "(issue 47): 'on' fits biased-mf at its defaults (penalties chosen on the training ratings) "
                         "and PMA models its residual without biases of its own (the MF term's carry them), the "
                         "estimate their sum; 'auto' keeps whichever of PMA alone, the MF term alone (kernel scale 0) "
                         "and both has the lowest RMSE on the validation split of the training ratings "
                         "(select=inner-cv; PMA alone with select=none); 'off' is PMA alone. "
                         "--diagnostics: carried_by, the three validation RMSEs and the residual kernel's signal "
                         "(`residual_signal_grid`)", Options("auto", "on", "off"),
                         active_when=When(task="ratings"))
    ranking: str = param("zero-filled", "ratings task: ranking scores from 'zero-filled', the same GP fitted to the "
                         "zero-filled matrix (`ratings.zero_filled_scores`: scores which items a user rates as "
                         "well as how highly), or 'ratings', the predicted ratings", Options("zero-filled", "ratings"),
                         active_when=When(task="ratings"))
    rank_signal: float = param(0.02, "ratings task: the kernels' share of the zero-filled matrix's mean square in "
                               "the ranking fit (the noise takes the rest)", Interval(0, 1, "neither"),
                               active_when=When(ranking="zero-filled"))
    rank_center: str = param("none", "ratings task: 'columns' centres the zero-filled matrix by its column means in "
                             "the ranking fit (item popularity as a fixed offset, added back to the scores); "
                             "'none' fits it as it is", Options("none", "columns"),
                             active_when=When(ranking="zero-filled"))
    rank_signal_grid: tuple[float, ...] = param((0.005, 0.02), "ratings task: candidate `rank_signal` values for "
                                                "select=inner-cv, chosen with rank_center by recall@20 on the "
                                                "validation split of the training ratings",
                                                active_when=When(ranking="zero-filled"))
    rank_center_grid: tuple[str, ...] = param(("none", "columns"), "ratings task: candidate `rank_center` values "
                                              "for select=inner-cv (on the training ratings' validation split "
                                              "centring won on FilmTrust and both CiaoDVD sets, where most users "
                                              "rate a handful of items, and lost on MovieLens-100K)",
                                              active_when=When(ranking="zero-filled"))
    dense_limit: int = param(4000, "ratings task: largest side (users or items) of the exact path — dense moment "
                             "kernels, exactly decomposed, and the dual solve over the observed ratings; a larger "
                             "matrix takes the scalable path (no users × users, items × items or users × items "
                             "array: `rank` eigenpairs of each side's sparse moment kernel, O(nnz · rank) per "
                             "iteration)", Interval(1, None), active_when=When(task="ratings"))
    rank: int = param(100, "ratings task, scalable path: eigenpairs kept of each side's moment kernel (all of them, "
                      "exact, on a side of at most rank)", Interval(1, None), active_when=When(task="ratings"))
    split_fit: bool = param(False, "ratings task, scalable path (a side above dense_limit): run the final fit's "
                            "conjugate-gradient products over the workers of the Dask cluster the unit runs on "
                            "(malt cv --scheduler), the training ratings cut into one block of consecutive users "
                            "per worker, each held by its worker for the whole solve; only (items, rank) partial "
                            "sums and a block's (users, rank) rows travel per iteration (`malt.algorithms.pma.split`). "
                            "The solve then runs in the weight space, so the numbers are one process's when that "
                            "one also solves there (ratings ≥ (users + items) × rank), else within the solver's "
                            "tolerance — so it is part of the setting's key, and a split fit is stored apart from a "
                            "local one. The eigenbases, the inner selection and the ranking fit are still computed in "
                            "the unit's process; the exact path ignores it",
                            Options(False, True), active_when=When(task="ratings"))
    select: str = param("inner-cv", "ratings task: 'inner-cv' chooses `signal` and `bias_scale` from their grids on "
                        "one validation split (1/inner_folds of the training ratings) — on the exact path bias_scale "
                        "screened with rank-50 moment kernels at the middle signal, then every signal at the best "
                        "bias_scale with the dense kernels (the screen kept the full grid's choice on the training "
                        "ratings of MovieLens-100K and FilmTrust), and the ranking fit chosen with rank-50 "
                        "zero-filled kernels; missing task: it chooses k1, "
                        "k1_scale and noise from their grids on a holdout of 1/inner_folds of the training entries "
                        "(squared hinge loss on the labels' sign, squared error on real values); when n²m + nm² ≥ 2e7 "
                        "by successive halving on one shared eigenbasis, on at most 64 random columns (and, on "
                        "wider matrices, half the rows for the first two screens): every candidate screened with K2 "
                        "fixed at its initial estimate, the best quarter (at least 2) with K2 re-estimated, the best "
                        "2 fitted as the full fit is, which chooses (the subsets and screens were set so that the "
                        "choice on the training entries stays the full-grid one: CAL500, scene, yeast, 5 folds); "
                        "'none' uses the values given. The multilabel task has nothing to select", Options("none", "inner-cv"),
                        active_when=When(task=Options("ratings", "missing")))
    center: str = param("column", "missing task: mean of the GP, the observed 'column' means (added back to the "
                        "estimate), or 'none' (the dissertation's zero-mean PMA)", Options("column", "none"),
                        active_when=When(task="missing"))
    noise: float = param(0.0, "missing task: observation-noise variance as a fraction of the centred observed "
                         "entries' mean square, a nugget on K1 ⊕ K2 (select=none)", Interval(0, None),
                         active_when=When(task="missing", select="none"))
    k1_grid: tuple[str, ...] = param(("rbf", "linear"), "missing task: candidate row kernels for select=inner-cv "
                                     "(the linear kernel divided by its mean diagonal, as the RBF's is 1)",
                                     Options("rbf", "linear"),
                                     active_when=When(task="missing", select="inner-cv"))
    k1_scale_grid: tuple[float, ...] = param((0.03, 0.1, 0.3, 1.0), "missing task: candidate k1_scale for "
                                             "select=inner-cv; the span holds what the training entries of the six "
                                             "MULAN sets chose (CAL500 the smallest)", Interval(0, None, "neither"),
                                             active_when=When(task="missing", select="inner-cv"))
    noise_grid: tuple[float, ...] = param((0.01, 0.03, 0.1, 0.3, 1.0), "missing task: candidate noise for "
                                          "select=inner-cv; the span holds what the training entries of the six "
                                          "MULAN sets chose (CAL500 the largest)", Interval(0, None),
                                          active_when=When(task="missing", select="inner-cv"))

    @classmethod
    def implied_condition(cls, name: str) -> When | None:
        implied = super().implied_condition(name)
        if name in ("k1", "k1_scale"):  # inner CV chooses them from their grids on the missing task only
            return When(task="multilabel") | When(task="missing", select="none") | When(task="missing", **{
                f"{name}_grid": ()})
        if name in ("jitter", "kernel_updates"):  # the fields of PMAParams
            return MATRIX_TASKS if implied is None else MATRIX_TASKS & implied
        return implied

    @classmethod
    def also_used_when(cls, name: str) -> When | None:
        searched = When(task="missing", select="inner-cv")  # the kernel families inner CV tries use the features
        return {"width": searched & When(k1_grid=Includes("rbf")), "scale": searched}.get(name)


@register
class PMAMap(Algorithm):
    """PMA-MAP: the MAP completion for fixed kernels (fixed point of eqs. 5.22-5.23), K2 re-estimated from G.

    The fixed point is computed by conjugate gradients in the kernels' eigenbasis (solver='alternate' runs the
    paper's alternation instead). On the missing task the GP has the observed column means as its mean and
    observation noise, and K1's family and scale and the noise are chosen on training entries (missing.py)."""

    name = "pma-map"
    tasks = frozenset({"missing", "multilabel", "ratings"})
    Params = MAPParams
    version = "18"  # v18 (ratings task, mf_term): PMA on the MF term's residual fits no biases of its own (it refitted
    # them at PMA alone's low bias penalties, fitting noise) and takes its signal from residual_signal_grid on the
    # validation split (it borrowed PMA alone's). Fold 0, one thread, test RMSE before -> after: Jester 4.0455 ->
    # 4.0295 (mf+kernel both; biased-mf 4.0726); synthetic 480,189 × 17,770 with 10⁷ ratings 1.11998 -> 1.11818
    # (biased-mf 1.11864); MovieLens-100K, FilmTrust and CiaoDVD unchanged (PMA alone is still chosen).
    # v17 (ratings task, scalable path): a moment kernel with more than 10⁹ co-rating pairs on its
    # side takes the separable form (`ratings.MomentKernel`: expected counts, O(nnz) products), and one whose ratings
    # are at least 10 % filled (Jester's users) dense blocks instead of sparse ones. Synthetic 480,189 × 17,770 with
    # 10⁷ ratings, select=none, one thread: RMSE 1.24581 -> 1.24581, CPU 309 -> 148 s, peak 4797 -> 4352 MiB;
    # Jester at defaults: > 3480 CPU s (stopped unfinished) -> 465 s. Every set below 10⁹ pairs keeps its kernels.
    # The low-rank term (mf_term) is biased-mf v5's (λ in units of the ratings' σ̂): Jester fold 0 RMSE 4.1650 ->
    # 4.0455 (biased-mf 4.0726), 431 CPU s.
    # v16 (ratings task, exact path): the inner selection screens bias_scale on rank-50 moment kernels
    # at the middle signal and fits the signal grid exactly at the best bias_scale only (each solve warm-started from the
    # previous signal's dual weights), and the ranking selection scores its candidates with rank-50 zero-filled kernels;
    # the final fits are unchanged. MovieLens-100K fold 0, one thread, same session, before -> after: test RMSE
    # 0.915706850 -> 0.915706850 (the same choice, signal 0.5, bias_scale 0.25), CPU 17.7 -> 10.0 s (floor 3.2-3.9 s).
    # v15 (ratings task, low-rank path): the observed-entry posterior iterates on the observations
    # when they are fewer than the kernels' weights (`ObservedKroneckerSum.solve`'s dual form, the same posterior
    # mean; its conjugate-gradient iterates, so values move within the solver tolerance: synthetic 50,000² with 10⁶
    # ratings, select=none, RMSE 1.26721214491 -> 1.26721214484, peak 1164 -> 726 MiB, CPU 27.6 -> 22.4 s).
    # v14 (missing task): the inner screens on 64 random columns of a wider matrix and, there, half
    # its rows for the first two screens (the GP's marginal on a subset is the same prior); the third screen (the best 2
    # fitted as the full fit is, to its own tolerances) chooses, with no separate finalist fits; 25 % hidden, 5 folds,
    # one thread, same run, before -> after (error %, CPU s/fold): CAL500 9.88 -> 9.88, 1.17 -> 0.38; yeast 8.25 ->
    # 8.25, 8.1 -> 6.0; enron 4.34 -> 4.38 (a tie swapped in fold 4), 4.8 -> 4.1; scene 4.63 -> 4.63, 7.2 -> 5.3;
    # emotions (not screened; its outer fit now warm-starts from the inner choice too) 16.74 -> 16.72, 0.70 -> 0.49
    # (figures.d/ch5-pma.md, v14 note). `selected` names every searched field.
    # v13 (ratings task): a biased-MF term beside the kernels, or alone, when it lowers the
    # validation RMSE (mf_term='auto'); v12 (missing task): the inner grid walked by structure on matrices of n²m + nm² ≥ 2e7
    # (missing.SCREEN_MIN_COST): all candidates screened with K2 fixed on one shared factorisation, the best quarter
    # with K2 re-estimated, the best 2 fitted in full (warm-started), the outer fit warm-started from the choice;
    # 25 % hidden, 5 folds, one thread, before -> after (error %, CPU s/fold): CAL500 9.89 -> 9.88, 5.62 -> 1.36;
    # yeast 8.20 -> 8.17, 23.0 -> 8.3; enron 4.40 -> 4.37, 21.3 -> 5.5; scene 4.38 -> 4.54, 18.7 -> 9.5; emotions
    # and genbase (below the threshold) unchanged. Ratings task: the ranking grid shares its eigenbases across
    # rank_signal (numbers unchanged). v11 (ratings task, scalable path): the Krylov products of the moment kernels and the
    # zero-filled Gram operators in single precision (synthetic draws: RMSE equal to 1e-11); v10: Krylov blocks
    # orthonormalised by Cholesky QR, the eigenbases equal to rounding (MovieLens-100K and FilmTrust RMSE unchanged
    # to 1e-4); v9 (ratings task): matrices with a side above dense_limit take the scalable path, ranking fit
    # centred or not and its signal chosen by recall@20 on the holdout; v8 (missing task): column mean, noise and K1
    # chosen on training entries (missing.py); v7 (missing/multilabel): single-precision eigendecompositions at the
    # default tolerance; v6 (ratings task): sharpened moment kernels (kernel_power 3, shrink 300), bias penalties
    # chosen by inner CV, ranking from a zero-filled fit

    def run(self, split, params, ctx):
        if isinstance(split, MultilabelSplit):
            return decide_by_refits(self.fit_predict, split, params, ctx, 0.0)
        return self.fit_predict(split, params, ctx)

    def fit_predict(self, split, params, ctx):
        if hasattr(split, "train") and hasattr(split, "test_cols"):
            if params.split_fit:
                from malt.algorithms.als_blocks import cluster_client

                with cluster_client() as client:
                    return _run_ratings(split, params, ctx, client)
            return _run_ratings(split, params, ctx)
        if hasattr(split, "hidden"):  # the missing task: a column mean, noise and K1 chosen on training entries
            return run_missing(split, params, ctx, single=params.solver == "cg" and params.tol >= SINGLE_TOL,
                               pma_map=pma_map, path=fixed_kernel_path)
        data = matrix_inputs(split, params)
        K1, eig1 = row_kernel_eig(params, ctx, data.rows, data.fit_rows,
                                  single=params.solver == "cg" and params.tol >= SINGLE_TOL)
        fit = pma_map(data.M, K1, None, kernel_updates=params.kernel_updates, iterations=params.iterations,
                      tol=params.tol, jitter=params.jitter, eig1=eig1, solver=params.solver, init=params.init,
                      relax=params.relax, anderson=params.anderson, alternate_tol=params.alternate_tol,
                      rng=ctx.rng, parts=False)
        return prediction(fit["values"], data.n_new,
                          diagnostics={"iterations": fit["iterations"],
                                       "residuals": [float(f"{r:.3g}") for r in fit["residuals"]]})


def _run_ratings(split, params, ctx, client=None):
    """The ratings task: biases + PMA with sharpened moment kernels (`malt.algorithms.pma.ratings`); the
    kernels' scale and the biases' penalties chosen on a validation split of the training ratings unless
    select='none' (`_choose_kernel_setting`: on the exact path bias_scale screened on the low-rank path, then the
    signal grid exactly). ``values`` (RMSE/MAE) come from that fit; ``scores`` (ranking) from the same GP fitted
    to the zero-filled matrix (`zero_filled_scores`; ranking='ratings' ranks by the estimates instead):
    the RMSE-optimal low bias penalties let rarely rated items with high estimates top a ranking by
    estimates (recall@20 below `baseline`'s on MovieLens-100K), as in the matrix-variate GPs. ``client``
    (split_fit): the Dask client the final scalable-path solve runs its products over (`split.SplitKroneckerSum`)."""
    import scipy.sparse as sp

    from malt.errors import DataError
    from malt.numerics.selection import candidates, holdout_ids, select
    from malt.splits import Prediction, RowScores

    from .ratings import (check_size, exact_path, predict_ratings, zero_filled_scores,
                          zero_filled_scores_low_rank)

    train = sp.coo_matrix(split.train)
    exact = exact_path(train.shape, params.dense_limit)
    if exact:
        check_size(train.shape)
    train.sum_duplicates()
    rows, cols, y = train.row.astype(np.int64), train.col.astype(np.int64), train.data.astype(float)
    if y.size == 0:
        raise DataError("pma-map: the training split has no ratings")
    if split.new_rows:
        raise DataError("pma-map cannot predict new rows of a rating matrix (its kernels come from co-ratings); "
                        "use new_rows=False")
    diagnostics = {}
    tuned = params.select == "inner-cv"
    ids = holdout_ids(y.size, 1.0 / params.inner_folds, ctx.rng) if tuned else None
    grids = {"signal": params.signal_grid, "bias_scale": params.bias_scale_grid}
    residual_grid = params.residual_signal_grid or (params.signal,)  # a grid: the candidates drop it (select='none')
    options = candidates(params, grids) if tuned else [params]
    kernel_rmse = None  # the chosen setting's validation RMSE, once the selection has scored it
    if len(options) == 1:  # nothing to choose: the grids' single values (the values given where a grid is empty)
        params = options[0]
    else:
        choice = _choose_kernel_setting(rows, cols, y, train.shape, ids, params, options, exact,
                                        progress=lambda f: ctx.progress(0.5 * f, "choosing the kernel scale and "
                                                                                 "bias penalties"))
        params = choice.best
        diagnostics.update(choice.diagnostics())
        kernel_rmse = float(choice.scores[next(i for i, o in enumerate(choice.candidates) if o is choice.best)])
    carried = "mf+kernel" if params.mf_term == "on" else "kernel"
    if params.mf_term == "auto" and tuned:
        ctx.progress(0.5, "a low-rank term beside the kernels")
        carried, validation, residual_path = _mf_term_helps(rows, cols, y, train.shape, ids, params, ctx.rng,
                                                            residual_grid, kernel_rmse)
        residual_signal = min(residual_path, key=residual_path.get)
        diagnostics.update(validation_rmse=validation, residual_signal=residual_signal,
                           residual_signal_path={str(float(k)): round(v, 5) for k, v in residual_path.items()})
        if carried == "mf+kernel":
            params = replace(params, signal=residual_signal)
    offset, y_kernel = np.zeros(split.test_rows.size), y
    if carried != "kernel":
        from malt.algorithms.recommenders import BiasedMFParams, biased_mf_at, biased_mf_scores, fit_biased_mf

        f, _ = fit_biased_mf(train, BiasedMFParams(), ctx.rng)
        y_kernel = y - biased_mf_at(f, rows, cols)
        offset = biased_mf_at(f, split.test_rows, split.test_cols)
    diagnostics["carried_by"] = carried
    by_ratings = params.ranking == "ratings"
    if carried == "mf":  # the kernel term's scale is 0: nothing of it to fit
        fit = {"values": offset, "scores": biased_mf_scores(f, split.test_rows) if by_ratings else None}
    else:
        ctx.progress(0.6, "moment kernels" + ("" if exact else f" and their top {params.rank} eigenpairs"))
        moments = _moments(rows, cols, y_kernel, train.shape, params, biases=carried == "kernel")
        if client is not None and not exact:  # split_fit: the solve's products on the workers' row blocks
            from .split import SplitKroneckerSum

            moments["solver"] = SplitKroneckerSum(moments["E1"], moments["E2"], rows, cols, train.shape, client)
            diagnostics["split_blocks"] = len(moments["solver"].blocks)
        fit = predict_ratings(moments, rows, cols, split.test_rows, split.test_cols, signal=params.signal,
                              tol=1e-4, scores=by_ratings,
                              progress=lambda f, msg: ctx.progress(0.6 + 0.2 * f, msg))
        fit["values"] = fit["values"] + offset
        diagnostics.update(noise=round(fit["noise"], 4), kernel_scale=[round(v, 4) for v in fit["kernel_scale"]],
                           cg_iterations=fit["iterations"], path="exact" if exact else "low-rank")
        if not exact:
            diagnostics["eigenpairs"] = [moments["E1"].vectors.shape[1], moments["E2"].vectors.shape[1]]
            diagnostics["moment_kernels"] = moments["kernels"]
        if "split_blocks" in diagnostics:
            moments["solver"].close()  # release the workers' blocks
        del moments  # the kernels and their solver: the ranking fit below builds its own
    scores = fit["scores"]
    if not by_ratings:
        def ranking(fit_rows, fit_cols, fit_y, score_rows, option, cache=None, screen=False):
            """The zero-filled fit; ``screen`` (the selection's): on the low-rank path whatever the size — the
            top `SCREEN_RANK` eigenpairs by Krylov products instead of two dense eigendecompositions per rank_center
            (MovieLens-100K fold 0, validation recall@20 of the four candidates: the same order on either path,
            the best ahead by 0.023 on both)."""
            kw = dict(signal=option.rank_signal, center=option.rank_center == "columns", cache=cache)
            if exact and not screen:
                return zero_filled_scores(fit_rows, fit_cols, fit_y, train.shape, score_rows, **kw)
            rank = min(params.rank, SCREEN_RANK) if exact else params.rank
            return zero_filled_scores_low_rank(fit_rows, fit_cols, fit_y, train.shape, score_rows, rank=rank, **kw)

        grids = {"rank_signal": params.rank_signal_grid, "rank_center": params.rank_center_grid}
        if tuned and any(len(grid) > 1 for grid in grids.values()):
            from malt.algorithms.recommenders import relevance_threshold, validation_recall

            relevant = relevance_threshold(y)
            shared = {}  # per validation split: its fits share their eigenbases across rank_signal

            def recall(option, fit_idx, val_idx):
                fold = shared.setdefault((val_idx.size, int(val_idx[0]) if val_idx.size else -1), {})
                got, _ = ranking(rows[fit_idx], cols[fit_idx], y[fit_idx], None, option, fold, screen=True)
                return validation_recall(rows[fit_idx], cols[fit_idx], train.shape, rows[val_idx], cols[val_idx],
                                         y[val_idx], got, relevant)

            choice = select(candidates(params, grids), recall, ids, better="higher",
                            progress=lambda f: ctx.progress(0.9 + 0.08 * f, "choosing the ranking fit"))
            params = choice.best
            diagnostics.update({f"ranking_{k}": v for k, v in choice.diagnostics().items()})
        ctx.progress(0.98, "ranking fit")
        scorer, rank_noise = ranking(rows, cols, y, None, params)
        scores = RowScores(np.unique(split.test_rows), train.shape[1], scorer)
        diagnostics["ranking_noise"] = round(rank_noise, 6)
    return Prediction(values=fit["values"], scores=scores, diagnostics=diagnostics)


SCREEN_TOL = 1e-3
"""Relative residual of the selection's solves (the validation RMSE moves by < 1e-5 below it on MovieLens-100K)."""
SCREEN_RANK = 50
"""Eigenpairs kept of each kernel in the exact path's screens (bias_scale, and the ranking fit): on MovieLens-100K
fold 0 the validation RMSE of the three bias_scale values keeps its order at rank 30, 50, 100 and on the exact path,
and the screen's solve costs a sixth of rank 100's."""


def _choose_kernel_setting(rows, cols, y, shape, ids, params, options, exact: bool, progress=None):
    """The `Selection` of (signal, bias_scale) among ``options`` on the validation split ``ids`` of the training
    ratings (validation RMSE), in two stages on the exact path (``exact``):

    1. every ``bias_scale`` of the grid screened at the middle of the signal grid on the scalable path
       (`ratings.fit_moments_low_rank`, top `SCREEN_RANK` eigenpairs of each moment kernel: O(pairs · rank) instead of
       the two dense eigendecompositions, O(n³ + m³), and O(nnz · rank) per iteration instead of O(nnz (n + m)));
    2. the signal grid at the best of them on the exact path, one pair of moment kernels, each signal's solve
       warm-started from the previous one's dual weights (`ratings.observed_cg`).

    The bias penalties move the validation RMSE by far more than the truncation does (MovieLens-100K, fold 0:
    0.0005 and 0.004 between the three bias_scale values on either path, in the same order at every signal), the
    signal by less (the truncated spectrum drops the tail's variance, which shifts the best signal: stage 2 keeps
    the exact path). On the scalable path (not ``exact``) every option is scored as it is fitted. The Selection's
    candidates are stage 2's, its ``varied`` both grids' names (``selected`` names every searched field)."""
    from malt.numerics.selection import select, varied_names

    from .ratings import predict_ratings

    fit_idx, val_idx = np.flatnonzero(ids < 0), np.flatnonzero(ids == 0)
    fr, fc, vr, vc = rows[fit_idx], cols[fit_idx], rows[val_idx], cols[val_idx]

    def rmse(got):
        return float(np.sqrt(np.mean((got["values"] - y[val_idx]) ** 2)))

    varied = varied_names(options)
    bias_scales = list(dict.fromkeys(o.bias_scale for o in options))
    if exact and len(bias_scales) > 1:
        signals = sorted({o.signal for o in options})
        middle = signals[(len(signals) - 1) // 2]
        screened = {}
        for k, bias_scale in enumerate(bias_scales):
            option = next(o for o in options if o.bias_scale == bias_scale)
            moments = _moments(fr, fc, y[fit_idx], shape, option, rank=min(params.rank, SCREEN_RANK))
            screened[bias_scale] = rmse(predict_ratings(moments, fr, fc, vr, vc, signal=middle, tol=SCREEN_TOL))
            if progress is not None:
                progress(0.5 * (k + 1) / len(bias_scales))
        best = min(bias_scales, key=screened.get)  # the first of equals, in grid order
        options = [o for o in options if o.bias_scale == best]
    moments_of, start = {}, {}  # bias_scale -> moments of the fitting part; -> the last solve's dual weights

    def evaluate(candidate, fit_idx, val_idx):
        key = candidate.bias_scale
        if key not in moments_of:
            moments_of[key] = _moments(rows[fit_idx], cols[fit_idx], y[fit_idx], shape, candidate)
        got = predict_ratings(moments_of[key], rows[fit_idx], cols[fit_idx], rows[val_idx], cols[val_idx],
                              signal=candidate.signal, tol=SCREEN_TOL, start=start.get(key))
        start[key] = got.get("dual")
        return float(np.sqrt(np.mean((got["values"] - y[val_idx]) ** 2)))

    stage = None if progress is None else (lambda f: progress(0.5 + 0.5 * f))
    choice = select(options, evaluate, ids, progress=stage)
    return replace(choice, varied=varied)


def _mf_term_helps(rows, cols, y, shape, ids, params, rng, residual_grid, kernel_rmse: float | None = None
                   ) -> tuple[str, dict, dict]:
    """(the best of 'kernel' (PMA alone), 'mf' (biased-mf's low-rank term, the kernel term's scale 0) and
    'mf+kernel' (PMA on the MF residual), their validation RMSEs, the residual kernel's signals walked -> their
    validation RMSEs) on the validation split ``ids`` (0: validation, -1: fitting part) of the training ratings.
    PMA alone is at the kernel setting ``params`` chosen for it (``kernel_rmse``: its validation RMSE when the
    kernel selection already scored it on ``ids``); PMA on the residual without biases of its own (the MF term's
    are fitted with its penalties chosen by its inner CV; refitting them on the residual at PMA's low bias
    penalties fitted noise) and at the best signal of ``residual_grid`` (`residual_signal_grid`), walked in grid
    order up to the first value that scores worse than the one before it (the validation curves over the signal
    were unimodal on MovieLens-100K, FilmTrust and CiaoDVD, so the walk keeps the full grid's choice and skips
    the solves past its minimum).
    Cost: one biased-mf fit (its own penalty choice on the fitting part), one or two sets of moment kernels of
    the fitting part, and one GP solve per signal walked on the residual's kernels (each warm-started from the
    previous signal's dual weights on the exact path)."""
    import scipy.sparse as sp

    from malt.algorithms.recommenders import BiasedMFParams, biased_mf_at, fit_biased_mf

    from .ratings import predict_ratings

    fit_idx, val_idx = np.flatnonzero(ids < 0), np.flatnonzero(ids == 0)
    fr, fc, vr, vc = rows[fit_idx], cols[fit_idx], rows[val_idx], cols[val_idx]

    def rmse(estimate):
        return float(np.sqrt(np.mean((estimate - y[val_idx]) ** 2)))

    def kernel_part(targets, signals, biases=True, score=None) -> dict:
        """signal -> validation estimate; with ``score`` (estimate -> RMSE) signal -> RMSE, the walk along
        ``signals`` stopping at the first signal that scores worse than the one before it."""
        moments, got, dual, previous = _moments(fr, fc, targets, shape, params, biases=biases), {}, None, None
        for signal in signals:
            fit = predict_ratings(moments, fr, fc, vr, vc, signal=signal, tol=10 * 1e-4, start=dual)
            dual = fit.get("dual")
            if score is None:
                got[signal] = fit["values"]
                continue
            got[signal] = score(fit["values"])
            if previous is not None and got[signal] > previous:
                break
            previous = got[signal]
        return got

    f, _ = fit_biased_mf(sp.coo_matrix((y[fit_idx], (fr, fc)), shape=shape), BiasedMFParams(), rng)
    mf_fit, mf_val = biased_mf_at(f, fr, fc), biased_mf_at(f, vr, vc)
    if kernel_rmse is None:
        kernel_rmse = rmse(kernel_part(y[fit_idx], (params.signal,))[params.signal])
    residual = kernel_part(y[fit_idx] - mf_fit, residual_grid, biases=False,
                           score=lambda values: rmse(mf_val + values))
    residual_signal = min(residual, key=residual.get)
    scores = {"kernel": kernel_rmse, "mf": rmse(mf_val), "mf+kernel": residual[residual_signal]}
    best = min(scores, key=scores.get)
    return best, {k: round(v, 5) for k, v in scores.items()}, residual


def _moments(rows, cols, y, shape, params, rank: int | None = None, biases: bool = True) -> dict:
    """Biases (penalties 15 and 10 × ``bias_scale``; none but the mean without ``biases``: the MF term's residual,
    whose biases the MF term carries) and moment kernels of training ratings; with ``rank``: the scalable path's
    top ``rank`` eigenpairs whatever the size (`ratings.fit_moments_low_rank`)."""
    from .ratings import fit_moments

    scale = params.bias_scale if biases else np.inf
    return fit_moments(rows, cols, y, shape, shrink=params.shrink, reg_rows=15.0 * scale,
                       reg_cols=10.0 * scale, power=params.kernel_power,
                       rank=params.rank if rank is None else rank, dense_limit=params.dense_limit if rank is None else 0)
