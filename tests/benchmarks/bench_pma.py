"""PMA benchmarks (run as a script: ``python tests/benchmarks/bench_pma.py [--quick] [--threads N] [--cpu]``).

Everything is measured in the same process, at a fixed number of BLAS threads (default 1); nothing
is asserted and nothing is estimated.

1. pma-map, end to end on emotions and CAL500 (25 % of the labels hidden, K1 from the features, K2
   estimated with 3 updates; every cost a user pays: the registered algorithm's ``run`` in a fresh
   run context, so building K1 from the features and its eigendecomposition are included):
   * the floor — two eigendecompositions (K1, K2) and four n × m rotations (one Sylvester solve), in
     double precision (pma-map's default decomposes and rotates in single precision, see its module
     docstring; its distance to the converged fixed point is printed beside its time);
   * the best fair reference — the paper's alternation of eqs. 5.22/5.23 implemented as well as we can
     (eigenbasis Sylvester solves, each row's missing entries jointly, Anderson acceleration: malt's
     earlier default, ``solver='alternate'``), with its own stopping rule, also through ``run``;
   * pma-map's default (conjugate gradients on the fixed point);
   the three timed in one interleaved loop (best of the repeats) and each one's distance to the
   converged fixed point (max and rms over hidden entries) and error rate. Issue 18's goal: the
   default ≤ 3× the floor on CAL500.
   On emotions also the paper's algorithm implemented literally (explicit submatrix inverses,
   Bartels–Stewart every iteration, eq. 5.23 entry by entry), end to end with the same stopping rule.
2. pma-gibbs on emotions and CAL500: effective samples per second of the hidden entries for each
   sampler with the same fixed kernels, and the diagnostics-driven run (sweeps, ESS, R-hat, error)
   beside pma-exact and column means.
3. pma-exact on scene with 25 % missing: seconds, CG iterations and peak traced memory.
"""
from __future__ import annotations

import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

os.environ.setdefault("MALT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "datasets"))

from malt.algorithms.pma.common import (PMAParams, column_means, cov_estimate, pd_eigh,  # noqa: E402
                                       row_kernel_eig, second_moments)
from malt.algorithms.pma.diagnostics import effective_sample_size  # noqa: E402
from malt.algorithms.pma.exact import pma_exact  # noqa: E402
from malt.algorithms.pma.gibbs import pma_gibbs  # noqa: E402
from malt.algorithms.pma.map import map_f, pma_map  # noqa: E402
from malt.engine.context import Context  # noqa: E402
from malt.numerics.eigenbasis import KroneckerEigenbasis  # noqa: E402
from malt.datasets.catalogue import DataRoots, entry  # noqa: E402
from malt.tasks.missing import MissingParams, MissingTask  # noqa: E402


def load(name: str, missing: float = 0.25):
    data = entry(name).loader(DataRoots.default())
    task, params = MissingTask(), MissingParams(missing=missing)
    split = task.split(data, params, 0)
    truth, _ = task.truth(data, params)
    return data, split, truth


def fresh_context(data):
    """A new run context: nothing cached, so the K1 eigendecomposition is paid for."""
    return Context(data["X"], data_key=data.hash, seed=0, dataset=data)


def literal_pma_map(M, K1, *, kernel_updates: int, iterations: int, tol: float = 0.0, jitter: float = 1e-2):
    """§5.3.2 as printed: solve_sylvester(K1, K2, K1 X̃) each iteration; eq. 5.23 entry by entry with
    explicit inverses of the submatrices K2(−j, −j); K2 = GᵀG/n between kernel settings. Stops a kernel
    setting early when no missing entry moved more than tol × std (the alternation's rule)."""
    observed = ~np.isnan(M)
    n, m = M.shape
    Xt = np.where(observed, M, column_means(M, observed)[None, :])
    scale = float(np.std(M[observed]))
    K2 = second_moments(M, observed, 0, jitter)
    entries = np.argwhere(~observed)
    counts = []
    for round_ in range(kernel_updates + 1):
        weights = []
        for j in range(m):
            rest = np.arange(m) != j
            weights.append(K2[j, rest] @ np.linalg.inv(K2[np.ix_(rest, rest)]))
        for it in range(1, iterations + 1):
            F = scipy.linalg.solve_sylvester(K1, K2, K1 @ Xt)
            change = 0.0
            for i, j in entries:  # eq. 5.23, one entry at a time
                rest = np.arange(m) != j
                new = F[i, j] + weights[j] @ (Xt[i, rest] - F[i, rest])
                change = max(change, abs(new - Xt[i, j]))
                Xt[i, j] = new
            if change <= tol * scale:
                break
        counts.append(it)
        if round_ < kernel_updates:
            K2 = cov_estimate(Xt - F, jitter)
    return Xt, counts


def sign_error(values, truth, hidden):
    return float(np.mean(np.sign(values[hidden]) != np.sign(truth[hidden])))


CLOCK = time.perf_counter
"""Wall-clock seconds by default; ``--cpu`` switches to this process's CPU seconds (with one BLAS thread the
cost of the work itself, less inflated by other processes competing for the cores)."""


def timed(fn):
    start = CLOCK()
    out = fn()
    return out, CLOCK() - start


def best_of(fn, repeats: int):
    """(result, fastest seconds) over ``repeats`` runs: the least disturbed by other processes."""
    best, out = np.inf, None
    for _ in range(repeats):
        out, seconds = timed(fn)
        best = min(best, seconds)
    return out, best


def bench_map(name: str, repeats: int, literal: bool):
    """Floor, pma-map through its registered `run` (what `malt cv` calls: K1 built from the features in
    a fresh context, its eigendecomposition, the solves, the prediction) and the Anderson-accelerated
    alternation, interleaved in one loop so load on the machine hits all of them alike."""
    from malt.registry import get

    data, split, truth = load(name)
    M, hidden = split.M, split.hidden
    print(f"[pma-map] {name} {M.shape}, 25 % hidden, K1 from features, K2 estimated (3 updates); best of {repeats}")
    algo = get("pma-map")
    params = {"cg": algo.Params(), "alternate": algo.Params(solver="alternate")}

    def end_to_end(kind):
        return algo().run(split, params[kind], fresh_context(data)).values

    ctx = fresh_context(data)
    K1, eig1 = row_kernel_eig(PMAParams(), ctx, split.rows)
    ref = pma_map(M, K1, eig1=eig1, tol=1e-10, iterations=5000)  # the converged fixed point, for distances
    K2 = ref["K2"]

    def floor():
        e1, e2 = pd_eigh(K1, "K1"), pd_eigh(K2, "K2")
        return map_f(np.nan_to_num(M), e1, e2)

    def floor_single():
        e1, e2 = pd_eigh(K1, "K1", single=True), pd_eigh(K2, "K2", single=True)
        return KroneckerEigenbasis(e1, e2).split_sum(np.nan_to_num(M), single=True)[0]

    best = {"floor": np.inf, "floor_single": np.inf, "cg": np.inf, "alternate": np.inf}
    out = {}
    for _ in range(repeats):
        for label, fn in (("floor", floor), ("floor_single", floor_single), ("cg", lambda: end_to_end("cg")),
                          ("alternate", lambda: end_to_end("alternate"))):
            out[label], seconds = timed(fn)
            best[label] = min(best[label], seconds)
    t_floor = best["floor"]
    print(f"  floor (eigh K1 + eigh K2 + one Sylvester solve = 4 rotations, double precision): {t_floor:.3f} s")
    print(f"  the same in single precision, as pma-map's default computes them: {best['floor_single']:.3f} s "
          f"(pma-map = {best['cg'] / best['floor_single']:.2f}× this floor)")
    fit = pma_map(M, K1, eig1=eig1)
    print(f"  pma-map's iterations per kernel setting: {fit['iterations']}")
    for label, kind in (("pma-map default, end to end (algorithm.run)", "cg"),
                        ("paper's alternation, Anderson (solver=alternate)", "alternate")):
        values = out[kind]
        distance = float(np.max(np.abs(values - ref["values"])[hidden]))
        rms = float(np.sqrt(np.mean((values - ref["values"])[hidden] ** 2)))
        print(f"  {label:50s} {best[kind]:7.3f} s = {best[kind] / t_floor:5.2f}× floor; distance to the converged "
              f"fixed point max {distance:.3g}, rms {rms:.3g}; error {sign_error(values, truth, hidden):.4f}")
    default, alternate = best["cg"], best["alternate"]
    print(f"  ratio reference / pma-map: {alternate / default:.1f}×")
    if literal:
        (lit, counts), t_lit = timed(lambda: literal_pma_map(M, K1, kernel_updates=3, iterations=5000, tol=1e-3))
        distance = float(np.max(np.abs(lit - ref["values"])[hidden]))
        print(f"  paper's algorithm literally (same stopping rule as the alternation): {t_lit:.2f} s = "
              f"{t_lit / default:.0f}× pma-map; iterations {counts}; max distance to the fixed point "
              f"{distance:.3g}; error {sign_error(lit, truth, hidden):.4f}")


def bench_gibbs(name: str, sweeps: int, samplers, diagnostic_runs=(("blocked", 0.0), ("blocked", -0.8))):
    data, split, truth = load(name)
    ctx = fresh_context(data)
    K1, eig1 = row_kernel_eig(PMAParams(), ctx, split.rows)
    (exact, t_exact) = timed(lambda: pma_exact(split.M, K1, eig1=eig1))
    K2 = exact["K2"]  # fixed kernels: every sampler targets one posterior
    hidden = split.hidden
    trace = np.random.default_rng(0).choice(np.flatnonzero(hidden.ravel()), 20, replace=False)
    colmean = np.where(np.isnan(split.M), np.nanmean(split.M, axis=0)[None, :], split.M)
    print(f"[pma-gibbs] {name} {split.M.shape}: pma-exact {t_exact:.2f} s error "
          f"{sign_error(exact['values'], truth, hidden):.4f}; column means error {sign_error(colmean, truth, hidden):.4f}")
    rates = {}
    for sampler, alpha, n_sweeps in samplers:
        label = sampler if alpha == 0 else f"{sampler} α={alpha}"
        fit, seconds = timed(lambda: pma_gibbs(split.M, K1, K2, sampler=sampler, burn_in=20, sweeps=n_sweeps or sweeps,
                                               kernel_updates=0, eig1=eig1, rng=np.random.default_rng(1),
                                               trace=trace, overrelax=alpha))
        e = effective_sample_size(fit["trace"])
        rates[label] = e / seconds
        print(f"  fixed kernels, {label:18s}: {n_sweeps or sweeps} sweeps in {seconds:6.2f} s, median ESS "
              f"{np.median(e):7.1f}, median ESS/s {np.median(e / seconds):8.2f}")
    base = "single-site" if "single-site" in rates else next(iter(rates))
    for label in rates:
        if label != base:
            print(f"  {label} / {base} effective samples per second: {np.median(rates[label] / rates[base]):.1f}×")
    for sampler, alpha in diagnostic_runs:
        label = sampler if alpha == 0 else f"{sampler} α={alpha}"
        fit, seconds = timed(lambda: pma_gibbs(split.M, K1, sampler=sampler, overrelax=alpha, eig1=eig1,
                                               rng=np.random.default_rng(2)))
        d = fit["diagnostics"]
        print(f"  run length from diagnostics, {label:18s}: {seconds:6.1f} s, {d['sweeps']} kept sweeps (+{d['burn_in']}), "
              f"ESS min {d['ess_min']}, R-hat max {d['rhat_max']}, converged {d['converged']}, error "
              f"{sign_error(fit['values'], truth, hidden):.4f}")


def bench_exact(name: str):
    data, split, truth = load(name)
    tracemalloc.start()
    ctx = fresh_context(data)
    (K1, eig1), t_kernel = timed(lambda: row_kernel_eig(PMAParams(), ctx, split.rows))
    fit, t_exact = timed(lambda: pma_exact(split.M, K1, eig1=eig1))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n, m = split.M.shape
    dense = (n * m) ** 2 * 8 / 2 ** 20
    print(f"[pma-exact] {name} {split.M.shape} 25 % missing: kernel + eigh {t_kernel:.2f} s, solve (4 rounds, CG "
          f"iterations {fit['iterations']}) {t_exact:.2f} s, peak traced memory {peak / 2 ** 20:.0f} MB "
          f"(a dense nm × nm covariance alone would be {dense:.0f} MB), error "
          f"{sign_error(fit['values'], truth, split.hidden):.4f}")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
    if "--cpu" in sys.argv:
        CLOCK = time.process_time
    print(f"BLAS threads: {threads}; clock: {'process CPU' if CLOCK is time.process_time else 'wall'} seconds")
    with threadpool_limits(threads):
        bench_map("emotions", repeats=3, literal=True)
        bench_map("cal500", repeats=1 if quick else 5, literal=False)
        bench_gibbs("emotions", sweeps=1000 if quick else 3000,
                    samplers=[("single-site", 0.0, 300 if quick else 1000), ("blocked", 0.0, 0),
                              ("blocked", -0.8, 0), ("collapsed", 0.0, 200 if quick else 500)])
        if not quick:
            bench_gibbs("cal500", sweeps=1000, samplers=[("blocked", 0.0, 0), ("blocked", -0.8, 0),
                                                         ("collapsed", 0.0, 100)],
                        diagnostic_runs=(("blocked", -0.8),))
        bench_exact("scene")
