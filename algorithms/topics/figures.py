"""Figures and tables of dissertation ch. 6 (Agovic 2011, §6.4).

* ``top-words``: Tables 6.3–6.5, the most probable words of each topic, as stored by ctm/gptm runs in
  a results repository (``Prediction.diagnostics['top_words']``, one string per topic).
* ``embeddings``: Figure 6.3, 2-D document embeddings coloured by class: λ for CTM, F for GPTM with the
  kNN kernel 𝒦_NN (6.21), the latent X of an RBF GPLVM. K = number of classes; CTM and GPTM are shown
  in K − 1 coordinates (η_k − η_K, softmax is invariant to a common shift; the first two for K > 3).
* ``mustlink``: Figure 6.4, GPTM embeddings with the must-link kernel 𝒦_ML (6.22) built from 10, 100
  and all class labels (transitive closure: same known label).
* ``svm``: Figure 6.2, error of an RBF SVM (C, γ tuned by 5-fold CV) trained on the embeddings of the
  labelled documents and tested on the others; CTM and GPLVM use the labels only for the SVM, GPTM also
  for 𝒦_ML. Mean ± std over random labelled sets.

All embeddings are fitted transductively on every document of the dataset (no held-out split). The
kernels' diagonal ``c`` (``--c``, default 0.1) sets how far a document's F may leave what its
neighbours or must-link partners share: 𝒦_ML = γ·[same label] + c I (plus what positive definiteness
needs), so c is the prior variance of F within a class. The thesis tuned γ, σ², c by cross validation;
with c = 1 the learned Σ collapses towards 0, F follows λ and the kernel has almost no effect.
Each figure is written as PNG and PDF.

Run: python -m malt.algorithms.topics.figures top-words REPO --dataset news100 [--out FILE.md]
     python -m malt.algorithms.topics.figures embeddings|mustlink|svm --dataset different100 --dataset asrs3 --out DIR
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


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


# ---- embeddings (Figures 6.2-6.4) ----------------------------------------------------------------
def logistic_coordinates(E: np.ndarray) -> np.ndarray:
    """(D, K) logistic-normal means -> (D, K-1) coordinates η_k - η_K (the degrees of freedom of θ)."""
    return E[:, :-1] - E[:, -1:]


def ctm_embedding(docs, K, seed=0, iters=50):
    from . import ctm

    return ctm.fit_ctm(docs, K, np.random.default_rng(seed), iters=iters, smoothing=0.01)["lam"]


def gptm_embedding(docs, K, kernel_matrix, seed=0, iters=50):
    from . import gptm

    return gptm.fit_gptm(docs, kernel_matrix, K, np.random.default_rng(seed), iters=iters, smoothing=0.01)["F"].T


def gplvm_embedding(docs, q=2, iters=200):
    from . import gplvm

    Y = gplvm.document_vectors(docs)
    return gplvm.fit_gplvm(Y - Y.mean(0), q, iters)["X"]


def mustlink_labels(y, labelled: np.ndarray) -> np.ndarray:
    """Class ids where labelled, -1 elsewhere (the must-link constraints of 𝒦_ML)."""
    out = np.full(len(y), -1)
    out[labelled] = y[labelled]
    return out


def draw_labelled(y, n, rng) -> np.ndarray:
    """n labelled documents at random, at least one per class when n allows."""
    classes = np.unique(y)
    first = [rng.choice(np.flatnonzero(y == c)) for c in classes] if n >= classes.size else []
    rest = rng.permutation(np.setdiff1d(np.arange(len(y)), first))[: max(0, n - len(first))]
    return np.sort(np.concatenate([np.asarray(first, dtype=int), rest]))


def svm_error(Z, y, labelled, seed=0) -> float:
    """Error on the unlabelled documents of an RBF SVM fitted to the labelled ones (C, γ by CV)."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    test = np.setdiff1d(np.arange(len(y)), labelled)
    model = make_pipeline(StandardScaler(), SVC(kernel="rbf"))
    counts = np.bincount(y[labelled])
    folds = int(min(5, counts[counts > 0].min()))
    if np.unique(y[labelled]).size < 2:
        return float(np.mean(y[test] != y[labelled][0]))
    if folds >= 2:
        grid = {"svc__C": [0.1, 1, 10, 100], "svc__gamma": [0.01, 0.1, 1, 10]}
        model = GridSearchCV(model, grid, cv=StratifiedKFold(folds, shuffle=True, random_state=seed))
    model.fit(Z[labelled], y[labelled])
    return float(np.mean(model.predict(Z[test]) != y[test]))


def _load(name):
    from malt.data import open_dataset

    ds = open_dataset(name)
    y = np.unique(np.asarray(ds["y"]).ravel(), return_inverse=True)[1]
    return ds["docs"], y


def _scatter(ax, Z, y, title):
    import matplotlib.pyplot as plt

    colours = plt.get_cmap("tab10")
    for c in np.unique(y):
        ax.scatter(Z[y == c, 0], Z[y == c, 1] if Z.shape[1] > 1 else np.zeros((y == c).sum()), s=8,
                   color=colours(int(c) % 10), label=f"class {c}", alpha=0.7)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)


def _save(fig, out: Path, stem: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.pdf"]
    for p in paths:
        fig.savefig(p, dpi=130, bbox_inches="tight")
    return paths


def figure_embeddings(datasets, out, seed=0, c=0.1) -> list[Path]:
    """Figure 6.3: CTM λ, GPLVM X and GPTM (𝒦_NN) F per dataset, one row each."""
    import matplotlib.pyplot as plt

    from . import kernels

    fig, axes = plt.subplots(len(datasets), 3, figsize=(10, 3.2 * len(datasets)), squeeze=False)
    for row, name in zip(axes, datasets):
        docs, y = _load(name)
        K = int(y.max()) + 1
        _scatter(row[0], logistic_coordinates(ctm_embedding(docs, K, seed)), y, f"{name}: CTM λ")
        _scatter(row[1], gplvm_embedding(docs), y, f"{name}: GPLVM X")
        F = gptm_embedding(docs, K, kernels.knn_kernel(docs, 10, c=c), seed)
        _scatter(row[2], logistic_coordinates(F), y, f"{name}: GPTM F ($\\mathcal{{K}}_{{NN}}$, k=10)")
    axes[0, 0].legend(fontsize=7, markerscale=1.5)
    fig.suptitle("Figure 6.3: embeddings without class labels", fontsize=10)
    return _save(fig, Path(out), "fig-6-3-embeddings")


def figure_mustlink(datasets, out, labelled=("10", "100", "all"), seed=0, c=0.1) -> list[Path]:
    """Figure 6.4: GPTM F with 𝒦_ML from growing numbers of labelled documents."""
    import matplotlib.pyplot as plt

    from . import kernels

    fig, axes = plt.subplots(len(datasets), len(labelled), figsize=(3.4 * len(labelled), 3.2 * len(datasets)),
                             squeeze=False)
    for row, name in zip(axes, datasets):
        docs, y = _load(name)
        K = int(y.max()) + 1
        rng = np.random.default_rng(seed)
        for ax, n in zip(row, labelled):
            idx = np.arange(len(y)) if n == "all" else draw_labelled(y, int(n), rng)
            F = gptm_embedding(docs, K, kernels.mustlink_kernel(mustlink_labels(y, idx), c=c), seed)
            _scatter(ax, logistic_coordinates(F), y, f"{name}: GPTM $\\mathcal{{K}}_{{ML}}$, {n} labelled")
    axes[0, 0].legend(fontsize=7, markerscale=1.5)
    fig.suptitle("Figure 6.4: semi-supervised GPTM embeddings (must-link kernel)", fontsize=10)
    return _save(fig, Path(out), "fig-6-4-mustlink")


GPTM_ML = "GPTM ($\\mathcal{K}_{ML}$)"


def svm_errors(name, labelled=(10, 30, 100), repeats=3, seed=0, c=0.1) -> dict:
    """{method: (len(labelled), repeats) errors} of Figure 6.2 on one dataset."""
    from . import kernels

    docs, y = _load(name)
    K = int(y.max()) + 1
    fixed = {"CTM": ctm_embedding(docs, K, seed), "GPLVM": gplvm_embedding(docs)}
    out = {m: np.full((len(labelled), repeats), np.nan) for m in ("CTM", "GPLVM", GPTM_ML)}
    for r in range(repeats):
        rng = np.random.default_rng([seed, r])
        for i, n in enumerate(labelled):
            idx = draw_labelled(y, n, rng)
            for m, Z in fixed.items():
                out[m][i, r] = svm_error(Z, y, idx, seed)
            F = gptm_embedding(docs, K, kernels.mustlink_kernel(mustlink_labels(y, idx), c=c), seed)
            out[GPTM_ML][i, r] = svm_error(F, y, idx, seed)
    return out


def figure_svm(datasets, out, labelled=(10, 30, 100), repeats=3, seed=0, c=0.1) -> list[Path]:
    """Figure 6.2: SVM error on the embeddings against the number of labelled documents; also a markdown table."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.2), squeeze=False)
    lines = ["| dataset | labelled | " + " | ".join(("CTM", "GPLVM", "GPTM (K_ML)")) + " |", "|---|---:|---:|---:|---:|"]
    for ax, name in zip(axes[0], datasets):
        errs = svm_errors(name, labelled, repeats, seed, c)
        for m, E in errs.items():
            ax.errorbar(labelled, 100 * E.mean(1), yerr=100 * E.std(1), marker="o", capsize=3, label=m)
        ax.set_xscale("log")
        ax.set_xlabel("labelled documents")
        ax.set_ylabel("SVM error (%)")
        ax.set_title(name, fontsize=9)
        for i, n in enumerate(labelled):
            lines.append(f"| {name} | {n} | " + " | ".join(f"{100 * E[i].mean():.1f} ± {100 * E[i].std():.1f}"
                                                         for E in errs.values()) + " |")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"Figure 6.2: RBF-SVM error on embeddings (mean ± std over {repeats} labelled sets)", fontsize=10)
    paths = _save(fig, Path(out), "fig-6-2-svm")
    table = Path(out) / "fig-6-2-svm.md"
    table.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return paths + [table]


def main(argv=None):
    import sys

    ap = argparse.ArgumentParser(description="Dissertation ch. 6 figures and top-word tables")
    sub = ap.add_subparsers(dest="what", required=True)
    tw = sub.add_parser("top-words", help="Tables 6.3-6.5 from a results repository")
    tw.add_argument("repo")
    tw.add_argument("--dataset", default="news100")
    tw.add_argument("--fold", type=int, default=0)
    tw.add_argument("--out")
    for name, text in (("embeddings", "Figure 6.3"), ("mustlink", "Figure 6.4"), ("svm", "Figure 6.2")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--dataset", action="append", required=True)
        p.add_argument("--out", required=True, help="output folder")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--c", type=float, default=0.1, help="diagonal c of the GPTM kernel")
        if name == "mustlink":
            p.add_argument("--labelled", default="10,100,all")
        if name == "svm":
            p.add_argument("--labelled", default="10,30,100")
            p.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    if a.what == "top-words":
        text = top_word_tables(a.repo, a.dataset, a.fold)
        if a.out:
            Path(a.out).parent.mkdir(parents=True, exist_ok=True)
            Path(a.out).write_text(text + "\n")
        print(text)
        return
    try:
        for name in a.dataset:
            _load(name)
    except Exception as exc:  # one clear line, nothing written
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2)
    if a.what == "embeddings":
        paths = figure_embeddings(a.dataset, a.out, a.seed, a.c)
    elif a.what == "mustlink":
        paths = figure_mustlink(a.dataset, a.out, tuple(a.labelled.split(",")), a.seed, a.c)
    else:
        labelled = tuple(int(n) for n in a.labelled.split(","))
        paths = figure_svm(a.dataset, a.out, labelled, a.repeats, a.seed, a.c)
    print("\n".join(str(p) for p in paths))


if __name__ == "__main__":
    main()
