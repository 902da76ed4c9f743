"""Gaussian conditioning on the observed entries of a large matrix under a Kronecker-sum covariance whose
factors are low-rank eigenbases: the scalable path of PMA's prediction (dissertation eq. 5.12).

Model: vec X ~ N(0, s (K1 ⊕ K2)), y_l = x_{i_l j_l} + ε_l at L observed positions, ε ~ N(0, σ² I), with
each factor an `Eigenbasis` K = V diag(λ) Vᵀ + ρ (I − V Vᵀ) (full, or low-rank with the eigenvalue ρ on the
complement of span V; λ ≥ ρ ≥ 0). Writing K = V diag(λ − ρ) Vᵀ + ρ I, the ρ I parts of the two factors are
white noise on every entry, so with A1 = V1 diag(√(s(λ − ρ1))) (n × r1) and A2 likewise (m × r2)

    x_ij = A1[i] · ω_j + υ_i · A2[j] + e_ij,   ω_j ~ N(0, I_r1),  υ_i ~ N(0, I_r2),  e_ij ~ N(0, s(ρ1 + ρ2)),

which has exactly the covariance s (K1 ⊕ K2) (columns of F = A1 Ω ᵀ ~ N(0, K1 − ρ1 I), rows of G = Υ A2ᵀ
~ N(0, K2 − ρ2 I)). The posterior means Ω̂ (m × r1), Υ̂ (n × r2) minimise

    ½ τ Σ_l (y_l − A1[i_l]·ω_{j_l} − υ_{i_l}·A2[j_l])² + ½ ‖Ω‖² + ½ ‖Υ‖²,   τ = 1 / (σ² + s(ρ1 + ρ2)),

whose normal equations H θ = τ Jᵀ y, H = I + τ JᵀJ, are solved by conjugate gradients preconditioned with
diag(H): in the kernels' eigenbases that diagonal is 1 + τ s (λ_a − ρ) Σ_{i ∈ O_j} V1[i, a]² (per column j,
and likewise per row), read off the squared eigenvectors once (O(L r)). E[x_ij | y] = A1[i]·Ω̂_j + Υ̂_i·A2[j]
at every unobserved entry — the same number as the dual form K_{·O} (K_OO + σ² I)⁻¹ y of the dense path
(`malt.algorithms.pma.ratings.observed_cg`), which it equals when the eigenbases are full.

Cost: O(L (r1 + r2)) per iteration (one gather of the observed entries, and one scatter per side over the
positions and over their transpose, each in cached column blocks: `ObservedMatrix`),
O(L (r1 + r2) + (n + m)(r1 + r2)) memory; nothing of size n × n, m × m or n × m. The iterations needed do not
grow with the size: 7–12 on MovieLens-100K and FilmTrust at a relative residual of 1e-4. When the L
observations are fewer than the m r1 + n r2 weights, `ObservedKroneckerSum.solve` iterates on the dual system
(τ⁻¹ I + J Jᵀ) α = y instead (θ = Jᵀ α, the same posterior mean): its vectors have L entries.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from malt.numerics.eigenbasis import Eigenbasis
from malt.numerics.linalg import dot_at

NARROW_WIDTH = 16
"""Widest factor (columns) a `Pattern` cuts into column blocks: two 64-byte cache lines a row."""

BLOCK_BYTES = 8 * 2**20
"""Bytes of a factor's rows that one column block of a `Pattern` reads: a quarter of a 32 MiB L3, so the
block's slice stays in cache beside the other operands."""


CHUNK_BYTES = 128
"""Bytes of each row of X that one pass of a `scattered` product reads: two 64-byte cache lines (32 single- or
16 double-precision columns)."""


sampled_products = dot_at
"""(Z Wᵀ)_{rows[l], cols[l]} for every l: `malt.numerics.linalg.dot_at`, under the name this module's
products use."""


class Pattern:
    """Observed positions of an (n, m) matrix, ordered for the products a fit repeats with values on them:
    ``Pattern(rows, cols, shape)``, then ``p.rows``, ``p.cols``, ``p.order`` (the permutation applied) and
    ``p.matrix(values)`` (an `ObservedMatrix` with ``values`` in the pattern's order; duplicates add up).

    The columns are cut into blocks of ``span`` columns, and the entries ordered by (block, row, column):
    row-major (CSR) order within a block, and the whole pattern when one block holds every column. Each
    product then reads a (span, width) slice of the right-hand factor that stays in cache, where row-major
    order over all m columns fetches a cache line from memory for almost every entry once the (m, width)
    factor outgrows the cache (7·10⁶ entries of a 500,000 × 500,000 pattern at width 10, one thread: R W and
    Rᵀ Z 0.158 and 0.153 s in row-major order, 0.080 and 0.042 s in five blocks). ``width`` is the number of
    columns of the factors the products will multiply; it sizes the blocks (``BLOCK_BYTES`` each) and changes
    no value. Only narrow factors are blocked (``width`` ≤ ``NARROW_WIDTH``): a wide row is a stream of cache
    lines whose fetch the hardware overlaps, and each block adds a pass over the (n, width) result (same
    pattern at width 100: 1.06–1.44 s in one block, 2.75 s in three, 1.85 s in six); a wide factor is instead
    multiplied by a pattern built for a narrow width, a chunk of its columns at a time (`ObservedMatrix`, `scattered`,
    `ObservedKroneckerSum`), where the blocks pay off again. Building it costs O(L) when the
    positions come row-major (a scipy COO after ``sum_duplicates``), O(L log L) otherwise; a block's CSR index
    arrays are built once and shared by every `matrix`."""

    def __init__(self, rows, cols, shape, width: int = NARROW_WIDTH, span: int | None = None):
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        self.shape = (int(shape[0]), int(shape[1]))
        n, m = self.shape
        self.width = int(width)
        if span is None:
            span = max(1, BLOCK_BYTES // (8 * max(int(width), 1))) if width <= NARROW_WIDTH else m
        self.span = min(int(span), max(m, 1))
        key = rows * m + cols
        order = np.argsort(key, kind="stable") if np.any(key[1:] < key[:-1]) else np.arange(key.size)
        blocks = -(-m // self.span)
        if blocks > 1:
            block = (cols[order] // self.span).astype(np.uint16 if blocks <= 2**16 else np.int64)
            order = order[np.argsort(block, kind="stable")]  # a radix sort for 16-bit keys: O(L)
        self.order = order
        self.rows, self.cols = rows[order], cols[order]
        self.starts = np.concatenate([[0], np.cumsum(np.bincount(self.cols // self.span, minlength=blocks))])
        index = np.int32 if max(n, m, rows.size) < np.iinfo(np.int32).max else np.int64
        self.indptrs, self.indices = [], []
        for b in range(blocks):
            e = slice(self.starts[b], self.starts[b + 1])
            counts = np.bincount(self.rows[e], minlength=n)
            self.indptrs.append(np.concatenate([[0], np.cumsum(counts)]).astype(index))
            self.indices.append((self.cols[e] - b * self.span).astype(index))

    def matrix(self, values, dtype=np.float64) -> ObservedMatrix:
        """The values (in the pattern's order) as an `ObservedMatrix` whose products run in precision ``dtype``."""
        values = np.asarray(values, dtype=dtype)
        n, m = self.shape
        parts = []
        for b, (indptr, indices) in enumerate(zip(self.indptrs, self.indices)):
            columns = min(self.span, m - b * self.span)
            parts.append(sp.csr_matrix((values[self.starts[b]:self.starts[b + 1]], indices, indptr),
                                       shape=(n, columns)))
        return ObservedMatrix(parts, self.span, self.shape, chunk_bytes=8 * max(self.width, 1))


class ObservedMatrix:
    """A sparse (n, m) matrix with values on a `Pattern`, kept as its column blocks: ``R @ X`` (X (m,) or
    (m, k)) and ``R.T @ Y`` (Y (n,) or (n, k)), each O(L k), block by block (see `Pattern`), in the precision of
    its values. ``R.T @ Y`` scatters: each entry adds its value times a row of Y to a row of its block's slice of
    the result. It reads Y ``chunk_bytes`` of each row at a time (the pattern's width), so that slice stays in
    cache while Y streams through in order; wider Y is taken in chunks of columns (`scattered`)."""

    def __init__(self, blocks, span: int, shape, transposed: bool = False, chunk_bytes: int = 8 * NARROW_WIDTH):
        self.blocks, self.span, self.shape, self.transposed = blocks, span, tuple(shape), transposed
        self.chunk_bytes = chunk_bytes
        self.dtype = blocks[0].dtype

    @property
    def T(self) -> ObservedMatrix:
        return ObservedMatrix(self.blocks, self.span, self.shape[::-1], not self.transposed, self.chunk_bytes)

    def __matmul__(self, X):
        X = np.asarray(X)
        step = max(1, self.chunk_bytes // self.dtype.itemsize)
        if self.transposed and X.ndim == 2 and X.shape[1] > step:  # Rᵀ Y a chunk of Y's columns at a time
            out = np.empty((self.shape[0], X.shape[1]), dtype=self.dtype)
            for c in range(0, X.shape[1], step):
                chunk = np.ascontiguousarray(X[:, c:c + step], dtype=self.dtype)
                for b, B in enumerate(self.blocks):
                    out[b * self.span:b * self.span + B.shape[1], c:c + step] = B.T @ chunk
            return out
        X = X.astype(self.dtype, copy=False)
        if self.transposed:  # Rᵀ Y: block b gives rows b·span … of the result
            parts = [B.T @ X for B in self.blocks]
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        out = self.blocks[0] @ X[:self.span]
        for b, B in enumerate(self.blocks[1:], start=1):
            out += B @ X[b * self.span:(b + 1) * self.span]
        return out


def scattered(A, dtype=np.float64) -> ObservedMatrix:
    """A sparse (a, s) matrix A kept for products A X with wide dense X (s, k), computed by scattering: the
    transpose of an `ObservedMatrix` of Aᵀ, whose column blocks are blocks of A's rows and whose products read X
    ``CHUNK_BYTES`` of each row at a time. A CSR product gathers X's rows at random instead, from memory once X
    outgrows the cache (7·10⁶ entries of a 500,000 × 500,000 matrix, k = 110 in single precision, one thread: 1.00 s
    as CSR, 0.31 s in blocks of 32 columns; 2.1·10⁶ entries, 150,000 × 150,000: 0.18 and 0.07 s). Every output entry
    adds its terms in the order of A's sorted columns, as the CSR product does, so the result is bitwise the same.
    ``dtype``: the precision of the entries and the products. Cost O(nnz · k) per product; memory O(nnz) and one
    (s + 1) index array per block."""
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    At = A.T.tocsr().tocoo()  # Aᵀ's entries in row-major order
    pattern = Pattern(At.row, At.col, At.shape, width=CHUNK_BYTES // 8)
    return pattern.matrix(At.data[pattern.order], dtype).T


def preconditioned_cg(apply, b: np.ndarray, D: np.ndarray, *, tol: float, max_iter: int, progress=None):
    """x with A x = b for a symmetric positive definite A given by ``apply(v)`` = A v, by conjugate gradients
    preconditioned with the diagonal D, from x = 0, until the relative preconditioned residual
    √(rᵀD⁻¹r) / √(bᵀD⁻¹b) ≤ ``tol`` or ``max_iter`` iterations. ``progress(iteration, residual)`` after each.
    Returns (x, info with 'iterations', 'residual', 'converged')."""
    x = np.zeros_like(b)
    b_norm = float(np.sqrt(b @ (b / D)))
    it, residual = 0, 0.0
    if b_norm > 0:
        R = b.copy()
        Z = R / D
        P = Z.copy()
        rz = float(R @ Z)
        residual = np.sqrt(rz) / b_norm
        while residual > tol and it < max_iter:
            it += 1
            AP = apply(P)
            alpha = rz / float(P @ AP)
            x += alpha * P
            R -= alpha * AP
            Z = R / D
            rz_new = float(R @ Z)
            residual = np.sqrt(max(rz_new, 0.0)) / b_norm
            if progress is not None:
                progress(it, residual)
            P = Z + (rz_new / rz) * P
            rz = rz_new
    return x, {"iterations": it, "residual": float(residual), "converged": bool(residual <= tol)}


@dataclass(frozen=True)
class FactoredMean:
    """A posterior mean X̂ = Z Wᵀ (n × m) kept as its factors Z (n, k), W (m, k); never formed whole."""

    Z: np.ndarray
    W: np.ndarray

    def at(self, rows, cols) -> np.ndarray:
        """X̂ at the positions (rows, cols), O(len(rows) k)."""
        return sampled_products(self.Z, self.W, np.asarray(rows), np.asarray(cols))

    def rows(self, index) -> np.ndarray:
        """Whole rows X̂[index] (len(index), m), O(len(index) m k)."""
        return self.Z[np.asarray(index)] @ self.W.T


class ObservedKroneckerSum:
    """The observed-entry posterior of the module docstring for one pair of eigenbases and one set of
    observed positions, solved for any right-hand side, kernel scale s and noise σ².

    Parameters
    ----------
    left, right : Eigenbasis
        K1 (n × n) and K2 (m × m), orthonormal, full or low-rank, eigenvalues ≥ the complement's ``rest`` ≥ 0.
    rows, cols : (L,) arrays
        The observed positions.
    shape : (n, m)

    Building it costs O(L log L) for the transposed positions' order (the weight space's preconditioner, the
    squared eigenvectors summed over each column's and row's observed entries, O(L (r1 + r2)), on its first
    use); every `solve` then costs O(L (r1 + r2)) per iteration.
    """

    def __init__(self, left: Eigenbasis, right: Eigenbasis, rows, cols, shape):
        for basis, name in ((left, "K1"), (right, "K2")):
            if not basis.orthonormal:
                raise ValueError(f"{name} needs an orthonormal eigenbasis")
        self.shape = (int(shape[0]), int(shape[1]))
        if (left.size, right.size) != self.shape:
            raise ValueError(f"eigenbases of sizes {left.size}, {right.size} do not fit a {shape} matrix")
        self.left, self.right = left, right
        # both products scatter (`ObservedMatrix`): Jᵀ's Ω part over the pattern, its Υ part over the transposed one
        self.pattern = p = Pattern(rows, cols, self.shape, width=CHUNK_BYTES // 8)
        self.transposed = Pattern(p.cols, p.rows, self.shape[::-1], width=CHUNK_BYTES // 8)
        weights = self.shape[1] * left.vectors.shape[1] + self.shape[0] * right.vectors.shape[1]
        self.space = "observations" if p.rows.size < weights else "weights"
        self._squares = None

    def squares(self) -> tuple[np.ndarray, np.ndarray]:
        """(col_sq (m, r1): Σ_{i ∈ O_j} V1[i, a]², row_sq (n, r2): Σ_{j ∈ O_i} V2[j, b]²), the weight-space
        preconditioner's sums, computed on first use (the observation space does not need them)."""
        if self._squares is None:
            ones = np.ones(self.pattern.rows.size)
            self._squares = (self.pattern.matrix(ones).T @ (self.left.vectors ** 2),
                             self.transposed.matrix(ones).T @ (self.right.vectors ** 2))
        return self._squares

    def excess(self, basis: Eigenbasis) -> np.ndarray:
        """λ − ρ: the eigenvalues above the white-noise level the complement contributes."""
        rest = 0.0 if basis.full_rank else float(basis.rest)
        return np.maximum(basis.values - rest, 0.0)

    def white(self) -> float:
        """ρ1 + ρ2: the factors' complements, white noise on every entry."""
        return sum(0.0 if b.full_rank else float(b.rest) for b in (self.left, self.right))

    def solve(self, y, *, noise: float, scale: float = 1.0, tol: float = 1e-4, max_iter: int = 500,
              progress=None, space: str | None = None) -> tuple[FactoredMean, dict]:
        """Posterior mean of X given y (in the order of the ``rows``, ``cols`` given to the constructor) under
        the kernels ``scale`` × (K1, K2) and noise variance ``noise``, by preconditioned conjugate gradients to
        a relative preconditioned residual ``tol`` (√(rᵀD⁻¹r) ≤ tol × that of the right-hand side).

        ``space``: the unknowns the iteration runs on — 'weights' (θ = (Ω, Υ), m r1 + n r2 of them: the normal
        equations of the module docstring), 'observations' (one per observed entry, L of them: the dual
        system (τ⁻¹ I + J Jᵀ) α = y, θ = Jᵀ α by the push-through identity (I + τ JᵀJ)⁻¹ τ Jᵀ = Jᵀ (τ⁻¹ I +
        J Jᵀ)⁻¹, the same posterior mean), or None (default): the one with fewer unknowns (``self.space``).
        Memory follows the unknowns: a sparse matrix with 14 ratings a row and rank-100 kernels has 14× fewer
        observations than weights.

        Returns (`FactoredMean` with Z = [A1, Υ̂], W = [Ω̂, A2], whose entries are E[x_ij | y] at unobserved
        positions, info with 'iterations', 'residual', 'converged', 'space'). ``progress(iteration, residual)``
        is called after every iteration.
        """
        space = self.space if space is None else space
        if space not in ("weights", "observations"):
            raise ValueError(f"space must be 'weights' or 'observations', not {space!r}")
        n, m = self.shape
        y = np.asarray(y, dtype=float)
        tau = 1.0 / (noise + scale * self.white())
        A1 = self.left.vectors * np.sqrt(scale * self.excess(self.left))
        A2 = self.right.vectors * np.sqrt(scale * self.excess(self.right))
        if space == "observations":  # the factors handed over: the solve frees A1 once the mean's Z holds it
            factors = [A1, A2]
            del A1, A2
            return self._solve_observations(y[self.pattern.order], tau, factors, tol, max_iter, progress)
        r1, r2 = A1.shape[1], A2.shape[1]
        split = m * r1
        col_sq, row_sq = self.squares()
        D = np.concatenate([(1.0 + tau * scale * col_sq * self.excess(self.left)).ravel(),
                            (1.0 + tau * scale * row_sq * self.excess(self.right)).ravel()])
        rhs, apply, done = self.weight_products(y, tau, A1, A2, scale)
        try:
            theta, info = preconditioned_cg(apply, rhs, D, tol=tol, max_iter=max_iter, progress=progress)
        finally:
            done()
        Omega, Upsilon = theta[:split].reshape(m, r1), theta[split:].reshape(n, r2)
        return FactoredMean(np.hstack([A1, Upsilon]), np.hstack([Omega, A2])), {**info, "space": "weights"}

    def weight_products(self, y, tau: float, A1, A2, scale: float):
        """The weight space's products for one solve: (τ Jᵀ y, θ ↦ θ + τ JᵀJ θ, a call releasing what they hold),
        θ = (Ω (m, r1), Υ (n, r2)) flattened, y in the constructor's order. Here in this process, one gather
        and two scatters per product; `malt.algorithms.pma.split.SplitKroneckerSum` runs them over row blocks
        held by Dask workers. ``scale`` is the kernels' multiplier A1, A2 were built with."""
        n, m = self.shape
        p = self.pattern
        r1, r2 = A1.shape[1], A2.shape[1]
        split = m * r1

        def scatter(e):
            """τ Jᵀ e: (Ω part (m, r1), Υ part (n, r2)) flattened."""
            e = tau * e
            return np.concatenate([self._omega(e, A1).ravel(), self._upsilon(e, A2).ravel()])

        def gather(theta):
            """J θ: the model's entries [A1, Υ][i] · [Ω, A2][j] at the observed positions (one pass)."""
            Omega, Upsilon = theta[:split].reshape(m, r1), theta[split:].reshape(n, r2)
            return sampled_products(np.hstack([A1, Upsilon]), np.hstack([Omega, A2]), p.rows, p.cols)

        return scatter(y[p.order]), (lambda v: v + scatter(gather(v))), (lambda: None)

    def _solve_observations(self, y, tau, factors: list, tol, max_iter, progress) -> tuple[FactoredMean, dict]:
        """`solve` in the observation space: (τ⁻¹ I + J Jᵀ) α = y by conjugate gradients preconditioned with
        its diagonal τ⁻¹ + ‖A1[i]‖² + ‖A2[j]‖², then Ω̂ = Σ_{i ∈ O_j} α_ij A1[i], Υ̂ = Σ_{j ∈ O_i} α_ij A2[j]
        (θ = Jᵀ α). One product J Jᵀ v holds one side's (m, r1) or (n, r2) scatter at a time, never both,
        and the iteration's vectors have L entries. Cost O(L (r1 + r2)) per iteration, as the weight space.
        ``factors`` = [A1, A2], emptied here: the mean's factors Z = [A1, Υ̂], W = [Ω̂, A2] are filled in place and
        A1 is released before W is allocated, so at most one of A1, A2 is held twice."""
        A1, A2 = factors
        factors.clear()
        rows, cols = self.pattern.rows, self.pattern.cols

        def apply(v):
            out = sampled_products(A1, self._omega(v, A1), rows, cols)
            out += sampled_products(self._upsilon(v, A2), A2, rows, cols)
            out += v / tau
            return out

        D = 1.0 / tau + np.einsum("ij,ij->i", A1, A1)[rows] + np.einsum("ij,ij->i", A2, A2)[cols]
        alpha, info = preconditioned_cg(apply, y, D, tol=tol, max_iter=max_iter, progress=progress)
        del apply, D
        (n, m), r1, r2 = self.shape, A1.shape[1], A2.shape[1]
        Z = np.empty((n, r1 + r2))
        Z[:, :r1] = A1
        Z[:, r1:] = self._upsilon(alpha, A2)
        del A1
        W = np.empty((m, r1 + r2))
        W[:, r1:] = A2
        W[:, :r1] = self._omega(alpha, Z[:, :r1])  # A1's copy in Z: the same values
        return FactoredMean(Z, W), {**info, "space": "observations"}

    def _omega(self, v, A1) -> np.ndarray:
        """(m, r1): the Ω part of Jᵀ v, Σ_{i ∈ O_j} v_ij A1[i] (v in the pattern's order)."""
        return self.pattern.matrix(v).T @ A1

    def _upsilon(self, v, A2) -> np.ndarray:
        """(n, r2): the Υ part of Jᵀ v, Σ_{j ∈ O_i} v_ij A2[j]."""
        return self.transposed.matrix(v[self.transposed.order]).T @ A2
