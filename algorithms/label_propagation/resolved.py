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

a Dirichlet problem on U whose data are the resolved scores. Its right-hand side is non-zero only on
the *seeds*, the rows of U labelled or next to a resolved row. Each stage scales it to a largest
entry of 1 (the scale is kept as a logarithm per row, ``log_scale``, so nothing underflows) and
solves it on a *band* only: the rows of U within H hops of the seeds through U (a breadth-first
search), B; the rest of U, F, is left at 0 — its scores lie many orders of magnitude below the
band's (~0.42 orders per hop on the swiss roll), which a stage cannot resolve anyway. The
Chebyshev semi-iteration (`solvers.Chebyshev`) runs on A_BB from the previous stage's iterate to an
absolute residual ``STAGE_RTOL``·max_c ‖b_c‖₂, on the interval [1 − α, 1 + α] that holds A_BB's
spectrum (S_BB's lies in S's [−1, 1] by interlacing): CG's worst-case rate without CG's two inner
products and per-column steps per iteration, vector passes that cost as much as the products at 10⁴
swiss-roll points (CG before version 5 of lgc: 59 iterations, 0.048 s; Chebyshev 68, 0.036 s). Each
iteration updates the residual in place (`solvers.ShiftedAdjacency`: no (|B|, C) temporary per
product). A band with no layer (every unresolved row in it: the only stage at 10⁴ swiss-roll points,
the last stages above) also stops as soon as every row of it would be resolved by the error its
iteration's residual implies (`_all_resolved`, checked with the residual; the rule of the next
paragraphs then decides, on the recomputed residual, which rows are resolved): at 10⁴ points 52
iterations instead of the 68 that a residual of 1e-13 takes.

Error bound. The band's iterate x̃_B, extended by 0 on F, is an approximate solution of the whole
Dirichlet problem on U; its residual is r_B = b_B − A_BB x̃_B on the band and r_F = αS_FB x̃_B on F
(b_F = 0: F holds no seed), non-zero only on the *layer* of F next to the band. With v > 0 such that
S v ≤ v (v = D^{1/2}1 for S = D^{-1/2}WD^{-1/2}: S v = v), S_UU v_U ≤ v_U, so
‖(I − αS_UU)⁻¹‖ ≤ 1/(1 − α) in the norm max_i |x_i|/v_i, and for every row i of U

.. math:: |x_i - x^*_i| \\le e_i = \\frac{v_i}{1-\\alpha}\\,\\max_{j \\in U} \\frac{|r_j|}{v_j}

(|r_j| bounded with the rounding of its own evaluation: γ(|b| + |x| + αS|x|) on the band, a factor
1 + γ on the layer, γ = (row length + 3)·ε). This is the discrete maximum principle of the
random-walk variables h = x/v: D_v⁻¹ S_UU D_v is substochastic, so what the band leaves out (the
scores of F and their feedback into the band) is bounded by the band's edge, through the layer's
residual. It holds whatever H is; H only sets the cost: too narrow a band, and the layer's residual
dominates e, fewer rows are resolved (and if none, the stage is solved again on a band twice as
wide; a band that reaches every row of U it can leaves no layer). Rows whose largest entry is at
least e_i / ``RESOLUTION`` are resolved — their scores are known to within ``RESOLUTION`` of their
largest — and leave U; the next stage solves the rest, whose scores lie below that level, on its own
scale. Every stage resolves at least the row of its largest right-hand side once the layer's residual
is below it (A_BB⁻¹ ≥ I entrywise, so x ≥ b), and the solve ends when no seed is left (rows no label
reaches: their scores are exactly 0).

Error bound, relative to a row's score sum s_i = Σ_c F_ic: an error ≤ ε s in the data F_R gives
an error ≤ ε s in F_U (A_UU⁻¹ αS_UR ≥ 0 maps s_R to the part of s_U fed by R), and each stage adds
≤ δ/(1−δ) (δ = ``RESOLUTION``): after K stages every score is within K·δ·s_i/(1−δ) of the exact
one (``error_bound``). A row whose two largest scores differ by less than twice that is counted in
``uncertain_rows`` (its decision is as fragile in the exact solution).

Band width: the first stage takes ``FIRST_BAND_HOPS`` (scaled with α); each later one moves H by the
hops over which the band's scores fall from the layer's residual to the band's own (their rate per
hop measured in the band), so the two are about equal, plus ``BAND_MARGIN_HOPS``. A band holding
``WHOLE_FRACTION`` of the unresolved rows is widened to all of them (no layer, the solve of all
unresolved rows as before bands: 10⁵ swiss-roll points and smaller graphs, the last stages).

Cost: each stage costs its iterations on the band (one product with A_BB for all classes at once;
κ(A_BB) ≤ (1+α)/(1−α); at α = 0.9 ~65 Chebyshev iterations for stage 1, ~20 for the later ones, which
start from the previous stage's iterate) plus a breadth-first search (stopped once it has reached
``WHOLE_FRACTION`` of the unresolved rows), one pass over the band's rows of S to cut out A_BB and one
O(n) indicator. A band holds the rows a stage resolves (~9 orders of magnitude at δ = 1e-3) and those
~4 orders below them that bound its error. Measured with δ = 1e-6 (lgc 5) on the swiss roll of
tests/benchmarks/bench_label_propagation_scale.py (scores fall ~0.42 orders of magnitude per hop, up to
138 hops from a label at 10⁶ points): Σ_stages |B|·iterations 64 n, 69 n and 66 n at 10⁵, 3·10⁵ and
10⁶ points (3, 7 and 11 stages), where solving every stage on all of U cost 64 n, 80 n and 104 n;
with δ = 1e-3 (lgc 6) 52 n at 10⁴ (1 stage, 68 n before) and 70 n at 10⁵ (2 stages, 78 n before).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import solvers

RESOLUTION = 1e-3
"""δ: a stage resolves a row once the bound on its entries' error is at most δ × its largest score.
1e-3 from lgc 6 (1e-6 before): 3 orders of magnitude more per stage for a bound of K·1e-3 of each
row's score sum after K stages. Swiss roll, 50 labels, k = 10: the same decisions as δ = 1e-6 at 10⁴
and 10⁵ points (uncertain rows 0 → 4 and 0 → 15, every one decided as the exact solution decides it),
16 (10⁴) and 10 % (10⁵) fewer row-iterations; the 3,000-point strip of the tests: 33 uncertain rows,
0 decisions off a sparse LU's."""
STAGE_RTOL = 1e-10
"""Each stage's iteration stops at an absolute residual of STAGE_RTOL × its largest right-hand-side column
norm: the smaller, the more orders of magnitude a stage resolves, and the more iterations every row of
its band pays for the last of them. 1e-10 from lgc 7 (1e-13, near float64's rounding floor, before):
a stage then resolves ~3 orders of magnitude fewer, which the next stage, on the few rows left, resolves
for less. Swiss roll, 50 labels, k = 10, α = 0.9, one thread: band rows × iterations 70.4 n → 61.6 n at
10⁵ points (2 → 3 stages), 79.3 n → 65.3 n at 3·10⁵ (1.33 → 1.18 s), 75.3 n → 63.3 n at 10⁶ (5.39 → 4.86 s);
the same decisions at all three; 10⁴ points unchanged (one stage, stopped by `_all_resolved`). 1e-11 and
1e-9 were each slower than 1e-10 at 3·10⁵ and 10⁶ (more stages, each with its search and cut-out)."""
DECIDE_RTOL = 1e-13
"""`decide_rows`'s floor: its one run must certify the held-out rows' decisions before it, or the caller
pays for a whole `resolve` — so it may go down to the rounding floor of float64."""
MAX_SOLVES = 10000
"""A guard: every stage resolves at least one row or widens its band, so more solves than this means a
defect."""
FIRST_BAND_HOPS = 32
"""H of the first stage's band at α = 0.9, scaled by √(0.1/(1 − α)) for other α (the length over which
a random walk stopped with probability 1 − α per step spreads: at α = 0.99 102 hops). The swiss roll
at α = 0.9 needs ~31 for 13 orders of magnitude."""
BAND_MARGIN_HOPS = 1
"""Hops added to the band width that makes the layer's residual equal to the band's."""
MIN_BAND_HOPS = 2
WHOLE_FRACTION = 0.9
"""A band holding this fraction of the unresolved rows is widened to all of them (a few rows left out
would leak into the bound at the cost of a narrow band's, for no saving)."""


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
    row_iterations: int = 0
    """Σ over the solves of band rows × iterations (the work; n × iterations without bands)."""
    truncated: int = 0
    """Solves whose band left out rows of U next to it (their layer's residual entered the bound)."""

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
            stage_rtol: float = STAGE_RTOL, first_hops: int | None = None, progress=None) -> ResolvedScores:
    """Solve (I − αS) F = B, every row resolved to ``resolution`` (see the module docstring).

    Parameters
    ----------
    S : (n, n) sparse
        Symmetric, non-negative; best in a bandwidth-reducing order (`solvers.locality_order`).
    alpha : float in (0, 1)
    B : (n, C) array, ≥ 0
    weights : (n,) array
        v > 0 with S v ≤ v (for S = D^{-1/2} W D^{-1/2}: v = √d, and 1 on isolated rows).
    first_hops : int, optional
        H of the first stage's band (default: from ``FIRST_BAND_HOPS`` and α; later ones adapt; the
        bound holds for any H ≥ 0).
    progress : callable, optional
        Called as progress(fraction of rows resolved, message) after every residual check (`solvers.CHEBYSHEV_CHECK` iterations; the fraction at
        least 1/n, so a progress line shows stage 1's iterations too).
    """
    S = sp.csr_matrix(S)
    B = np.asarray(B, dtype=float)
    v = np.asarray(weights, dtype=float)
    n, C = B.shape
    mantissa = np.zeros((n, C))
    log_scale = np.zeros(n)
    resolved = np.zeros(n, bool)
    previous = (np.zeros(0, dtype=np.int64), np.zeros((0, C)), 0.0)  # the last solve's unresolved rows, iterate, scale
    visited = np.zeros(n, bool)  # scratch of the breadth-first search: resolved rows and the band so far
    stamp = np.zeros(n, dtype=np.int64)
    seeds = np.flatnonzero(row_max(np.abs(B)) > 0)
    hops = int(first_hops) if first_hops is not None else int(np.ceil(FIRST_BAND_HOPS * np.sqrt(0.1 / (1 - alpha))))
    stages = iterations = row_iterations = truncated = solves = 0
    while seeds.size:
        if solves >= MAX_SOLVES:
            raise solvers.SolveError(f"the LGC solve did not resolve every row in {MAX_SOLVES} solves")
        solves += 1
        left = n - int(np.count_nonzero(resolved))
        band, level = _band(S, seeds, hops, visited, stamp, whole=WHOLE_FRACTION * left)
        if band is None:  # nearly all that is left: all of it, no layer to leak into
            band = np.flatnonzero(~resolved)
        S_BB, boundary, layer, coupling = _band_system(S, band, resolved)
        b, scale = _band_rhs(alpha, B[band], S, band, seeds, resolved, mantissa, log_scale)
        if scale is None:  # the rows left are exactly 0 (or below float64's range of the largest)
            break

        S_BB.data *= alpha  # αS_BB, the operator I − αS_BB applied in place (`solvers.ShiftedAdjacency`)
        vB = v[band]

        def report(it, residual, goal, stage=stages, done=int(resolved.sum()), size=band.size):
            if progress is not None:
                progress(max(done, 1) / n, f"stage {stage + 1}: Chebyshev iteration {it} on {size:,} rows, residual "
                                           f"{residual:.1e} (goal {goal:.1e}); {done:,}/{n:,} rows resolved")

        goal = stage_rtol * float(np.linalg.norm(b, axis=0).max())
        settled = None if layer.size else _all_resolved(vB, alpha, resolution)
        cg = solvers.Chebyshev(solvers.ShiftedAdjacency(S_BB), 1 - alpha, 1 + alpha, atol=goal, callback=report,
                               settled=settled)
        x0 = _warm_start(band, *previous, scale)
        X = cg.solve(b, x0)
        iterations += cg.iterations
        row_iterations += cg.iterations * band.size
        band_residual = residual = float(np.max(_residual_bound(S_BB, b, X) / vB[:, None]))
        if layer.size:  # x̃ extended by 0: the rows just outside the band get the residual α S_FB x̃_B
            truncated += 1
            gamma = (np.diff(coupling.indptr).max() + 3) * np.finfo(float).eps
            leak = alpha * (coupling @ np.abs(X[boundary])) * (1 + gamma)
            leak_h = float(np.max(leak / v[layer][:, None]))
            residual = max(residual, leak_h)
        error = residual / (1 - alpha)
        top = row_max(X)
        done = top >= vB * error / resolution
        if not done.any():
            if not layer.size:
                raise solvers.SolveError(f"stage {stages + 1} of the LGC solve resolved no row (error bound up to "
                                         f"{error * vB.max():.1e} of a largest score ≥ 1); the rounding floor is "
                                         f"above {resolution:g}")
            previous = (band, X, scale)
            hops = max(2 * hops, _next_hops(level, top / vB, band_residual, leak_h, hops))
            continue
        rows = band[done]
        mantissa[rows], log_scale[rows], resolved[rows], visited[rows] = X[done], scale, True, True
        previous = (band[~done], X[~done], scale)
        seeds = (np.zeros(0, dtype=np.int64) if resolved.all()
                 else np.union1d(seeds[~resolved[seeds]], _unresolved_neighbours(S, rows, resolved)))
        if layer.size:
            hops = _next_hops(level, top / vB, band_residual, leak_h, hops)
        stages += 1
    if progress is not None:
        progress(1.0, f"{stages} stages, {iterations} Chebyshev iterations")
    return ResolvedScores(mantissa, log_scale, stages, iterations, stages * resolution / (1 - resolution),
                          row_iterations, truncated)


def row_max(X: np.ndarray, absolute: bool = False) -> np.ndarray:
    """max_c X_ic (or max_c |X_ic|) of every row of an (n, C) block, one column at a time: numpy's
    ``X.max(axis=1)`` over a short row is ~10× slower (0.86 against 0.08 ms at 10⁴ × 4). O(nC)."""
    out = np.abs(X[:, 0]) if absolute else X[:, 0].copy()
    for j in range(1, X.shape[1]):
        np.maximum(out, np.abs(X[:, j]) if absolute else X[:, j], out=out)
    return out


def _warm_start(band, rows, X, scale, new_scale):
    """The iterate X of ``rows`` (at ``scale``) on the rows of ``band`` (at ``new_scale``), 0 on the others."""
    x0 = np.zeros((band.size, X.shape[1]))
    factor = np.exp(min(scale - new_scale, 700.0))
    at = np.minimum(np.searchsorted(band, rows), band.size - 1)
    found = band[at] == rows if band.size else np.zeros(rows.size, bool)
    x0[at[found]] = X[found] * factor
    return x0


def _unresolved_neighbours(S, rows, resolved) -> np.ndarray:
    """The unresolved rows next to ``rows`` (sorted)."""
    cols = S[rows].indices
    return np.unique(cols[~resolved[cols]])


def _band(S, seeds, hops, visited, stamp, whole=np.inf):
    """The unresolved rows within ``hops`` steps of ``seeds`` through unresolved rows (sorted) and their
    distance in steps; (None, None) as soon as the search has reached ``whole`` rows (the caller then
    takes every unresolved row). ``visited`` : (n,) True on the resolved rows, ``stamp`` : (n,) int; both
    scratch (``visited`` is left as it was). Cost O(nnz of the band's rows)."""
    visited[seeds] = True
    parts, frontier = [seeds], seeds
    reached = seeds.size
    for _ in range(hops):
        if reached >= whole:
            break
        starts = S.indptr[frontier]
        counts = S.indptr[frontier + 1] - starts
        entries = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        entries += np.arange(entries.size)
        cols = S.indices[entries]
        cols = cols[~visited[cols]]
        if not cols.size:
            break
        visited[cols] = True
        first = np.arange(cols.size)
        stamp[cols] = first  # one of the positions of each row wins: the rows without repeats
        frontier = cols[stamp[cols] == first]
        parts.append(frontier)
        reached += frontier.size
    if reached >= whole:
        for part in parts:
            visited[part] = False
        return None, None
    band = np.concatenate(parts)
    visited[band] = False
    distance = np.repeat(np.arange(len(parts)), [part.size for part in parts])
    order = np.argsort(band)
    return band[order], distance[order]


def _band_system(S, band, resolved):
    """The rows and columns ``band`` (sorted) of S, S_BB, and its coupling to the unresolved rows outside
    the band: ``boundary`` (|B|,) bool, the band rows next to them; ``layer``, those rows (sorted);
    ``coupling`` (|layer|, boundary rows), S_FB's non-zero part. O(nnz of the band's rows) plus one O(n)
    indicator (the whole of S, copied, when the band is every row)."""
    if band.size == S.shape[0]:  # nothing resolved yet and the band is everything: no slicing, no layer
        return (S.copy(), np.zeros(band.size, bool), np.zeros(0, dtype=np.int64),
                sp.csr_matrix((0, 0)))
    rows = S[band]
    outside = ~resolved
    outside[band] = False
    boundary = rows @ outside.astype(float) > 0
    edge = rows[boundary]
    keep = outside[edge.indices]
    layer, column = np.unique(edge.indices[keep], return_inverse=True)
    row = np.repeat(np.arange(edge.shape[0]), np.diff(edge.indptr))[keep]
    coupling = sp.csr_matrix((edge.data[keep], (column, row)), shape=(layer.size, edge.shape[0]))
    position = np.full(S.shape[1], -1, dtype=rows.indices.dtype)  # rows[:, band] in one pass: band is sorted
    position[band] = np.arange(band.size)
    columns = position[rows.indices]
    inside = columns >= 0
    indptr = np.concatenate([[0], np.cumsum(inside)])[rows.indptr]
    return (sp.csr_matrix((rows.data[inside], columns[inside], indptr), shape=(band.size, band.size)), boundary,
            layer, coupling)


def _band_rhs(alpha, B_band, S, band, seeds, resolved, mantissa, log_scale):
    """B_B + αS_BR F_R scaled to a largest entry of 1, and its scale (natural log); (None, None) if 0.
    Only the seeds (the band rows labelled or next to resolved rows) have a non-zero entry."""
    rows = S[seeds]
    to_resolved = resolved[rows.indices]
    touching, column = np.unique(rows.indices[to_resolved], return_inverse=True)
    row = np.repeat(np.arange(seeds.size), np.diff(rows.indptr))[to_resolved]
    S_sR = sp.csr_matrix((rows.data[to_resolved], (row, column)), shape=(seeds.size, touching.size))
    labelled = bool(B_band.any())
    if not touching.size and not labelled:
        return None, None
    reference = float(max(log_scale[touching].max(initial=-np.inf), 0.0 if labelled else -np.inf))
    b = np.zeros_like(B_band)
    with np.errstate(under="ignore"):
        F_R = mantissa[touching] * np.exp(log_scale[touching] - reference)[:, None]
        b[np.searchsorted(band, seeds)] = alpha * (S_sR @ F_R)
        if labelled:
            b += B_band * np.exp(-reference)
    top = float(b.max())
    if not top > 0:
        return None, None
    return b / top, reference + float(np.log(top))


def _next_hops(level, height, residual, leak, hops) -> int:
    """Hops for the next band: this band's, moved by as many hops as it takes the scores to fall (or rise)
    from the leak to the band's own residual at the rate they fall per hop in this band (its largest
    h = x / v per hop ``level``), so that the leak stays about the size of the residual."""
    profile = np.zeros(int(level.max(initial=0)) + 1)
    np.maximum.at(profile, level, np.maximum(height, 0.0))
    positive = np.flatnonzero(profile > 0)
    low, high = (positive[positive.size // 2], positive[-1]) if positive.size else (0, 0)
    if not (leak > 0 and high > low and profile[high] < profile[low]):
        return 2 * hops if leak > residual else hops
    per_hop = (np.log(profile[low]) - np.log(profile[high])) / (high - low)
    move = np.log(leak / residual) / per_hop
    return int(np.clip(np.ceil(hops + move) + BAND_MARGIN_HOPS, max(hops // 2, MIN_BAND_HOPS), 2 * hops))


def _residual_bound(M, b, X) -> np.ndarray:
    """|b − (I − M) X| entrywise for M = αS_BB ≥ 0, plus a bound on the rounding of its evaluation in
    float64 (γ(|b| + |X| + M|X|), γ = (longest row + 3)·ε, the error bound of a dot product)."""
    MX = M @ X
    r = np.abs(b - X + MX)
    gamma = (np.diff(M.indptr).max(initial=0) + 3) * np.finfo(float).eps
    nonnegative = bool(np.all(X >= 0))  # the exact solution is (A⁻¹ ≥ 0, b ≥ 0): then M|X| = MX
    r += gamma * (np.abs(b) + np.abs(X) + (MX if nonnegative else M @ np.abs(X)))
    return r


SETTLE_MARGIN = 2.0
"""`_all_resolved` stops the iteration once every row would be resolved at this many times the error
estimated from the iteration's own residual (the recurrence's, not the recomputed one the stage then
bounds with: a row they disagree on is resolved by the next stage instead)."""


def _all_resolved(v, alpha, resolution):
    """A `solvers.Chebyshev` ``settled`` test for a band with no layer (every unresolved row in it): True once
    every row's largest entry x is at least v_i·e/δ, e = SETTLE_MARGIN·max_j(|r_j|/v_j)/(1 − α) from the
    residual R. Rows that passed are not checked again. A check first tries, in O(C), the row that failed
    last with the smallest x/v against lower bounds of e (the largest column norm / √n · min 1/v, and
    |r_j|/v_j at that row and at the row of the last largest one), so most checks bound to fail cost
    O(C), the others O(n C)."""
    inv_v = 1.0 / v
    factor = SETTLE_MARGIN / ((1 - alpha) * resolution)
    low = float(inv_v.min()) / np.sqrt(v.size)
    state = {"pending": None, "row": None, "peak": None}

    def settled(X, R, residual) -> bool:
        row, peak = state["row"], state["peak"]
        if row is not None:
            bound = max(residual * low, np.abs(R[row]).max() * inv_v[row], np.abs(R[peak]).max() * inv_v[peak])
            if X[row].max() < v[row] * bound * factor:
                return False
        scaled = row_max(R, absolute=True)
        scaled *= inv_v
        state["peak"] = peak = int(np.argmax(scaled))
        level = float(scaled[peak]) * factor
        pending = state["pending"]
        top = row_max(X if pending is None else X[pending])
        short = top < (v if pending is None else v[pending]) * level
        pending = np.flatnonzero(short) if pending is None else pending[short]
        if not pending.size:
            return True
        state["pending"] = pending
        state["row"] = pending[np.argmin(top[short] * inv_v[pending])]
        return False

    return settled


def two_largest(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The largest and second largest entry of every row of an (m, C) block, C ≥ 2. O(mC)."""
    part = np.partition(X, X.shape[1] - 2, axis=1)
    return part[:, -1], part[:, -2]


def decide_rows(S: sp.csr_matrix, alpha: float, B: np.ndarray, weights: np.ndarray, rows: np.ndarray, *,
                operator=None, stage_rtol: float = DECIDE_RTOL) -> np.ndarray | None:
    """The argmax decisions of ``rows`` only: X[rows] (|rows|, C) of an approximate solution of
    (I − αS) X = B whose every one of these rows has the class of the exact solution, or None when one
    Chebyshev run down to ``stage_rtol`` cannot certify them all (the caller then runs `resolve`).

    Certified: a row whose two largest entries differ by more than twice its error bound
    e_i = v_i·max_j(|r_j|/v_j)/(1 − α) (the bound of the module docstring with no band: r the residual
    recomputed with its rounding, `_residual_bound`), so no entry can overtake its largest. The
    iteration stops at the first check (`solvers.CHEBYSHEV_CHECK` iterations) at which every row would be
    certified by SETTLE_MARGIN × the error its recurrence residual implies: inner cross-validation reads
    the decisions of ~ℓ/folds held-out rows, which settle long before every row of the graph is resolved
    (swiss roll, 10⁴ points, 10 held-out rows: ~20 iterations of the 52 `resolve` takes, α = 0.9).

    S, alpha, B, weights : as `resolve` (B ≥ 0); rows : (m,) row ids; operator : the
    `solvers.ShiftedAdjacency` of αS, if the caller keeps one for several right-hand sides.
    """
    if B.shape[1] < 2:
        return np.ones((rows.size, B.shape[1]))
    v = np.asarray(weights, dtype=float)
    inv_v = 1.0 / v
    if operator is None:
        M = sp.csr_matrix(S, dtype=float, copy=True)
        M.data *= alpha
        operator = solvers.ShiftedAdjacency(M)
    factor = SETTLE_MARGIN / (1 - alpha)
    rows = np.asarray(rows)

    def settled(X, R, residual) -> bool:
        level = float((row_max(R, absolute=True) * inv_v).max()) * factor
        first, second = two_largest(X[rows])
        return bool(np.all(first - second > 2 * v[rows] * level))

    goal = stage_rtol * float(np.linalg.norm(B, axis=0).max())
    if not goal > 0:
        return None
    X = solvers.Chebyshev(operator, 1 - alpha, 1 + alpha, atol=goal, settled=settled).solve(B)
    level = float(np.max(row_max(_residual_bound(operator.S, B, X)) * inv_v)) / (1 - alpha)
    first, second = two_largest(X[rows])
    if not np.all(first - second > 2 * v[rows] * level):
        return None
    return X[rows]
