"""What the topic-model runs of Tables 6.2/6.6 and Figure 6.3 did inside (Agovic 2011, §6.4).

Reads what `malt cv` stored in a results repository; fits nothing. Per dataset and configuration:

* the kernel strength the inner cross-validation chose in each fold (``gamma``, ``c`` diagnostics),
* tr Σ of the fitted topic covariance (``sigma_trace``; a learned Σ that collapses towards 0 shows here),
* the per-fold difference of a metric against a reference configuration (default ``ctm``) on the same
  folds: mean ± std of the paired differences, and in how many folds the configuration is lower. The
  models share the folds, so this separates a model gap from fold-to-fold difficulty, which dominates
  the unpaired ± std of the tables.

Run: python figures.d/scripts/topics_diagnostics.py REPO [--dataset D ...] [--metric perplexity_conditional]
     [--reference ctm] [--out FILE.md]
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np


def number(x: float, sign: str = "") -> str:
    """Perplexity-sized values to the unit, small ones (errors, tr Σ) to three significant digits."""
    return f"{x:{sign}.0f}" if abs(x) >= 100 else f"{x:{sign}.1f}" if abs(x) >= 1 else f"{x:{sign}.3g}"


def _label(rec) -> str:
    p = rec["params"]
    if rec["algorithm"] != "gptm":
        return rec["algorithm"]
    label = f"gptm kernel={p.get('kernel', 'knn')} sigma={p.get('sigma', 'learned')}"
    if p.get("select") == "inner-cv" and p.get("kernel") != "identity":
        grid = lambda g: ",".join(f"{v:g}" for v in g)  # noqa: E731
        label += f" γ∈{{{grid(p.get('gamma_grid', ()))}}} c∈{{{grid(p.get('c_grid', ()))}}}"
    return label


def collect(repo_path, datasets=None):
    """{dataset: {label: {fold: record}}} of the ok units of every topics experiment."""
    from malt.repository.store import Repository

    repo = Repository(Path(repo_path)).check_readable()
    out = collections.defaultdict(lambda: collections.defaultdict(dict))
    for exp in repo.experiments():
        spec = repo.read_spec(exp)
        if spec.get("task", "topics") != "topics" and "topics" not in exp:
            continue
        name = spec.get("dataset_ref") or spec["dataset"]
        if datasets and name not in datasets:
            continue
        units, _, _ = repo.experiment(exp).read_log()
        for rec in units.values():
            if rec.get("status") == "ok" and "fold" in rec:
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
            paired = (f"{number(diffs.mean(), '+')} ± {number(diffs.std(ddof=1))}" if diffs.size > 1 else "–") \
                if label != reference else "(reference)"
            lower = f"{int(np.sum(diffs < 0))}/{diffs.size}" if diffs.size and label != reference else "–"
            lines.append(f"| {label} | {len(folds)} | {'; '.join(chosen) if any(c != '–' for c in chosen) else '–'} | "
                         f"{number(np.mean(traces))} | {paired} | {lower} |" if traces else
                         f"| {label} | {len(folds)} | – | – | {paired} | {lower} |")
        lines.append("")
    return "\n".join(lines) if lines else "no topics runs found"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Topic-model runs: selected kernel strength, tr Σ, paired gaps")
    ap.add_argument("repo")
    ap.add_argument("--dataset", action="append")
    ap.add_argument("--metric", default="perplexity_conditional")
    ap.add_argument("--reference", default="ctm")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    try:
        text = report(collect(a.repo, a.dataset), a.metric, a.reference)
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
