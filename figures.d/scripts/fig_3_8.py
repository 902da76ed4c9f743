"""Figure 3.8 of the dissertation (a picture, not a results table): the unsupervised and the
unconstrained semi-supervised 1-D embeddings of Wine (LE, LLE, LTSA).

    python figures.d/scripts/fig_3_8.py --out DIR [--labeled 30 --k 10 --tangent-dim 1 --scale none --seed 0 --draws 1]

It draws the embeddings and prints one number per panel, the 1-D class-separation error of the
coordinate (`interval_error`: the fewest points misplaced when the line is cut into one interval
per class, best class order; 0 = the classes are separate on the line), for the caption's claim
"the prediction performance is better if the unsupervised embedding keeps the classes separate".
The error rates the thesis puts beside it (Figure 3.7) come from `malt cv` experiments (make target
fig-3-7). --draws N repeats the semi-supervised panels' statistic over N labelled draws
(seeds seed … seed+N−1; the picture shows the first).

Unsupervised (bottom row): the smallest non-trivial eigenvector of the embedding's alignment
matrix M (LE: generalised L_u v = λ D v, eq. 3.1/2.4; LLE: (I − W)ᵀ(I − W), eq. 3.32; LTSA:
eq. 3.34). Semi-supervised (top row): the LP solution f of eq. 3.37, f_u = −M_uu⁻¹M_uℓ y_ℓ, for a
1-D label coding y_ℓ = class index − mean (the thesis's figure is 1-D; multi-class prediction uses
one-vs-rest columns instead). Points are drawn in dataset order, coloured by class, labelled
points ringed. Writes fig-3-8.png and fig-3-8.pdf.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from malt.numerics import graphs
from malt.algorithms.label_propagation import methods as m

KINDS = ("LE", "LLE", "LTSA")


def alignment(kind: str, X, k: int = 10, scale: str = "none", reg: float = 1e-3, tangent_dim: int = 1):
    """(M, B) for the generalised eigenproblem M v = λ B v of the 1-D embedding ``kind``."""
    Z = graphs.prepared(X, "euclidean", scale)
    idx, dist = graphs.neighbours(Z, k)
    if kind == "LE":
        W = graphs.graph_from_lists(idx, dist, graphs.GraphSpec(k=k))
        return graphs.laplacian(W), sp.diags(graphs.degrees(W))
    M = m.lle_matrix(Z, idx, reg) if kind == "LLE" else m.ltsa_matrix(Z, idx, tangent_dim)
    return M, sp.identity(M.shape[0])


def unsupervised_1d(M, B) -> np.ndarray:
    """The smallest non-trivial generalised eigenvector of (M, B): the first with eigenvalue above
    1e-9·λ_max (the bottom one is constant; a disconnected graph has one zero per component)."""
    vals, vecs = scipy.linalg.eigh(np.asarray(sp.csr_matrix(M).todense()), np.asarray(sp.csr_matrix(B).todense()))
    return vecs[:, int(np.argmax(vals > 1e-9 * max(vals[-1], 1e-300)))]


def semisupervised_1d(M, labeled: np.ndarray, y_l: np.ndarray) -> np.ndarray:
    """Unconstrained semi-supervised 1-D embedding f (eq. 3.37) for the coding y_ℓ − mean."""
    code = y_l.astype(float) - y_l.mean()
    return m.embedding_lp(M, labeled, code[:, None])[:, 0]


def interval_error(e: np.ndarray, y: np.ndarray) -> float:
    """Fraction of points misplaced by the best cut of the line into one interval per class.

    e: (n,) 1-D coordinate; y: (n,) class labels. Over every order of the K classes along the line
    (K! orders), a dynamic programme over the sorted points finds the K − 1 cut points that put the
    most points in their class's interval. Scale-, shift- and sign-invariant, unlike a variance
    ratio it ignores how far a few outlying points lie. Ties in e are broken by the class order of
    the sort (stable). Cost O(K!·K·n + n log n).
    """
    from itertools import permutations

    order = np.argsort(np.asarray(e, float), kind="stable")
    ys = np.asarray(y)[order]
    classes = np.unique(ys)
    n = len(ys)
    # C[c, i]: points of class c among the first i sorted points
    C = np.zeros((len(classes), n + 1))
    for ci, c in enumerate(classes):
        C[ci, 1:] = np.cumsum(ys == c)
    best_correct = 0.0
    for perm in permutations(range(len(classes))):
        best = np.zeros(n + 1)  # zero segments: nothing placed, nothing correct
        for s, ci in enumerate(perm):
            # segment s covers sorted points t..i-1: best[s][i] = C[ci,i] + max_{t<=i}(best[s-1][t] - C[ci,t])
            run = np.maximum.accumulate(best - C[ci])
            best = C[ci] + run
        best_correct = max(best_correct, best[n])
    return 1.0 - best_correct / n


def embeddings(X, y, labeled: np.ndarray, k: int = 10, scale: str = "none", tangent_dim: int = 1) -> dict:
    """{kind: (unsupervised, semi-supervised)} 1-D embeddings for LE, LLE, LTSA."""
    out = {}
    for kind in KINDS:
        M, B = alignment(kind, X, k, scale, tangent_dim=tangent_dim)
        out[kind] = (unsupervised_1d(M, B), semisupervised_1d(M, labeled, y[labeled]))
    return out


def labelled_draw(y: np.ndarray, labeled: int, seed: int) -> np.ndarray:
    """labeled // K points of each of the K classes, drawn with numpy's generator at ``seed``."""
    rng = np.random.default_rng(seed)
    classes = np.unique(y)
    return np.sort(np.concatenate([rng.choice(np.flatnonzero(y == c), labeled // len(classes), replace=False)
                                   for c in classes]))


def fig_3_8(out: Path, labeled: int = 30, k: int = 10, seed: int = 0, draws: int = 1, tangent_dim: int = 1,
            scale: str = "none") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import malt

    ds = malt.dataset("wine")
    X, y = ds["X"], np.asarray(ds["y"])
    lab = labelled_draw(y, labeled, seed)
    emb = embeddings(X, y, lab, k, scale, tangent_dim=tangent_dim)
    stats = {kind: (interval_error(emb[kind][0], y), [interval_error(emb[kind][1], y)]) for kind in KINDS}
    for d in range(1, draws):
        lab_d = labelled_draw(y, labeled, seed + d)
        for kind in KINDS:
            M, _ = alignment(kind, X, k, scale, tangent_dim=tangent_dim)
            stats[kind][1].append(interval_error(semisupervised_1d(M, lab_d, y[lab_d]), y))
    print(f"Wine, k = {k}, LTSA tangent dimension {tangent_dim}, features {scale}, {len(lab)} labelled, draws (seeds) {seed}..{seed + draws - 1}: 1-D class-separation "
          "error (interval_error, %; lower = classes more separate)\n")
    print("| embedding | unsupervised | semi-supervised (mean ± std over draws) | semi-supervised per draw |")
    print("|---|---:|---:|---|")
    for kind in KINDS:
        u, ss = stats[kind]
        ss = 100 * np.asarray(ss)
        sd = f" ± {ss.std(ddof=1):.1f}" if len(ss) > 1 else ""
        print(f"| {kind} / {kind}LP | {100 * u:.1f} | {ss.mean():.1f}{sd} | {' '.join(f'{v:.1f}' for v in ss)} |")
    pairs = [(a, b) for i, a in enumerate(np.unique(y)) for b in np.unique(y)[i + 1:]]
    print(f"\nper pair of classes (points of the two classes only; seed {seed}): interval_error, %\n")
    print("| embedding | " + " | ".join(f"unsup. {a + 1}|{b + 1}" for a, b in pairs) + " | "
          + " | ".join(f"semi {a + 1}|{b + 1}" for a, b in pairs) + " |")
    print("|---|" + "---:|" * (2 * len(pairs)))
    for kind in KINDS:
        cells = [interval_error(e[(y == a) | (y == b)], y[(y == a) | (y == b)])
                 for e in emb[kind] for a, b in pairs]
        print(f"| {kind} / {kind}LP | " + " | ".join(f"{100 * c:.1f}" for c in cells) + " |")
    fig, axes = plt.subplots(2, 3, figsize=(12, 6), sharex=True)
    colors = plt.cm.tab10(np.arange(3))
    for j, kind in enumerate(KINDS):
        for i, (row, e) in enumerate((("semi-supervised", emb[kind][1]), ("unsupervised", emb[kind][0]))):
            ax = axes[i, j]
            for c in np.unique(y):
                idx = np.flatnonzero(y == c)
                ax.scatter(idx, e[idx], s=10, color=colors[c], label=f"class {c + 1}")
            if i == 0:
                ax.scatter(lab, e[lab], s=40, facecolors="none", edgecolors="k", linewidths=0.8, label="labelled")
            sep = stats[kind][1][0] if i == 0 else stats[kind][0]
            ax.set_title(f"{kind}{'LP' if i == 0 else ''} {row}: 1-D separation error {100 * sep:.1f} %", fontsize=9)
            ax.set_xlabel("point (dataset order)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"Figure 3.8: Wine, 1-D embeddings (k = {k}, LTSA tangent dimension {tangent_dim}, "
                 f"{'unscaled' if scale == 'none' else scale} features, {len(lab)} labelled)")
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    suffix = "" if (k, tangent_dim) == (10, 1) else f"-k{k}-d{tangent_dim}"  # the figure's own parameters keep the name
    suffix += "" if scale == "none" else f"-{scale}"
    for ext in ("png", "pdf"):
        fig.savefig(out / f"fig-3-8{suffix}.{ext}", dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--labeled", type=int, default=30)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tangent-dim", type=int, default=1, help="LTSA local tangent dimension (ltsalp's tangent_dim)")
    ap.add_argument("--scale", default="none", help="feature scaling of the graph (malt.numerics.graphs.prepared: none, standardize)")
    ap.add_argument("--draws", type=int, default=1, help="labelled draws for the semi-supervised statistic")
    a = ap.parse_args(argv)
    fig_3_8(a.out, a.labeled, a.k, a.seed, a.draws, a.tangent_dim, a.scale)


if __name__ == "__main__":
    main()
