"""PMA on a sparse rating matrix (the ratings task).

Model: r_ij = μ + b_i + c_j + x_ij + ε_ij with regularised user and item biases, X = F + G the PMA
matrix of eq. 5.5 (columns of F ~ N(0, K1) over users, rows of G ~ N(0, K2) over items, so
Cov(x_ij, x_lk) = δ_jk K1_il + δ_il K2_jk, eq. 5.12) and rating noise ε ~ N(0, σ²).

Kernels by moments. Under the model the residuals' cross moments identify both kernels off their
diagonals: E[x_ij x_ik] = K2_jk for two items rated by one user (j ≠ k), E[x_ij x_lj] = K1_il for two
users who rated one item (i ≠ l). K2 (K1) is the pairwise-complete average of those products over
co-ratings, shrunk towards zero by n / (n + shrink) for n co-ratings (few co-ratings, little
evidence), projected onto the PSD cone (its diagonal is whatever the projection gives) and its spectrum
sharpened (eigenvalues to a power, trace kept: `sharpen`). The noise
variance is what the kernels leave of the residuals' variance: σ² = mean r² − mean diag K1 −
mean diag K2, at least ``min_noise`` × mean r².

Prediction: E[x | x_O] = Σ_{·O} (Σ_OO + σ² I)⁻¹ x_O by conjugate gradients on the observed entries only
(Jacobi preconditioner, the diagonal K1_ii + K2_jj + σ²); each mat-vec is one sparse × dense product
on each side, K1 A and A K2 with A the (n × m, nnz = #ratings) dual weights: O(nnz (n + m)). Memory:
two users × items dense arrays and the kernels; nothing of size nnz × nnz.

Ranking (`zero_filled_scores`): the same GP fitted to the zero-filled matrix, every entry observed, so its
posterior mean is exact in the eigenbases of its two moment kernels (four n × m rotations).

Two paths. The exact one above (dense kernels, dual conjugate gradients) runs when both sides have at most
``dense_limit`` rows; it is the reference. Above it (`fit_moments_low_rank`, `predict_low_rank`,
`zero_filled_scores_low_rank`) no n × n, m × m or n × m array is formed: each side keeps the top ``rank``
eigenpairs of its moment kernel (all of them on a side of at most ``rank``), computed from the sparse co-rating moments
(`MomentKernel`, by randomised block Krylov iteration: `malt.numerics.eigenbasis.top_eigenpairs`), the sharpened
spectrum keeping the trace of those eigenpairs; the prediction is the same posterior mean in the kernels'
weight space (`malt.numerics.kron_observed.ObservedKroneckerSum`, O(nnz · rank) per conjugate-gradient iteration).
With rank ≥ a side's size the eigenbasis is exact and both paths give the same numbers; on MovieLens-100K
(rank 100 of 943 and 1682) the test RMSE moves by 3e-4. A side with more than ``PAIR_LIMIT`` co-rating pairs
(a 10⁸-rating matrix of Netflix's shape) replaces each pair's co-rating count by its expectation from the two
sides' rating counts (`MomentKernel`'s separable form), so that its products cost O(nnz) rather than O(pairs);
forced on MovieLens-100K, FilmTrust and CiaoDVD-trust (fold 0, scalable path, defaults) it moved the test RMSE by
at most 1.5e-4.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis, krylov_space
from malt.errors import DataError
from malt.numerics.kron_observed import ObservedKroneckerSum, ObservedMatrix, preconditioned_cg, scattered

MEMORY_LIMIT = 3 * 2 ** 30
"""Bytes of dense kernels and users × items work arrays the ratings path may allocate (8 (n² + m² + 3nm))."""


DENSE_LIMIT = 4000
"""Default side length up to which a moment kernel is dense and exactly decomposed (the reference path:
MovieLens-100K, FilmTrust and the CiaoDVD core stay on it); larger sides get a low-rank eigenbasis."""
RANK = 100
"""Default number of eigenpairs kept of a moment kernel above ``DENSE_LIMIT``. Of the sharpened (power 3)
spectrum the top 100 carry 99.98 % of the trace on MovieLens-100K and all of it on FilmTrust."""
STORED_BYTES = 2 * 2 ** 30
"""A moment kernel's sparse correction (`MomentKernel`: pairs co-rating more than once) that fits in this many
bytes is built once; a larger one is recomputed block by block at every product."""
EXACT_PAIRS = 2 * 10 ** 7
"""Up to this many stored pairs the correction keeps double precision (the eigenbasis then agrees with the
dense path's to rounding); above it single precision halves its memory and product time."""
PAIR_LIMIT = 10 ** 9
"""Co-rating pairs (`MomentKernel.pairs`) up to which a moment kernel is exact; above it, unless its ratings
are dense enough for dense blocks, the pairs' counts N_jk are replaced by their expectation (`MomentKernel`'s
separable form), so that its products cost O(nnz) instead of O(pairs). Every real set malt ships stays below it
(MovieLens-100K 2·10⁷, Jester's user side 3.7·10¹⁰ takes the dense blocks); a 10⁸-rating draw of Netflix's shape
has 2.8·10¹¹ on its user side, where even one exact product is hours."""
DENSE_RATINGS_ENTRIES = 2 ** 23
"""Largest dense copy (entries; two of them, values and indicators) of the ratings behind a moment kernel that is
recomputed by dense blocks at every product (Jester's 100 × 24,983: 2.5·10⁶) when they are at least ``DENSE_FILL``
filled."""
DENSE_FILL = 0.1
"""Share of rated entries above which a moment kernel too large to store is recomputed by dense blocks rather than by
sparse ones. A product by dense blocks costs 2 · rows · size² flops, by sparse ones the pairs, about rows · (fill ·
size)² steps of a sparse product, each some hundred times a flop: dense is the cheaper above a fill of about 0.1
(Jester's user side, fill 0.5: one product by sparse blocks took minutes)."""
BLOCK_ENTRIES = 2 ** 21
"""Entries of one row block of a moment kernel's correction (built or recomputed) or of a dense kernel block (16 MiB in
double precision): the block's two sparse products and their temporaries were the peak of a 10⁶-rating fit at 2²⁴
(synthetic 50,000², select=none, one thread, interleaved: 715-719 -> 639 MiB, CPU 17.9-18.1 -> 15.6-16.1 s, the same RMSE)."""


def check_size(shape) -> None:
    """DataError before allocating: the kernels are dense n × n and m × m, the mat-vecs two n × m arrays."""
    n, m = shape
    need = 8 * (n * n + m * m + 3 * n * m)
    if need > MEMORY_LIMIT:
        raise DataError(f"pma-map on a {n} × {m} rating matrix needs about {need / 2 ** 30:.1f} GiB of dense "
                        f"user × user and item × item kernels and users × items work arrays (limit "
                        f"{MEMORY_LIMIT / 2 ** 30:.0f} GiB); it suits matrices up to a few thousand users and items")


def regularised_biases(rows, cols, y, shape, reg_rows: float = 15.0, reg_cols: float = 10.0, sweeps: int = 20):
    """μ, user biases b (n,), item biases c (m,) minimising Σ (y − μ − b_i − c_j)² + reg_rows Σ b² +
    reg_cols Σ c², by alternating exact updates (Koren 2010, §2.1; Surprise's BaselineOnly uses the same
    regularisation defaults 15 and 10). O(nnz) per sweep. Infinite penalties: the mean alone, b = c = 0."""
    n, m = shape
    mu = float(y.mean())
    b, c = np.zeros(n), np.zeros(m)
    if np.isinf(reg_rows) and np.isinf(reg_cols):
        return mu, b, c
    count_rows = np.bincount(rows, minlength=n)
    count_cols = np.bincount(cols, minlength=m)
    for _ in range(sweeps):
        c = np.bincount(cols, y - mu - b[rows], minlength=m) / (count_cols + reg_cols)
        b = np.bincount(rows, y - mu - c[cols], minlength=n) / (count_rows + reg_rows)
    return mu, b, c


def moment_kernel(rows, cols, resid, shape, axis: int, shrink: float, power: float = 1.0) -> np.ndarray:
    """Shrunk pairwise-complete cross moments of the residuals between columns (axis=0: an m × m K2 from
    products within a row) or rows (axis=1: an n × n K1 from products within a column), zero diagonal
    before the PSD projection (eigenvalues clipped at zero), spectrum sharpened by ``power``
    (:func:`sharpen`)."""
    R = sp.csr_matrix((resid, (rows, cols)), shape=shape)
    O = sp.csr_matrix((np.ones_like(resid), (rows, cols)), shape=shape)
    if axis == 1:
        R, O = R.T.tocsr(), O.T.tocsr()
    S = (R.T @ R).toarray()
    N = (O.T @ O).toarray()
    K = S / (N + shrink)  # = (S / N) · N / (N + shrink)
    np.fill_diagonal(K, 0.0)
    basis = Eigenbasis.symmetric(K, check_psd=False, floor_rel=0.0)
    d = sharpen(basis.values, power)
    return (basis.vectors * d) @ basis.vectors.T


def sharpen(values, power: float) -> np.ndarray:
    """Eigenvalues clipped at zero and raised to ``power``, rescaled to their clipped sum (the trace, so the
    kernel's share of the variance is unchanged). A pairwise-complete moment over few co-ratings is noisy:
    the noise spreads over the whole spectrum and lifts its tail, while the structure shared by many
    co-ratings sits in the top eigenvalues; power > 1 moves the prior's variance from the tail to the top
    directions (power 3 gave the lowest RMSE of 1, 1.5, 2, 3, 4, 6 on each of MovieLens-100K, FilmTrust
    and CiaoDVD). power = 1: the plain PSD projection."""
    d = np.maximum(np.asarray(values, dtype=float), 0.0)
    if power == 1.0 or not d.any():
        return d
    top = d / d.max()  # powers of values ≤ 1: no overflow
    sharp = top ** power
    return sharp * (d.sum() / sharp.sum())


def observed_cg(K1, K2, rows, cols, y, noise: float, *, tol: float = 1e-4, max_iter: int = 300, progress=None,
                start: np.ndarray | None = None):
    """Dual weights a = (Σ_OO + noise I)⁻¹ y for Σ = K1 ⊕ K2 at the observed entries (rows, cols), by
    Jacobi-preconditioned conjugate gradients. Returns (A as CSR (n, m), iterations, relative residual, the
    weights a (nnz,) in the order of ``rows``, ``cols``).

    ``start``: dual weights to start from (a neighbouring setting's, (nnz,)): the iteration then solves for the
    correction, (Σ_OO + noise I) d = y − (Σ_OO + noise I) start, to the same residual relative to y (one extra
    product). Each product is O(nnz (n + m))."""
    n, m = K1.shape[0], K2.shape[0]
    diag = K1[rows, rows] + K2[cols, cols] + noise

    def matvec(a):
        A = sp.csr_matrix((a, (rows, cols)), shape=(n, m))
        left = (A.T @ K1).T  # K1 A, (n, m) dense
        right = A @ K2       # A K2
        return left[rows, cols] + right[rows, cols] + noise * a

    report = None if progress is None else (
        lambda it, res: progress(min(it / max_iter, 1.0), f"conjugate gradients {it}, residual {res:.2g}"))
    y = np.asarray(y, dtype=float)
    if start is None:
        a, info = preconditioned_cg(matvec, y, diag, tol=tol, max_iter=max_iter, progress=report)
        return sp.csr_matrix((a, (rows, cols)), shape=(n, m)), info["iterations"], info["residual"], a
    b = y - matvec(start)
    y_norm, b_norm = (float(np.sqrt(v @ (v / diag))) for v in (y, b))
    relative = b_norm / y_norm if y_norm > 0 else 0.0  # the warm start's residual relative to y's
    if relative <= tol:
        return sp.csr_matrix((start, (rows, cols)), shape=(n, m)), 0, relative, start
    d, info = preconditioned_cg(matvec, b, diag, tol=tol / relative, max_iter=max_iter, progress=report)
    a = start + d
    return sp.csr_matrix((a, (rows, cols)), shape=(n, m)), info["iterations"], info["residual"] * relative, a


def exact_path(shape, dense_limit: int | None) -> bool:
    """Whether a matrix of this shape takes the exact (dense) path: both sides at most ``dense_limit``
    (None: always)."""
    return dense_limit is None or max(shape) <= dense_limit


def fit_moments(rows, cols, y, shape, *, shrink: float = 100.0, reg_rows: float = 15.0,
                reg_cols: float = 10.0, power: float = 1.0, rank: int = RANK, dense_limit: int | None = None) -> dict:
    """Biases and moment kernels of training ratings (rows, cols, y): dict with mu, b, c, K1, K2, the
    residuals and their mean square ``total``. O(nnz (n + m) + n³ + m³). Above ``dense_limit``
    (`exact_path`) the kernels' eigenbases instead (`fit_moments_low_rank`)."""
    if not exact_path(shape, dense_limit):
        return fit_moments_low_rank(rows, cols, y, shape, shrink=shrink, reg_rows=reg_rows, reg_cols=reg_cols,
                                    power=power, rank=rank)
    check_size(shape)
    mu, b, c = regularised_biases(rows, cols, y, shape, reg_rows, reg_cols)
    resid = y - mu - b[rows] - c[cols]
    return {"mu": mu, "b": b, "c": c, "resid": resid, "total": float(np.mean(resid ** 2)),
            "K1": moment_kernel(rows, cols, resid, shape, axis=1, shrink=shrink, power=power),
            "K2": moment_kernel(rows, cols, resid, shape, axis=0, shrink=shrink, power=power)}


def predict_ratings(moments: dict, rows, cols, test_rows, test_cols, *, signal: float = 1.0,
                    min_noise: float = 0.1, tol: float = 1e-4, max_iter: int = 300, scores: bool = False,
                    progress=None, start: np.ndarray | None = None) -> dict:
    """GP prediction at (test_rows, test_cols) with kernels ``signal`` × the moment kernels and the noise
    variance they leave of the residuals' mean square (at least ``min_noise`` of it). Eigenbasis moments
    (`fit_moments_low_rank`) go to `predict_low_rank`. ``start``: dual weights to warm-start the exact path's
    solve from (`observed_cg`; the returned ``dual`` of a neighbouring ``signal`` on the same moments)."""
    if "E1" in moments:
        return predict_low_rank(moments, rows, cols, test_rows, test_cols, signal=signal, min_noise=min_noise,
                                tol=tol, max_iter=max_iter, scores=scores, progress=progress)
    K1, K2, total = moments["K1"], moments["K2"], moments["total"]
    d1, d2 = float(np.mean(np.diag(K1))), float(np.mean(np.diag(K2)))
    kernel_part = signal * (d1 + d2)
    if kernel_part > (1.0 - min_noise) * total:
        signal *= (1.0 - min_noise) * total / kernel_part
    noise = total - signal * (d1 + d2)
    K1, K2 = signal * K1, signal * K2
    A, iterations, residual, dual = observed_cg(K1, K2, rows, cols, moments["resid"], noise, tol=tol, max_iter=max_iter,
                                          progress=progress, start=start)
    test_rows, test_cols = np.asarray(test_rows), np.asarray(test_cols)
    urows = np.unique(test_rows)
    X_rows = np.asarray(K1[urows] @ A) + np.asarray(A[urows] @ K2)  # rows of K1 A + A K2
    mu, b, c = moments["mu"], moments["b"], moments["c"]
    pos = np.searchsorted(urows, test_rows)
    values = mu + b[test_rows] + c[test_cols] + X_rows[pos, test_cols]
    full = (mu + b[urows][:, None] + c[None, :] + X_rows) if scores else None
    return {"values": values, "scores": full, "noise": noise, "signal": signal, "iterations": iterations,
            "residual": residual, "kernel_scale": (signal * d1, signal * d2), "dual": dual}


class ZeroFilled:
    """The zero-filled target of the ranking fits, T (t_ij = r_ij / r̄ where rated, 0 elsewhere), optionally
    centred by its column means c̄ (T_c = T − 1 c̄ᵀ: the items' popularity taken out as a fixed offset and
    added back to the scores), with the products the kernels need — all by sparse products and rank-one
    corrections: T_c is never dense.

    gram_rows(X) = (T_c T_cᵀ − diag) X and gram_cols(X) = (T_cᵀ T_c − diag) X, the zero-diagonal Gram
    operators (T_cᵀ T_c = Tᵀ T − n c̄ c̄ᵀ, since Tᵀ 1 = n c̄); ``total`` the mean square of T_c."""

    def __init__(self, rows, cols, y, shape, center: bool = False):
        n, m = self.shape = tuple(shape)
        t = np.asarray(y, dtype=float) / float(np.mean(y))
        self.T = sp.csr_matrix((t, (rows, cols)), shape=shape)
        self.Tt = self.T.T.tocsr()
        self._single = None
        self.cbar = np.asarray(self.T.sum(axis=0)).ravel() / n if center else np.zeros(m)
        self.Tc = self.T @ self.cbar  # T c̄, (n,)
        sq = self.T.multiply(self.T)
        self.diag_rows = np.asarray(sq.sum(axis=1)).ravel() - 2.0 * self.Tc + self.cbar @ self.cbar
        self.diag_cols = np.asarray(sq.sum(axis=0)).ravel() - n * self.cbar ** 2
        self.total = float(t @ t - n * (self.cbar @ self.cbar)) / (n * m)

    def _products(self, single: bool):
        """(T, Tᵀ), in single precision and `scattered` with ``single`` (as `MomentKernel.matmat`'s)."""
        if not single:
            return self.T, self.Tt
        if self._single is None:
            self._single = (scattered(self.T, np.float32), scattered(self.Tt, np.float32))
        return self._single

    def gram_rows(self, X: np.ndarray, single: bool = False) -> np.ndarray:
        T, Tt = self._products(single)
        c = self.cbar
        if not c.any():
            return gram_product(T, Tt, X, self.diag_rows)
        TtX = Tt @ X  # single precision: rounded chunk by chunk in the product
        out = T @ TtX - self.diag_rows[:, None] * X
        TtX = np.asarray(TtX, dtype=float)
        if c.any():
            s = X.sum(axis=0)
            out -= np.outer(self.Tc, s) + (c @ TtX)[None, :] - (c @ c) * s[None, :]
        return out

    def gram_cols(self, X: np.ndarray, single: bool = False) -> np.ndarray:
        T, Tt = self._products(single)
        if not self.cbar.any():
            return gram_product(Tt, T, X, self.diag_cols)
        out = Tt @ (T @ X) - self.diag_cols[:, None] * X
        out -= self.shape[0] * np.outer(self.cbar, self.cbar @ X)
        return out

    def right(self, V2: np.ndarray) -> np.ndarray:
        """T_c V2, (n, r)."""
        return np.asarray(self.T @ V2) - np.outer(np.ones(self.shape[0]), self.cbar @ V2)

    def left(self, V1: np.ndarray) -> np.ndarray:
        """V1ᵀ T_c, (r, m)."""
        return np.asarray(self.Tt @ V1).T - np.outer(V1.sum(axis=0), self.cbar)


def zero_filled_scores(rows, cols, y, shape, score_rows, *, signal: float = 0.02, min_noise: float = 0.1,
                       center: bool = False, cache: dict | None = None):
    """Ranking scores: the same GP (X = F + G, Σ = K1 ⊕ K2 + σ² I) fitted to the zero-filled matrix T
    (t_ij = r_ij / r̄ where rated, 0 elsewhere; PureSVD, Cremonesi, Koren & Turrin 2010), so a score says
    which items a user rates as well as how highly; ranking by predicted ratings alone puts rarely rated
    items with high estimates first and loses to item popularity.

    Every entry of T is observed, so the moment kernels are plain averages (K1 = T Tᵀ / m, K2 = Tᵀ T / n
    off their diagonals, PSD-projected; no co-rating shrinkage or sharpening: each moment averages a whole
    row or column) and the posterior mean is exact in their eigenbases (eq. 5.12's Kronecker sum):

        E[X | T] = U1 (Φ ⊙ U1ᵀ T U2) U2ᵀ,   Φ_ij = s(λ_i + μ_j) / (s(λ_i + μ_j) + σ²),

    with the kernels' share s = ``signal`` of the mean square of T and σ² the rest (at least
    ``min_noise`` of it). A small share keeps Φ nearly linear in the spectrum (scores ≈ (K1 T + T K2) / σ²:
    co-rating neighbours of both sides). ``center``: the GP models T − 1 c̄ᵀ, c̄ the column means (item
    popularity as a fixed offset, added back to the scores; `ZeroFilled`) — on sparse data, where most
    users have a handful of ratings, their co-rating neighbours say little and popularity much.

    Returns (len(score_rows), m) scores for the rows ``score_rows`` (sorted ids) and the noise σ²; with
    ``score_rows`` None, a function of row ids returning their scores in place of the scores.
    Cost O(n³ + m³ + nnz m + n² m + |score_rows| (n m + m²)); memory two n × m arrays and the eigenvectors. The
    zero-filled matrix is never formed densely: T U2 is a sparse × dense product.

    ``cache``: a dict shared by calls on the same ratings (an inner grid over ``signal``): the kernels, their
    eigenbases and U1ᵀ T U2 are computed once per ``center`` and a further ``signal`` costs O(nm) — it only
    rescales Φ — plus its scores."""
    n, m = shape
    key = ("exact", bool(center))
    if cache is not None and key in cache:
        target, basis, rotated = cache[key]
    else:
        target = ZeroFilled(rows, cols, y, shape, center)
        K1 = target.gram_rows(np.eye(n)) / m
        K2 = target.gram_cols(np.eye(m)) / n
        basis = KroneckerEigenbasis(Eigenbasis.symmetric(K1, check_psd=False, floor_rel=0.0),
                                    Eigenbasis.symmetric(K2, check_psd=False, floor_rel=0.0))
        del K1, K2
        rotated = basis.left.vectors.T @ target.right(basis.right.vectors)  # U1ᵀ T_c U2
        if cache is not None:
            cache[key] = (target, basis, rotated)
    total = target.total
    kernel_part = float(np.mean(basis.a) + np.mean(basis.b))  # mean diagonals of the projected kernels
    if signal * kernel_part > (1.0 - min_noise) * total:
        signal = (1.0 - min_noise) * total / kernel_part
    noise = total - signal * kernel_part
    U1 = basis.left.vectors
    Th = rotated.copy() if cache is not None else rotated
    Phi = basis.spectrum("sum")
    Phi *= signal
    Th *= Phi
    Phi += noise
    Th /= Phi
    del Phi

    def scorer(rows_):
        return target.cbar[None, :] + (U1[np.asarray(rows_)] @ Th) @ basis.right.inv

    return (scorer if score_rows is None else scorer(score_rows)), noise



# ---- the scalable path: sparse moment operators, low-rank eigenbases, weight-space conjugate gradients ----

class MomentKernel:
    """The moment kernel of `moment_kernel` before its PSD projection — K_jk = S_jk / (N_jk + shrink) off the
    diagonal, 0 on it, with S = RᵀR the co-rated residual products and N = OᵀO the co-rating counts — as an
    operator X ↦ K X over the columns (axis=0, m × m) or the rows (axis=1, n × n), never dense unless the data
    are.

    On sparse data most co-rating pairs co-rate once (N_jk = 1), so K is split exactly into a Gram part and a
    sparse correction on the pairs that co-rate more than once:

        K = (RᵀR − diag(RᵀR)) / (1 + shrink) − C,   C_jk = S_jk (1/(1 + shrink) − 1/(N_jk + shrink)) for N_jk ≥ 2,

    applied as Rᵀ(R X) (two sparse products, O(nnz · p) for p columns) plus C X (O(nnz(C) · p)). C is built once,
    a block of rows at a time (S and N by sparse products, O(pairs) in all); were it larger than
    ``STORED_BYTES`` it is recomputed block by block at every product instead. When the ratings are dense
    enough (``DENSE_FILL``; Jester: 25k users × 100 jokes, each pair of users co-rates dozens) and fit densely
    (``DENSE_RATINGS_ENTRIES``), K itself is recomputed by dense blocks at every product, never more than
    ``BLOCK_ENTRIES`` of it at once.

    Above ``PAIR_LIMIT`` pairs on sparse ratings, where even one pass over the pairs is hours, each count is
    replaced by its expectation: a column j rated n_j times and a column k rated n_k times, their ratings spread
    over the rows as the rows' counts c_r are (Σ_r c_r = nnz), co-rate 1 + n_j n_k κ times, with
    κ = Σ_r c_r² / nnz² = pairs / nnz² (the one co-rating that makes S_jk non-zero, and the others at random).
    The separable weight a_j a_k, a_j = (1 + shrink + n_j² κ)^(-1/2), is at most 1 / (1 + n_j n_k κ + shrink)
    (Cauchy–Schwarz: it shrinks no less) and equal to it where n_j = n_k, so K ≈ A (RᵀR − diag(RᵀR)) A with
    A = diag(a): the Gram part's two sparse products, O(nnz · p), and no pairs. ``kind`` names the form:
    'stored', 'recomputed', 'dense' or 'separable'.
    """

    def __init__(self, rows, cols, resid, shape, axis: int, shrink: float):
        R = sp.csr_matrix((np.asarray(resid, dtype=float), (rows, cols)), shape=shape)
        if axis == 1:
            R = R.T.tocsr()
        self.R, self.Rt, self.shrink = R, R.T.tocsr(), float(shrink)
        self.size = R.shape[1]
        self.diag = np.asarray(R.multiply(R).sum(axis=0)).ravel()  # diag(RᵀR)
        counts = np.diff(R.indptr).astype(float)
        self.pairs = int(np.sum(counts ** 2))  # ≥ nnz(N), diagonal included
        self.dense_data, self.C, self._single, self.weights, self.O, self.Ot = None, None, None, None, None, None
        dense = self.pairs * 12 > STORED_BYTES and self._dense_enough()  # K too large to store, the ratings dense
        if self.pairs > PAIR_LIMIT and not dense:
            kappa = self.pairs / float(R.nnz) ** 2
            rated = np.diff(self.Rt.indptr).astype(float)  # n_j
            self.weights, self.kind = 1.0 / np.sqrt(1.0 + self.shrink + rated ** 2 * kappa), "separable"
            return  # no counts: they are never read
        # the indicators of the ratings, on R's pattern (the counts N = OᵀO)
        self.O = sp.csr_matrix((np.ones(R.nnz), R.indices, R.indptr), shape=R.shape)
        self.Ot = sp.csr_matrix((np.ones(R.nnz), self.Rt.indices, self.Rt.indptr), shape=self.Rt.shape)
        if dense:
            self.dense_data, self.kind = (R.toarray(), self.O.toarray()), "dense"
            return
        self.kind = "recomputed"
        blocks, stored = [], 0
        step = self._step(max(self.pairs / max(self.size, 1), 1.0))
        for start in range(0, self.size, step):
            blocks.append(self._correction_block(start, min(start + step, self.size)))
            stored += blocks[-1].nnz * 12
            if stored > STORED_BYTES:
                return  # recomputed at every product
        C = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, self.size))
        self.C, self.kind = C.astype(np.float64 if C.nnz <= EXACT_PAIRS else np.float32), "stored"

    def _dense_enough(self) -> bool:
        """Whether the ratings fit dense blocks (`BLOCK_ENTRIES`, or `DENSE_RATINGS_ENTRIES` at `DENSE_FILL`)."""
        entries = self.R.shape[0] * self.R.shape[1]
        return entries <= BLOCK_ENTRIES or (entries <= DENSE_RATINGS_ENTRIES and self.R.nnz >= DENSE_FILL * entries)

    def _step(self, per_row: float) -> int:
        return max(1, int(BLOCK_ENTRIES // max(per_row, 1.0)))

    def _correction_block(self, start: int, stop: int) -> sp.csr_matrix:
        """Rows start:stop of C (pairs co-rating at least twice, off the diagonal)."""
        S = self.Rt[start:stop] @ self.R
        N = self.Ot[start:stop] @ self.O
        # R and O share a pattern, so the two products list each row's pairs in the same order and differ only
        # where S's products cancel to exactly 0 (dropped): then both are sorted and S's pairs looked up in N
        if not (S.nnz == N.nnz and np.array_equal(S.indptr, N.indptr) and np.array_equal(S.indices, N.indices)):
            S.sort_indices()
            N.sort_indices()
            def keys(M):  # S's pattern lies within N's, short of the pairs whose products cancel exactly
                return np.repeat(np.arange(M.shape[0], dtype=np.int64), np.diff(M.indptr)) * self.size + M.indices

            N = sp.csr_matrix((N.data[np.searchsorted(keys(N), keys(S))], S.indices, S.indptr), shape=S.shape)
        rows = np.repeat(np.arange(stop - start), np.diff(S.indptr))
        keep = (N.data >= 2) & (S.indices != rows + start)
        S.data = np.where(keep, S.data * (1.0 / (1.0 + self.shrink) - 1.0 / (N.data + self.shrink)), 0.0)
        S.eliminate_zeros()
        return S

    def _dense_block(self, start: int, stop: int) -> np.ndarray:
        Rd, Od = self.dense_data
        K = (Rd[:, start:stop].T @ Rd) / (Od[:, start:stop].T @ Od + self.shrink)
        K[np.arange(stop - start), np.arange(start, stop)] = 0.0
        return K

    def single_products(self):
        """(R, Rᵀ) in single precision and scatter form (`scattered`) for ``matmat(X, single=True)``, built on the
        first call. O(nnz log nnz) once; memory O(nnz)."""
        if self._single is None:
            self._single = (scattered(self.R, np.float32), scattered(self.Rt, np.float32))
        return self._single

    @property
    def stored(self) -> bool:
        """Whether the correction C is held (else recomputed at every product, or K by dense blocks)."""
        return self.C is not None

    def matmat(self, X: np.ndarray, single: bool = False) -> np.ndarray:
        """K X for X (size, p). ``single``: the Gram part's two sparse products in single precision (relative error
        ~1e-7) and in scatter form (`scattered`, the same sums in the same order as CSR products), for
        products that only feed a randomised Krylov space (`krylov_space`), which approximates the top eigenpairs
        far more coarsely: at 10⁶ ratings and more X no longer sits in cache, and its rows are half the bytes."""
        if self.dense_data is not None:
            out = np.empty((self.size, X.shape[1]))
            step = self._step(self.size)
            for start in range(0, self.size, step):
                stop = min(start + step, self.size)
                out[start:stop] = self._dense_block(start, stop) @ X
            return out
        a = self.weights
        Xa = X if a is None else a[:, None] * X
        R, Rt = self.single_products() if single else (self.R, self.Rt)
        out = gram_product(Rt, R, Xa, self.diag)
        if a is not None:
            out *= a[:, None]
            return out
        out /= 1.0 + self.shrink
        if self.C is not None:  # by chunks of columns too: X may be a column slice (a Krylov block), which a
            for c in range(0, X.shape[1], COLUMN_CHUNK):  # whole product would copy; float32 widened as subtracted
                out[:, c:c + COLUMN_CHUNK] -= self.C @ X[:, c:c + COLUMN_CHUNK].astype(self.C.dtype, copy=False)
            return out
        step = self._step(max(self.pairs / max(self.size, 1), 1.0))
        for start in range(0, self.size, step):
            stop = min(start + step, self.size)
            out[start:stop] -= self._correction_block(start, stop) @ X
        return out


COLUMN_CHUNK = 32
"""Columns of X per pass of `gram_product`'s (and the moment correction's) double-precision CSR products (each
output column is its own sum: chunking changes no value)."""
ROW_CHUNK_BYTES = 2 ** 22
"""Bytes of one row chunk of an elementwise update of an (n, p) block (`_row_chunks`): 4 MiB of temporary
whatever n."""


def _row_chunks(n: int, width: int):
    """(lo, hi) bounds of consecutive row chunks of an (n, width) float64 block, ``ROW_CHUNK_BYTES`` each."""
    step = max(1, ROW_CHUNK_BYTES // (8 * max(width, 1)))
    return ((lo, min(lo + step, n)) for lo in range(0, n, step))


def gram_product(A, B, X: np.ndarray, diag: np.ndarray) -> np.ndarray:
    """(A B − diag(diag)) X, (size, p) in float64, for sparse A, B (CSR, or `scattered` in single precision):
    a chunk of X's columns at a time — `COLUMN_CHUNK`, or the scatter form's own chunk, in which it computes the
    same sums — and the diagonal taken off by row chunks, so that no (size, p) temporary sits beside the result
    (X may be a column slice of a Krylov basis, which a whole product would copy). O(nnz · p)."""
    out = np.empty((X.shape[0], X.shape[1]))
    step = max(1, B.chunk_bytes // B.dtype.itemsize) if isinstance(B, ObservedMatrix) else COLUMN_CHUNK
    for c in range(0, X.shape[1], step):
        out[:, c:c + step] = A @ (B @ X[:, c:c + step])
    for lo, hi in _row_chunks(X.shape[0], X.shape[1]):
        out[lo:hi] -= diag[lo:hi, None] * X[lo:hi]
    return out


def moment_basis(rows, cols, resid, shape, axis: int, shrink: float, power: float = 1.0, *,
                 rank: int | None = None, rng: np.random.Generator | None = None) -> tuple[Eigenbasis, str]:
    """Eigenbasis of the sharpened moment kernel (`moment_kernel`'s, spectrum by `sharpen`): its top ``rank``
    eigenpairs from the sparse `MomentKernel` (`Eigenbasis.top`), the sharpened values keeping the clipped
    trace of those eigenpairs — or the exact decomposition when ``rank`` is None or at least the side's size —
    and the operator's form (`MomentKernel.kind`). O(min(pairs, PAIR_LIMIT) · rank) for the products (O(nnz ·
    rank) in the separable form), O(size · rank²) for the orthonormalisation."""
    K = MomentKernel(rows, cols, resid, shape, axis, shrink)
    rank = K.size if rank is None else min(int(rank), K.size)
    rng = np.random.default_rng(0) if rng is None else rng
    single = krylov_space(K.size, rank)
    if single:  # built before the Krylov basis is allocated, so their sorts' temporaries never sit beside it
        K.single_products()
    basis = Eigenbasis.top(lambda X: K.matmat(X, single), K.size, rank, rng=rng, transform=lambda d: sharpen(d, power))
    return basis, K.kind


def fit_moments_low_rank(rows, cols, y, shape, *, shrink: float = 100.0, reg_rows: float = 15.0,
                         reg_cols: float = 10.0, power: float = 1.0, rank: int = RANK) -> dict:
    """`fit_moments` without dense kernels: dict with mu, b, c, the residuals, their mean square ``total``, the
    kernels' eigenbases E1 (rows) and E2 (columns), each the top ``rank`` eigenpairs (`moment_basis`; all
    of them, exact, on a side of at most ``rank``), and ``kernels``, the form of each side's operator
    (`MomentKernel.kind`). O(nnz + min(pairs, PAIR_LIMIT) · rank)."""
    mu, b, c = regularised_biases(rows, cols, y, shape, reg_rows, reg_cols)
    resid = y - mu - b[rows] - c[cols]
    E1, kind1 = moment_basis(rows, cols, resid, shape, 1, shrink, power, rank=rank)
    E2, kind2 = moment_basis(rows, cols, resid, shape, 0, shrink, power, rank=rank)
    return {"mu": mu, "b": b, "c": c, "resid": resid, "total": float(np.mean(resid ** 2)), "E1": E1, "E2": E2,
            "kernels": [kind1, kind2]}


def predict_low_rank(moments: dict, rows, cols, test_rows, test_cols, *, signal: float = 1.0,
                     min_noise: float = 0.1, tol: float = 1e-4, max_iter: int = 300, scores: bool = False,
                     progress=None) -> dict:
    """`predict_ratings` for eigenbasis moments (`fit_moments_low_rank`): the same posterior mean, solved in the
    kernels' weight space (`ObservedKroneckerSum`, O(nnz · rank) per iteration). The solver's preconditioner
    depends on the observed positions only, so it is built once per moments dict and reused across
    ``signal`` values."""
    E1, E2, total = moments["E1"], moments["E2"], moments["total"]
    n, m = E1.size, E2.size
    d1, d2 = float(E1.values.sum()) / n, float(E2.values.sum()) / m  # mean diagonals (traces / sizes)
    kernel_part = signal * (d1 + d2)
    if kernel_part > (1.0 - min_noise) * total:
        signal *= (1.0 - min_noise) * total / kernel_part
    noise = total - signal * (d1 + d2)
    solver = moments.get("solver")
    if solver is None:
        solver = moments["solver"] = ObservedKroneckerSum(E1, E2, rows, cols, (n, m))
    report = None if progress is None else (
        lambda it, res: progress(min(it / max_iter, 1.0), f"conjugate gradients {it}, residual {res:.2g}"))
    mean, info = solver.solve(moments["resid"], noise=noise, scale=signal, tol=tol, max_iter=max_iter,
                              progress=report)
    test_rows, test_cols = np.asarray(test_rows), np.asarray(test_cols)
    mu, b, c = moments["mu"], moments["b"], moments["c"]
    values = mu + b[test_rows] + c[test_cols] + mean.at(test_rows, test_cols)
    full = None
    if scores:
        from malt.splits import RowScores

        full = RowScores(np.unique(test_rows), m, lambda r: mu + b[r][:, None] + c[None, :] + mean.rows(r))
    return {"values": values, "scores": full, "noise": noise, "signal": signal, "iterations": info["iterations"],
            "residual": info["residual"], "kernel_scale": (signal * d1, signal * d2)}


def zero_filled_scores_low_rank(rows, cols, y, shape, score_rows, *, signal: float = 0.02, min_noise: float = 0.1,
                                rank: int = RANK, center: bool = False, cache: dict | None = None):
    """`zero_filled_scores` with low-rank kernels: each side keeps the top ``rank`` eigenpairs (all of them on a
    side of at most ``rank``) of its zero-diagonal Gram operator (`ZeroFilled`: two sparse products per block product,
    O(nnz · rank)), clipped at zero; the complement of their span has eigenvalue 0. With P = V Vᵀ,
    Q = I − P on each side, T splits into P1 T P2 + P1 T Q2 + Q1 T P2 + Q1 T Q2, on which the posterior map is
    Φ ⊙ (in the basis), φ(λ1), φ(λ2) and 0, φ(x) = s x / (s x + σ²):

        E[X | T][u] = V1[u] (Φ ⊙ C − φ(λ1) C − C φ(λ2)) V2ᵀ + V1[u] φ(λ1) V1ᵀ T + (T V2)[u] φ(λ2) V2ᵀ,

    C = V1ᵀ T V2 (T centred by its column means with ``center``, which are added back). Exact (equal to
    `zero_filled_scores`) when both eigenbases are full. Returns the scores of ``score_rows``
    (len(score_rows), m), or with ``score_rows`` None a function of row ids giving them, and the noise σ². Cost O(nnz · rank + len(score_rows) · m · rank).

    ``cache``: as in `zero_filled_scores` — the eigenpairs and the projections T V2, V1ᵀ T, C once per ``center``
    for every ``signal`` (which only changes φ)."""
    n, m = shape
    key = ("low-rank", bool(center), rank)
    if cache is not None and key in cache:
        target, E1, E2, TV2, V1T, C = cache[key]
    else:
        target = ZeroFilled(rows, cols, y, shape, center)
        rng = np.random.default_rng(0)
        clip = lambda v: np.maximum(v, 0.0)  # noqa: E731
        single1, single2 = krylov_space(n, rank), krylov_space(m, rank)
        E1 = Eigenbasis.top(lambda X: target.gram_rows(X, single1) / m, n, rank, rng=rng, transform=clip)
        E2 = Eigenbasis.top(lambda X: target.gram_cols(X, single2) / n, m, rank, rng=rng, transform=clip)
        TV2 = target.right(E2.vectors)
        V1T = target.left(E1.vectors)
        C = E1.vectors.T @ TV2
        if cache is not None:
            cache[key] = (target, E1, E2, TV2, V1T, C)
    total = target.total
    kernel_part = float(E1.values.sum() / n + E2.values.sum() / m)  # mean diagonals of the projected kernels
    if signal * kernel_part > (1.0 - min_noise) * total:
        signal = (1.0 - min_noise) * total / kernel_part
    noise = total - signal * kernel_part

    def phi(x):
        return signal * x / (signal * x + noise)

    V1, V2, a, b = E1.vectors, E2.vectors, E1.values, E2.values
    p1, p2 = phi(a), phi(b)
    core = phi(a[:, None] + b[None, :]) * C - p1[:, None] * C - C * p2[None, :]

    def scorer(rows_):
        u = np.asarray(rows_)
        scores = (V1[u] @ core) @ V2.T
        scores += (V1[u] * p1) @ V1T
        scores += (TV2[u] * p2) @ V2.T
        scores += target.cbar[None, :]
        return scores

    return (scorer if score_rows is None else scorer(score_rows)), noise
