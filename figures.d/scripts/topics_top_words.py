"""Tables 6.3–6.5 of the dissertation (Agovic 2011, §6.4.1): the most probable words of each topic.

Reads what ctm/gptm runs stored in a results repository (``Prediction.diagnostics['top_words']``, one
string per topic, written by `malt cv`); computes nothing itself.

Run: python figures.d/scripts/topics_top_words.py REPO --dataset news100 [--fold 0] [--out FILE.md]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

SHOWN_PARAMS = ("kernel", "sigma", "topics", "gamma", "c")


def top_word_tables(repo_path, dataset: str, fold: int = 0) -> str:
    """Markdown: for every ctm/gptm configuration run on ``dataset``, its topics in fold ``fold``."""
    import malt

    results = malt.load(repo_path)
    out = []
    for exp, spec in results.specs.items():
        if dataset not in (spec["dataset"], spec.get("dataset_ref")) or spec["task"] != "topics":
            continue
        for rec in sorted(results.records(exp), key=lambda r: (r["algorithm"], str(r["params"]))):
            diagnostics = rec.get("diagnostics") or {}
            words = diagnostics.get("top_words")
            if rec["fold"] != fold or not words:
                continue
            shown = {**rec["params"], **{k: diagnostics[k] for k in ("gamma", "c") if k in diagnostics}}
            opts = ", ".join(f"{k}={v}" for k, v in sorted(shown.items()) if k in SHOWN_PARAMS)
            out.append(f"### {rec['algorithm']} ({opts}) — {dataset}, fold {fold}\n")
            cols = [w.split() for w in words]
            out.append("| " + " | ".join(f"Topic {i + 1}" for i in range(len(cols))) + " |")
            out.append("|" + "---|" * len(cols))
            for r in range(max(map(len, cols))):
                out.append("| " + " | ".join(c[r] if r < len(c) else "" for c in cols) + " |")
            out.append("")
    return "\n".join(out) if out else f"no topics runs with top words for {dataset} in {repo_path}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Tables 6.3-6.5: top words per topic from a results repository")
    ap.add_argument("repo")
    ap.add_argument("--dataset", default="news100")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    try:
        text = top_word_tables(a.repo, a.dataset, a.fold)
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
