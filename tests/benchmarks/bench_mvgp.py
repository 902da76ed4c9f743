"""Benchmark: con-mvgp (factored eq. 11, the models' sparse Chebyshev diffusion roots, block rank
growth) seconds and peak memory on a 5,000 × 5,000 matrix with 200,000 observed entries and a 200,000-edge row graph,
and a ratio against the previous solver (dense eigh square roots of the diffusion kernel, one factor
per growth step) measured in the same run at a size both can run (1,000 × 1,000, 40,000 entries).

Last: the zero-filled ranking fit (every unobserved entry a 0 of weight 1, as the ratings task's
scores use) beside the same fit on the observed entries only, at 5,000 × 5,000: its extra cost is
O((M + N) r²) per evaluation and its memory stays far below the filled matrix.

Run: ``python tests/benchmarks/bench_mvgp.py [--max-rank R]``. Prints, never asserts timings.
"""
from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import scipy.sparse as sp

from malt.algorithms.mvgp import DiffusionRoot, HeatRoot, diffusion_sqrt, fit_mvgp


def planted(M, N, nnz, edges, rank=5, seed=0):
    """Low-rank matrix smooth on a random row graph and column graph; nnz observed entries."""
    rng = np.random.default_rng(seed)
    def graph(n, e):
        a, b = rng.integers(0, n, e), rng.integers(0, n, e)
        G = sp.coo_matrix((np.ones(e), (a, b)), shape=(n, n)).tocsr()
        G = ((G + G.T) > 0).astype(float)
        G.setdiag(0)
        G.eliminate_zeros()
        return G
    GR, GC = graph(M, edges), graph(N, edges // 2)
    Zr, Zc = HeatRoot(GR), HeatRoot(GC)
    A = Zr @ rng.standard_normal((2 * M, rank))
    B = Zc @ rng.standard_normal((2 * N, rank))
    idx = rng.choice(M * N, nnz, replace=False)
    r, c = idx // N, idx % N
    y = np.einsum("ij,ij->i", A[r], B[c]) + 0.3 * rng.standard_normal(nnz)
    return sp.coo_matrix((y, (r, c)), shape=(M, N)), GR, GC, (A, B)


def timed(fn):
    tracemalloc.start()
    t = time.perf_counter()
    out = fn()
    sec = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out, sec, peak


def heldout_rmse(fit, truth, rows, cols):
    return float(np.sqrt(np.mean((np.einsum("ij,ij->i", fit["Z"][rows], fit["W"][cols]) - truth) ** 2)))


def run(M, N, nnz, edges, dense, max_rank, lam=1.0, s2=0.1):
    R, GR, GC, (A, B) = planted(M, N, nnz, edges)
    rng = np.random.default_rng(1)
    tr, tc = rng.integers(0, M, 5000), rng.integers(0, N, 5000)
    truth = np.einsum("ij,ij->i", A[tr], B[tc])
    if dense:
        fn = lambda: fit_mvgp(R, diffusion_sqrt(GR), diffusion_sqrt(GC), sigma2=s2, lam=lam,
                              max_rank=max_rank, grow_iter=200, grow_block=1)
    else:
        fn = lambda: fit_mvgp(R, DiffusionRoot(GR), DiffusionRoot(GC), sigma2=s2, lam=lam, max_rank=max_rank,
                              grow_block=5)
    fit, sec, peak = timed(fn)
    return sec, peak, fit["rank"], fit["objective"][-1], heldout_rmse(fit, truth, tr, tc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-rank", type=int, default=10)
    ap.add_argument("--small", type=int, default=1000, help="side of the size both solvers run")
    a = ap.parse_args()
    print("size, solver, seconds, peak MiB, rank, objective, RMSE vs planted signal (5,000 random entries)")
    n = a.small
    small = (n, n, 40 * n, 40 * n)
    old = run(*small, dense=True, max_rank=a.max_rank)
    new = run(*small, dense=False, max_rank=a.max_rank)
    for name, r in (("dense-root reference", old), ("heat-root con-mvgp", new)):
        print(f"{n}x{n} {40 * n} obs, {name}: {r[0]:.1f}s, {r[1]:.0f} MiB, rank {r[2]}, obj {r[3]:.6g}, "
              f"rmse {r[4]:.4f}", flush=True)
    print(f"speed ratio reference/new at {n}x{n}: {old[0] / new[0]:.2f}x; memory ratio "
          f"{old[1] / new[1]:.2f}x", flush=True)
    big = run(5000, 5000, 200000, 200000, dense=False, max_rank=a.max_rank)
    print(f"5000x5000 200k obs 200k-edge row graph, diffusion-root con-mvgp: {big[0]:.1f}s, {big[1]:.0f} MiB, "
          f"rank {big[2]}, obj {big[3]:.6g}, rmse {big[4]:.4f}")
    print("(dense roots at 5000: two 5000x5000 float64 roots = 381 MiB plus O(n^3) eigh each)")
    R, GR, GC, _ = planted(5000, 5000, 200000, 200000)
    for w in (0.0, 1.0):
        fit, sec, peak = timed(lambda: fit_mvgp(R, DiffusionRoot(GR), DiffusionRoot(GC), sigma2=1.0, lam=20.0,
                                                max_rank=a.max_rank, grow_block=10, unrated=w))
        print(f"5000x5000, unrated weight {w:g} ({'zero-filled ranking fit' if w else 'observed entries only'}): "
              f"{sec:.1f}s, {peak:.0f} MiB (the filled matrix would be 191 MiB), rank {fit['rank']}", flush=True)


if __name__ == "__main__":
    main()
