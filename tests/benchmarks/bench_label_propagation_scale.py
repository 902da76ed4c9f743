"""Benchmark: gf and lgc from 10⁵ to 10⁶ points (issue 36) — CPU seconds per solve, decisions against
the exact solution measured in the same run, growth slopes.

Problem: the swiss roll of bench_label_propagation.py (4 classes on the manifold, 50 labelled points,
k = 10, RBF weights, union-symmetrised; `malt.numerics.graphs`), α = 0.9 for lgc.

Each (method, size) runs in a fresh subprocess (its own peak memory) with one BLAS thread:
  * ours — lgc: `methods.lgc_solution` (magnitude stages on bands, every row resolved); gf:
    `methods.gaussian_fields` (multigrid CG to the default relative residual);
  * normwise (lgc only): one CG solve stopped at relative residual 1e-8, the solve before issue 36;
  * direct — the reference: a sparse LU (SuperLU, scipy.sparse.linalg.splu) of I − αS (lgc) or
    L_uu (gf), up to ``--direct-max`` points (at 10⁶: 110–125 CPU s and 5.3 GB each);
  * floor: one product W @ Y (n × 4 classes) in reverse Cuthill–McKee order, the least any
    iterative solve reads per iteration (its slope is the machine's: caches stop holding the graph).
Printed per row: CPU seconds of the solve (process time; the kNN graph is built before the clock
starts and printed apart), test error on the unlabelled points against the generating classes,
decisions that differ from the direct solve's (the number of rows), and for lgc the stages, CG
iterations, Σ band rows × CG iterations / n (rows·it/n: the work, which grew with the number of
stages while every stage solved all unresolved rows) and the rows whose two top scores lie within the
solve's error bound; peak RSS. Slopes are
least-squares fits of log CPU seconds on log n. Timings are printed, never asserted.

    nice -n 10 python tests/benchmarks/bench_label_propagation_scale.py [--sizes 100000,300000,1000000]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).parent))
from bench_label_propagation import ALPHA, REPEATS, problem, slope, timed  # noqa: E402  (the same swiss roll)

THREADS = 1
REPEAT_SECONDS = 30.0
METHODS = (("floor", "W @ Y"), ("gf", "ours"), ("gf", "direct"), ("lgc", "ours"), ("lgc", "normwise"),
           ("lgc", "direct"))


def one(kind: str, method: str, n: int, seed: int, out: Path) -> dict:
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    from malt.numerics import graphs
    from malt.algorithms.label_propagation import methods as m

    X, y, lab = problem(n, seed=seed)
    t0 = time.process_time()
    W = graphs.knn_graph(X, graphs.GraphSpec(k=10))
    res = {"kind": kind, "method": method, "n": n, "seed": seed, "graph_cpu": time.process_time() - t0}
    Yl = m.one_hot(y[lab], 4)
    unl = np.setdiff1d(np.arange(n), lab)
    if kind == "floor":  # one product with the graph for all classes, in reverse Cuthill–McKee order
        from malt.algorithms.label_propagation.solvers import locality_order

        Wo = locality_order(W)[1]
        Y = np.zeros((n, 4))
        Y[lab] = Yl
        reps = max(1, int(2e7 // Wo.nnz))
        res["cpu"] = timed(lambda: [Wo @ Y for _ in range(reps)], time.process_time, REPEAT_SECONDS)[1] / reps
        res["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return res
    if method == "direct":
        def solve():
            if kind == "gf":
                L = graphs.laplacian(W)
                F = np.zeros((n, 4))
                F[lab] = Yl
                F[unl] = spla.splu(sp.csc_matrix(L[unl][:, unl])).solve(np.asarray(W[unl][:, lab] @ Yl))
                return F.argmax(1)
            S = graphs.normalized_adjacency(W)
            Y = np.zeros((n, 4))
            Y[lab] = Yl
            return spla.splu(sp.csc_matrix(sp.identity(n) - ALPHA * S)).solve(Y).argmax(1)
    elif kind == "gf":
        diag: dict = {}

        def solve():
            return m.gaussian_fields(W, lab, Yl, diagnostics=diag).argmax(1)
    elif method == "normwise":
        def solve():
            return m.local_global_consistency(W, lab, Yl, ALPHA, rtol=1e-8).argmax(1)
    else:
        def solve():
            solution = m.lgc_solution(W, lab, Yl, ALPHA)
            res.update(stages=solution.stages, iterations=solution.iterations, uncertain=solution.uncertain_rows,
                       bound=solution.error_bound, row_iterations=solution.row_iterations / n)
            return solution.labels
    labels, res["cpu"] = timed(solve, time.process_time, REPEAT_SECONDS)
    if kind == "gf" and method == "ours":
        res["iterations"] = diag["cg_iterations"]
    res["test_error"] = float(np.mean(labels[unl] != y[unl]))
    res["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    np.save(out, labels)
    return res


def _per_row(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def run(kind: str, method: str, n: int, seed: int, folder: Path) -> dict:
    out = folder / f"{kind}-{method}-{n}.npy"
    proc = subprocess.run([sys.executable, __file__, "--one", kind, method, str(n), str(seed), str(out)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"kind": kind, "method": method, "n": n, "failed": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    if out.exists():
        res["labels"] = str(out)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=5)
    ap.add_argument("--sizes", default="100000,300000,1000000")
    ap.add_argument("--seed", type=int, default=0, help="the swiss roll's and the labelled points' draw")
    ap.add_argument("--direct-max", type=int, default=1_000_000,
                    help="largest size at which the direct (sparse LU) reference runs")
    a = ap.parse_args()
    if a.one:
        kind, method, n, seed, out = a.one
        with threadpool_limits(THREADS):
            print(json.dumps(one(kind, method, int(n), int(seed), Path(out))))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in map(int, a.sizes.split(",")):
            for kind, method in METHODS:
                if method == "direct" and n > a.direct_max:
                    continue
                rows.append(run(kind, method, n, a.seed, Path(tmp)))
                print(json.dumps(rows[-1]), flush=True)
            for r in rows:  # decisions against the direct solve of the same size and method
                if r["n"] == n and "labels" in r:
                    ref = next((d for d in rows if d["n"] == n and d["kind"] == r["kind"] and d["method"] == "direct"
                                and "labels" in d), None)
                    if ref is not None:
                        r["differ"] = int(np.count_nonzero(np.load(r["labels"]) != np.load(ref["labels"])))
    ok = [r for r in rows if "failed" not in r]
    print(f"\nswiss roll (seed {a.seed}), 50 labelled points, k = 10, α = {ALPHA}; BLAS threads: {THREADS}; CPU s = "
          f"median of up to {REPEATS} solves (graph excluded); floor: one product W @ Y (n × 4), reverse Cuthill–McKee order")
    print(f"{'kind':>5} {'method':>9} {'n':>9} {'graph s':>8} {'CPU s':>8} {'test err':>9} {'≠ direct':>9} "
          f"{'stages':>6} {'CG it':>6} {'rows·it/n':>9} {'uncertain':>9} {'peak MB':>8}")
    for r in ok:
        if r["kind"] == "floor":
            print(f"{r['kind']:>5} {r['method']:>9} {r['n']:>9,} {r['graph_cpu']:8.1f} {r['cpu']:8.4f}")
            continue
        print(f"{r['kind']:>5} {r['method']:>9} {r['n']:>9,} {r['graph_cpu']:8.1f} {r['cpu']:8.2f} {r['test_error']:9.4f} "
              f"{r.get('differ', '-'):>9} {r.get('stages', '-'):>6} {r.get('iterations', '-'):>6} "
              f"{_per_row(r.get('row_iterations')):>9} {r.get('uncertain', '-'):>9} {r['peak_mb']:8.0f}")
    for r in rows:
        if "failed" in r:
            print(f"{r['kind']} {r['method']} {r['n']}: failed: {r['failed']}")
    for kind, method in METHODS:
        sel = [r for r in ok if r["kind"] == kind and r["method"] == method]
        if len(sel) >= 2:
            print(f"slope {kind} {method}: {slope([r['n'] for r in sel], [r['cpu'] for r in sel]):.2f} "
                  f"(CPU s, {sel[0]['n']:,} to {sel[-1]['n']:,} points)")


if __name__ == "__main__":
    main()
