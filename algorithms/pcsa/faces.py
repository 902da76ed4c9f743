"""Face-image experiments of Shi (2012) that the `missing` task cannot express: Figure 4 (reconstruction
when every image is partially observed, nf = 0) and the PCSA-3 image-filling protocol of §4.3 / Table 3
(whole images missing from a person × image × pixel tensor), run on ORL since CMU PIE is not public.

    python -m malt.algorithms.pcsa.faces reconstruct frey-faces OUT.png
    python -m malt.algorithms.pcsa.faces tensor OUT.png [runs]

Scores are the paper's: correlation (CORR) and mean absolute error (MAE) between the filled and the
true pixels (grey levels 0..255).
"""
from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np

from malt.datasets.catalogue import DataRoots, entry

from . import PCSAParams, _fit_matrix
from .tensor import pcsa_tensor_fit


def _scores(true, filled):
    return float(np.corrcoef(true, filled)[0, 1]), float(np.mean(np.abs(true - filled)))


def _montage(rows, shape, path, titles):
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


def reconstruct(name, out, n_show=8, seed=0, params=None):
    """Figure 4: half the pixels of every image hidden (nf = 0); rows true / observed / PCSA."""
    data = entry(name).loader(DataRoots.default())
    M = np.asarray(data["M"], dtype=float)
    rng = np.random.default_rng(seed)
    hidden = rng.random(M.shape) < 0.5
    params = params or PCSAParams()
    values, diag = _fit_matrix(np.where(hidden, np.nan, M), ~hidden, params, SimpleNamespace(rng=rng), "ard")
    corr, mae = _scores(M[hidden], values[hidden])
    show = rng.choice(M.shape[0], n_show, replace=False)
    _montage([M[show], np.where(hidden[show], np.nan, M[show]), np.clip(values[show], 0, 255)],
             data.meta["image_shape"], out, ["true", "observed", "PCSA"])
    print(f"{name}: nf = 0, 50 % of every image's pixels hidden; PCSA CORR {corr:.3f}  MAE {mae:.1f}  "
          f"d1 = {diag['d1']}  d2 = {diag['d2']}  iterations {diag['iterations']}  -> {out}")
    return corr, mae


def tensor(out, runs=3, fractions=(0.1, 0.2, 0.3), rank=10, max_iter=200, pool=2):
    """§4.3 on ORL: a fraction of the (person, image) images removed whole from the 40 × 10 × pixel tensor
    (pixels average-pooled ``pool`` × ``pool``); PCSA-3 against the person's mean observed image and
    matrix PCSA on images × pixels."""
    data = entry("orl-faces").loader(DataRoots.default())
    h, w = data.meta["image_shape"]
    T = data["T"].reshape(40, 10, h // pool, pool, w // pool, pool).mean(axis=(3, 5)).reshape(40, 10, -1)
    shape = (h // pool, w // pool)
    print(f"ORL tensor 40 persons × 10 images × {T.shape[2]} pixels ({shape[0]} × {shape[1]}); {runs} runs")
    print("| missing | PCSA-3 CORR | PCSA-3 MAE | person mean CORR | person mean MAE | PCSA (matrix) CORR | PCSA (matrix) MAE | PCSA-3 d |")
    print("|---|---|---|---|---|---|---|---|")
    example = None
    for frac in fractions:
        res = {k: [] for k in ("t", "p", "m")}
        ds = []
        for run in range(runs):
            rng = np.random.default_rng(1000 * run + int(100 * frac))
            gone = np.zeros((40, 10), dtype=bool)
            gone.ravel()[rng.choice(400, int(round(frac * 400)), replace=False)] = True
            mask = np.broadcast_to(~gone[:, :, None], T.shape)
            mu = T[mask].mean()
            fit = pcsa_tensor_fit(np.where(mask, T - mu, 0.0), mask, rank=rank, max_iter=max_iter, rng=rng)
            filled = fit["values"] + mu
            ds.append(fit["d_eff"])
            res["t"].append(_scores(T[gone].ravel(), filled[gone].ravel()))
            obs_mean = np.where(mask, T, 0).sum(1) / np.maximum((~gone).sum(1), 1)[:, None]
            pm = np.broadcast_to(obs_mean[:, None, :], T.shape)
            res["p"].append(_scores(T[gone].ravel(), pm[gone].ravel()))
            M = T.reshape(400, -1)
            Mmask = np.broadcast_to(~gone.reshape(400, 1), M.shape)
            values, _ = _fit_matrix(np.where(Mmask, M, np.nan), Mmask, PCSAParams(max_iter=max_iter),
                                    SimpleNamespace(rng=rng), "ard")
            res["m"].append(_scores(M[gone.ravel()].ravel(), values[gone.ravel()].ravel()))
            if example is None and frac >= 0.2:
                idx = np.argwhere(gone)[:8]
                example = ([T[i, j] for i, j in idx], [np.clip(filled[i, j], 0, 255) for i, j in idx])
        cells = [f"{np.mean([r[k] for r in res[x]]):.3f}" if k == 0 else f"{np.mean([r[k] for r in res[x]]):.1f}"
                 for x in ("t", "p", "m") for k in (0, 1)]
        print(f"| {int(100 * frac)} % | " + " | ".join(cells) + f" | {ds} |")
    if example is not None:
        _montage([example[0], example[1]], shape, out, ["true", "PCSA-3"])
        print(f"filled images -> {out}")


if __name__ == "__main__":
    cmd, *args = sys.argv[1:] or ["help"]
    if cmd == "reconstruct" and len(args) == 2:
        reconstruct(args[0], args[1])
    elif cmd == "tensor" and len(args) in (1, 2):
        tensor(args[0], runs=int(args[1]) if len(args) == 2 else 3)
    else:
        sys.exit(__doc__)
