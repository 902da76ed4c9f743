"""Benchmark: inner cross-validation of LTSALP and LNP, one factorisation per candidate against one
per inner split (the code before), on a real text set (default Classic3, 3891 documents, cosine
kNN graph with cosine-similarity weights, as the Figure 3.4-3.6 text targets).

For each candidate (k, and LTSA's tangent dimension d; LNP at α = 0.9) and the five stratified
inner splits of the l labelled points of one outer fold:
  * reference: what inner CV did before, one `methods.embedding_lp` (a sparse LU of the split's
    M_{u∪V, u∪V}) / one `solvers.DirectSolver(I − αU)` per split;
  * ours: `methods.HeldOutEmbeddingLP` (one dense Cholesky of M_uu, the Schur complement on the
    labelled rows; splits it declines still run `embedding_lp`) / one LU of I − αU shared by the
    splits (what `LNP.held_out_scores` does).
Printed per candidate: seconds (reference, ours, ratio), whether the reduction was taken, the
largest difference of the held-out scores relative to their largest magnitude, and the number of
held-out argmaxes that differ. The LTSA/LNP matrices themselves (cached per dataset in a run) are
built outside the timings. Timings are printed, never asserted; both sides run in the same process
at the same number of BLAS threads (--threads, default 1: OpenBLAS spins its threads, and on a busy
machine two threads made a 270-row Cholesky 100× slower, see malt/numerics/threads.py), after a warm-up.

    python tests/benchmarks/bench_glp_inner_cv.py [--dataset classic3] [--labeled 30] [--fold 0] [--threads 1]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from malt.numerics import graphs
from malt.algorithms.label_propagation import methods as m
from malt.algorithms.label_propagation import solvers
from malt.datasets.open import open_dataset
from malt.numerics.selection import inner_fold_ids
from malt.tasks import get_task


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def compare(name, reference, ours, labels):
    """reference/ours: lists of held-out score blocks, one per split."""
    worst = max(np.abs(r - o).max() / max(np.abs(r).max(), 1e-300) for r, o in zip(reference, ours))
    flips = sum(int((r.argmax(1) != o.argmax(1)).sum()) for r, o in zip(reference, ours))
    return f"{worst:9.1e} {flips:3d}/{labels}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="classic3")
    ap.add_argument("--labeled", type=int, default=30)
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    with threadpool_limits(a.threads):
        run(a)


def run(a):
    data = open_dataset(a.dataset)
    task = get_task("semisupervised")
    split = task.split(data, task.Params(labeled=a.labeled), a.fold)
    y = np.asarray(split.y)
    lab = np.flatnonzero(y >= 0)
    C = int(split.n_classes)
    Yl = m.one_hot(y[lab], C)
    ids = inner_fold_ids(len(lab), 5, np.random.default_rng(0), strata=y[lab])
    splits = [(np.flatnonzero(ids != f), np.flatnonzero(ids == f)) for f in range(5)]
    idx, dist = graphs.neighbours(split.X, 20, "cosine")
    Xs = graphs.prepared(split.X, "cosine", "none")
    n = len(y)
    m.HeldOutEmbeddingLP(m.ltsa_matrix(Xs, idx[:, :3], 1), lab)  # warm-up: first use imports scipy.linalg
    print(f"{a.dataset}: n = {n}, l = {len(lab)}, outer fold {a.fold}, five inner splits")
    print(f"{'method':8s} {'k':>3s} {'d':>2s} {'reference s':>11s} {'ours s':>7s} {'ratio':>6s} {'reduced':>7s} "
          f"{'rel diff':>9s} {'flips':>7s}")
    total_ref = total_ours = 0.0
    for k in (10, 5, 20, 3):
        for dim in (1, 2, 4):
            M = m.ltsa_matrix(Xs, idx[:, :k], dim)
            ref, t_ref = timed(lambda: [m.embedding_lp(M, lab[tr], Yl[tr])[lab[va]] for tr, va in splits])

            def reduced():
                h = m.HeldOutEmbeddingLP(M, lab)
                out = []
                for tr, va in splits:
                    F = h.held_out(tr, va, Yl[tr]) if h.available else None
                    out.append(m.embedding_lp(M, lab[tr], Yl[tr])[lab[va]] if F is None else F)
                return out, h.available

            (ours, taken), t_ours = timed(reduced)
            total_ref, total_ours = total_ref + t_ref, total_ours + t_ours
            print(f"{'ltsalp':8s} {k:3d} {dim:2d} {t_ref:11.2f} {t_ours:7.2f} {t_ref / t_ours:6.1f} {str(taken):>7s} "
                  f"{compare('ltsalp', ref, ours, len(lab))}", flush=True)
    print(f"ltsalp, all 12 candidates: reference {total_ref:.1f} s, ours {total_ours:.1f} s, "
          f"ratio {total_ref / total_ours:.1f}")
    total_ref = total_ours = 0.0
    for k in (10, 5, 20, 3):
        U = m.lnp_weights(Xs, idx[:, :k])
        A = sp.identity(n) - 0.9 * U

        def rhs(tr):
            Y = np.zeros((n, C))
            Y[lab[tr]] = Yl[tr]
            return Y

        ref, t_ref = timed(lambda: [0.1 * solvers.DirectSolver(A).solve(rhs(tr))[lab[va]] for tr, va in splits])

        def shared():
            lu = solvers.DirectSolver(A)
            return [0.1 * lu.solve(rhs(tr))[lab[va]] for tr, va in splits]

        ours, t_ours = timed(shared)
        total_ref, total_ours = total_ref + t_ref, total_ours + t_ours
        print(f"{'lnp':8s} {k:3d} {'-':>2s} {t_ref:11.2f} {t_ours:7.2f} {t_ref / t_ours:6.1f} {'-':>7s} "
              f"{compare('lnp', ref, ours, len(lab))}", flush=True)
    print(f"lnp (α = 0.9), 4 candidates: reference {total_ref:.1f} s, ours {total_ours:.1f} s, "
          f"ratio {total_ref / total_ours:.1f}")


if __name__ == "__main__":
    main()
