"""Thesis cells (Figures 3.4-3.6, UCI or text rows) beside ours from a malt repository.

usage: glp_cells.py REPO FIG [--rows uci|text] [--dataset-as THESIS=OURS ...] [--seed S] [--params P] [--variants] [--seeds]
(FIG = 3.4, 3.5 or 3.6; reads the repository and malt/published/glp.csv; figures.d/ch3-glp-cells.md,
figures.d/ch3-glp-text.md)
Ours = mean ± std over the five folds of one experiment (seed 0 unless --seed); inside = |ours - thesis| <= 2 thesis std.
"""
import argparse
import numpy as np
from malt.results import ResultSet
from malt.report import published

p = argparse.ArgumentParser()
p.add_argument("repo"); p.add_argument("fig")
p.add_argument("--rows", choices=("uci", "text"), default="uci", help="the thesis's UCI rows or its text rows")
p.add_argument("--dataset-as", action="append", default=[])
p.add_argument("--seed", type=int, default=None, help="one seed; default: seed 0 (and --seeds summary)")
p.add_argument("--params", default=None, help="display parameters of the row shown (default: those of the make targets)")
p.add_argument("--variants", action="store_true", help="every stored display of the cell")
p.add_argument("--seeds", action="store_true", help="add the spread of the five-fold mean over stored seeds")
a = p.parse_args()
if a.params is None:
    a.params = {"uci": "k_grid=10,5,20,3,select=inner-cv",
                "text": "k_grid=10,5,20,3,metric=cosine,select=inner-cv,weight=similarity"}[a.rows]
alias = dict(x.split("=") for x in a.dataset_as)
labeled = {"3.4": 30, "3.5": 40, "3.6": 50}[a.fig]
rs = ResultSet.load(a.repo)
f = rs.frame
f = f[(f["task"] == "semisupervised") & (f["task.labeled"].astype(int) == labeled) & (f["metric"] == "error")
      & (f["task.folds"].astype(int) == 5)]
ref = published()
ref = ref[ref["source"] == f"Agovic 2011, Figure {a.fig}"]
rows = {"uci": ["hepatitis", "sklearn-breast-cancer", "wine", "iris", "glass", "pima", "usps-1234", "letter-ef"],
        "text": ["different100", "similar100", "same100", "different1000", "same1000", "classic3"]}[a.rows]
ref = ref[ref["dataset"].isin(rows)]
hdr = "| thesis row | method | ours | thesis | gap / thesis std | inside | majority baseline |"
if a.seeds:
    hdr += " five-fold means over seeds (min – max) | seeds inside |"
print(hdr); print("|" + "---|" * (hdr.count("|") - 1))
count = {True: 0, False: 0}
for _, r in ref.iterrows():
    ds = alias.get(r["dataset"], r["dataset"])
    cell = f[(f["dataset"] == ds) & (f["algorithm"] == r["algorithm"])]
    tm, ts = float(r["mean"]), float(r["std"])
    for display, g in cell.groupby("display"):
        main = display == f"{r['algorithm']}[{a.params}]" if a.params else display == r["algorithm"]
        if not (main or a.variants):
            continue
        seed = 0 if a.seed is None else a.seed
        g0 = g[g["task.seed"].astype(int) == seed]
        if len(g0) != 5:
            continue
        v = g0["value"].to_numpy(float) * 100
        m, s = v.mean(), v.std(ddof=1)
        inside = bool(abs(m - tm) <= 2 * ts + 1e-9)
        if main:
            count[inside] += 1
        z = abs(m - tm) / ts if ts > 0 else float("inf")
        name = r["dataset"] if ds == r["dataset"] else f"{r['dataset']} (as {ds})"
        shown = r["algorithm"] if main else display
        mj = f[(f["dataset"] == ds) & (f["algorithm"] == "majority") & (f["task.seed"].astype(int) == seed)]
        mjs = f"{100 * mj['value'].astype(float).mean():.1f} ± {100 * mj['value'].astype(float).std(ddof=1):.1f}" if len(mj) == 5 else "–"
        line = f"| {name} | {shown} | {m:.1f} ± {s:.1f} | {tm} ± {ts} | {z:.1f} | {'yes' if inside else '**no**'} | {mjs} |"
        if a.seeds:
            means = g.groupby("task.seed")["value"].agg(lambda x: 100 * np.mean(x.to_numpy(float)) if len(x) == 5 else np.nan).dropna()
            ins = int(np.sum(np.abs(means.to_numpy() - tm) <= 2 * ts + 1e-9))
            line += f" {means.min():.1f} – {means.max():.1f} | {ins}/{len(means)} |"
        print(line)
print(f"\ninside {count[True]}, outside {count[False]} (rows at --params)")
