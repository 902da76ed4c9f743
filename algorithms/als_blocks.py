"""Ridge solves of every row of a sparse matrix at once, and the half steps of
`recommenders.als_biased_mf` over row blocks, held where they are solved.

`row_grams` (Σ_{j∈O_i} v_j v_jᵀ for every row by one sparse product) and `ridge_rows` (every row's ridge
solution in one batched solve) are the building blocks of the ratings family's alternating solvers
(biased-mf, pmf), re-exported by `malt.algorithms.recommenders`.

ALS's user step is one independent ridge solve per user (`recommenders.ridge_rows`); its item step the
same per item. Each side's ratings are cut into contiguous blocks of rows (users) or of columns
(items); a block holds its ratings in CSR form (int32 columns, float32 ratings where they are exact)
and answers one half step from the other side's factors and biases:
the targets r − μ − b_other and its rows' ridge solutions. The block never leaves its owner:

* `LocalBlocks` — the blocks in this process (what `als_biased_mf` uses without a client);
* `DaskBlocks` — each block scattered once to one worker of a Dask ``distributed.Client`` (the
  blocks dealt round-robin over the workers) and each half step a ``client.submit`` per block with
  the other side's (m, 1 + rank) design broadcast once; only the block's (rows, 1 + rank) solution
  comes back. Dask's own futures, no protocol of ours; scattered unhashed, so two fits of the same
  ratings on one cluster never share (and, when one ends, cancel) each other's blocks.

A row's solution depends on its own ratings and the broadcast design only, so both give the same
numbers as the whole-matrix solve (bit for bit: the same products and batched solves row by row).
Memory per block: its ratings in CSR form (8 bytes per rating, 12 where a rating is no exact float32, plus
one offset per row) and (ROW_CHUNK, (1 + rank)²) Gram matrices while it solves. The row side shares the
training matrix's arrays (a sorted COO); the column side is scipy's counting-sort transpose of it, the one
copy of the ratings a fit makes; the squared error is summed over the row side's blocks.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from malt.numerics.linalg import ENTRY_CHUNK, dot_at  # noqa: F401 (re-exported for the ratings family)


def row_grams(csr: sp.csr_matrix, V: np.ndarray, weights=None, outer: np.ndarray | None = None) -> np.ndarray:
    """G_i = Σ_{j : csr_ij ≠ 0} w_ij v_j v_jᵀ for every row i, shape (n, k, k). O(L k²/2) time.

    Only the upper triangle's k(k+1)/2 entries are summed (`outer_products`) and mirrored: the same
    numbers as the full square, bit for bit (v_a v_b and v_b v_a are one float product), at half the
    table and half the sparse product.

    When V has at most TABLE_ROWS rows: one sparse × dense product with the (m, k(k+1)/2) table of its
    rows' outer products (``outer``, `outer_products`, passed in when one table serves several calls).
    Otherwise that table would outgrow the fit (500,000 items at k = 21: 0.9 GB), and rows are taken in
    runs of about GRAM_ENTRIES ratings, the run's v_j v_jᵀ (one per rating) summed per row by one
    ``np.add.reduceat``; a row with more ratings than that is one product V_iᵀ diag(w_i) V_i. Memory
    O(TABLE_ROWS k²) or O(GRAM_ENTRIES k²) beside the output. ``weights``: values of ``csr`` (default all
    ones on its pattern).
    """
    csr = sp.csr_matrix(csr)
    n, k = csr.shape[0], V.shape[1]
    w = np.ones(csr.nnz) if weights is None else np.asarray(weights, float)
    if outer is not None or V.shape[0] <= TABLE_ROWS:
        pattern = sp.csr_matrix((w, csr.indices, csr.indptr), shape=csr.shape)
        return _mirrored(np.asarray(pattern @ (outer_products(V) if outer is None else outer)), k)
    counts = np.diff(csr.indptr)
    out = np.zeros((n, k, k))
    for i in np.flatnonzero(counts > GRAM_ENTRIES):
        lo, hi = csr.indptr[i], csr.indptr[i + 1]
        Vi = V[csr.indices[lo:hi]]
        out[i] = Vi.T @ (w[lo:hi, None] * Vi)
    light = np.flatnonzero((counts > 0) & (counts <= GRAM_ENTRIES))
    if light.size:
        ends = np.cumsum(counts[light])
        cuts = np.searchsorted(ends, np.arange(GRAM_ENTRIES, ends[-1], GRAM_ENTRIES), side="right")
        tri_row, tri_col = np.triu_indices(k)
        for run in np.split(light, np.unique(cuts)):
            if run.size == 0:
                continue
            pos = _positions(csr.indptr, run, counts)
            X = V[csr.indices[pos]]
            products = (w[pos, None] * X)[:, tri_row] * X[:, tri_col]
            starts = np.r_[0, np.cumsum(counts[run])[:-1]]
            out[run] = _mirrored(np.add.reduceat(products, starts, axis=0), k)
    return out


def outer_products(V: np.ndarray) -> np.ndarray:
    """(m, k(k+1)/2) table of the upper triangles of v_j v_jᵀ (``np.triu_indices`` order), row by row."""
    tri_row, tri_col = np.triu_indices(V.shape[1])
    return np.take(V, tri_row, axis=1) * np.take(V, tri_col, axis=1)  # np.take: faster than V[:, index]


def _mirrored(half: np.ndarray, k: int) -> np.ndarray:
    """(n, k, k) symmetric matrices from their (n, k(k+1)/2) upper triangles in ``np.triu_indices`` order."""
    tri_row, tri_col = np.triu_indices(k)
    position = np.empty((k, k), dtype=np.intp)  # (a, b) -> the upper-triangle entry holding it
    position[tri_row, tri_col] = position[tri_col, tri_row] = np.arange(tri_row.size)
    return half[:, position.ravel()].reshape(half.shape[0], k, k)


def _positions(indptr: np.ndarray, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The CSR positions of ``rows``' entries, row after row (vectorised ranges)."""
    lengths = counts[rows]
    offsets = np.repeat(indptr[rows] - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
    return offsets + np.arange(lengths.sum())


GRAM_ENTRIES = 1 << 12
"""Ratings whose outer products `row_grams` forms at once (GRAM_ENTRIES · k(k+1)/2 · 8 bytes: 7.6 MiB at k = 21)."""
TABLE_ROWS = 1 << 15
"""The most rows of V whose whole outer-product table `row_grams` forms (≤ 61 MiB at k = 21: a small side,
such as Netflix's 17,770 items; the sparse product with it is the faster path)."""


ROW_CHUNK = 4096
"""Rows solved at once: bounds the (rows, k, k) Gram matrices to ROW_CHUNK · k² · 8 bytes (14 MiB at k = 21)."""


def ridge_rows(csr: sp.csr_matrix, V: np.ndarray, reg, col_offset: np.ndarray | None = None) -> np.ndarray:
    """For every row i: argmin_u Σ_{j∈O_i} (csr_ij − o_j − uᵀ v_j)² + uᵀ diag(reg) u, in batches.

    ``csr`` holds the targets at the observed pattern (explicit zeros count as observations, so pass
    a matrix whose pattern is the observed set). reg : scalar or (k,) diagonal penalty D. col_offset :
    (m,) o subtracted from every target of column j (default 0) — ALS's r − μ − b_other without a
    rating-length array of targets (each chunk of rows forms its own targets).

    * A row without observations has the exact solution 0 and is not solved (sparse matrices have many:
      CiaoDVD's inner folds leave a fifth of the items unrated).
    * A row with c < k observations (V_i its c rows of V, r_i its targets), for D > 0, is solved in the
      push-through form (V_iᵀV_i + D)⁻¹V_iᵀr_i = D⁻¹V_iᵀ(V_i D⁻¹V_iᵀ + I_c)⁻¹r_i: a c × c system, all rows of
      one count in one batch (most of CiaoDVD's users and items rated fewer than k = 11 times).
    * The other rows: their Gram matrices (`row_grams`) plus D, ROW_CHUNK rows at a time.

    Cost O(L k² + Σ_i min(c_i, k)³); memory O(ROW_CHUNK k²) beside the output.
    """
    n, k = csr.shape[0], V.shape[1]
    csr = sp.csr_matrix(csr)
    d = np.broadcast_to(np.asarray(reg, float), (k,))
    counts = np.diff(csr.indptr)
    out = np.zeros((n, k))
    short = 1 if not np.all(d > 0) else k
    for c in range(1, short):
        for chunk in _chunks(np.flatnonzero(counts == c)):
            pos = csr.indptr[chunk][:, None] + np.arange(c)
            cols = csr.indices[pos]
            Vi = np.take(V, cols, axis=0)                  # (g, c, k); np.take: the same rows as V[cols], faster
            VD = Vi / d
            M = VD @ Vi.transpose(0, 2, 1)
            M += np.eye(c)
            r = csr.data[pos] if col_offset is None else csr.data[pos] - np.take(col_offset, cols)
            r = r[..., None]
            z = r / M if c == 1 else np.linalg.solve(M, r)  # (g, c, 1); a 1 × 1 LU solve is this division
            out[chunk] = (VD.transpose(0, 2, 1) @ z)[..., 0]
    long_rows = np.flatnonzero(counts >= short)
    if long_rows.size == 0:
        return out
    table = _table_of_rated(csr, V, counts >= short) if V.shape[0] <= TABLE_ROWS else None  # one for every chunk
    for chunk in _chunks(long_rows):
        sub = csr[chunk]
        if table is None:
            A = row_grams(sub, V)
        else:
            slot, V_rated, outer = table
            A = row_grams(sp.csr_matrix((sub.data, slot[sub.indices], sub.indptr), shape=(chunk.size, V_rated.shape[0])),
                          V_rated, outer=outer)
        A += np.diag(d)
        if col_offset is not None:  # the chunk's targets only, never the whole side's
            sub = sp.csr_matrix((sub.data - col_offset[sub.indices], sub.indices, sub.indptr), shape=sub.shape)
        b = np.asarray(sub @ V, dtype=float)
        out[chunk] = np.linalg.solve(A, b[..., None])[..., 0]
    return out


def _table_of_rated(csr: sp.csr_matrix, V: np.ndarray, rows: np.ndarray):
    """(slot, V_rated, its `outer_products`): the outer-product table of only the rows of V that the rows
    ``rows`` (a mask) of ``csr`` rate — on CiaoDVD the long rows rate 60 % of the items — and ``slot``, each
    column's row in it (monotone, so every Gram sums the same products in the same order: the same numbers
    bit for bit). O(L + rated k²)."""
    rated = np.zeros(V.shape[0], dtype=bool)
    rated[csr.indices[np.repeat(rows, np.diff(csr.indptr))]] = True
    if rated.all():
        return np.arange(V.shape[0]), V, outer_products(V)
    V_rated = V[rated]
    return np.cumsum(rated) - 1, V_rated, outer_products(V_rated)


def _chunks(rows: np.ndarray):
    for start in range(0, rows.size, ROW_CHUNK):
        yield rows[start:start + ROW_CHUNK]


def _compact_ratings(y: np.ndarray) -> np.ndarray:
    """float32 when that holds every rating exactly (star ratings, halves), else float64 (``y`` itself when
    it is float64 already). Checked ENTRY_CHUNK ratings at a time, so the check itself holds no rating-length
    copy."""
    if y.dtype == np.float32:
        return y
    for start in range(0, y.size, ENTRY_CHUNK):
        part = y[start:start + ENTRY_CHUNK]
        if not np.array_equal(part.astype(np.float32).astype(np.float64), part):
            return y.astype(np.float64, copy=False)
    return y.astype(np.float32)


def by_rows(rows: np.ndarray, cols: np.ndarray, y: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """The ratings as CSR. Without a copy of ``cols`` or ``y`` when the triplets are sorted by row with int32
    positions (a canonical COO: the ratings task's training matrices); else scipy's sort (one copy)."""
    n, m = shape
    if rows.dtype == cols.dtype == np.int32 and np.all(rows[1:] >= rows[:-1]):
        indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=n))]
        return sp.csr_matrix((y, cols, indptr), shape=shape)
    return sp.csr_matrix((y, (rows, cols)), shape=shape)


class Block:
    """The ratings of ``n_rows`` consecutive rows starting at ``first`` (of a side of a rating matrix with
    ``n_cols`` columns on the other side) in CSR form: ``indptr`` (n_rows + 1,), ``cols`` (int32) and ``y``
    (float32 where exact) — 8 to 12 bytes per rating; each rating's row is implied by ``indptr``."""

    def __init__(self, first: int, n_rows: int, n_cols: int, indptr: np.ndarray, cols: np.ndarray, y: np.ndarray):
        self.first, self.n_rows, self.n_cols = first, n_rows, n_cols
        self.indptr, self.cols, self.y = indptr, cols, y

    @property
    def rows(self) -> np.ndarray:
        """(ratings,) int32: each rating's row within the block (built on demand, not held)."""
        return np.repeat(np.arange(self.n_rows, dtype=np.int32), np.diff(self.indptr))

    def half_step(self, design: np.ndarray, other_bias: np.ndarray, mu: float, pen: np.ndarray) -> np.ndarray:
        """(n_rows, 1 + rank): each row's ridge solution on ``design`` (n_cols, 1 + rank) = [1, V] for the
        targets r − μ − other_bias[col]."""
        csr = sp.csr_matrix((self.y, self.cols, self.indptr), shape=(self.n_rows, self.n_cols))
        return ridge_rows(csr, design, pen, col_offset=mu + other_bias)  # no rating-length target array

    def squared_error(self, mu: float, row_bias: np.ndarray, col_bias: np.ndarray, row_factors: np.ndarray,
                      col_factors: np.ndarray) -> float:
        """Σ (r − μ − b_row − b_col − p_rowᵀ q_col)² over the block's ratings (whole-side biases and factors),
        in runs of whole rows of about ENTRY_CHUNK ratings."""
        total = 0.0
        P = row_factors[self.first:self.first + self.n_rows]
        b = row_bias[self.first:self.first + self.n_rows]
        edges = np.unique(np.r_[0, np.searchsorted(self.indptr, np.arange(ENTRY_CHUNK, self.y.size, ENTRY_CHUNK)),
                                self.n_rows])
        for lo, hi in zip(edges[:-1], edges[1:]):
            a, z = self.indptr[lo], self.indptr[hi]
            r = np.repeat(np.arange(lo, hi), np.diff(self.indptr[lo:hi + 1]))
            c = self.cols[a:z]
            e = (self.y[a:z].astype(np.float64) - mu - np.take(b, r) - np.take(col_bias, c)  # np.take: b[r], faster
                 - dot_at(P, col_factors, r, c))
            total += float(e @ e)
        return total


def cut_rows(S: sp.csr_matrix, blocks: int) -> list[Block]:
    """``blocks`` Blocks of about equal numbers of ratings over consecutive rows of ``S``; views of its arrays."""
    n_rows, n_cols = S.shape
    counts = np.diff(S.indptr)
    bounds = np.searchsorted(np.cumsum(counts), np.linspace(0, counts.sum(), blocks + 1)[1:-1], side="left")
    edges = np.unique(np.r_[0, bounds + 1, n_rows].clip(0, n_rows))
    cols = S.indices.astype(np.int32, copy=False)
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        a, z = S.indptr[lo], S.indptr[hi]
        out.append(Block(int(lo), int(hi - lo), n_cols, S.indptr[lo:hi + 1] - a, cols[a:z], S.data[a:z]))
    return out


def both_sides(rows, cols, y, shape) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """The ratings by rows (n × m CSR) and by columns (m × n CSR, scipy's counting-sort transpose: no
    permutation array), ratings in float32 where exact. The row side shares the training matrix's arrays
    when it is a sorted COO; the column side is the one copy (8–12 bytes per rating)."""
    n, m = shape
    R = by_rows(rows, cols, _compact_ratings(y), (n, m))
    C = R.tocsc()
    return R, sp.csr_matrix((C.data, C.indices, C.indptr), shape=(m, n))


def cut(rows: np.ndarray, cols: np.ndarray, y: np.ndarray, n_rows: int, n_cols: int, blocks: int) -> list[Block]:
    """``blocks`` Blocks of about equal numbers of ratings over consecutive rows."""
    return cut_rows(by_rows(rows, cols, _compact_ratings(y), (n_rows, n_cols)), blocks)


class LocalBlocks:
    """Both sides' blocks in this process."""

    def __init__(self, rows, cols, y, shape, blocks: int = 1):
        self.sides = tuple(cut_rows(S, blocks) for S in both_sides(rows, cols, y, shape))

    def half_step(self, side: int, design, other_bias, mu, pen) -> np.ndarray:
        parts = [b.half_step(design, other_bias, mu, pen) for b in self.sides[side]]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)  # one block: no copy of the side's solution

    def squared_error(self, mu, bu, bi, P, Q) -> float:
        """The fit's squared error from the row side's blocks (no other copy of the ratings is kept)."""
        return sum(b.squared_error(mu, bu, bi, P, Q) for b in self.sides[0])


class DaskBlocks:
    """Both sides' blocks on the workers of ``client`` (a ``distributed.Client``), ``blocks`` per side
    (default: one per worker), each held by one worker for the whole fit."""

    def __init__(self, rows, cols, y, shape, client, blocks: int | None = None):
        workers = sorted(client.scheduler_info()["workers"])
        blocks = blocks or len(workers)
        self.client = client
        by_row, by_col = both_sides(rows, cols, y, shape)
        self.ratings = cut_rows(by_row, 1)[0]  # the squared error is summed here (views), not shipped back
        self.sides = [[client.scatter(b, workers=[workers[i % len(workers)]], direct=True, hash=False)
                       for i, b in enumerate(cut_rows(S, blocks))] for S in (by_row, by_col)]

    def half_step(self, side: int, design, other_bias, mu, pen) -> np.ndarray:
        shared = self.client.scatter((design, other_bias), broadcast=True, direct=True, hash=False)
        futures = [self.client.submit(_half_step, block, shared, mu, pen, pure=False) for block in self.sides[side]]
        return np.concatenate(self.client.gather(futures, direct=True))

    def squared_error(self, mu, bu, bi, P, Q) -> float:
        return self.ratings.squared_error(mu, bu, bi, P, Q)

    def close(self) -> None:
        self.client.cancel([f for side in self.sides for f in side])


def _half_step(block: Block, shared, mu: float, pen: np.ndarray) -> np.ndarray:
    design, other_bias = shared
    return block.half_step(design, other_bias, mu, pen)


def cluster_client():
    """A context manager yielding the Dask client a fit should split itself over: inside a unit running on a
    worker (``malt cv --scheduler``), a ``worker_client`` (the task secedes from the worker's thread pool
    while its blocks run, so the blocks can use that worker too); elsewhere the process's current
    ``distributed.Client``. A clear error when there is neither."""
    import contextlib

    from malt.errors import InvalidParameterError

    try:
        import distributed
    except ImportError:
        raise InvalidParameterError("split_fit=true needs Dask: pip install 'malt[distributed]'.") from None
    try:
        distributed.get_worker()
    except ValueError:
        try:
            return contextlib.nullcontext(distributed.get_client())
        except ValueError:
            raise InvalidParameterError("split_fit=true needs a Dask cluster: run malt cv with --scheduler ADDRESS, or create a "
                             "distributed.Client before fitting.") from None
    return distributed.worker_client()
