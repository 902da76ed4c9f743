"""Topic-model speed (dissertation ch. 6): seconds per variational EM iteration of ctm and gptm as
the number of documents grows, and the saving from decomposing the document kernel 𝒦 once
(eigenbasis Sylvester solve, 6.14) versus re-solving Σ F + F 𝒦 = L 𝒦 from scratch with
scipy.linalg.solve_sylvester (Bartels–Stewart, a Schur decomposition of 𝒦 per call) every iteration.

Run: python tests/benchmarks/bench_topics.py [--sizes 300,1000,2000,5000] [--iterations 3] [--scipy-max 2000]
Prints seconds, ratios measured in the same run, and peak RSS. Never asserts timings.
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import scipy.linalg

from malt import linalg
from malt.algorithms.topics import ctm, gptm, kernels
from malt.datasets.synthetic_topics import synthetic_ctm


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def per_iteration(fit):
    """Seconds per EM iteration from the iteration-end callbacks (the first iteration is warm-up)."""
    stamps = []
    fit(lambda i, b: stamps.append(time.perf_counter()))
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="300,1000,2000,5000")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--scipy-max", type=int, default=2000, help="largest D for the scipy re-solve reference")
    a = ap.parse_args()
    K = a.topics
    print(f"K={K} topics, V=500 words, 80 words/doc; seconds per EM iteration (mean of {a.iterations} after the first)")
    print(f"{'D':>6} {'ctm s/it':>9} {'gptm s/it':>10} {'eig 𝒦 once':>11} {'F eig s':>9} {'F scipy s':>10} "
          f"{'scipy/eig':>9} {'peak MB':>8}")
    for D in map(int, a.sizes.split(",")):
        ds = synthetic_ctm(n_docs=D, vocab_size=500, n_topics=K, n_classes=5, doc_length=80, seed=0)
        C = ds["docs"]
        t_ctm = per_iteration(lambda tr: ctm.fit_ctm(C, K, np.random.default_rng(0), iters=a.iterations + 1,
                                                     tol=0, trace=tr))
        Kmat = kernels.knn_kernel(C, 10)
        t_eig, K_eig = timed(lambda: linalg.sym_eigh(Kmat))
        stamps = []
        fit = gptm.fit_gptm(C, Kmat, K, np.random.default_rng(0), iters=a.iterations + 1, tol=0,
                            trace=lambda i, b: stamps.append(time.perf_counter()))
        t_gp = (stamps[-1] - stamps[0]) / (len(stamps) - 1)
        L, Sigma = fit["lam"].T, fit["Sigma"]
        t_f, F1 = timed(lambda: gptm.solve_F(linalg.sym_eigh(Sigma), K_eig, L))
        if D <= a.scipy_max:
            t_s, F2 = timed(lambda: scipy.linalg.solve_sylvester(Sigma, Kmat, L @ Kmat))
            assert np.allclose(F1, F2, atol=1e-6 * max(1.0, np.abs(F2).max()))
            ratio = f"{t_s / t_f:9.1f}"
            ts = f"{t_s:10.3f}"
        else:
            ratio, ts = f"{'-':>9}", f"{'-':>10}"
        print(f"{D:>6} {t_ctm:9.3f} {t_gp:10.3f} {t_eig:11.2f} {t_f:9.4f} "
              f"{ts} {ratio} {peak_mb():8.0f}", flush=True)


if __name__ == "__main__":
    main()
