"""Benchmark: PCSA / sparse PCSA vs pma-map on the paper's Table 1 protocol (seconds per run).

Shi (2012) Table 1: average seconds per run over the missing proportions 10 %..50 %:
PCSA 4.0 / 17.3, sparse PCSA 3.5 / 11.6, PMA 22.9 / 198.3 (Emotions / CAL500).
Here: one split per proportion 0.10, 0.15, ..., 0.50 (the paper's grid), every algorithm on the same split, wall-clock
seconds of ``run`` (the registered algorithm, defaults), error rate, and peak traced memory.
Same-run reference for the numeric core (issue 18): the coupled update of eq. 6, Z − G Z P = C with
P = τ A S_A Aᵀ (D1 × D1) and G = Λ⁻¹ τ BᵀB (d2 × d2), solved by our eigenbasis solve
(``KroneckerEigenbasis.solve_stein``, including building both eigenbases) and by SciPy's Bartels–Stewart
``solve_sylvester`` on the equivalent G⁻¹Z − Z P = G⁻¹C (dense D1 × D1 Schur form), on the same
inputs at D1 = 174 (CAL500 after the D1 ≤ D2 transpose) and 593; the two solutions agree to 1e-8.
Run: ``python tests/benchmarks/bench_pcsa.py [emotions CAL500]``.
"""
from __future__ import annotations

import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

os.environ.setdefault("MALT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "datasets"))

from malt.engine.context import Context  # noqa: E402
from malt.datasets.catalogue import DataRoots, entry  # noqa: E402
from malt.registry import get  # noqa: E402
from malt.tasks.missing import MissingParams, MissingTask  # noqa: E402

PAPER = {"emotions": {"pcsa": 4.0, "pcsa-sparse": 3.5, "pma-map": 22.9},
         "cal500": {"pcsa": 17.3, "pcsa-sparse": 11.6, "pma-map": 198.3}}


def main(names):
    algos = ["pcsa", "pcsa-sparse", "pma-map"]
    for name in names:
        data = entry(name).loader(DataRoots.default())
        secs = {a: [] for a in algos}; errs = {a: [] for a in algos}; peak = {a: 0 for a in algos}
        for missing in np.round(np.arange(0.1, 0.501, 0.05), 2):
            task, tp = MissingTask(), MissingParams(missing=float(missing))
            split = task.split(data, tp, 0)
            truth, _ = task.truth(data, tp)
            for a in algos:
                algo = get(a)()
                ctx = Context(data["X"], data_key=data.hash, seed=0, dataset=data)
                tracemalloc.start()
                t = time.perf_counter()
                pred = algo.run(split, algo.Params(), ctx)
                secs[a].append(time.perf_counter() - t)
                peak[a] = max(peak[a], tracemalloc.get_traced_memory()[1]); tracemalloc.stop()
                h = split.hidden
                errs[a].append(float(np.mean(np.sign(pred.values[h]) != np.sign(truth[h]))))
        print(f"{name} {data['Y'].shape}: mean over missing 10, 15, ..., 50 % (one split each)")
        for a in algos:
            print(f"  {a:12s} {np.mean(secs[a]):7.2f} s/run (paper {PAPER[name][a]:6.1f})  error "
                  f"{100 * np.mean(errs[a]):5.1f} %  peak {peak[a] / 2**20:7.1f} MiB  "
                  f"ratio pma-map/this {np.mean(secs['pma-map']) / np.mean(secs[a]):5.2f}×")


def stein_reference(D1s=(174, 593), d=20, reps=3):
    """Eq. 6's Stein solve: ours (eigenbases, O(D1 d² + d³)) vs Bartels–Stewart (O(D1³)), same inputs."""
    from scipy import linalg as sla

    from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis
    rng = np.random.default_rng(0)
    print("eq. 6 Stein solve Z − G Z P = C (Z: d2 × D1), seconds per solve, same inputs")
    for D1 in D1s:
        A = rng.standard_normal((D1, d)) / np.sqrt(D1)
        tau, SA = 2.0, np.linalg.inv(np.eye(d) + 2.0 * A.T @ A)
        B = rng.standard_normal((3 * D1, d)) / np.sqrt(D1)
        Lam = np.eye(d) + tau * B.T @ B
        C = rng.standard_normal((d, D1))

        def ours():
            P = Eigenbasis.gram(A.T, tau * SA)
            G = Eigenbasis.pencil(tau * B.T @ B, Lam, "B^-1 A")
            return KroneckerEigenbasis(G, P).solve_stein(C)

        def reference():
            P = tau * A @ SA @ A.T
            Ginv = np.linalg.inv(np.linalg.solve(Lam, tau * B.T @ B))
            return sla.solve_sylvester(Ginv, -P, Ginv @ C)

        t_ours = min(_timed(ours) for _ in range(reps))
        t_ref = min(_timed(reference) for _ in range(reps))
        err = np.abs(ours() - reference()).max()
        print(f"  D1 = {D1:5d}, d = {d}: eigenbases {t_ours:8.4f} s   Bartels–Stewart {t_ref:8.4f} s   "
              f"ratio {t_ref / t_ours:7.1f}×   max |difference| {err:.1e}")


def _timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


if __name__ == "__main__":
    stein_reference()
    main(sys.argv[1:] or ["emotions", "cal500"])
