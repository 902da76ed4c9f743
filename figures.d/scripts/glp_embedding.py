"""Figure 3.3 / 3.7 of the dissertation (embedding-based label propagation) from malt repositories:
the five-fold table, and the paired per-fold evidence for the claims of §3.6.2.

usage: glp_embedding.py REPO [REPO ...] [--labeled 30 40 50] [--dataset D ...] [--protocol P]
                        [--params P] [--pairs A:B ...] [--ranks]

Reads stored `semisupervised` experiments (five folds, task seed 0) run with the task options of
--protocol (default stratified-unlabeled = the make targets' GLP_TASK). A method's cell is the
display `<algo>[<params>]` (default: the make targets' GLP_PARAMS; `--params none` reads the
algorithms' defaults, display `<algo>`); `majority` is always read at its defaults.
Several repositories are read as one (e.g. the make target's and an ablation's); cells of the
same dataset, l and fold are paired, since the folds and the labelled draws depend only on the
dataset and the task options.

Printed, in markdown:
* per l: dataset × method, mean ± std (%) over the five folds, majority beside;
* --pairs A:B: per dataset and l, the five per-fold differences A − B (percentage points), their
  mean, and the number of folds where A is lower (better) / higher; A and B may name a params
  variant as algo@params (e.g. ltsalp@none for `ltsalp` at its defaults);
* --predicted-share: per dataset, l and method, the share (%) of scored points predicted as the
  dataset's least frequent class (mean over folds, from the stored predictions), beside the
  majority baseline's error (on a two-class set, that class's true share among the scored points);
* --ranks: per method, its rank (1 = lowest mean error) in every (dataset, l) cell, the mean rank,
  and in how many cells it is within one thesis-free margin of the best: the best mean + the
  best's fold std.
"""
import argparse

import numpy as np
import pandas as pd

from malt.results import ResultSet

PROTOCOLS = {"fold": (False, "fold"), "unlabeled": (False, "unlabeled"),
             "stratified": (True, "fold"), "stratified-unlabeled": (True, "unlabeled")}
METHODS = ["lelp", "lelpc", "llelp", "llelpc", "ltsalp", "ltsalpc"]
DEFAULT_PARAMS = "k_grid=10,5,20,3,select=inner-cv"


def load(repos, protocol):
    """Error rows (%, five folds, task seed 0) of the protocol's semisupervised experiments."""
    f = pd.concat([ResultSet.load(r).frame for r in repos], ignore_index=True)
    f = f[(f["task"] == "semisupervised") & (f["metric"] == "error") & (f["task.folds"].astype(int) == 5)
          & (f["task.seed"].astype(int) == 0)]
    stratify, evaluate = PROTOCOLS[protocol]
    s = f.get("task.stratify", pd.Series(False, index=f.index)).fillna(False).astype(str)
    e = f.get("task.evaluate", pd.Series("fold", index=f.index)).fillna("fold").astype(str)
    b = f.get("task.stratify_folds", pd.Series(False, index=f.index)).fillna(False).astype(str)
    f = f[(s == str(stratify)) & (e == evaluate) & (b == "False")].copy()
    f["value"] = 100 * f["value"].astype(float)
    f["labeled"] = f["task.labeled"].astype(int)
    # one cell per (dataset, l, display, fold): the newest run (a version bump re-runs a unit beside the old one)
    f = f.sort_values("timestamp", kind="stable")
    return f.drop_duplicates(["dataset", "labeled", "display", "fold"], keep="last")


def fold_values(f, dataset, labeled, method, params):
    """(5,) per-fold error (%) of ``method`` (algo or algo@params), fold order; None if incomplete."""
    algo, _, p = method.partition("@")
    p = p or params
    display = algo if algo == "majority" or p == "none" else f"{algo}[{p}]"
    g = f[(f["dataset"] == dataset) & (f["labeled"] == labeled) & (f["display"] == display)].sort_values("fold")
    return g["value"].to_numpy(float) if len(g) == 5 else None


def predicted_share(repos, f, dataset, labeled, method, params, minority) -> float | None:
    """Mean over the five folds of the share (%) of scored points predicted as class ``minority``."""
    algo, _, p = method.partition("@")
    p = p or params
    display = algo if algo == "majority" or p == "none" else f"{algo}[{p}]"
    g = f[(f["dataset"] == dataset) & (f["labeled"] == labeled) & (f["display"] == display)]
    shares = []
    for experiment, folds in g.groupby("experiment")["fold"]:
        for results in repos:
            if experiment not in results.specs:
                continue
            for _, packed in results.predictions(experiment, display):
                shares.append(100 * float(np.mean(np.asarray(packed["labels"]) == minority)))
            break
    return float(np.mean(shares)) if len(shares) == 5 else None


def paired(a: np.ndarray, b: np.ndarray) -> dict:
    """Per-fold differences a − b with their mean and the folds where a is lower / higher."""
    d = np.asarray(a, float) - np.asarray(b, float)
    return dict(diffs=d, mean=float(d.mean()), a_lower=int(np.sum(d < 0)), a_higher=int(np.sum(d > 0)))


def ranks(means: dict) -> dict:
    """{method: rank} by mean error (1 = lowest); tied means share the average rank."""
    names = list(means)
    r = pd.Series([means[n] for n in names], index=names).rank(method="average")
    return r.to_dict()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("repos", nargs="+")
    p.add_argument("--labeled", type=int, nargs="+", default=[30, 40, 50])
    p.add_argument("--dataset", nargs="+", default=["wine2", "hepatitis", "sklearn-breast-cancer", "pima", "letter-ef"])
    p.add_argument("--methods", nargs="+", default=METHODS)
    p.add_argument("--protocol", choices=list(PROTOCOLS), default="stratified-unlabeled")
    p.add_argument("--params", default=DEFAULT_PARAMS)
    p.add_argument("--pairs", nargs="*", default=[])
    p.add_argument("--ranks", action="store_true")
    p.add_argument("--predicted-share", action="store_true")
    a = p.parse_args(argv)
    f = load(a.repos, a.protocol)
    for l in a.labeled:
        print(f"\nl = {l}: error (%) mean ± std over five folds ({a.protocol}, params {a.params})\n")
        print("| dataset | " + " | ".join(a.methods) + " | majority |")
        print("|---|" + "---:|" * (len(a.methods) + 1))
        for d in a.dataset:
            cells = []
            for m in a.methods + ["majority"]:
                v = fold_values(f, d, l, m, a.params)
                cells.append("–" if v is None else f"{v.mean():.1f} ± {v.std(ddof=1):.1f}")
            print(f"| {d} | " + " | ".join(cells) + " |")
    for pair in a.pairs:
        A, B = pair.split(":")
        print(f"\n{A} − {B}: per-fold differences (percentage points; negative = {A} lower error)\n")
        print(f"| dataset | l | fold differences | mean | folds {A} lower / higher |")
        print("|---|---:|---|---:|---:|")
        for d in a.dataset:
            for l in a.labeled:
                va, vb = fold_values(f, d, l, A, a.params), fold_values(f, d, l, B, a.params)
                if va is None or vb is None:
                    continue
                r = paired(va, vb)
                print(f"| {d} | {l} | {' '.join(f'{x:+.1f}' for x in r['diffs'])} | {r['mean']:+.1f} | "
                      f"{r['a_lower']} / {r['a_higher']} |")
    if a.predicted_share:
        import malt

        sets = [ResultSet.load(r) for r in a.repos]
        print("\nshare (%) of scored points predicted as the dataset's least frequent class "
              "(mean over folds; on a two-class set majority's error = that class's true share)\n")
        print("| dataset | l | minority class (n) | " + " | ".join(a.methods) + " | majority error |")
        print("|---|---:|---|" + "---:|" * (len(a.methods) + 1))
        for d in a.dataset:
            y = np.asarray(malt.dataset(d)["y"])
            counts = np.bincount(y)
            minority = int(np.argmin(counts))
            for l in a.labeled:
                cells = []
                for m in a.methods:
                    sh = predicted_share(sets, f, d, l, m, a.params, minority)
                    cells.append("–" if sh is None else f"{sh:.1f}")
                mj = fold_values(f, d, l, "majority", a.params)
                print(f"| {d} | {l} | {minority} ({counts[minority]} of {len(y)}) | " + " | ".join(cells) +
                      f" | {'–' if mj is None else f'{mj.mean():.1f}'} |")
    if a.ranks:
        rows, near = {m: [] for m in a.methods}, {m: 0 for m in a.methods}
        cols = []
        for d in a.dataset:
            for l in a.labeled:
                vals = {m: fold_values(f, d, l, m, a.params) for m in a.methods}
                if any(v is None for v in vals.values()):
                    continue
                means = {m: v.mean() for m, v in vals.items()}
                best = min(means, key=means.get)
                margin = means[best] + vals[best].std(ddof=1)
                for m, r in ranks(means).items():
                    rows[m].append(r)
                    near[m] += means[m] <= margin + 1e-9
                cols.append(f"{d} {l}")
        print(f"\nrank per (dataset, l) cell (1 = lowest mean error of the {len(a.methods)} methods)\n")
        print("| method | " + " | ".join(cols) + " | mean rank | cells within best + best's std |")
        print("|---|" + "---:|" * (len(cols) + 2))
        for m in a.methods:
            print(f"| {m} | " + " | ".join(f"{r:g}" for r in rows[m]) +
                  f" | {np.mean(rows[m]):.2f} | {near[m]} / {len(cols)} |")


if __name__ == "__main__":
    main()
