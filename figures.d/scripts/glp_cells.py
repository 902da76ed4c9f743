"""Thesis cells (Figures 3.4-3.6, UCI or text rows) beside ours from a malt repository.

usage: glp_cells.py REPO FIG [--rows uci|text] [--protocol fold|unlabeled|stratified|stratified-unlabeled|stratified-folds-unlabeled] [--seed S]
                    [--dataset-as THESIS=OURS ...] [--only DATASET ...] [--params P] [--variants] [--seeds] [--summary]
                    [--against REPO2 --against-protocol PROTOCOL]
FIG = 3.4, 3.5, 3.6, or `all` (the three); reads the repository and malt/results/published/glp.csv;
figures.d/ch3-glp-cells.md (UCI) and figures.d/ch3-glp-text.md (text) have the tables it printed.
Ours = mean ± std over the five folds of one experiment (seed 0 unless --seed) run with the
`semisupervised` task options of --protocol (stratify, evaluate, stratify_folds; default: the task's defaults);
inside = |ours - thesis| <= 2 thesis std; "std ratio" = our fold std / the thesis's std.
A cell stored by several experiments (another dataset hash) is read from the newest one.
--against lists, per figure, the cells whose inside/outside differs from REPO2's under --against-protocol
(the cells a change of protocol moved), with both means.
The thesis's Cancer row is WDBC: breast-cancer=sklearn-breast-cancer is always applied.
"""
import argparse

import numpy as np
import pandas as pd

from malt.results.report import published
from malt.results import ResultSet

PROTOCOLS = {"fold": (False, "fold", False), "unlabeled": (False, "unlabeled", False),
             "stratified": (True, "fold", False), "stratified-unlabeled": (True, "unlabeled", False),
             "stratified-folds-unlabeled": (True, "unlabeled", True)}
ROWS = {"uci": ["hepatitis", "sklearn-breast-cancer", "wine", "iris", "glass", "pima", "usps-1234", "letter-ef"],
        "text": ["different100", "similar100", "same100", "different1000", "same1000", "classic3"]}
# the display parameters of the make targets' rows (TEXT_PARAMS adds the cosine graph)
PARAMS = {"uci": "k_grid=10,5,20,3,select=inner-cv",
          "text": "k_grid=10,5,20,3,metric=cosine,select=inner-cv,weight=similarity"}


def protocol_rows(frame, protocol):
    """Rows of one protocol; a task option missing from the frame (or a row) is at its default."""
    stratify, evaluate, by_class = PROTOCOLS[protocol]
    s = frame.get("task.stratify", pd.Series(False, index=frame.index)).fillna(False).astype(str)
    e = frame.get("task.evaluate", pd.Series("fold", index=frame.index)).fillna("fold").astype(str)
    b = frame.get("task.stratify_folds", pd.Series(False, index=frame.index)).fillna(False).astype(str)
    return frame[(s == str(stratify)) & (e == evaluate) & (b == str(by_class))]


def cells(frame, fig, a, alias):
    labeled = {"3.4": 30, "3.5": 40, "3.6": 50}[fig]
    f = frame[(frame["task.labeled"].astype(int) == labeled)]
    ref = published()
    ref = ref[(ref["source"] == f"Agovic 2011, Figure {fig}")]
    ref = ref[ref["dataset"].map(lambda d: alias.get(d, d)).isin(ROWS[a.rows])]
    seed = 0 if a.seed is None else a.seed
    for _, r in ref.iterrows():
        ds = alias.get(r["dataset"], r["dataset"])
        cell = f[(f["dataset"] == ds) & (f["algorithm"] == r["algorithm"])]
        tm, ts = float(r["mean"]), float(r["std"])
        for display, g in cell.groupby("display"):
            main = display == f"{r['algorithm']}[{a.params}]" if a.params else display == r["algorithm"]
            if not (main or a.variants):
                continue
            g0 = g[g["task.seed"].astype(int) == seed]
            if len(g0) != 5:
                continue
            v = g0["value"].to_numpy(float) * 100
            m, s = v.mean(), v.std(ddof=1)
            mj = f[(f["dataset"] == ds) & (f["algorithm"] == "majority") & (f["task.seed"].astype(int) == seed)]
            mjv = 100 * mj["value"].to_numpy(float)
            row = dict(thesis_row=r["dataset"], dataset=ds, method=r["algorithm"] if main else display, main=main,
                       mean=m, std=s, tmean=tm, tstd=ts, inside=bool(abs(m - tm) <= 2 * ts + 1e-9),
                       majority=f"{mjv.mean():.1f} ± {mjv.std(ddof=1):.1f}" if len(mjv) == 5 else "–")
            if a.seeds:
                means = g.groupby("task.seed")["value"].agg(
                    lambda x: 100 * np.mean(x.to_numpy(float)) if len(x) == 5 else np.nan).dropna()
                row["seeds"] = (means.min(), means.max(),
                                int(np.sum(np.abs(means.to_numpy() - tm) <= 2 * ts + 1e-9)), len(means))
            yield row


def newest(frame):
    """Each cell (dataset, l, seed, row display) from its newest experiment only: a repository that
    holds the same cell under two dataset hashes (e.g. the 20 Newsgroups sets before and after the
    topic vocabulary's v2, which re-keys their experiments and so their inner-CV folds) shows the
    current code's run, not a mixture of ten folds."""
    cell = ["dataset", "task.labeled", "task.seed", "display"]
    latest = frame.groupby(cell + ["experiment"])["timestamp"].max().reset_index()
    latest = latest.sort_values("timestamp").groupby(cell).tail(1)
    return frame.merge(latest[cell + ["experiment"]], on=cell + ["experiment"])


def load(repo, protocol):
    f = ResultSet.load(repo).frame
    f = f[(f["task"] == "semisupervised") & (f["metric"] == "error") & (f["task.folds"].astype(int) == 5)]
    return newest(protocol_rows(f, protocol))


def moved(rows, other, fig, protocol, other_protocol):
    """The cells inside under one protocol and outside under the other (both seed-0 five-fold means)."""
    theirs = {(r["dataset"], r["method"]): r for r in other if r["main"]}
    print(f"\nFigure {fig}: cells that move between {other_protocol} and {protocol}\n")
    print(f"| thesis row | method | thesis | {other_protocol} | {protocol} | moved |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        o = theirs.get((r["dataset"], r["method"]))
        if r["main"] and o is not None and o["inside"] != r["inside"]:
            print(f"| {r['thesis_row']} | {r['method']} | {r['tmean']} ± {r['tstd']} | {o['mean']:.1f} ± {o['std']:.1f} | "
                  f"{r['mean']:.1f} ± {r['std']:.1f} | {'in → out' if o['inside'] else 'out → in'} |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("repo"); p.add_argument("fig", choices=["3.4", "3.5", "3.6", "all"])
    p.add_argument("--rows", choices=list(ROWS), default="uci", help="the thesis's UCI rows or its text rows")
    p.add_argument("--protocol", choices=list(PROTOCOLS), default="fold",
                   help="task options of the rows shown: stratify, evaluate, stratify_folds (fold = the task's defaults)")
    p.add_argument("--dataset-as", action="append", default=[])
    p.add_argument("--seed", type=int, default=None, help="one seed; default: seed 0 (and --seeds summary)")
    p.add_argument("--params", default=None,
                   help="display parameters of the row shown (default: those of the make targets for --rows)")
    p.add_argument("--variants", action="store_true", help="every stored display of the cell")
    p.add_argument("--seeds", action="store_true", help="add the spread of the five-fold mean over stored seeds")
    p.add_argument("--summary", action="store_true", help="only the counts and std ratios per figure")
    p.add_argument("--grid", action="store_true",
                   help="one compact table per figure: rows = datasets, columns = methods, 'ours / thesis'")
    p.add_argument("--only", action="append", default=[], help="only these datasets (ours; repeatable)")
    p.add_argument("--against", default=None, help="another repository: list the cells whose inside/outside differs")
    p.add_argument("--against-protocol", choices=list(PROTOCOLS), default="fold", help="the protocol of --against")
    a = p.parse_args()
    if a.params is None:
        a.params = PARAMS[a.rows]
    alias = {"breast-cancer": "sklearn-breast-cancer", **dict(x.split("=") for x in a.dataset_as)}
    f = load(a.repo, a.protocol)
    g = load(a.against, a.against_protocol) if a.against else None
    if a.only:
        f = f[f["dataset"].isin(a.only)]
    figs = ["3.4", "3.5", "3.6"] if a.fig == "all" else [a.fig]
    summary = []
    for fig in figs:
        rows = list(cells(f, fig, a, alias))
        main_rows = [r for r in rows if r["main"]]
        if g is not None:
            moved(rows, list(cells(g, fig, a, alias)), fig, a.protocol, a.against_protocol)
            continue
        if a.grid and not a.summary:
            methods = list(dict.fromkeys(r["method"] for r in main_rows))
            print(f"\nFigure {fig}: ours (five folds, seed {0 if a.seed is None else a.seed}) / thesis; "
                  "**bold**: outside the thesis's mean ± 2·std\n")
            print("| dataset | " + " | ".join(methods) + " | majority |")
            print("|---|" + "---|" * (len(methods) + 1))
            for ds in sorted(dict.fromkeys(r["dataset"] for r in main_rows), key=ROWS[a.rows].index):
                by = {r["method"]: r for r in main_rows if r["dataset"] == ds}
                cells_ = []
                for m in methods:
                    r = by.get(m)
                    if r is None:
                        cells_.append("–"); continue
                    txt = f"{r['mean']:.1f} ± {r['std']:.1f} / {r['tmean']} ± {r['tstd']}"
                    cells_.append(txt if r["inside"] else f"**{txt}**")
                print(f"| {ds} | " + " | ".join(cells_) + f" | {next(iter(by.values()))['majority']} |")
        elif not a.summary:
            hdr = "| thesis row | method | ours | thesis | gap / thesis std | std ratio | inside | majority baseline |"
            if a.seeds:
                hdr += " five-fold means over seeds (min – max) | seeds inside |"
            print(f"\nFigure {fig} (l = {dict(zip(['3.4', '3.5', '3.6'], [30, 40, 50]))[fig]}), protocol {a.protocol}\n")
            print(hdr); print("|" + "---|" * (hdr.count("|") - 1))
            for r in rows:
                z = abs(r["mean"] - r["tmean"]) / r["tstd"] if r["tstd"] > 0 else float("inf")
                ratio = r["std"] / r["tstd"] if r["tstd"] > 0 else float("inf")
                name = r["thesis_row"] if r["dataset"] == r["thesis_row"] else f"{r['thesis_row']} (as {r['dataset']})"
                line = (f"| {name} | {r['method']} | {r['mean']:.1f} ± {r['std']:.1f} | {r['tmean']} ± {r['tstd']} | "
                        f"{z:.1f} | {ratio:.1f} | {'yes' if r['inside'] else '**no**'} | {r['majority']} |")
                if a.seeds:
                    lo, hi, ins, n = r["seeds"]
                    line += f" {lo:.1f} – {hi:.1f} | {ins}/{n} |"
                print(line)
        ratios = [r["std"] / r["tstd"] for r in main_rows if r["tstd"] > 0]
        summary.append((fig, sum(r["inside"] for r in main_rows), len(main_rows),
                        float(np.median(ratios)) if ratios else float("nan"),
                        float(np.median([r["std"] for r in main_rows])) if main_rows else float("nan"),
                        sum(r["std"] < r["tstd"] for r in main_rows)))
    if g is not None:
        return
    print(f"\nprotocol {a.protocol}, seed {0 if a.seed is None else a.seed}, {a.repo}\n")
    print("| figure | inside | cells | median std ratio (ours / thesis) | median fold std (ours) | cells with our std < thesis's |")
    print("|---|---:|---:|---:|---:|---:|")
    for fig, ins, n, ratio, sd, below in summary:
        print(f"| {fig} | {ins} | {n} | {ratio:.2f} | {sd:.1f} | {below} |")


if __name__ == "__main__":
    main()
