"""Rows of the ratings family: malt's ratings defaults beside Surprise (SVD, SVD++), fold 0 of the
ratings task (70 % of each set's ratings for training), test RMSE.

The peer of a row is the fastest Surprise model whose RMSE is within ``EQUAL`` of ours; when none
reaches ours, the most accurate one, and the note says no peer matched. Surprise's cost includes
building its trainset from the training triplets and predicting every test pair (what a user pays).
Our floor is one fit at the setting our inner selection chose (``select='none'``, the chosen values).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from tests.benchmarks.equal_accuracy.measure import Row, compare, peer_or_reason, run_once

EQUAL = 0.002
"""RMSE difference counted as equal accuracy (about the split-to-split spread of a fold's RMSE / 5)."""
DATASETS = ("movielens-100k", "filmtrust", "ciaodvd")
KERNEL_MODELS = ("kpmf", "con-mvgp", "pcsa", "pma-map")
PEERS = {"SVD(n_factors=10)": ("SVD", {"n_factors": 10}), "SVD()": ("SVD", {}), "SVDpp()": ("SVDpp", {})}


def _roots() -> None:
    """MALT_DATA defaults to the shared datasets beside the checkout (as the other benchmarks)."""
    os.environ.setdefault("MALT_DATA", str(Path(__file__).resolve().parents[4] / "shared" / "datasets"))


def _split(name: str):
    _roots()
    from malt.datasets.catalogue import DataRoots, entry
    from malt.tasks.ratings import RatingsParams, RatingsTask

    data = entry(name).loader(DataRoots.default())
    task, tp = RatingsTask(), RatingsParams()
    return data, task, tp, task.split(data, tp, 0)


def ours(name: str, data, task, tp, split, **params):
    """fn() -> test RMSE of malt's ``name`` at its defaults (or ``params``); the diagnostics go to ``out``."""
    from malt.engine.context import Context
    from malt.registry import get
    from malt.splits import Prediction

    def fn():
        algo = get(name)()
        pred = algo.run(split, algo.Params(**params), Context(task.features(data), data_key=data.hash, seed=0, dataset=data))
        return task.score(data, tp, split, Prediction(values=pred.values))["rmse"]  # RMSE only, as the peer
    return fn


def chosen_setting(name: str, data, task, tp, split) -> dict | None:
    """The setting the default's inner selection picks on this split (for the floor), or None."""
    from malt.engine.context import Context
    from malt.registry import get

    algo = get(name)()
    pred = algo.run(split, algo.Params(), Context(task.features(data), data_key=data.hash, seed=0, dataset=data))
    chosen = (pred.diagnostics or {}).get("selected")
    if not isinstance(chosen, dict) or "select" not in algo.Params.names():
        return None
    try:
        algo.Params(select="none", **chosen)
    except Exception:  # a selection over something that is not a parameter: no floor
        return None
    return {"select": "none", **chosen}


def surprise_fn(surprise, cls: str, kwargs: dict, data, task, tp, split):
    from malt.algorithms.recommenders import training_triplets
    from malt.splits import Prediction

    rows, cols, y, _ = training_triplets(split.train)
    lo, hi = float(y.min()), float(y.max())

    def fn():
        import pandas as pd

        frame = pd.DataFrame({"u": rows, "i": cols, "r": y})
        trainset = surprise.Dataset.load_from_df(frame, surprise.Reader(rating_scale=(lo, hi))).build_full_trainset()
        model = getattr(surprise, cls)(random_state=0, **kwargs)
        model.fit(trainset)
        est = np.array([model.predict(u, i).est for u, i in zip(split.test_rows.tolist(), split.test_cols.tolist())])
        return task.score(data, tp, split, Prediction(values=est))["rmse"]
    return fn


def rows(quick: bool) -> list[Row]:
    surprise, missing = peer_or_reason("surprise")
    repeats = 1 if quick else 3
    out = []
    for dataset in DATASETS[:1] if quick else DATASETS:
        data, task, tp, split = _split(dataset)
        peers = {}
        if surprise is not None:
            for label, (cls, kwargs) in PEERS.items():
                if quick and cls == "SVDpp":
                    continue
                fn = surprise_fn(surprise, cls, kwargs, data, task, tp, split)
                peers[label] = (fn, run_once(fn))
        baseline = run_once(ours("baseline", data, task, tp, split))[0]  # user + item biases
        models = ("biased-mf",) + (() if quick or dataset != "movielens-100k" else KERNEL_MODELS)
        for model in models:
            fn = ours(model, data, task, tp, split)
            acc = run_once(fn)[0]
            row = Row(model, f"{dataset}, fold 0", "RMSE", "lower", peer_missing=missing,
                      baseline="biases", baseline_acc=baseline)
            peer = None
            if peers:
                matching = {k: v for k, v in peers.items() if v[1][0] <= acc + EQUAL}
                if matching:
                    label = min(matching, key=lambda k: matching[k][1][1])
                else:
                    label = min(peers, key=lambda k: peers[k][1][0])
                    row.note = f"no Surprise model reached ours; the most accurate shown"
                row.peer, peer = f"surprise.{label}", peers[label][0]
            setting = chosen_setting(model, data, task, tp, split)
            floor = ours(model, data, task, tp, split, **setting) if setting else None
            out.append(compare(row, fn, peer, floor=floor, repeats=repeats))
            if setting:
                out[-1].extra["chosen"] = {k: v for k, v in setting.items() if k != "select"}
    return out
