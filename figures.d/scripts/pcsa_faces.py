"""Figure 4 of Shi (2012): PCSA reconstructions when every image is partially observed (nf = 0).

Draws true / observed / PCSA rows for fold 0 of the missing task's split (half of every image's
pixels hidden: ``--task missing --missing 0.5``, complete_rows 0) — the same split the
``figure-pcsa-4`` target scores with ``malt cv``; this script prints no number (the CORR and MAE
of the figure are that experiment's, in the target's table).

    python figures.d/scripts/pcsa_faces.py frey-faces OUT.png
"""
from __future__ import annotations

import sys

import numpy as np

from malt.engine.context import Context
from malt.datasets.catalogue import DataRoots, entry
from malt.registry import get
from malt.tasks.missing import MissingParams, MissingTask


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


def reconstruct(name, out, n_show=8):
    data = entry(name).loader(DataRoots.default())
    task, tp = MissingTask(), MissingParams(missing=0.5)
    split = task.split(data, tp, 0)
    algo = get("pcsa")
    pred = algo().run(split, algo.Params(), Context(data.get("X"), data_key=data.hash, seed=0, dataset=data))
    M = np.asarray(data["M"], dtype=float)
    show = np.random.default_rng(0).choice(M.shape[0], n_show, replace=False)
    montage([M[show], split.M[show], np.clip(pred.values[show], 0, 255)], data.meta["image_shape"], out,
            ["true", "observed", "PCSA"])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    reconstruct(sys.argv[1], sys.argv[2])
