"""BMR speed (§4.4.5): train/predict seconds vs ML-kNN and IBLR-ML as rows grow, on data simulated
from a Mediamill-shaped BMR model (120 features × 101 labels); BMR prediction of 1,000,000 rows.

Run: python tests/benchmarks/bench_bmr.py [--sizes 2000,4000,6000] [--iterations 30]
Prints seconds, ratios to ML-kNN measured in the same run, and peak RSS. Never asserts timings.
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from malt.algorithms.bmr import BMR, BMRParams, fit_bmr
from malt.algorithms.iblr import IBLR, IBLRParams
from malt.algorithms.mlknn import MLkNN, MLkNNParams
from malt.context import Context
from malt.datasets.synthetic_bmr import bmr_model, simulate_bmr
from malt.splits import MultilabelSplit


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000,4000,6000")
    ap.add_argument("--iterations", type=int, default=30, help="BMR EM sweeps (fixed, tol=0)")
    ap.add_argument("--predict-rows", type=int, default=1_000_000)
    args = ap.parse_args()
    W, b, Sigma = bmr_model()
    print(f"{'rows':>7} {'algo':>6} {'total s':>9} {'÷ mlknn':>8}")
    for n in [int(s) for s in args.sizes.split(",")]:
        X, Y = simulate_bmr(n, W, b, Sigma, seed=1)
        n_tr = int(0.8 * n)
        tr, te = np.arange(n_tr), np.arange(n_tr, n)
        split = MultilabelSplit(X[tr], Y[tr], X[te], tr, te)
        times = {}
        for name, algo, params in [("mlknn", MLkNN(), MLkNNParams()), ("iblr", IBLR(), IBLRParams()),
                                   ("bmr", BMR(), BMRParams(iterations=args.iterations, tol=0.0))]:
            ctx = Context.for_arrays(X)  # fresh cache: the kNN cost is charged to each kNN method
            times[name], _ = timed(lambda: algo.run(split, params, ctx))
        for name, t in times.items():
            print(f"{n:>7} {name:>6} {t:>9.2f} {t / times['mlknn']:>8.2f}")
    # prediction: a matrix product (4.11)
    X, Y = simulate_bmr(2000, W, b, Sigma, seed=2)
    model = fit_bmr(X, Y, iterations=args.iterations, tol=0.0)
    Xbig = np.random.default_rng(3).standard_normal((args.predict_rows, X.shape[1])).astype(float)
    t, eta = timed(lambda: model.predict(Xbig))
    print(f"BMR predict {args.predict_rows:,} rows × 120 features → 101 labels: {t:.2f} s "
          f"({eta.shape}); peak RSS {peak_mb():.0f} MB")


if __name__ == "__main__":
    main()
