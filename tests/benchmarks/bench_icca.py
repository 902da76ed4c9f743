"""Sparse infinite CCA: the §5.1 synthetic experiment and sampler speed (Rai & Daumé 2009).

Run as a script: ``python tests/benchmarks/bench_icca.py``. Prints
* §5.1: icca's K (mode after burn-in) and sparsity of W (exact zeros; |w| < 5 % of max) at the MAP-ish
  last sample, against classical CCA's count of significant components (Bartlett's test, 5 %) and the
  sparsity of its directions after the same thresholding, for several generator seeds;
* seconds per Gibbs sweep on yeast-sized data (2417 × 117) and the ratio against the same sweep
  with the b_dk likelihood ratios computed entry by entry (reference measured in the same run);
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


def section_5_1(seeds=range(5), sweeps=400, burn_in=200):
    print("seed  true_sparsity  icca_K  icca_sparsity_exact  icca_sparsity_thresh  cca_bartlett_K  "
          "cca_sparsity_thresh")
    for seed in seeds:
        ds = synthetic_cca(seed=seed)
        X, Y, W = ds.components["X"], ds.components["Y"], ds.components["W"]
        A = np.hstack([X, Y])
        A = (A - A.mean(0)) / A.std(0)
        Ks = []
        st, _ = icca.run_icca(A, np.zeros(A.shape, bool), n_sweeps=sweeps, burn_in=burn_in, alpha=1.0,
                              rng=np.random.default_rng(seed), callback=lambda s, a, t: Ks.append(s.B.shape[1]))
        Wh = st.W
        thr = np.abs(Wh) < 0.05 * np.abs(Wh).max()
        Ux, Uy, rho = cca_directions(X, Y, 0.0)
        k_cca = bartlett_significant(rho, X.shape[0], X.shape[1], Y.shape[1])
        U = np.vstack([Ux / np.abs(Ux).max(0), Uy / np.abs(Uy).max(0)])
        print(f"{seed:4d}  {np.mean(W == 0):13.2f}  {np.bincount(Ks).argmax():6d}  {1 - st.B.mean():19.2f}  "
              f"{thr.mean():20.2f}  {k_cca:14d}  {np.mean(np.abs(U) < 0.05):19.2f}")


def _entrywise_llr(z, Rk, psi, sigma_v2):
    out = np.empty(Rk.shape[1])
    zz = z @ z
    for d in range(Rk.shape[1]):  # reference: one row at a time
        s = 1.0 / (zz / psi[d] + 1.0 / sigma_v2)
        mu = s * (z @ Rk[:, d]) / psi[d]
        out[d] = 0.5 * math.log(s / sigma_v2) + 0.5 * mu * mu / s
    return out


def speed(N=2417, D=117, K=20, reps=5):
    rng = np.random.default_rng(0)
    B = rng.random((D, K)) < 0.4
    st = icca.ICCAState(B=B, V=np.where(B, rng.standard_normal((D, K)), 0), Z=rng.standard_normal((N, K)),
                        psi=np.ones(D), sigma_v2=1.0, alpha=1.0)
    A = st.Z @ st.W.T + rng.standard_normal((N, D))
    t0 = time.perf_counter()
    for _ in range(reps):
        st.Z = icca.sample_z(A, st.W, st.psi, rng)
        icca.sweep_b_v(A, st, rng)
        icca.propose_new_dishes(A, st, rng)
        icca.sample_hypers(A, st, rng)
    fast = (time.perf_counter() - t0) / reps
    R = A - st.Z @ st.W.T
    t0 = time.perf_counter()
    for k in range(st.B.shape[1]):
        _entrywise_llr(st.Z[:, k], R, st.psi, st.sigma_v2)
    ref_llr = time.perf_counter() - t0
    t0 = time.perf_counter()
    for k in range(st.B.shape[1]):
        z = st.Z[:, k]
        s = 1.0 / (z @ z / st.psi + 1.0)
        0.5 * np.log(s) + 0.5 * (s * (z @ R) / st.psi) ** 2 / s
    vec_llr = time.perf_counter() - t0
    print(f"full sweep N={N} D={D} K≈{st.B.shape[1]}: {fast:.3f} s; b_dk likelihood ratios "
          f"vectorised {vec_llr * 1e3:.2f} ms vs entry-by-entry {ref_llr * 1e3:.2f} ms "
          f"(ratio {ref_llr / max(vec_llr, 1e-9):.1f}x)")


if __name__ == "__main__":
    section_5_1()
    speed()
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
