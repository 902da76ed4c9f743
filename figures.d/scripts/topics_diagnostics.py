"""What the topic-model runs of Tables 6.2/6.6 and Figure 6.3 did inside (Agovic 2011, §6.4).

Reads what `malt cv` stored in a results repository; fits nothing. Per dataset and configuration:

* the kernel strength the inner cross-validation chose in each fold (``gamma``, ``c`` diagnostics),
* tr Σ of the fitted topic covariance (``sigma_trace``; a learned Σ that collapses towards 0 shows here),
* the per-fold difference of a metric against a reference configuration (default ``ctm``) on the same
  folds: mean ± std of the paired differences, and in how many folds the configuration is lower. The
  models share the folds, so this separates a model gap from fold-to-fold difficulty, which dominates
  the unpaired ± std of the tables.

With ``--thesis-tables``: Tables 6.2 and 6.6 with cells "ours / thesis" (mean ± std over folds).

Each dataset's CTM and GPTM units are read at one number of EM starts (``restarts``): ``--restarts N``,
or the most any of them used, so single-start and best-of-N runs in one repository never mix.

Run: python figures.d/scripts/topics_diagnostics.py REPO [--dataset D ...] [--metric perplexity_conditional]
     [--reference ctm] [--restarts N] [--thesis-tables [--grid TEXT]] [--out FILE.md]
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np


def number(x: float, sign: str = "", size: float | None = None) -> str:
    """Perplexity-sized values to the unit, small ones (errors, tr Σ) to three significant digits;
    ``size`` (default |x|) decides which, so a mean and its std print alike."""
    size = abs(x) if size is None else size
    return f"{x:{sign}.0f}" if size >= 100 else f"{x:{sign}.1f}" if size >= 1 else f"{x:{sign}.3g}"


def _label(rec) -> str:
    p = rec["params"]
    if rec["algorithm"] != "gptm":
        return rec["algorithm"]
    label = f"gptm kernel={p.get('kernel', 'knn')} sigma={p.get('sigma', 'learned')}"
    if p.get("select") == "inner-cv" and p.get("kernel") != "identity":
        grid = lambda g: ",".join(f"{v:g}" for v in g)  # noqa: E731
        label += f" γ∈{{{grid(p.get('gamma_grid', ()))}}} c∈{{{grid(p.get('c_grid', ()))}}}"
    return label


def collect(repo_path, datasets=None, restarts=None):
    """{dataset: {label: {fold: record}}} of the ok units of every topics experiment, the CTM and GPTM
    ones at ``restarts`` EM starts (None: the most stored for the dataset); models without starts
    (unigram, gplvm) always."""
    import malt

    results = malt.load(repo_path)
    found = collections.defaultdict(list)
    for exp, spec in results.specs.items():
        if spec.get("task", "topics") != "topics" and "topics" not in exp:
            continue
        name = spec.get("dataset_ref") or spec["dataset"]
        if datasets and name not in datasets:
            continue
        found[name] += [rec for rec in results.records(exp) if "fold" in rec]
    out = collections.defaultdict(lambda: collections.defaultdict(dict))
    for name, records in found.items():
        starts = {r["params"].get("restarts", 1) for r in records if r["algorithm"] in ("ctm", "gptm")}
        keep = restarts if restarts is not None else max(starts, default=1)
        for rec in records:
            if rec["algorithm"] in ("ctm", "gptm") and rec["params"].get("restarts", 1) != keep:
                continue
            label = _label(rec)
            if rec["params"].get("n_labelled") is not None:
                label += f" n_labelled={rec['params']['n_labelled']}"
            out[name][label][rec["fold"]] = rec
    return out


def report(runs, metric="perplexity_conditional", reference="ctm") -> str:
    lines = []
    for name in sorted(runs):
        configs = runs[name]
        ref = configs.get(reference, {})
        lines += [f"### {name}", "",
                  f"| configuration | folds | selected (γ, c) per fold | tr Σ (mean) | {metric} − {reference}, "
                  f"paired (mean ± std) | folds lower |", "|---|---|---|---|---|---|"]
        for label in sorted(configs):
            folds = configs[label]
            chosen = [(f"{folds[f]['diagnostics']['gamma']:g}, {folds[f]['diagnostics']['c']:g}"
                       if "gamma" in (folds[f].get("diagnostics") or {}) and "kernel=identity" not in label
                       else "–") for f in sorted(folds)]
            traces = [folds[f]["diagnostics"]["sigma_trace"] for f in folds
                      if "sigma_trace" in (folds[f].get("diagnostics") or {})]
            shared = sorted(set(folds) & set(ref))
            diffs = np.array([folds[f]["metrics"][metric] - ref[f]["metrics"][metric] for f in shared
                              if metric in folds[f]["metrics"] and metric in ref[f]["metrics"]])
            size = max(abs(diffs.mean()), diffs.std(ddof=1)) if diffs.size > 1 else 0.0
            paired = (f"{number(diffs.mean(), '+', size)} ± {number(diffs.std(ddof=1), '', size)}" if diffs.size > 1 else "–") \
                if label != reference else "(reference)"
            lower = f"{int(np.sum(diffs < 0))}/{diffs.size}" if diffs.size and label != reference else "–"
            lines.append(f"| {label} | {len(folds)} | {'; '.join(chosen) if any(c != '–' for c in chosen) else '–'} | "
                         f"{number(np.mean(traces))} | {paired} | {lower} |" if traces else
                         f"| {label} | {len(folds)} | – | – | {paired} | {lower} |")
        lines.append("")
    return "\n".join(lines) if lines else "no topics runs found"


# The thesis's cells (Agovic 2011, Tables 6.2 and 6.6): mean, std over its five folds.
THESIS_62 = {"different100": {"ctm": (1231, 32), "mustlink": (1195, 49), "knn": (1183, 36)},
             "similar100": {"ctm": (1720, 19), "mustlink": (1706, 22), "knn": (1684, 21)},
             "same100": {"ctm": (761, 6), "mustlink": (758, 6), "knn": (755, 12)},
             "asrs": {"ctm": (491, 8), "mustlink": (488, 8), "knn": (483, 3)},
             "news100": {"ctm": (2944, 83), "mustlink": (2943, 66), "knn": (2936, 82)}}
THESIS_66 = {"different100": ((1264, 47), (1232, 29), (1198, 46), (1138, 42), (1121, 40), (1095, 53)),
             "similar100": ((1778, 51), (1741, 51), (1720, 46), (1656, 41), (1639, 46), (1610, 37)),
             "same100": ((829, 21), (792, 11), (745, 28), (633, 14), (638, 12), (608, 10)),
             "asrs": ((514, 11), (508, 7), (472, 7), (485, 9), (466, 9), (467, 7)),
             "news100": ((3093, 89), (3047, 56), (2911, 65), (2877, 79), (2818, 51), (2769, 86))}
VARIANTS_66 = (("GP-SIKI", "identity", "identity"), ("GP-KI", "identity", "learned"),
               ("GP-SI 𝒦_ML", "mustlink", "identity"), ("GP-SI 𝒦_NN", "knn", "identity"),
               ("GPTM 𝒦_ML", "mustlink", "learned"), ("GPTM 𝒦_NN", "knn", "learned"))


def _cell(folds, metric, thesis=None) -> str:
    if not folds:
        return "– / " + (f"{thesis[0]} ± {thesis[1]}" if thesis else "–")
    v = np.array([r["metrics"][metric] for r in folds.values()])
    ours = f"{v.mean():.0f} ± {v.std(ddof=1) if v.size > 1 else 0:.0f}" + (f" ({v.size}/5)" if v.size < 5 else "")
    return ours + " / " + (f"{thesis[0]} ± {thesis[1]}" if thesis else "–")


def _config(configs, kernel, sigma, grid=None):
    """The configuration of a GPTM variant (the tuned one with the largest grid when several ran)."""
    prefix = f"gptm kernel={kernel} sigma={sigma}"
    found = sorted((label for label in configs if label == prefix or label.startswith(prefix + " γ")),
                   key=lambda label: (len(configs[label]), len(label)))
    if grid is not None:
        found = [label for label in found if grid in label or kernel == "identity"]
    return configs[found[-1]] if found else {}


def thesis_tables(runs, grid=None) -> str:
    """Markdown: Tables 6.2 (conditional) and 6.6 (joint perplexity), cells 'ours / thesis'."""
    out = ["| dataset | unigram (ours only) | CTM | GPTM 𝒦_ML | GPTM 𝒦_NN |", "|:---|---:|---:|---:|---:|"]
    for name in THESIS_62:
        if name not in runs:
            continue
        c, t = runs[name], THESIS_62[name]
        out.append(f"| {name} | {_cell(c.get('unigram', {}), 'perplexity_conditional')} | "
                   f"{_cell(c.get('ctm', {}), 'perplexity_conditional', t['ctm'])} | "
                   f"{_cell(_config(c, 'mustlink', 'learned', grid), 'perplexity_conditional', t['mustlink'])} | "
                   f"{_cell(_config(c, 'knn', 'learned', grid), 'perplexity_conditional', t['knn'])} |")
    out += ["", "| dataset | " + " | ".join(v[0] for v in VARIANTS_66) + " |", "|:---|" + "---:|" * 6]
    for name in THESIS_66:
        if name not in runs:
            continue
        cells = [_cell(_config(runs[name], k, s, grid), "perplexity", t)
                 for (_, k, s), t in zip(VARIANTS_66, THESIS_66[name])]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Topic-model runs: selected kernel strength, tr Σ, paired gaps")
    ap.add_argument("repo")
    ap.add_argument("--dataset", action="append")
    ap.add_argument("--metric", default="perplexity_conditional")
    ap.add_argument("--reference", default="ctm")
    ap.add_argument("--restarts", type=int, help="read CTM/GPTM units fitted with this many EM starts "
                    "(default: the most stored per dataset)")
    ap.add_argument("--thesis-tables", action="store_true",
                    help="print Tables 6.2 and 6.6 as 'ours / thesis' cells instead")
    ap.add_argument("--grid", help="with --thesis-tables: only tuned runs whose label contains this text")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    try:
        runs = collect(a.repo, a.dataset, a.restarts)
        text = thesis_tables(runs, a.grid) if a.thesis_tables else report(runs, a.metric, a.reference)
    except Exception as exc:  # one clear line, nothing written
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
