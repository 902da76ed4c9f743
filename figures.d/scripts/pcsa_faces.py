"""Figure 4 of Shi (2012): PCSA reconstructions when every image is partially observed (nf = 0).

Draws true / observed / PCSA rows for fold 0 of the missing task's split (half of every image's
pixels hidden: ``--task missing --missing 0.5``, complete_rows 0), PCSA's values being the stored
predictions of the ``figure-pcsa-4`` target's ``malt cv`` run in REPO; this script prints no number
(the CORR and MAE of the figure are that experiment's, in the target's table).

    python figures.d/scripts/pcsa_faces.py REPO frey-faces OUT.png
"""
from __future__ import annotations

import sys

import numpy as np

import malt


def montage(rows, shape, path, titles):
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(rows), len(rows[0]), figsize=(1.1 * len(rows[0]), 1.5 * len(rows)))
    for r, (row, title) in enumerate(zip(rows, titles)):
        for c, img in enumerate(row):
            ax = axes[r, c]
            ax.imshow(np.ma.masked_invalid(img.reshape(shape)), cmap="gray", vmin=0, vmax=255)
            ax.set_xticks([]); ax.set_yticks([])
            if c == 0:
                ax.set_ylabel(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reconstruct(repo, name, out, n_show=8):
    results = malt.load(repo)
    frame = results.frame
    chosen = frame[(frame["dataset"] == name) & (frame["task"] == "missing") & (frame["algorithm"] == "pcsa")
                   & (frame["task.missing"] == 0.5) & (frame["task.complete_rows"] == 0) & (frame["fold"] == 0)]
    if chosen.empty:
        sys.exit(f"error: no stored pcsa unit of fold 0 for {name} (missing 0.5, complete_rows 0) in {repo}; "
                 "run `make figure-pcsa-4` first.")
    experiment = chosen["experiment"].iloc[0]
    found = [packed for record, packed in results.predictions(experiment, chosen["display"].iloc[0])
             if record["fold"] == 0]
    split = malt.split(name, "missing", 0, missing=0.5, complete_rows=0)
    estimate = split.M.astype(float).copy()
    estimate[split.hidden] = found[0]["values"]
    M = np.asarray(malt.dataset(name)["M"], dtype=float)
    show = np.random.default_rng(0).choice(M.shape[0], n_show, replace=False)
    montage([M[show], split.M[show], np.clip(estimate[show], 0, 255)], malt.dataset(name).meta["image_shape"], out,
            ["true", "observed", "PCSA"])


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    reconstruct(*sys.argv[1:])
