"""PMA's default against the matrix-completion baselines a reviewer asks for (issue 37): one row per
(dataset, hidden fraction), one column per algorithm at its defaults, each cell "error ± fold std
(CPU s per fold)", and whether PMA's mean is at most the best baseline's, within one fold std of it
(the best baseline's std over the folds), or worse — with the paired per-fold difference.

Reads what `malt cv` stored in a results repository (``malt.load``); fits nothing. Only units at
their algorithm's default parameters and current version count (the display name is the algorithm's
own) of the installed version, on experiments of the missing task with 5 folds.

Run: python figures.d/scripts/pma_baselines.py REPO --dataset emotions ... --missing 0.1 0.25
     [--pma pma-map] [--reference pma-exact] [--baseline softimpute ...] [--out FILE.md]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

BASELINES = ("softimpute", "iterative-impute", "knn-impute", "gpr", "pmf", "column-mean")


def per_fold(rs, datasets, fractions, algorithms, folds: int):
    """{(dataset, fraction): {algorithm: {fold: (error, cpu seconds)}}}."""
    from malt import registry

    frame = rs.frame
    current = frame["algorithm"].map(lambda a: registry.get(a).version if a in algorithms else None)
    frame = frame[(frame["version"].astype(str) == current) & (frame["task"] == "missing") & (frame["metric"] == "error") & (frame["display"] == frame["algorithm"])
                  & frame["algorithm"].isin(algorithms) & frame["dataset"].isin(datasets)
                  & (frame["task.folds"] == folds)]
    diag = rs.diagnostics
    cpu = diag[diag["diagnostic"] == "fit_cpu_seconds"].set_index(["experiment", "display", "fold"])["value"]
    out: dict = {}
    for row in frame.to_dict("records"):
        fraction = float(row["task.missing"])
        if not any(np.isclose(fraction, f) for f in fractions):
            continue
        seconds = cpu.get((row["experiment"], row["display"], row["fold"]), np.nan)
        out.setdefault((row["dataset"], fraction), {}).setdefault(row["algorithm"], {})[int(row["fold"])] = \
            (float(row["value"]), float(seconds))
    return out


def cell(folds: dict) -> str:
    if not folds:
        return "–"
    e = 100 * np.array([v[0] for v in folds.values()])
    s = np.array([v[1] for v in folds.values()])
    n = f" [{len(e)} folds]" if len(e) != 5 else ""
    return f"{e.mean():.2f} ± {e.std(ddof=1) if e.size > 1 else 0:.2f} ({np.nanmean(s):.3g} s){n}"


def verdict(pma: dict, base: dict) -> tuple[str, str]:
    """(verdict, paired difference) of PMA against one baseline on their shared folds."""
    shared = sorted(set(pma) & set(base))
    if not shared:
        return "–", "–"
    p = 100 * np.array([pma[f][0] for f in shared])
    b = 100 * np.array([base[f][0] for f in shared])
    d = p - b
    paired = f"{d.mean():+.2f} ± {d.std(ddof=1) if d.size > 1 else 0:.2f} ({int(np.sum(d <= 0))}/{d.size} folds ≤)"
    if p.mean() <= b.mean():
        return "≤ best", paired
    std = b.std(ddof=1) if b.size > 1 else 0.0
    return ("within one fold std" if p.mean() - b.mean() <= std else "worse"), paired


def table(runs, pma: str, reference: str | None, baselines) -> str:
    columns = [pma] + ([reference] if reference else []) + list(baselines)
    head = ["set", "hidden"] + [f"{c}{' (PMA default)' if c == pma else ''}" for c in columns] + \
        ["best baseline", "PMA − best, paired", "PMA vs best"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (dataset, fraction) in sorted(runs, key=lambda k: (k[0], k[1])):
        algos = runs[(dataset, fraction)]
        means = {b: np.mean([v[0] for v in algos[b].values()]) for b in baselines if algos.get(b)}
        best = min(means, key=means.get) if means else None
        mark = lambda c: f"**{cell(algos.get(c, {}))}**" if c == best else cell(algos.get(c, {}))  # noqa: E731
        word, paired = verdict(algos.get(pma, {}), algos.get(best, {})) if best else ("–", "–")
        lines.append("| " + " | ".join([dataset, f"{100 * fraction:g} %"] + [mark(c) for c in columns]
                                        + [best or "–", paired, word]) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--dataset", nargs="+", required=True)
    parser.add_argument("--missing", nargs="+", type=float, default=[0.1, 0.25])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--pma", default="pma-map")
    parser.add_argument("--reference", default="pma-exact", help="shown beside PMA, not compared ('' for none)")
    parser.add_argument("--baseline", nargs="+", default=list(BASELINES))
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    import malt

    rs = malt.load(args.repo)
    algorithms = [args.pma] + ([args.reference] if args.reference else []) + args.baseline
    runs = per_fold(rs, args.dataset, args.missing, algorithms, args.folds)
    if not runs:
        print(f"no missing-task runs of {', '.join(args.dataset)} in {args.repo}", file=sys.stderr)
        return 1
    text = ("**Label recovery (missing task): sign error (%) on the hidden entries, mean ± std over the folds "
            "(mean CPU seconds of one fold's fit); bold: the best baseline. PMA vs best: its mean at most the "
            "best baseline's, within one fold std (the best baseline's) of it, or worse; paired: mean ± std of "
            "the per-fold differences.**\n\n" + table(runs, args.pma, args.reference or None, args.baseline) + "\n")
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
