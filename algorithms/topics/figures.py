"""Tables 6.3–6.5: the most probable words of each topic, as stored by ctm/gptm runs in a results
repository (``Prediction.diagnostics['top_words']``, one string per topic).

Run: python -m malt.algorithms.topics.figures REPO --dataset news100 [--fold 0] [--out FILE.md]
"""
from __future__ import annotations

import argparse
from pathlib import Path


def top_word_tables(repo_path, dataset: str, fold: int = 0) -> str:
    """Markdown: for every ctm/gptm configuration run on ``dataset``, its topics in fold ``fold``."""
    from malt.repository.store import Repository

    repo = Repository(Path(repo_path)).check_readable()
    out = []
    for exp in repo.experiments():
        spec = repo.read_spec(exp)
        if spec["dataset"] != dataset or spec["task"] != "topics":
            continue
        for rec in sorted(repo.units(exp).values(), key=lambda r: (r["algorithm"], str(r["params"]))):
            words = (rec.get("diagnostics") or {}).get("top_words")
            if rec["fold"] != fold or rec["status"] != "ok" or not words:
                continue
            opts = ", ".join(f"{k}={v}" for k, v in sorted(rec["params"].items())
                             if k in ("kernel", "sigma", "topics"))
            out.append(f"### {rec['algorithm']} ({opts}) — {dataset}, fold {fold}\n")
            cols = [w.split() for w in words]
            out.append("| " + " | ".join(f"Topic {i + 1}" for i in range(len(cols))) + " |")
            out.append("|" + "---|" * len(cols))
            for r in range(max(map(len, cols))):
                out.append("| " + " | ".join(c[r] if r < len(c) else "" for c in cols) + " |")
            out.append("")
    return "\n".join(out) if out else f"no topics runs with top words for {dataset} in {repo_path}"


def main(argv=None):
    ap = argparse.ArgumentParser(description="Top words per topic (Tables 6.3-6.5) from a results repository")
    ap.add_argument("repo")
    ap.add_argument("--dataset", default="news100")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    text = top_word_tables(a.repo, a.dataset, a.fold)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
