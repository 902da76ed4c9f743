"""Topic-model speed (dissertation ch. 6): what GPTM's F-step (the Sylvester equation 6.14,
Σ F + F 𝒦 = L 𝒦, once per EM iteration) costs over a whole fit, every cost included, against the best
fair references measured in the same run, and what GPTM costs per iteration beside CTM (same E-step).

F-step over a fit of ``--em`` iterations, D documents, K topics (𝒦 fixed, Σ changes every iteration):
* malt: eigendecomposition of 𝒦 once (D³) + per iteration eigh(Σ) and rotations (O(K D²));
* reference A: scipy.linalg.solve_sylvester every iteration (Bartels–Stewart, Schur of 𝒦 each call);
* reference B: Σ = V Λ Vᵀ (K × K) and K shifted systems (λ_i I + 𝒦) x = b by Cholesky every iteration
  (K D³/3 per iteration, no decomposition kept) — the best direct method that does not keep 𝒦's eigenbasis.
The floor is malt's own unavoidable part: one eigendecomposition of 𝒦 (the rotations are O(K D²)).
Kernel construction (cosine distances, kNN graph, the eigenvalue shift that makes 𝒦 positive
definite) is printed too: a user pays it once per dataset (cached across folds by `malt cv`).

Run: python tests/benchmarks/bench_topics.py [--sizes 300,1000,2000] [--em 50] [--scipy-max 2000]
Prints seconds and ratios from the same run, and peak RSS. Never asserts timings.
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import scipy.linalg

from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis
from malt.algorithms.topics import ctm, gptm, kernels
from malt.datasets.synthetic_topics import synthetic_ctm


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn, reps: int = 1):
    """Best of ``reps`` wall-clock runs (the machine is shared) and the last result."""
    best, out = np.inf, None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def shifted_cholesky_solve(Sigma, Kmat, L):
    """Reference B: Σ F + F 𝒦 = L 𝒦 via Σ's eigenbasis; row i of Vᵀ F solves (λ_i I + 𝒦) f = (Vᵀ L 𝒦)_i."""
    lam, V = np.linalg.eigh(Sigma)
    rhs = V.T @ (L @ Kmat)
    out = np.empty_like(rhs)
    for i, shift in enumerate(lam):  # one D × D factorisation per topic
        c = scipy.linalg.cho_factor(Kmat + shift * np.eye(Kmat.shape[0]))
        out[i] = scipy.linalg.cho_solve(c, rhs[i])
    return V @ out


def per_iteration(fit):
    """Seconds per EM iteration from the iteration-end callbacks (the first iteration is warm-up)."""
    stamps = []
    fit(lambda i, b: stamps.append(time.perf_counter()))
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="300,1000,2000")
    ap.add_argument("--em", type=int, default=50, help="EM iterations a fit runs (the thesis's maximum)")
    ap.add_argument("--iterations", type=int, default=3, help="EM iterations timed for the per-iteration costs")
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--scipy-max", type=int, default=2000, help="largest D for reference A")
    a = ap.parse_args()
    K, E = a.topics, a.em
    print(f"K={K} topics, V=500 words, 80 words/doc. F-step cost of a {E}-iteration fit, seconds "
          f"(best of 3 per solve, × {E}):")
    print(f"{'D':>6} {'kernel':>7} {'floor eig𝒦':>10} {'malt F':>8} {'ref A scipy':>11} {'ref B chol':>10} "
          f"{'best ref/malt':>13} {'malt/floor':>10} {'ctm s/it':>9} {'gptm s/it':>10} {'gptm/ctm':>8} {'MB':>6}")
    for D in map(int, a.sizes.split(",")):
        ds = synthetic_ctm(n_docs=D, vocab_size=500, n_topics=K, n_classes=5, doc_length=80, seed=0)
        C = ds["docs"]
        t_kernel, Kmat = timed(lambda: kernels.knn_kernel(C, 10))
        t_eig, K_eig = timed(lambda: Eigenbasis.symmetric(Kmat), reps=2)
        stamps = []
        fit = gptm.fit_gptm(C, Kmat, K, np.random.default_rng(0), iters=a.iterations + 1, tol=0,
                            trace=lambda i, b: stamps.append(time.perf_counter()))
        t_gp = (stamps[-1] - stamps[0]) / (len(stamps) - 1)
        t_ctm = per_iteration(lambda tr: ctm.fit_ctm(C, K, np.random.default_rng(0), iters=a.iterations + 1,
                                                     tol=0, trace=tr))
        L, Sigma = fit["lam"].T, fit["Sigma"]
        t_f, F1 = timed(lambda: gptm.solve_F(KroneckerEigenbasis(Sigma, K_eig), L), reps=3)
        ours = t_eig + E * t_f
        t_b, F3 = timed(lambda: shifted_cholesky_solve(Sigma, Kmat, L), reps=3)
        scale = max(1.0, np.abs(F1).max())
        assert np.allclose(F1, F3, atol=1e-6 * scale)
        refs = {"B": E * t_b}
        if D <= a.scipy_max:
            t_s, F2 = timed(lambda: scipy.linalg.solve_sylvester(Sigma, Kmat, L @ Kmat), reps=3)
            assert np.allclose(F1, F2, atol=1e-6 * scale)
            refs["A"] = E * t_s
        ref_a = f"{refs['A']:11.2f}" if "A" in refs else f"{'-':>11}"
        print(f"{D:>6} {t_kernel:7.2f} {t_eig:10.2f} {ours:8.2f} {ref_a} {refs['B']:10.2f} "
              f"{min(refs.values()) / ours:13.1f} {ours / t_eig:10.2f} {t_ctm:9.3f} {t_gp:10.3f} "
              f"{t_gp / t_ctm:8.2f} {peak_mb():6.0f}", flush=True)
    print("best ref/malt > 1: malt's F-step is that many times faster over a whole fit, eigendecomposition "
          "included; malt/floor: how far malt's F-step is above one eigendecomposition of 𝒦.")


if __name__ == "__main__":
    main()
