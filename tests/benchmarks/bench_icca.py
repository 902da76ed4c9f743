"""Sparse infinite CCA: the §5.1 synthetic experiment and sampler speed (Rai & Daumé 2009).

Run as a script: ``python tests/benchmarks/bench_icca.py``. Prints
* §5.1: icca's K (mode after burn-in) and sparsity of W (exact zeros; |w| < 5 % of max) at the MAP-ish
  last sample, against classical CCA's count of significant components (Bartlett's test, 5 %) and the
  sparsity of its directions after the same thresholding, for several generator seeds; with the run
  length the chain chose (sweeps, converged, worst split-R̂). The same comparison as stored experiments
  (the recovery task) is `make icca-synthetic`;
* what a user pays on yeast-sized data (Model-1: 1500 × 117): seconds per Gibbs sweep, split into its
  steps, beside the floor of a sweep (the residual A − Z Wᵀ and the draw of Z: O(NDK), measured in the
  same run), the sweeps a chain runs before it stops, and the per-label SVMs of the predictions;
* a naive reference for one step only: the b_dk likelihood ratios entry by entry (no peer library
  implements this sampler, so there is no same-run peer for the whole fit);
* peak memory (ru_maxrss).
Timings are printed, never asserted.
"""
from __future__ import annotations

import math
import resource
import time

import numpy as np

from malt.algorithms import icca
from malt.algorithms.subspace_svm import bartlett_significant, cca_directions
from malt.datasets.synthetic_cca import synthetic_cca


def section_5_1(seeds=range(5)):
    print("seed  true_sparsity  icca_K  icca_sparsity_exact  icca_sparsity_thresh  cca_bartlett_K  "
          "cca_sparsity_thresh  sweeps  converged  max_rhat")
    for seed in seeds:
        ds = synthetic_cca(seed=seed)
        X, Y, W = ds.components["X"], ds.components["Y"], ds.components["W"]
        A = np.hstack([X, Y])
        A = (A - A.mean(0)) / A.std(0)
        Ks = []
        st, diag = icca.run_icca(A, np.zeros(A.shape, bool), alpha=1.0, rng=np.random.default_rng(seed),
                                 min_sweeps=300, max_sweeps=2000, callback=lambda s, a, t: Ks.append((t, s.B.shape[1])))
        Ks = [k for t, k in Ks if t >= diag["burn_in"]]
        Wh = st.W
        thr = np.abs(Wh) < 0.05 * np.abs(Wh).max()
        Ux, Uy, rho = cca_directions(X, Y, 0.0)
        k_cca = bartlett_significant(rho, X.shape[0], X.shape[1], Y.shape[1])
        U = np.vstack([Ux / np.abs(Ux).max(0), Uy / np.abs(Uy).max(0)])
        print(f"{seed:4d}  {np.mean(W == 0):13.2f}  {np.bincount(Ks).argmax():6d}  {1 - st.B.mean():19.2f}  "
              f"{thr.mean():20.2f}  {k_cca:14d}  {np.mean(np.abs(U) < 0.05):19.2f}  {diag['sweeps']:6d}  "
              f"{diag['converged']!s:9}  {max(diag['rhat'].values()):8.3f}")


def _entrywise_llr(z, Rk, psi, sigma_v2):
    out = np.empty(Rk.shape[1])
    zz = z @ z
    for d in range(Rk.shape[1]):  # reference: one row at a time
        s = 1.0 / (zz / psi[d] + 1.0 / sigma_v2)
        mu = s * (z @ Rk[:, d]) / psi[d]
        out[d] = 0.5 * math.log(s / sigma_v2) + 0.5 * mu * mu / s
    return out


def _best(fn, reps):
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def speed(N=1500, D=117, K=20, L=14, reps=5):
    rng = np.random.default_rng(0)
    B = rng.random((D, K)) < 0.4
    st = icca.ICCAState(B=B, V=np.where(B, rng.standard_normal((D, K)), 0), Z=rng.standard_normal((N, K)),
                        psi=np.ones(D), sigma_v2=1.0, alpha=1.0)
    A = st.Z @ st.W.T + rng.standard_normal((N, D))
    steps = {
        "floor: residual + Z draw": lambda: (A - st.Z @ st.W.T, icca.sample_z(A, st.W, st.psi, rng)),
        "Z draw": lambda: icca.sample_z(A, st.W, st.psi, rng),
        "B, V columns": lambda: icca.sweep_b_v(A, st, rng),
        "births (MH)": lambda: icca.propose_new_dishes(A, st, rng),
        "hyper-parameters": lambda: icca.sample_hypers(A, st, rng),
        "log likelihood (monitor)": lambda: icca.log_likelihood(A, np.ones(A.shape, bool), st),
    }
    times = {name: _best(fn, reps) for name, fn in steps.items()}
    sweep = sum(t for name, t in times.items() if not name.startswith("floor"))
    Zl = icca.latent_mean(A[:, :D - L], st.W[:D - L], st.psi[:D - L])
    Ylab = (rng.random((N, L)) < 0.3).astype(float)
    t_svm = _best(lambda: icca.label_svms(Zl, Ylab, 1.0), 2)
    print(f"one sweep at N={N} D={D} K≈{st.B.shape[1]} (best of {reps}):")
    for name, t in times.items():
        print(f"  {name:26s} {t * 1e3:8.1f} ms")
    print(f"  sweep total                {sweep * 1e3:8.1f} ms = {sweep / times['floor: residual + Z draw']:.1f}x the floor")
    print(f"  per-label SVMs on one sample (every 10th sweep after burn-in): {t_svm * 1e3:.1f} ms")
    for sweeps in (200, 1000):
        total = sweeps * sweep + (sweeps // 2 // 10) * t_svm
        print(f"  a chain that stops at {sweeps:4d} sweeps: {total:6.1f} s "
              f"({sweeps * sweep:.1f} s sampling + {(sweeps // 2 // 10) * t_svm:.1f} s SVMs)")
    R = A - st.Z @ st.W.T
    ref_llr = _best(lambda: [_entrywise_llr(st.Z[:, k], R, st.psi, st.sigma_v2) for k in range(st.B.shape[1])], 2)

    def vectorised():
        for k in range(st.B.shape[1]):
            z = st.Z[:, k]
            s = 1.0 / (z @ z / st.psi + 1.0)
            0.5 * np.log(s) + 0.5 * (s * (z @ R) / st.psi) ** 2 / s

    vec_llr = _best(vectorised, 2)
    print(f"  naive reference for one step: b_dk likelihood ratios vectorised {vec_llr * 1e3:.2f} ms vs entry by "
          f"entry {ref_llr * 1e3:.2f} ms ({ref_llr / max(vec_llr, 1e-9):.0f}x; a loop, not a peer)")


if __name__ == "__main__":
    section_5_1()
    speed()
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
