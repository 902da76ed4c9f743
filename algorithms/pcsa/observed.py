"""PCSA on the observed entries only: the same model as ``core.py`` for sparse rating matrices.

Shi (2012) eq. 1, written entrywise: x_ij = a_iᵀ y_j + z_iᵀ b_j + e_ij, with a_i the i-th row of A
(d1), y_j the j-th column of Y (d1), b_j the j-th row of B (d2), z_i the i-th column of Z (d2),
y_j, z_i ~ N(0, I), ARD columns of A and B (eq. 2: a_i ~ N(0, diag(1/ς)), b_j ~ N(0, diag(1/φ)),
ς, φ, τ ~ Gamma(a0, b0)), or Normal–Jeffreys columns (§3.2, eq. 8: variances α point-estimated).
So x_ij = u_iᵀ v_j + e_ij with the row factor u_i = [a_i; z_i] ~ N(0, diag(1/ς, 1)) and the column
factor v_j = [y_j; b_j] ~ N(0, diag(1, 1/φ)): a rank d1 + d2 factorisation whose two halves carry
the two co-subspaces.

Why a second inference path. §3.1 fills every missing entry and runs the dense updates of eqs. 5–7
(``core.pcsa_fit``); on a rating matrix with 95 % of the entries missing that is an EM whose
contraction rate is the missing fraction (hundreds of dense D1 × D2 iterations, > 1,000 s on
MovieLens-100K), and its covariances treat filled entries as data, so ARD sees a complete matrix
of mostly self-fitted values and prunes every dimension (measured: d1 = d2 = 0, test RMSE equal to
the bias baseline). Here the mean-field posterior Q = Π_i N(u_i | μ_i, Σ_i) Π_j N(v_j | ν_j, Ω_j)
Q(ς) Q(φ) Q(τ) (per-row and per-column covariances instead of the dense path's shared S_A, S_B, ψ)
is fitted to the observed entries only, each update the exact coordinate maximiser of the bound:

    Σ_i⁻¹ = diag(⟨λ_u⟩) + ⟨τ⟩ Σ_{j∈O_i} ⟨v_j v_jᵀ⟩,   μ_i = ⟨τ⟩ Σ_i Σ_{j∈O_i} x_ij ν_j,

(columns likewise), ⟨ς_k⟩ = (a0 + D1/2) / (b0 + ½ Σ_i ⟨a_ik²⟩) and ⟨τ⟩ from the expected squared
residual of the observed entries (eq. 7 restricted to O). Cost per iteration O(L p + (D1 + D2) d³)
for L observed entries, d = d1 + d2 and p = d(d+1)/2; memory O(L + (D1 + D2) p) — covariances and
second-moment sums are kept as packed upper triangles (`Packing`), the sums over O_i are sparse × dense
products with the (D2, p) packed second moments, never a d × d block per entry, and the per-row solves
run in blocks of rows. After each sweep every component is rescaled between its two sides to the scale
that maximises the bound (`_best_scales`), which coordinate ascent reaches only by small steps.

Noise (``noise='scaled'``, the ratings default). Eq. 1's one precision τ for every entry costs
accuracy on rating data, whose rows and columns differ in noise (MovieLens-100K, 70 % training:
RMSE 0.913 with shared noise whatever the rank cap, iteration count or pruning; 0.906 with the
scales). e_ij ~ N(0, 1/(τ ρ_i κ_j)) with mean-one Gamma scales per row and per column, the same VB
(their Gamma posteriors have closed forms; each entry's weight ⟨ρ_i⟩⟨κ_j⟩ enters the sums above as
the value of the sparse pattern), one more sparse product per iteration.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma

from .core import PRIOR, gamma_kl_terms

PRUNE = 1e-3  # a column of A or B whose energy falls below this fraction of the largest is removed
NEGLIGIBLE = 1e-3  # ... and one whose posterior mean moves the fitted values by less than this fraction of the
                   # ratings' sd (RMS over all D1 × D2 entries): it no longer changes a prediction (`_dead`)
SHAPE0 = 2.0  # starting shape h of the noise scales' Gamma(h, h) prior (then set by the bound; the fixed
              # point did not depend on it: 1, 2 and 10 gave the same h on MovieLens-100K)


class Packing:
    """Symmetric d × d matrices stored as their p = d(d+1)/2 upper-triangle entries (row-major ``up``, ``lo``):
    every per-row covariance and second-moment sum of the fit, half the memory and memory traffic of d²."""

    def __init__(self, d: int):
        self.d = d
        self.up, self.lo = np.triu_indices(d)
        self.index = np.empty((d, d), dtype=np.intp)            # packed position of entry (a, b), both halves
        self.index[self.up, self.lo] = self.index[self.lo, self.up] = np.arange(self.up.size)
        self.weight = np.where(self.up == self.lo, 1.0, 2.0)   # tr(A B) = Σ_k weight_k A_k B_k

    def outer(self, mean: np.ndarray, packed: np.ndarray | None = None, *, overwrite: bool = False) -> np.ndarray:
        """μ μᵀ (+ ``packed``) of every row of ``mean`` (n, d), packed (n, p), C-ordered (the sparse products
        would copy a column-major operand). Row a of the triangle is one broadcast product μ_a μ_{a:}: 4× faster
        than gathering both factors by index (the same products, so the same bits). ``overwrite``: the sum is
        written into ``packed`` (one (n, p) array less at the fit's peak)."""
        out = np.empty((mean.shape[0], self.up.size)) if packed is None else packed if overwrite else packed.copy()
        start = 0
        for a in range(self.d):
            block = out[:, start:start + self.d - a]
            if packed is None:
                np.multiply(mean[:, a:a + 1], mean[:, a:], out=block)
            else:
                block += mean[:, a:a + 1] * mean[:, a:]
            start += self.d - a
        return out

    def unpack(self, packed: np.ndarray, rows=None, cols=None) -> np.ndarray:
        """The (rows, cols) block (default: all) of every packed matrix, (n, len(rows), len(cols))."""
        rows = np.arange(self.d) if rows is None else rows
        cols = rows if cols is None else cols
        return np.take(packed, self.index[np.ix_(rows, cols)].ravel(), axis=1).reshape(-1, len(rows), len(cols))

    def sub(self, keep: np.ndarray) -> np.ndarray:
        """Packed positions, in the packing of the kept components, of the kept rows and columns."""
        kept = np.flatnonzero(keep)
        up, lo = np.triu_indices(kept.size)
        return self.index[kept[up], kept[lo]]


def _second_moment_sums(pattern: sp.csr_matrix, mean: np.ndarray, cov: np.ndarray | None,
                        overwrite: bool = False) -> np.ndarray:
    """Σ_{j : pattern_ij ≠ 0} pattern_ij (ν_j ν_jᵀ + Ω_j) for every row i, packed (n, p), by one sparse product
    with the (m, p) packed second moments; ``cov`` packed (m, p), or None for the means' outer products alone.
    ``overwrite``: ``cov`` becomes the second moments (it is not needed afterwards)."""
    return np.asarray(pattern @ Packing(mean.shape[1]).outer(mean, cov, overwrite=overwrite))


def _chunk_rows(d: int) -> int:
    """Rows per block of the factor update: its (rows, d, d) temporaries stay a few MiB (in cache)."""
    return max(64, (1 << 19) // (d * d))


def _factor_update(X: sp.csr_matrix, pattern: sp.csr_matrix, mean, cov, prec, tau, free: slice, const, G=None,
                   xx=None, block=None):
    """Q of the free components of every row factor of X given Q(other side) (mean (m, d), ``cov`` packed
    (m, p) over all d components). ``free`` is a contiguous slice; ``const`` the index of the component fixed
    to 1 (it carries the other side's bias; None without biases). ``tau``: the noise precision, a scalar or
    one per row (n,); per-entry precision factors of the other side enter as the values of ``pattern`` (and
    are already multiplied into ``X``). ``G``: the packed second-moment sums of the other side over
    ``pattern`` when already known (`_second_moment_sums`), else computed here block by block of rows.
    ``xx``: Σ_j w_ij x_ij² per row, to have the expected squared residuals (`_residual_sums`) at the new Q.
    ``block``: rows per block (default `_chunk_rows`; the result does not depend on it).

    Returns (means (n, d), packed covariances (n, p) over all d components (the constant: mean 1, variance
    0), Σ log det covariance, the residual sums (n,) or None). Cost O(L p + n d³); memory: the outputs plus
    blocks of `_chunk_rows` rows.
    """
    n, d = X.shape[0], mean.shape[1]
    pk = Packing(d)
    fr = np.arange(d)[free]
    k = fr.size
    fu, fl = np.triu_indices(k)
    out = pk.index[fr[fu], fr[fl]]                               # packed positions of the free block
    moments = pk.outer(mean, cov) if G is None else None
    t = np.broadcast_to(np.asarray(tau, float), (n,))
    XM = np.asarray(X @ mean)
    mu, packed = np.ones((n, d)), np.zeros((n, pk.up.size))
    sse = None if xx is None else np.empty(n)
    logdet = 0.0
    step = block or _chunk_rows(d)
    for s in range(0, n, step):
        rows = slice(s, min(n, s + step))
        Gb = G[rows] if G is not None else np.asarray(pattern[rows] @ moments)
        P = pk.unpack(Gb, fr)
        P *= t[rows, None, None]
        P[:, np.arange(k), np.arange(k)] += prec[free]
        logdet -= 2.0 * np.log(np.einsum("nkk->nk", np.linalg.cholesky(P))).sum()
        C = np.linalg.inv(P)
        rhs = XM[rows, free] - (Gb[:, pk.index[fr, const]] if const is not None else 0.0)
        mu[rows, free] = t[rows, None] * np.einsum("nab,nb->na", C, rhs)
        packed[rows, out] = 0.5 * (C[:, fu, fl] + C[:, fl, fu])
        if xx is not None:
            sse[rows] = _residual_sums(XM[rows], xx[rows], mu[rows], packed[rows], Gb, pk)
    return mu, packed, logdet, sse


def _residual_sums(XV: np.ndarray, xx: np.ndarray, U, SU, G, pk: Packing | None = None) -> np.ndarray:
    """Σ_{j∈O_i} w_ij E(x_ij − u_iᵀv_j)² for every row i, with XV = (w_ij x_ij) V (n, d), ``xx`` = Σ_j w_ij x_ij²
    per row, SU the packed covariances of u_i and G = Σ_j w_ij ⟨v_j v_jᵀ⟩ packed (n, p): x² − 2 x u·ν +
    tr(⟨u uᵀ⟩⟨v vᵀ⟩) summed. O(n p)."""
    pk = Packing(U.shape[1]) if pk is None else pk
    cross = np.einsum("na,na->n", U, XV)
    second = np.empty(U.shape[0])
    step = _chunk_rows(U.shape[1])                   # blocks: no (n, p) temporaries
    for s in range(0, U.shape[0], step):
        rows = slice(s, s + step)
        second[rows] = (pk.outer(U[rows], SU[rows]) * G[rows]) @ pk.weight
    return np.maximum(xx - 2.0 * cross + second, 0.0)


def _gamma_shape_by_evidence(mean_sum: float, elog_sum: float, n: int, lo=1e-2, hi=1e4) -> float:
    """argmax_h Σ_i E log Gamma(w_i | h, h) = n (h log h − log Γ(h)) + (h − 1) Σ E log w − h Σ E w:
    the root of n (log h + 1 − ψ(h)) + Σ (E log w − E w) = 0 (decreasing in h), by bisection in log h."""
    from scipy.special import digamma as psi
    c = (elog_sum - mean_sum) / n            # ≤ −1 by Jensen, so log h + 1 − ψ(h) = −c has a root
    f = lambda h: np.log(h) + 1.0 - psi(h) + c  # noqa: E731
    if f(hi) > 0:
        return hi
    if f(lo) < 0:
        return lo
    a, b = np.log(lo), np.log(hi)
    for _ in range(60):
        mid = 0.5 * (a + b)
        a, b = (mid, b) if f(np.exp(mid)) > 0 else (a, mid)
    return float(np.exp(0.5 * (a + b)))


def _best_scales(S, T, count, w, b):
    """The scales r_k of the components of one co-subspace (A with Y, or B with Z) that maximise the bound
    when its ARD side's factors become r_k a_k and its unit-Gaussian side's y_k / r_k, and the ARD precisions'
    Q is then re-optimised. Given S_k = Σ_i ⟨a_ik²⟩ (ARD side), T_k = Σ_j ⟨y_jk²⟩ (fixed side), ``count`` = ARD
    side rows − fixed side rows (the entropies change by ± log r_k a row), the Gamma shape w_k and prior rate b
    of Q(ς_k) (Jeffreys: w_k = rows/2 + 1, b = 0), the bound's part that changes is, with t = r_k²,

        f(t) = (count/2) log t − w_k log(b + ½ t S_k) − ½ T_k / t,

    whose derivative vanishes at the positive root of (2w_k − count) S_k t² − (2 count b + T_k S_k) t −
    2 T_k b = 0 (2w_k − count > 0: the fixed side's rows plus 2a, or plus 2 with Jeffreys), the maximum
    (f → −∞ at both ends).

    Why (the scale case of Luttinen & Ilin, "Transformations in variational Bayesian factor analysis to speed
    up learning", Neurocomputing 73, 2010): x_ij depends on a component only through a_ik y_jk, which the
    rescaling leaves unchanged, and so is the expected likelihood under the mean-field Q (with its noise
    scales and τ); coordinate ascent moves along this direction only through the priors, by small steps, and
    the more rows there are the smaller the steps (synthetic draws with 20 ratings a row: 28, 42, 64
    iterations at 10⁵, 3·10⁵, 10⁶ ratings; 19, 24, 34 with the step). Taking the step exactly cannot lower
    the bound (t = 1 is a candidate) and leaves the fixed points where they were; the path changes, so a fit
    may end at another of them (on small planted data, with heteroscedastic noise, a different one). (The full linear transformation of the paper, an L-BFGS over d² entries, reached
    higher bounds but kept more components and predicted worse on MovieLens-100K: RMSE 0.910 against 0.904.)"""
    alpha = (2 * w - count) * S
    beta = 2 * count * b + T * S
    t = (beta + np.sqrt(beta ** 2 + 8 * alpha * T * b)) / (2 * alpha)
    return np.sqrt(t)


def _energies(U, V, o):
    """‖ū_k‖² ‖v̄_k‖² of every factor component k (the biases and constants excluded)."""
    d = U.shape[1]
    return np.sum(U[:, o:d - o] ** 2, axis=0) * np.sum(V[:, o:d - o] ** 2, axis=0)


def _dead(energy: np.ndarray, floor: float) -> np.ndarray:
    """The components ARD has switched off: energy (`_energies`) below PRUNE of the largest, or below ``floor``
    (NEGLIGIBLE² × D1 × D2 × the ratings' variance: a root-mean-square contribution to the fitted values below
    NEGLIGIBLE of their sd).

    Why both. A switched-off component's mean decays geometrically to 0 while its ARD precision grows without
    bound, and the bound keeps rising along that path, so the bound's stopping rule waits for the component to
    be removed. The relative test alone cannot remove components that die together: on the scale benchmark's
    synthetic draws every one of them decays about 100× a sweep from the second sweep on, and the fit ran 21 and
    36 sweeps at 10⁵ and 10⁶ ratings, ending with 12 and 19 dead components (the largest's energy per entry
    1e-46 and 1e-122), until their spread reached 1e3. The absolute test removes them when they stop mattering
    (there: after the second and the first sweep; 13 and 15 sweeps to the same bias-model fit)."""
    return (energy < PRUNE * energy.max(initial=0)) | (energy < floor)


def _prior_terms(sq, n, logdet, prec_mean, elog_prec):
    """Σ_rows E log p(u | λ) + H[Q(u)] for n Gaussian rows with diagonal prior precisions λ (up to the
    2π constants, which cancel between the two), given sq_k = Σ_i E u_ik²."""
    d = sq.size
    return 0.5 * n * np.sum(elog_prec) - 0.5 * prec_mean @ sq + 0.5 * logdet + 0.5 * n * d


def _svd_start(X: sp.csr_matrix, d1: int, d2: int, rng) -> tuple[np.ndarray, np.ndarray] | None:
    """Starting means of the d1 + d2 factor components: the leading singular triplets of the centred
    observed matrix (missing entries 0), P √s and Q √s, alternating between the two co-subspaces
    (largest to A/Y, next to B/Z, …). None when the matrix is too small for a truncated SVD.

    Why: from small random means every component starts with almost no energy, which of them ARD
    keeps depends on the seed (effective ranks 3 to 8 on MovieLens-100K over seeds) and the fit needs
    two to three times the iterations; from the singular vectors it starts where the signal is.
    O(L (d1 + d2)) per Lanczos step."""
    from scipy.sparse.linalg import svds
    k = d1 + d2
    if k == 0 or k >= min(X.shape) - 1:
        return None
    v0 = rng.standard_normal(min(X.shape))
    P, sv, Qt = svds(X, k=k, v0=v0)
    order = np.argsort(sv)[::-1]
    P, sv, Q = P[:, order], sv[order], Qt[order].T
    a_ranks, b_ranks = [], []
    for r in range(k):                                     # alternate, the longer half takes the rest
        (a_ranks if len(a_ranks) < d1 and (r % 2 == 0 or len(b_ranks) == d2) else b_ranks).append(r)
    ranks = np.r_[a_ranks, b_ranks].astype(int)
    f = np.sqrt(sv[ranks])
    return P[:, ranks] * f, Q[:, ranks] * f


def pcsa_observed_fit(rows, cols, x, shape, *, d1=20, d2=20, prior="ard", biases=True, noise="shared",
                      init="svd", max_iter=200, tol=1e-6, rng=None, a0=PRIOR, b0=PRIOR, ard_strength=None,
                      rescale=True, callback=None) -> dict:
    """Variational Bayes for (sparse) PCSA on observed entries (rows, cols, x) of a (D1, D2) matrix.

    prior : 'ard' (Normal–Gamma, eq. 2) or 'jeffreys' (Normal–Jeffreys, eq. 8).

    biases : add a row bias c_i and a column bias e_j, x_ij = a_iᵀy_j + z_iᵀb_j + c_i + e_j + e,
        c_i ~ N(0, 1/β_r), e_j ~ N(0, 1/β_c), β ~ Gamma(a0, b0) — inferred with the factors, as
        components of u_i and v_j paired with a constant 1 on the other side.
    noise : 'shared' — e_ij ~ N(0, 1/τ) (eq. 1); 'scaled' — e_ij ~ N(0, 1/(τ ρ_i κ_j)) with row and
        column precision scales ρ_i ~ Gamma(h_r, h_r), κ_j ~ Gamma(h_c, h_c) (mean 1: a Gaussian scale
        mixture with Student-t-like tails, per row and per column, as in Lakshminarayanan, Bouchard &
        Archambeau's robust BMF, AISTATS 2011), Q(ρ_i), Q(κ_j) Gamma, the shapes h_r, h_c set by
        maximising the bound (h → ∞ is 'shared'). Entry (i, j) weighs ⟨ρ_i⟩⟨κ_j⟩ in the sums over
        O_i and O_j of the factor and τ updates; ⟨ρ_i⟩ = (h_r + n_i/2) / (h_r + ½⟨τ⟩ Σ_j ⟨κ_j⟩ E e_ij²).
    ard_strength : s of the Gamma(s, s) prior on the ARD precisions ς_k, φ_k (prior mean 1, the fixed
        precision of Y and Z; s pseudo-observations of strength); None: the vague Gamma(a0, b0) of §2.2.
    init : 'svd' — factor means start at the leading singular triplets of the observed matrix
        (``_svd_start``); 'random' — small Gaussian means. Posterior covariances start at 0.

    rescale : after each sweep, move every component to the bound-maximising scale between its ARD side
        and its unit-Gaussian side (`_best_scales`; the predictions are unchanged by the move itself). False:
        plain coordinate ascent (more iterations, increasingly so with more rows).

    Stops when the bound's relative increase is below ``tol``. ``callback(it, fit)`` after every
    iteration with the current means; a true return value stops the fit there (an inner-CV candidate
    that has fallen behind: see ``pcsa.observed_fit``).

    Returns dict with ``U`` (D1, d) = [1, Ā, Z̄ᵀ, c̄] and ``V`` (D2, d) = [ē, Ȳᵀ, B̄, 1] (without
    biases [Ā, Z̄ᵀ] and [Ȳᵀ, B̄]; the posterior mean of x_ij is U[i] · V[j]), ``tau``, ``bound``
    per iteration, ``d1_eff``, ``d2_eff``, ``iterations``, and with noise='scaled' ``row_scale``,
    ``col_scale`` (⟨ρ⟩, ⟨κ⟩) and ``shapes`` (h_r, h_c).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    n, m = shape
    x = np.asarray(x, float)
    L = x.size
    X = sp.csr_matrix((x, (rows, cols)), shape=shape)
    Xt = X.T.tocsr()
    pat, patT = X.copy(), Xt.copy()
    pat.data[:] = 1.0
    patT.data[:] = 1.0
    XW, XtW = X, Xt                                        # X with entry weights ⟨κ_j⟩ (⟨ρ_i⟩ for Xt)
    scaled = noise == "scaled"
    rho, kap = np.ones(n), np.ones(m)                      # ⟨ρ_i⟩, ⟨κ_j⟩ (1 with shared noise)
    n_i, m_j = np.diff(X.indptr).astype(float), np.diff(Xt.indptr).astype(float)
    h_r = h_c = SHAPE0
    d1, d2 = int(min(d1, n, m)), int(min(d2, n, m))
    o = 1 if biases else 0
    d = d1 + d2 + 2 * o
    # components: u_i = [1 | a | z | c], v_j = [e | y | b | 1]; the constants pair with the biases
    A_, B_ = slice(o, o + d1), slice(o + d1, o + d1 + d2)
    free_u, free_v = slice(o, d), slice(0, d - o)
    const_u, const_v = (0, d - 1) if biases else (None, None)
    var = max(float(x.var()), 1e-12)
    floor = NEGLIGIBLE ** 2 * n * m * var                  # `_dead`'s absolute energy threshold
    scale = var ** 0.25 / np.sqrt(max(d1 + d2, 1))
    U = scale * rng.standard_normal((n, d))
    V = scale * rng.standard_normal((m, d))
    start = _svd_start(X, d1, d2, rng) if init == "svd" else None
    if start is not None:
        U[:, o:o + d1 + d2], V[:, o:o + d1 + d2] = start
    if biases:
        U[:, 0], U[:, -1], V[:, 0], V[:, -1] = 1.0, 0.0, 0.0, 1.0
    tau = 1.0 / var
    u_tau = a0 + L / 2.0
    ard_a, ard_b = (a0, b0) if ard_strength is None else (ard_strength, ard_strength)
    s_u, f_u = ard_a + n / 2.0, ard_a + m / 2.0              # Q(ς), Q(φ) shapes (A: D1 rows, B: D2 rows)
    s_v = np.full(d1, s_u * scale ** 2); f_v = np.full(d2, f_u * scale ** 2)
    s_mean, f_mean = s_u / s_v, f_u / f_v
    br_u, bc_u = a0 + n / 2.0, a0 + m / 2.0                   # Q(β_r), Q(β_c) shapes
    br_v, bc_v = br_u * var, bc_u * var
    bounds, pruned = [], 0
    H = _second_moment_sums(patT, U, None)   # Σ_i ⟨ρ_i⟩⟨u_i u_iᵀ⟩ per column, for the V update
    for it in range(max_iter):
        prec_u = np.ones(d); prec_v = np.ones(d)
        prec_u[A_] = s_mean; prec_v[B_] = f_mean
        if biases:
            prec_u[-1] = br_u / br_v; prec_v[0] = bc_u / bc_v
        # entry (i, j) weighs ⟨ρ_i⟩⟨κ_j⟩: the other side's scale is in the pattern, this side's in τ
        V, SV, logdet_v, _ = _factor_update(XtW, patT, U, None, prec_v, tau * kap, free_v, const_v, G=H)
        H = None
        U, SU, logdet_u, row_sse = _factor_update(XW, pat, V, SV, prec_u, tau * rho, free_u, const_u,
                                                  xx=np.asarray(XW.multiply(X).sum(axis=1)).ravel())
        Lb = 0.0
        if scaled:
            # Q(ρ) and h_r at the new U; then Σ_i ⟨ρ_i⟩ E e_ij² per column (for τ and κ) with the new ρ
            r_u, r_v = h_r + n_i / 2.0, h_r + 0.5 * tau * row_sse
            rho, elog_rho = r_u / r_v, digamma(r_u) - np.log(r_v)
            h_r = _gamma_shape_by_evidence(rho.sum(), elog_rho.sum(), n)
            patT.data = rho[patT.indices]
            XtW = Xt.multiply(patT).tocsr()
        pk = Packing(d)
        on_diag = pk.index[np.arange(d), np.arange(d)]
        var_u = SU[:, on_diag].sum(axis=0)                     # Σ_i var(u_ik), before SU becomes the moments
        H = _second_moment_sums(patT, U, SU, overwrite=True)   # the next V update's sums (and col_sse's)
        del SU
        if scaled:
            col_xx = np.asarray(XtW.multiply(Xt).sum(axis=1)).ravel()
            col_sse = _residual_sums(np.asarray(XtW @ U), col_xx, V, SV, H)
            sse = float(kap @ col_sse)
        else:
            sse = float(row_sse.sum())
        # τ: the expected (weighted) squared residual of the observed entries, Σ ⟨ρ_i⟩⟨κ_j⟩ E(x − uᵀv)²
        v_tau = b0 + 0.5 * sse
        tau = u_tau / v_tau
        elog_tau = digamma(u_tau) - np.log(v_tau)
        if scaled:                                             # Q(κ) and h_c at the new τ
            k_u, k_v = h_c + m_j / 2.0, h_c + 0.5 * tau * col_sse
            kap, elog_kap = k_u / k_v, digamma(k_u) - np.log(k_v)
            h_c = _gamma_shape_by_evidence(kap.sum(), elog_kap.sum(), m)
            pat.data = kap[pat.indices]
            XW = X.multiply(pat).tocsr()
            sse = float(kap @ col_sse)
            Lb += 0.5 * (n_i @ elog_rho + m_j @ elog_kap)
            Lb += gamma_kl_terms(h_r, h_r, r_u, r_v) + gamma_kl_terms(h_c, h_c, k_u, k_v)
        sq_u = np.sum(U ** 2, axis=0) + var_u                               # Σ_i ⟨u_ik²⟩
        sq_v = np.sum(V ** 2, axis=0) + SV[:, on_diag].sum(axis=0)          # Σ_j ⟨v_jk²⟩
        del SV
        if rescale:     # a_k ↦ r_k a_k, y_k ↦ y_k / r_k (b_k, z_k likewise): likelihood, ρ, κ, τ unchanged
            w_a, w_b, rate = (s_u, f_u, ard_b) if prior == "ard" else (n / 2.0 + 1.0, m / 2.0 + 1.0, 0.0)
            r = np.ones(d)
            r[A_] = _best_scales(sq_u[A_], sq_v[A_], n - m, w_a, rate)
            r[B_] = 1.0 / _best_scales(sq_v[B_], sq_u[B_], m - n, w_b, rate)
            U, V = U * r, V / r
            sq_u, sq_v = sq_u * r ** 2, sq_v / r ** 2
            H *= r[pk.up] * r[pk.lo]
            logdet_u, logdet_v = logdet_u + 2 * n * np.log(r).sum(), logdet_v - 2 * m * np.log(r).sum()
        sqA, sqB = sq_u[A_], sq_v[B_]
        el_u, el_v = np.zeros(d), np.zeros(d)
        if prior == "ard":
            s_v = ard_b + sqA / 2.0; f_v = ard_b + sqB / 2.0
            s_mean, f_mean = s_u / s_v, f_u / f_v
            el_u[A_], el_v[B_] = digamma(s_u) - np.log(s_v), digamma(f_u) - np.log(f_v)
        else:
            alphaA = np.maximum(sqA / (n + 2.0), 1e-300); alphaB = np.maximum(sqB / (m + 2.0), 1e-300)
            s_mean, f_mean = 1.0 / alphaA, 1.0 / alphaB
            el_u[A_], el_v[B_] = -np.log(alphaA), -np.log(alphaB)
        pm_u, pm_v = np.ones(d), np.ones(d)
        pm_u[A_], pm_v[B_] = s_mean, f_mean
        if biases:
            br_v = b0 + sq_u[-1] / 2.0; bc_v = b0 + sq_v[0] / 2.0
            pm_u[-1], el_u[-1] = br_u / br_v, digamma(br_u) - np.log(br_v)
            pm_v[0], el_v[0] = bc_u / bc_v, digamma(bc_u) - np.log(bc_v)
        # bound L(Q) (Jeffreys: L(Q; α) of §3.2 with log p(α) = −Σ log α)
        Lb += 0.5 * L * (elog_tau - np.log(2 * np.pi)) - 0.5 * tau * sse + gamma_kl_terms(a0, b0, u_tau, v_tau)
        Lb += _prior_terms(sq_u[free_u], n, logdet_u, pm_u[free_u], el_u[free_u])
        Lb += _prior_terms(sq_v[free_v], m, logdet_v, pm_v[free_v], el_v[free_v])
        if biases:
            Lb += gamma_kl_terms(a0, b0, br_u, br_v) + gamma_kl_terms(a0, b0, bc_u, bc_v)
        if prior == "ard":
            Lb += gamma_kl_terms(ard_a, ard_b, s_u, s_v) + gamma_kl_terms(ard_a, ard_b, f_u, f_v)
        else:
            Lb += -np.sum(np.log(alphaA)) - np.sum(np.log(alphaB))
        bounds.append(float(Lb))
        if callback is not None and callback(it, {"U": U, "V": V}):
            break
        if it > 0 and abs(bounds[-1] - bounds[-2]) <= tol * abs(bounds[-2]):
            break
        # drop the components ARD has switched off: the energy ‖ū_k‖²‖v̄_k‖² of component k's posterior
        # mean a_k y_kᵀ (or z_k b_kᵀ) below PRUNE of the largest or below the floor (`_dead`); they no
        # longer change the fit (a switched-off column's Q equals its prior, whose precision the Gamma
        # update then leaves where it is), and every later iteration costs O(d²) less per entry
        dead = np.r_[np.zeros(o, bool), _dead(_energies(U, V, o), floor), np.zeros(o, bool)]
        if dead.any():
            keep = ~dead
            U, V, H = U[:, keep], V[:, keep], np.take(H, Packing(d).sub(keep), axis=1)
            s_mean, f_mean = s_mean[keep[A_]], f_mean[keep[B_]]
            s_v, f_v = np.atleast_1d(s_v)[keep[A_]], np.atleast_1d(f_v)[keep[B_]]
            pruned += dead[A_].sum() + dead[B_].sum()
            d1, d2 = int(keep[A_].sum()), int(keep[B_].sum())
            d = d1 + d2 + 2 * o
            A_, B_ = slice(o, o + d1), slice(o + d1, o + d1 + d2)
            free_u, free_v = slice(o, d), slice(0, d - o)
            const_u, const_v = (0, d - 1) if biases else (None, None)
            if d == 0:                                         # no biases and nothing left: the zero matrix
                break
    energy = _energies(U, V, o)
    big = (energy > 1e-2 * max(energy.max(initial=0), 1e-300)) & (energy >= floor)
    d1_eff, d2_eff = int(big[:d1].sum()), int(big[d1:].sum())
    out = {"U": U, "V": V, "tau": tau, "bound": bounds, "d1_eff": d1_eff, "d2_eff": d2_eff,
           "iterations": it + 1, "pruned": int(pruned)}
    if scaled:
        out.update(row_scale=rho, col_scale=kap, shapes=(h_r, h_c))
    return out
