"""One scalable-path pma-map solve split over row blocks held by Dask workers (issue 47, "one fit beyond one
machine"): `SplitKroneckerSum`, the `ObservedKroneckerSum` posterior with its weight-space products run where
the observations are.

The weight-space iteration of `malt.numerics.kron_observed` multiplies θ = (Ω (m, r1), Υ (n, r2)) by
H = I + τ JᵀJ, with (J θ)_l = A1[i_l]·Ω[j_l] + Υ[i_l]·A2[j_l] and Jᵀ e = (Σ_{i ∈ O_j} e_ij A1[i],
Σ_{j ∈ O_i} e_ij A2[j]). Cut the observations into blocks of consecutive rows [first, first + n_rows): a
block's entries of J θ need only Ω, A2 and its own rows of A1 and Υ, and its part of Jᵀ J θ is an (m, r1)
partial sum (the Ω part, summed over the blocks) and its own (n_rows, r2) rows of the Υ part. So

* each block's positions and rows of V1 are scattered once to one worker (dealt round-robin, unhashed, as
  `malt.algorithms.als_blocks.DaskBlocks`; V2 broadcast), which builds its `RowBlock` (the `Pattern` sorts)
  and holds it for the solver's life;
* per solve, each block is weighted on its worker (A1 rows, A2 for that kernel scale; and its residuals y),
  and gives its parts of τ Jᵀ y and of the preconditioner's sums once;
* per conjugate-gradient iteration, Ω is broadcast and each block gets its (n_rows, r2) rows of Υ; it sends
  back its (m, r1) partial sum and its (n_rows, r2) rows. Nothing of rating length travels after the
  solve's start, and the iteration itself (its vectors of m r1 + n r2 entries) runs in the calling process.

Dask's own futures, no protocol of ours. The numbers are the local weight-space solve's up to the order of
the partial sums (1e-12 relative on the tests). The eigenbases (``top_eigenpairs`` of the moment kernels) are
still computed in the calling process. Memory per worker: its blocks' positions and residuals (8 + 8 + 8
bytes per rating), their `Pattern` orders, their rows of V1 and A1, and V2, A2, Ω and the partial sum
((m, r) each).
"""
from __future__ import annotations

import numpy as np

from malt.numerics.eigenbasis import Eigenbasis
from malt.numerics.kron_observed import CHUNK_BYTES, ObservedKroneckerSum, Pattern, sampled_products


class RowBlock:
    """The observations in rows [first, first + n_rows) of an (n, m) matrix: their positions as two `Pattern` objects
    (by row, and transposed), the block's rows of the left eigenvectors V1 (n_rows, r1) and the right
    eigenvectors V2 (m, r2). `weighted` gives the block of one solve."""

    def __init__(self, first: int, n_rows: int, m: int, rows, cols, V1_rows: np.ndarray, V2: np.ndarray):
        self.first, self.n_rows, self.m = first, n_rows, m
        self.pattern = Pattern(rows, cols, (n_rows, m), width=CHUNK_BYTES // 8)
        self.transposed = Pattern(self.pattern.cols, self.pattern.rows, (m, n_rows), width=CHUNK_BYTES // 8)
        self.V1, self.V2 = V1_rows, V2

    def squares(self) -> tuple[np.ndarray, np.ndarray]:
        """(the block's (m, r1) partial Σ_{i ∈ O_j} V1[i, a]², its (n_rows, r2) rows Σ_{j ∈ O_i} V2[j, b]²)."""
        ones = np.ones(self.pattern.rows.size)
        return (self.pattern.matrix(ones).T @ (self.V1 ** 2), self.transposed.matrix(ones).T @ (self.V2 ** 2))

    def weighted(self, w1: np.ndarray, w2: np.ndarray, y: np.ndarray) -> WeightedBlock:
        """The block for one solve: A1 rows = V1 diag(w1), A2 = V2 diag(w2), residuals ``y`` (in the order the
        block was cut in)."""
        return WeightedBlock(self, self.V1 * w1, self.V2 * w2, np.asarray(y, dtype=float)[self.pattern.order])


class WeightedBlock:
    """A `RowBlock` with one solve's A1 rows (n_rows, r1), A2 (m, r2) and residuals (in the pattern's order)."""

    def __init__(self, block: RowBlock, A1: np.ndarray, A2: np.ndarray, y: np.ndarray):
        self.block, self.A1, self.A2, self.y = block, A1, A2, y

    def transpose_products(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Jᵀ e over the block: ((m, r1) partial Σ_{i ∈ O_j} e_ij A1[i], (n_rows, r2) rows Σ_{j ∈ O_i} e_ij A2[j]),
        e in the pattern's order. O(L_b (r1 + r2))."""
        b = self.block
        return b.pattern.matrix(e).T @ self.A1, b.transposed.matrix(e[b.transposed.order]).T @ self.A2

    def rhs(self) -> tuple[np.ndarray, np.ndarray]:
        """Jᵀ y over the block."""
        return self.transpose_products(self.y)

    def normal_products(self, Omega: np.ndarray, Upsilon_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Jᵀ J θ over the block, from Ω (m, r1) and the block's rows of Υ (n_rows, r2): one gather of the
        block's entries, then `transpose_products`. O(L_b (r1 + r2))."""
        p = self.block.pattern
        e = sampled_products(np.hstack([self.A1, Upsilon_rows]), np.hstack([Omega, self.A2]), p.rows, p.cols)
        return self.transpose_products(e)


def cut_by_rows(rows, cols, n: int, blocks: int) -> list[tuple[int, int, np.ndarray]]:
    """``blocks`` runs of consecutive rows with about equal numbers of observations: (first, n_rows, the
    positions (indices into rows/cols) of the run's observations). O(L log L) unless sorted by row."""
    rows = np.asarray(rows)
    order = np.argsort(rows, kind="stable") if np.any(rows[1:] < rows[:-1]) else np.arange(rows.size)
    counts = np.bincount(rows, minlength=n)
    bounds = np.searchsorted(np.cumsum(counts), np.linspace(0, rows.size, blocks + 1)[1:-1], side="left")
    edges = np.unique(np.r_[0, bounds + 1, n].clip(0, n))
    starts = np.r_[0, np.cumsum(counts)]
    return [(int(lo), int(hi - lo), order[starts[lo]:starts[hi]]) for lo, hi in zip(edges[:-1], edges[1:])]


def _row_block(first: int, n_rows: int, m: int, positions, V2: np.ndarray) -> RowBlock:
    """A `RowBlock` built where it is held (its `Pattern` orders sorted on its worker)."""
    rows, cols, V1_rows = positions
    return RowBlock(first, n_rows, m, rows, cols, V1_rows, V2)


class SplitKroneckerSum(ObservedKroneckerSum):
    """`ObservedKroneckerSum` whose weight-space products run over row blocks on the workers of ``client``
    (a ``distributed.Client``; ``blocks`` of them, default one per worker), each held by one worker for the
    solver's life (module docstring). Always solves in the weight space (the observation space's vectors
    have rating length). ``close()`` releases the blocks."""

    def __init__(self, left: Eigenbasis, right: Eigenbasis, rows, cols, shape, client, blocks: int | None = None):
        for basis, name in ((left, "K1"), (right, "K2")):
            if not basis.orthonormal:
                raise ValueError(f"{name} needs an orthonormal eigenbasis")
        self.shape = (int(shape[0]), int(shape[1]))
        if (left.size, right.size) != self.shape:
            raise ValueError(f"eigenbases of sizes {left.size}, {right.size} do not fit a {shape} matrix")
        self.left, self.right, self.client = left, right, client
        self.space, self._squares = "weights", None
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        workers = sorted(client.scheduler_info()["workers"])
        n, m = self.shape
        self.runs, self.blocks, self.workers = [], [], []
        V2 = client.scatter(right.vectors, broadcast=True, direct=True, hash=False)
        for b, (first, n_rows, index) in enumerate(cut_by_rows(rows, cols, n, blocks or len(workers))):
            worker = workers[b % len(workers)]
            self.runs.append((first, n_rows, index))
            self.workers.append(worker)
            positions = self._to(worker, (rows[index] - first, cols[index], left.vectors[first:first + n_rows]))
            self.blocks.append(client.submit(_row_block, first, n_rows, m, positions, V2, pure=False, workers=[worker]))

    def squares(self) -> tuple[np.ndarray, np.ndarray]:
        if self._squares is None:
            parts = self.client.gather([self.client.submit(RowBlock.squares, b, pure=False, workers=[w])
                                        for b, w in zip(self.blocks, self.workers)], direct=True)
            self._squares = (sum(p[0] for p in parts), self._stacked([p[1] for p in parts], self.right))
        return self._squares

    def _stacked(self, pieces, basis: Eigenbasis) -> np.ndarray:
        """(n, r) from the blocks' (n_rows, r) rows (rows in no block are zero)."""
        out = np.zeros((self.shape[0], basis.vectors.shape[1]))
        for (first, n_rows, _), piece in zip(self.runs, pieces):
            out[first:first + n_rows] = piece
        return out

    def solve(self, y, *, space: str | None = None, **options):
        if space not in (None, "weights"):
            raise ValueError("a split solve runs in the weight space only")
        return super().solve(y, space="weights", **options)

    def weight_products(self, y, tau: float, A1, A2, scale: float):
        """`ObservedKroneckerSum.weight_products` over the workers' blocks: per solve each block is weighted on
        its worker (its residuals sent once); per product Ω is broadcast, each block gets its rows of Υ and
        returns an (m, r1) partial sum and its (n_rows, r2) rows."""
        client = self.client
        n, m = self.shape
        r1, r2 = A1.shape[1], A2.shape[1]
        split = m * r1
        w1 = np.sqrt(scale * self.excess(self.left))
        w2 = np.sqrt(scale * self.excess(self.right))
        y = np.asarray(y, dtype=float)
        weighted = [client.submit(RowBlock.weighted, b, w1, w2, self._to(w, y[index]), pure=False, workers=[w])
                    for b, w, (_, _, index) in zip(self.blocks, self.workers, self.runs)]

        def combined(parts) -> np.ndarray:
            """τ Jᵀ(·) from the blocks' (partial Ω part, Υ rows), flattened as θ."""
            Omega = sum(p[0] for p in parts)
            return tau * np.concatenate([Omega.ravel(), self._stacked([p[1] for p in parts], self.right).ravel()])

        rhs = combined(client.gather([client.submit(WeightedBlock.rhs, b, pure=False, workers=[w])
                                      for b, w in zip(weighted, self.workers)], direct=True))

        def apply(theta):
            Omega, Upsilon = theta[:split].reshape(m, r1), theta[split:].reshape(n, r2)
            shared = client.scatter(Omega, broadcast=True, direct=True, hash=False)
            futures = [client.submit(WeightedBlock.normal_products, b, shared,
                                     self._to(w, Upsilon[first:first + n_rows]), pure=False, workers=[w])
                       for b, w, (first, n_rows, _) in zip(weighted, self.workers, self.runs)]
            return theta + combined(client.gather(futures, direct=True))

        return rhs, apply, lambda: client.cancel(weighted)

    def _to(self, worker, piece: np.ndarray):
        """``piece`` sent straight to ``worker`` (a future there), not through the scheduler in a task's arguments."""
        return self.client.scatter(piece, workers=[worker], direct=True, hash=False)

    def close(self) -> None:
        self.client.cancel(self.blocks)
