"""PMA-GIBBS (dissertation §5.3.1): Gibbs sampling of G, the missing entries of X̃ and the kernels.

Three samplers target the same posterior p(G, X_missing | X_observed, K1, K2):

* ``single-site`` — the paper's sampler: every g_ij from its full conditional N(μ_ij, σ²_ij)
  (eqs. 5.13–5.18), then every missing x̃_ij given F (eqs. 5.20–5.21). The leave-one-out conditionals
  K_{i,−i} K_{−i,−i}⁻¹ and the Schur complements come from the precision P = K⁻¹ (the result of the
  paper's rank-2 Sherman–Morrison updates): mean v_i − (P v)_i / P_ii, variance 1 / P_ii, once per kernel
  update. Entries in distinct rows and distinct columns are conditionally independent, so each
  step updates one such set at once (a systematic scan, not an approximation); the running products
  P1 F and G P2 are updated in O(n + m) per entry.
* ``blocked`` — G | X̃ exactly in one block: its posterior precision K1⁻¹ ⊕ K2⁻¹ is diagonal in the
  eigenbasis of (K1, K2), with mean X̃̃_ab d2_b / (d1_a + d2_b) and variance d1_a d2_b / (d1_a + d2_b)
  (no inverse of K1 is needed); then the missing entries of every row jointly given F (rows of G are
  independent given F, eq. 5.20 over a row). O(nm(n + m)) per sweep.
* ``collapsed`` — F and G integrated out for the missing entries: X_missing | X_observed exactly (a
  prior draw conditioned by one conjugate-gradient solve in the eigenbasis), then G | X̃ exactly.
  Successive sweeps are independent draws; the Rao–Blackwellised estimate of the missing entries
  is their exact conditional mean. Each sweep costs one CG solve (about ten blocked sweeps).

Kernels (K2, and K1 when not given) are re-estimated during burn-in by stochastic EM: the average
of GᵀG / n (FFᵀ / m) over the sweeps since the last update (§5.3.1, "Parameter Estimation").

Run length is decided by convergence diagnostics, not fixed: after burn-in the chain runs in blocks
of ``min_sweeps``, ``min_sweeps``, 2·``min_sweeps``, 4·``min_sweeps``, … kept sweeps; after each
block, the raw draws of a random set of missing entries in that block (the second half of all kept
sweeps from the second block on, the first half counting as further warm-up) are checked: it is
accepted when their smallest effective sample size reaches ``ess`` and their largest split R̂ is at
most ``rhat``, or when ``max_sweeps`` is reached (then ``converged`` is False in the diagnostics).
Predictions are Rao–Blackwellised averages over the accepted block: the average of E[x_ij | F, rest];
the variance is the law-of-total-variance combination of conditional variances and the spread of
those means.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.numerics.eigenbasis import KroneckerEigenbasis
from malt.params import Interval, Options, When, param
from malt.numerics.decisions import NaturalThresholdParams, decide_by_refits
from malt.splits import MultilabelSplit
from malt.registry import Algorithm, register

from .common import (LabelCoding, PMAParams, RowConditional, check_kernel, check_matrix, column_means, jittered,
                     matrix_inputs, pd_eigh, prediction, row_kernel_eig, second_moments)
from .diagnostics import effective_sample_size, split_rhat

COLLAPSED_TOL = 1e-4
"""Relative residual of the collapsed sampler's CG solves (the draw's error, in units of its scale)."""


def loo_conditionals(P: np.ndarray, V: np.ndarray, axis: int):
    """Leave-one-out Gaussian conditionals from a precision matrix (eq. 5.14).

    For vectors v ~ N(0, K) along ``axis`` of V with P = K⁻¹: E[v_i | v_−i] = v_i − (P v)_i / P_ii and
    Var[v_i | v_−i] = 1 / P_ii. Returns (means with V's shape, variances along the axis).
    """
    s = 1.0 / np.diag(P)
    if axis == 0:
        return V - (P @ V) * s[:, None], s
    return V - (V @ P) * s[None, :], s


def independent_sets(n: int, m: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Partition the n × m entries into sets with distinct rows and distinct columns.

    Given the rest, entries of such a set have independent full conditionals (g_ij depends only on its
    row of G and its column of F), so updating a set at once equals a sequential scan over it.
    """
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    i, j = i.ravel(), j.ravel()
    if n >= m:
        label = (i // m) * m + (j - i) % m
    else:
        label = (j // n) * n + (i - j) % n
    order = np.argsort(label, kind="stable")
    cuts = np.flatnonzero(np.diff(label[order])) + 1
    return [(i[part], j[part]) for part in np.split(order, cuts)]


class _State:
    """The chain: completed matrix X̃, G (F = X̃ − G), and the kernels' derived quantities."""

    def __init__(self, M, Xt, G, K1, K2, missing, sampler, eig1=None):
        self.M, self.Xt, self.G, self.missing, self.sampler = M, Xt, G, missing, sampler
        self.mean = None
        self.basis1 = None
        self.set_k1(K1, eig1)
        self.set_k2(K2)

    def set_k1(self, K1, eig1=None):
        self.K1 = K1
        self.basis1 = eig1 if eig1 is not None else pd_eigh(K1, "K1")
        if self.sampler == "single-site":
            self.P1 = self.basis1.function(lambda d: 1.0 / d)
        if hasattr(self, "K2"):
            self._combine()

    def set_k2(self, K2):
        self.K2 = K2
        self.basis2 = pd_eigh(K2, "K2")
        if self.sampler == "blocked":
            self.cond = RowConditional(K2, self.missing, eig=self.basis2)
        if self.sampler == "single-site":
            self.P2 = self.basis2.function(lambda d: 1.0 / d)
        self._combine()

    def _combine(self):
        self.basis = KroneckerEigenbasis(self.basis1, self.basis2)
        if self.sampler == "collapsed":  # the exact conditional mean: the Rao–Blackwellised estimate
            self.mean, _, _ = self.basis.conditional_mean(self.M, tol=COLLAPSED_TOL, x0=self.mean)

    @property
    def F(self):
        return self.Xt - self.G


def blocked_sweep(state: _State, rng: np.random.Generator, overrelax: float = 0.0):
    """One exact blocked sweep: G | X̃ (diagonal in the eigenbasis), then X_missing | F row by row.

    ``overrelax`` = α ∈ (−1, 1) replaces each Gaussian draw by Adler's over-relaxed update
    μ + α (old − μ) + √(1 − α²) · noise, which leaves every conditional invariant (α = 0 is plain Gibbs;
    α < 0 suppresses the random-walk behaviour of the data augmentation).
    Returns the Rao–Blackwellised E[x | F, X_obs] (n, m) at the missing entries (zero elsewhere).
    """
    _, G = state.basis.split_sum(state.Xt, rng, previous_g=state.G, overrelax=overrelax, with_mean=False,
                                 single=True)
    F = state.Xt - G
    mean, draw = state.cond.mean_and_draw(G, rng)
    miss = state.missing
    if overrelax:
        g_old = state.Xt - F  # the missing entries' current g given the new F
        draw = mean + overrelax * (g_old - mean) + np.sqrt(1 - overrelax ** 2) * (draw - mean)
    state.Xt[miss] = F[miss] + draw[miss]
    G[miss] = draw[miss]
    state.G = G
    return np.where(miss, F + mean, 0.0)


def collapsed_sweep(state: _State, rng: np.random.Generator):
    """X_missing | X_observed exactly (F and G integrated out), then G | X̃ exactly. Returns the
    Rao–Blackwellised estimate E[x | X_obs] at the missing entries: the exact conditional mean."""
    Xt, Xh, _ = state.basis.conditional_sample(state.M, rng, mean=state.mean, tol=COLLAPSED_TOL)
    _, G = state.basis.split_sum(Xt, rng, rotated=Xh, with_mean=False)
    state.Xt, state.G = Xt, G
    return np.where(state.missing, state.mean, 0.0)


def single_site_sweep(state: _State, rng: np.random.Generator, sets, QF=None, RG=None):
    """One sweep of the paper's sampler: every g_ij from N(μ_ij, σ²_ij) (eqs. 5.17–5.18), then every
    missing x̃_ij from N(x̄_ij, ζ_ij) given F (eqs. 5.20–5.21).

    Note: the likelihood term for g_ij is f_ij = x̃_ij − g_ij ~ N(m^f, s^f), so μ_ij combines m^g with
    x̃_ij − m^f (eq. 5.18 prints m^f); and the conditional in 5.21/5.23 is along row i over columns
    −j (its printed indices mix rows and columns).
    Returns the Rao–Blackwellised E[x̃_ij | F, rest] at missing entries (zero elsewhere).
    """
    G, Xt, P1, P2 = state.G, state.Xt, state.P1, state.P2
    F = Xt - G
    QF = P1 @ F  # running products: conditional means read off them in O(1)
    RG = G @ P2
    p1, p2 = np.diag(P1), np.diag(P2)
    for i, j in sets:
        sf, sg = 1.0 / p1[i], 1.0 / p2[j]
        mf = F[i, j] - QF[i, j] * sf
        mg = G[i, j] - RG[i, j] * sg
        prec = 1.0 / sf + 1.0 / sg
        mu = ((Xt[i, j] - mf) / sf + mg / sg) / prec
        delta = mu + rng.standard_normal(len(i)) / np.sqrt(prec) - G[i, j]
        G[i, j] += delta
        F[i, j] -= delta
        RG[i, :] += delta[:, None] * P2[j, :]
        QF[:, j] -= P1[:, i] * delta[None, :]
    rb = np.zeros_like(Xt)
    miss = state.missing
    for j in range(Xt.shape[1]):  # missing entries of one column lie in distinct rows: independent
        i = np.flatnonzero(miss[:, j])
        if i.size == 0:
            continue
        sg = 1.0 / p2[j]
        mg = G[i, j] - RG[i, j] * sg
        rb[i, j] = F[i, j] + mg
        delta = mg + np.sqrt(sg) * rng.standard_normal(i.size) - G[i, j]
        G[i, j] += delta
        Xt[i, j] += delta
        RG[i, :] += delta[:, None] * P2[j, :]
    return rb


def pma_gibbs(M, K1=None, K2=None, *, sampler: str = "blocked", burn_in: int = 100, sweeps: int | None = None,
              min_sweeps: int = 100, max_sweeps: int = 5000, ess: float = 100.0, rhat: float = 1.05,
              monitor: int = 64, kernel_updates: int = 3, jitter: float = 1e-2, eig1=None,
              rng: np.random.Generator | None = None, trace: np.ndarray | None = None, overrelax: float = 0.0,
              progress=None) -> dict:
    """PMA-GIBBS: posterior mean and variance of the missing entries of M by Gibbs sampling.

    Parameters
    ----------
    M : (n, m) array, NaN where unobserved
    K1, K2 : kernels or None (estimated; initialised from pairwise-complete second moments)
    sampler : 'blocked' (exact block updates in the eigenbasis), 'single-site' (the paper's) or
        'collapsed' (exact independent draws of the missing entries)
    burn_in : sweeps discarded; K2 (and K1 when None) is re-estimated ``kernel_updates`` times, evenly
        spaced, from the samples of the preceding part of the burn-in
    sweeps : a fixed number of kept sweeps (no diagnostics-driven length), or None
    min_sweeps, max_sweeps, ess, rhat : the run-length rule of the module docstring
    monitor : number of missing entries (drawn at random) whose raw draws the diagnostics check
    trace : flat indices of entries whose sampled x̃ values are recorded every sweep of the accepted block
    overrelax : Adler over-relaxation α ∈ (−1, 1) of the blocked sampler's draws (0 = plain Gibbs)
    progress : optional f(fraction, message), called every few sweeps

    Returns
    -------
    dict with 'values' (observed entries, posterior means elsewhere), 'variance' (zero at observed
    entries), 'K1', 'K2', 'trace' (accepted sweeps, len(trace)) and 'diagnostics' (kept sweeps, length
    of the accepted block, its smallest and median ESS, largest split R̂, converged, the checks made).
    """
    M, observed = check_matrix(M)
    n, m = M.shape
    missing = ~observed
    rng = rng if rng is not None else np.random.default_rng(0)
    estimate_k1, estimate_k2 = K1 is None, K2 is None
    K1 = second_moments(M, observed, 1, jitter) if estimate_k1 else check_kernel(K1, n, "K1")
    K2 = second_moments(M, observed, 0, jitter) if estimate_k2 else check_kernel(K2, m, "K2")
    if estimate_k1:
        eig1 = None
    Xt = np.where(observed, M, column_means(M, observed)[None, :])
    state = _State(M, Xt, np.zeros_like(Xt), K1, K2, missing, sampler, eig1)
    state.G, _ = state.basis.split_sum(Xt)
    sets = independent_sets(n, m) if sampler == "single-site" else None
    if sampler == "blocked":
        def step(s, r):
            return blocked_sweep(s, r, overrelax)
    elif sampler == "collapsed":
        step = collapsed_sweep
    else:
        def step(s, r):
            return single_site_sweep(s, r, sets)
    budget = burn_in + (sweeps if sweeps is not None else max_sweeps)

    def report(t, what):
        if progress is not None and (t % 10 == 0):
            progress(min(t / budget, 1.0), what)

    updates = kernel_updates if (estimate_k1 or estimate_k2) else 0
    marks = set(np.linspace(0, burn_in, updates + 2)[1:-1].round().astype(int).tolist()) if updates else set()
    S1 = np.zeros((n, n)) if estimate_k1 else None
    S2 = np.zeros((m, m))
    count = 0
    for t in range(1, burn_in + 1):
        step(state, rng)
        report(t, f"burn-in sweep {t}/{burn_in}")
        if updates:
            G = state.G
            S2 += G.T @ G / n
            if estimate_k1:
                F = state.F
                S1 += F @ F.T / m
            count += 1
            if t in marks:
                if estimate_k2:
                    state.set_k2(jittered(S2 / count, jitter))
                if estimate_k1:
                    state.set_k1(jittered(S1 / count, jitter))
                    S1[:] = 0
                S2[:] = 0
                count = 0
    hidden = np.flatnonzero(missing.ravel())
    watched = np.sort(rng.choice(hidden, min(monitor, hidden.size), replace=False)) if hidden.size else hidden
    watched = watched if trace is None else np.unique(np.concatenate([watched, np.asarray(trace, dtype=int)]))
    if sweeps is not None:
        lengths = [sweeps]
    else:
        lengths, total = [], 0
        while total < max_sweeps:
            size = min(min_sweeps * (2 ** max(len(lengths) - 1, 0)), max_sweeps - total)
            lengths.append(size)
            total += size
    kept, checks, block = 0, [], None
    for length in lengths:
        total_rb = np.zeros((n, m))
        total_sq = np.zeros((n, m))  # of the Rao–Blackwellised means (collapsed: of the raw draws)
        draws = np.empty((length, watched.size))
        for t in range(length):
            rb = step(state, rng)
            total_rb += rb
            total_sq += rb * rb if sampler != "collapsed" else (state.Xt - rb) ** 2 * missing
            draws[t] = state.Xt.ravel()[watched]
            report(burn_in + kept + t + 1, f"sweep {kept + t + 1} (block of {length})")
        kept += length
        e = effective_sample_size(draws) if watched.size else np.array([np.inf])
        r = split_rhat(draws) if watched.size else np.array([1.0])
        block = (length, total_rb, total_sq, draws, e, r)
        checks.append({"sweeps": kept, "ess_min": round(float(e.min()), 1), "rhat_max": round(float(r.max()), 4)})
        if sweeps is None and e.min() >= ess and r.max() <= rhat:
            break
    length, total_rb, total_sq, draws, e, r = block
    mean = total_rb / length
    spread = np.maximum(total_sq / length - mean * mean, 0.0)
    if sampler == "blocked":
        cond_var = state.cond.variance()
    elif sampler == "collapsed":  # the means are exact: the variance is the draws' spread around them
        cond_var, spread = total_sq / length, 0.0
    else:
        cond_var = np.broadcast_to(1.0 / np.diag(state.P2), (n, m))
    values = np.where(missing, mean, M)
    variance = np.where(missing, cond_var + spread, 0.0)
    recorded = draws[:, np.searchsorted(watched, trace)] if trace is not None else np.empty((length, 0))
    converged = bool(e.min() >= ess and r.max() <= rhat)
    diagnostics = {"sweeps": kept, "burn_in": burn_in, "accepted_block": length,
                   "ess_min": round(float(e.min()), 1), "ess_median": round(float(np.median(e)), 1),
                   "rhat_max": round(float(r.max()), 4), "converged": converged, "checks": checks[-8:]}
    return {"values": values, "variance": variance, "K1": state.K1, "K2": state.K2, "trace": recorded,
            "diagnostics": diagnostics}


@dataclass(frozen=True, kw_only=True)
class GibbsParams(PMAParams, LabelCoding, NaturalThresholdParams):
    sampler: str = param("blocked", "'blocked' (exact block updates of G in the kernels' eigenbasis and of "
                         "each row's missing entries), 'single-site' (the paper's entry-by-entry sampler) or "
                         "'collapsed' (exact independent draws of the missing entries, then G)",
                         Options("blocked", "single-site", "collapsed"))
    burn_in: int = param(100, "sweeps discarded; K2 is re-estimated kernel_updates times during them",
                         Interval(0, None))
    sweeps: int = param(0, "a fixed number of kept sweeps; 0 = decided by the convergence diagnostics "
                        "(min_sweeps, max_sweeps, ess, rhat)", Interval(0, None))
    min_sweeps: int = param(100, "length of the first blocks of kept sweeps checked for convergence (later "
                            "blocks double)", Interval(4, None),
                            active_when=When(sweeps=0))
    max_sweeps: int = param(5000, "most kept sweeps before the chain is stopped unconverged", Interval(4, None),
                            active_when=When(sweeps=0))
    ess: float = param(100.0, "smallest effective sample size of the monitored missing entries to accept a "
                       "block", Interval(1, None),
                       active_when=When(sweeps=0))
    rhat: float = param(1.05, "largest split R-hat of the monitored missing entries to accept a block",
                        Interval(1, None, "neither"),
                        active_when=When(sweeps=0))
    monitor: int = param(64, "number of missing entries (at random) whose draws the diagnostics check",
                         Interval(1, None))
    overrelax: float = param(-0.8, "blocked sampler: Adler over-relaxation α of every Gaussian draw (0 = plain "
                             "Gibbs). Exact for any α in (-1, 1); -0.8 reached the ESS/R-hat targets in 1,600 kept "
                             "sweeps on CAL500 where plain Gibbs had not after 3,000", Interval(-1, 1, "neither"),
                             active_when=When(sampler="blocked"))


@register
class PMAGibbs(Algorithm):
    """PMA-GIBBS: Gibbs sampler for PMA; posterior mean and variance of hidden entries; run length from ESS and R-hat.

    K2 (and K1 with k1=estimate) is re-estimated from the samples kernel_updates times during burn-in; the kept
    chain grows in doubling blocks until the monitored entries reach the ESS and split R-hat targets."""

    name = "pma-gibbs"
    tasks = frozenset({"missing", "multilabel"})
    Params = GibbsParams
    version = "2"

    def run(self, split, params, ctx):
        if isinstance(split, MultilabelSplit):
            return decide_by_refits(self.fit_predict, split, params, ctx, 0.0)
        return self.fit_predict(split, params, ctx)

    def fit_predict(self, split, params, ctx):
        data = matrix_inputs(split, params)
        K1, eig1 = row_kernel_eig(params, ctx, data.rows, data.fit_rows)
        fit = pma_gibbs(data.M, K1, None, sampler=params.sampler, burn_in=params.burn_in,
                        sweeps=params.sweeps or None, min_sweeps=params.min_sweeps, max_sweeps=params.max_sweeps,
                        ess=params.ess, rhat=params.rhat, monitor=params.monitor,
                        kernel_updates=params.kernel_updates, jitter=params.jitter, eig1=eig1, rng=ctx.rng,
                        overrelax=params.overrelax, progress=ctx.progress)
        diagnostics = dict(fit["diagnostics"], k2_diag=np.diag(fit["K2"]).round(4).tolist()[:20])
        return prediction(fit["values"], data.n_new, fit["variance"], diagnostics=diagnostics)
