"""BMR speed (§4.4.6, Figures 4.6-4.7) beyond the thesis's range: train and predict seconds of BMR,
ML-kNN and IBLR-ML as rows grow to 40,000, on data simulated from a Mediamill-shaped BMR model (120
features × 101 labels), and BMR's prediction of 1,000,000 rows. (The thesis's own range, 2,000-6,000
rows, runs through `malt cv` as `make fig-4-6-7`.)

Run: python tests/benchmarks/bench_bmr.py [--sizes 2000,4000,6000,10000,20000,40000]
     [--budget 180] [--out /tmp/bench_bmr/fig-4-6-7.png] [--threads 1]
Prints CPU seconds per phase, the ratios bmr/mlknn and bmr/iblr measured in the same run, and peak RSS;
saves the two panels (training, prediction seconds vs rows) as a PNG. Never asserts timings.
Sizes (total rows; 80 % train, 20 % test) run in order until ``--budget`` CPU seconds are used.
Every method runs as registered, with every cost a user pays: BMR's fit (early stopping on the bound)
plus its decision threshold (a prediction of the training rows and its calibration, `calibrated_offset`); ML-kNN's and
IBLR's neighbour searches; IBLR's inner CV over C (3 folds × 5 values) before its final fit.
"""
from __future__ import annotations

import argparse
import os
import sys


def _threads_from_argv(default: str = "1") -> str:
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return default


# BLAS threads must be fixed before numpy loads; on a shared 2-core machine one thread per process
# is both fairer (kNN and LR are single-threaded too) and faster than oversubscribed threads.
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = _threads_from_argv()

import resource  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from malt.algorithms.bmr import BMRParams, calibrated_offset, fit_bmr  # noqa: E402
from malt.engine.context import Context  # noqa: E402
from malt.datasets.synthetic_bmr import bmr_model, simulate_bmr  # noqa: E402
from malt.splits import MultilabelSplit  # noqa: E402


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn):
    """(CPU seconds, result): process time, so other sessions' load on the shared cores does not count
    (BLAS runs single-threaded here, so CPU seconds ≈ the work done)."""
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def knn_phases(name, split, X, k=10):
    """Train / predict CPU seconds of ML-kNN or IBLR-ML, phase by phase (the registered runs do both
    at once): train = training rows' neighbours + the method's statistics / IBLR's inner CV over C
    and per-label regressions; predict = test rows' neighbours + scores. Same functions and defaults
    as the registered algorithms."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    from malt.algorithms.baselines import log_loss, logistic_path, select_on_path, single_threaded_blas
    from malt.algorithms.iblr import IBLRParams, neighbour_label_rates
    from malt.algorithms.mlknn import mlknn_tables, neighbour_counts, positions

    ctx = Context.for_arrays(X)  # fresh cache: the kNN cost is charged to each kNN method
    tr, te = np.asarray(split.train_index), np.asarray(split.test_index)
    Y = np.asarray(split.Y_train, float)

    def train():
        nb_tr = positions(tr, ctx.knn(k, query=tr, among=tr)[0])
        if name == "mlknn":
            return mlknn_tables(Y, nb_tr, k)
        Z = neighbour_label_rates(Y, nb_tr)
        p = IBLRParams()
        C = select_on_path(p, {"C": p.C_grid}, lambda tr, va: logistic_path(Z[tr], Y[tr], Z[va], p.C_grid), Y,
                           np.random.default_rng(0), log_loss).best.C
        with warnings.catch_warnings(), single_threaded_blas():
            warnings.simplefilter("ignore")
            return [LogisticRegression(C=C, max_iter=1000).fit(Z, Y[:, j].astype(int)) for j in range(Y.shape[1])]

    t_train, model = timed(train)

    def predict():
        nb_te = positions(tr, ctx.knn(k, query=te, among=tr, exclude_self=False)[0])
        if name == "mlknn":
            prior1, like1, like0 = model
            C = neighbour_counts(Y, nb_te, k, prior1)
            lab = np.arange(Y.shape[1])[None, :]
            p1, p0 = prior1 * like1[lab, C], (1 - prior1) * like0[lab, C]
            return p1 / (p1 + p0)
        Z = neighbour_label_rates(Y, nb_te)
        return np.column_stack([m.predict_proba(Z)[:, 1] for m in model])

    t_pred, _ = timed(predict)
    return t_train, t_pred


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000,4000,6000,10000,20000,40000")
    ap.add_argument("--budget", type=float, default=180.0, help="stop adding sizes after this many CPU seconds")
    ap.add_argument("--predict-rows", type=int, default=1_000_000)
    ap.add_argument("--threads", default="1", help="BLAS threads (set before numpy loads)")
    ap.add_argument("--out", default="/tmp/bench_bmr/fig-4-6-7.png", help="PNG of Figures 4.6-4.7")
    args = ap.parse_args()
    start = time.process_time()
    W, b, Sigma = bmr_model()
    p = BMRParams()
    rows_done, res = [], {a: {"train": [], "predict": []} for a in ("bmr", "mlknn", "iblr")}
    print(f"BLAS threads {args.threads}; BMR defaults: bound={p.bound} tol={p.tol} psi={p.psi}")
    print("CPU seconds (process time; wall time on this shared machine is several times larger)")
    print(f"{'rows':>7} {'algo':>6} {'train s':>9} {'predict s':>10} {'iters':>6}")
    for n in [int(s) for s in args.sizes.split(",")]:
        if time.process_time() - start > args.budget:
            print(f"(budget of {args.budget:.0f} s used: sizes from {n} on skipped)")
            break
        X, Y = simulate_bmr(n, W, b, Sigma, seed=1)
        n_tr = int(0.8 * n)
        tr, te = np.arange(n_tr), np.arange(n_tr, n)
        split = MultilabelSplit(X[tr], Y[tr], X[te], tr, te)
        def bmr_train():
            model = fit_bmr(split.X_train, split.Y_train, bound=p.bound, iterations=200, tol=p.tol,
                            ridge=p.ridge, psi=p.psi)
            calibrated_offset(model.predict(split.X_train), split.Y_train)  # the default decision rule
            return model

        t_fit, model = timed(bmr_train)
        t_pred, _ = timed(lambda: model.predict(split.X_test))
        res["bmr"]["train"].append(t_fit)
        res["bmr"]["predict"].append(t_pred)
        for name in ("mlknn", "iblr"):
            t_tr, t_te = knn_phases(name, split, X)
            res[name]["train"].append(t_tr)
            res[name]["predict"].append(t_te)
        rows_done.append(n_tr)
        for name in res:
            its = model.iterations if name == "bmr" else ""
            print(f"{n_tr:>7} {name:>6} {res[name]['train'][-1]:>9.2f} {res[name]['predict'][-1]:>10.3f} {its:>6}")
        for ref in ("mlknn", "iblr"):
            total = res[ref]["train"][-1] + res[ref]["predict"][-1]
            print(f"{'':>7} bmr/{ref:<5} train {t_fit / res[ref]['train'][-1]:.2f}  "
                  f"predict {t_pred / max(res[ref]['predict'][-1], 1e-9):.3f}  total {(t_fit + t_pred) / total:.2f}")
        sys.stdout.flush()
    # prediction: a matrix product (4.11)
    X, Y = simulate_bmr(2000, W, b, Sigma, seed=2)
    model = fit_bmr(X, Y, tol=p.tol, psi=p.psi)
    Xbig = np.random.default_rng(3).standard_normal((args.predict_rows, X.shape[1]))
    for dtype in (np.float64, np.float32):
        Xin = Xbig.astype(dtype, copy=False)
        t_first, eta = timed(lambda: model.predict(Xin, dtype=dtype))  # includes the result's page faults
        t_again, _ = timed(lambda: model.predict(Xin, dtype=dtype, out=eta))  # into the same buffer
        print(f"BMR predict {args.predict_rows:,} rows × {X.shape[1]} features → {eta.shape[1]} labels "
              f"({np.dtype(dtype).name}): {t_first:.2f} s fresh result, {t_again:.2f} s into a reused buffer")
    print(f"peak RSS {peak_mb():.0f} MB; total bench {time.process_time() - start:.0f} CPU s")
    plot(rows_done, res, args.out)


def plot(rows, res, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    labels = {"bmr": "BMR", "mlknn": "ML-kNN", "iblr": "IBLR-ML"}
    for ax, phase, title in zip(axes, ("train", "predict"), ("Figure 4.6: training", "Figure 4.7: prediction")):
        for name, r in res.items():
            ax.plot(rows, r[phase], marker="o", label=labels[name])
        ax.set_xlabel("training rows (synthetic, 120 features × 101 labels)")
        ax.set_ylabel("CPU seconds")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"figure: {out}")


if __name__ == "__main__":
    main()
