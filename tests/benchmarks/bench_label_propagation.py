"""Benchmark: GF, LGC and TIKREG on large kNN graphs (synthetic swiss-roll manifold, k = 10).

Each measurement runs in a fresh subprocess, so its peak resident memory (ru_maxrss) is its own.
Prints seconds (graph excluded / included) and peak memory per method and size, and the ratio to
scikit-learn's LabelPropagation / LabelSpreading measured in the same run:
  * 'same graph': sklearn given our symmetrised RBF kNN graph as a (dense) callable kernel, at
    sizes where a dense n × n matrix fits; its predictions are compared with ours;
  * 'native knn': sklearn's own kernel='knn' (sparse connectivity graph, default tolerances: its
    LabelSpreading stops after max_iter=30 sweeps, ours is the exact fixed point).
Run:  python tests/benchmarks/bench_label_propagation.py [--sizes 2000,4000,100000]
Timings are printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

ALPHA = 0.9  # LGC / LabelSpreading α (the registered lgc default)


def problem(n: int, labeled: int = 50, seed: int = 0):
    from sklearn.datasets import make_swiss_roll

    X, t = make_swiss_roll(n, noise=0.05, random_state=seed)
    y = (t > np.median(t)).astype(int) + 2 * (X[:, 1] > np.median(X[:, 1]))  # 4 classes on the manifold
    rng = np.random.default_rng(seed)
    lab = np.sort(rng.choice(n, labeled, replace=False))
    return X, y, lab


def one(method: str, n: int) -> dict:
    from malt.algorithms.label_propagation import methods as m
    from malt.algorithms.label_propagation.graph import GraphSpec, knn_graph

    X, y, lab = problem(n)
    t0 = time.perf_counter()
    W = knn_graph(X, GraphSpec(k=10))
    t_graph = time.perf_counter() - t0
    Yl = m.one_hot(y[lab], 4)
    y_in = np.full(n, -1)
    y_in[lab] = y[lab]
    t0 = time.perf_counter()
    if method == "gf":
        F = m.gaussian_fields(W, lab, Yl)
    elif method == "lgc":
        F = m.local_global_consistency(W, lab, Yl, ALPHA)
    elif method == "tikreg":
        F = m.tikhonov(W, lab, Yl, 0.1)
    elif method.startswith("sk-"):
        from sklearn.semi_supervised import LabelPropagation, LabelSpreading

        kind, graph = method.split("-")[1:]
        cls = LabelPropagation if kind == "lp" else LabelSpreading
        extra = {"alpha": ALPHA} if kind == "ls" else {}
        if graph == "same":
            Wd = W.toarray()
            model = cls(kernel=lambda A, B: Wd, **extra)
        else:
            model = cls(kernel="knn", n_neighbors=10, **extra)
        model.fit(X, y_in)
        F = model.label_distributions_
    else:
        raise SystemExit(f"unknown method {method}")
    seconds = time.perf_counter() - t0
    labels = F.argmax(1)
    unl = np.setdiff1d(np.arange(n), lab)
    out = {"method": method, "n": n, "seconds": seconds, "graph_seconds": t_graph,
           "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "error": float(np.mean(labels[unl] != y[unl]))}
    if graph_ref := {"sk-lp-same": "gf", "sk-ls-same": "lgc"}.get(method):
        G = m.gaussian_fields(W, lab, Yl) if graph_ref == "gf" else m.local_global_consistency(W, lab, Yl, ALPHA)
        out["agree_with_" + graph_ref] = float(np.mean(G.argmax(1)[unl] == labels[unl]))
    return out


def run(method: str, n: int) -> dict:
    res = subprocess.run([sys.executable, __file__, "--one", method, str(n)], capture_output=True, text=True)
    if res.returncode != 0:
        return {"method": method, "n": n, "failed": res.stderr.strip().splitlines()[-1:]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=2)
    ap.add_argument("--sizes", default="2000,4000,20000,100000")
    ap.add_argument("--dense-limit", type=int, default=4000, help="largest n for sklearn on the same (dense) graph")
    ap.add_argument("--native-limit", type=int, default=100000, help="largest n for sklearn's own knn kernel")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], int(a.one[1]))))
        return
    rows = []
    for n in map(int, a.sizes.split(",")):
        for method in ("gf", "lgc", "tikreg"):
            rows.append(run(method, n))
            print(json.dumps(rows[-1]), flush=True)
        for method in ("sk-lp-same", "sk-ls-same"):
            if n <= a.dense_limit:
                rows.append(run(method, n))
                print(json.dumps(rows[-1]), flush=True)
        for method in ("sk-lp-native", "sk-ls-native"):
            if n <= a.native_limit:
                rows.append(run(method, n))
                print(json.dumps(rows[-1]), flush=True)
    by = {(r["method"], r["n"]): r for r in rows if "seconds" in r}
    print("\nn, method, seconds, peak MB, error, speed ratio sklearn/ours")
    for (method, n), r in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        ref = {"sk-lp-same": "gf", "sk-ls-same": "lgc", "sk-lp-native": "gf", "sk-ls-native": "lgc"}.get(method)
        ratio = f"{r['seconds'] / by[(ref, n)]['seconds']:.1f}x" if ref and (ref, n) in by else ""
        agree = next((f" agree={v:.4f}" for k, v in r.items() if k.startswith("agree")), "")
        print(f"{n:>7} {method:>13} {r['seconds']:9.3f} {r['peak_mb']:8.0f} {r['error']:.4f} {ratio}{agree}")


if __name__ == "__main__":
    main()
