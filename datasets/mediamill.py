"""Mediamill (Snoek et al. 2006) from MULAN: 43,907 video shots × 120 features, 101 concept labels,
and ``mediamill-10000``, the dissertation's subset of 10,000 rows (Table 4.1; a fixed seed-0 sample).

Not shipped: MULAN distributes it as ``mediamill.rar`` (mulan.sourceforge.net/datasets-mlc.html).
Unpack ``mediamill-train.arff``, ``mediamill-test.arff`` and ``mediamill.xml`` into
``$MALT_DATA/multilabel/mediamill/``.
"""
from __future__ import annotations

import numpy as np

from .catalogue import DataRoots, DatasetEntry, register_dataset
from .dataset import Dataset
from .mulan import load_mulan

_FILES = ("mediamill-train.arff", "mediamill-test.arff", "mediamill.xml")
_CITE = "MULAN (Tsoumakas et al., JMLR 12, 2011), mulan.sourceforge.net; Snoek et al., ACM MM 2006"


def load_mediamill(roots: DataRoots) -> Dataset:
    paths = [roots.path(f"multilabel/mediamill/{f}") for f in _FILES]
    return load_mulan("mediamill", paths[:2], paths[2])


def load_mediamill_10000(roots: DataRoots, n: int = 10_000, seed: int = 0) -> Dataset:
    """A reproducible 10,000-row subset: rows ``sort(default_rng(seed).choice(N, n, replace=False))``."""
    full = load_mediamill(roots)
    rows = np.sort(np.random.default_rng(seed).choice(full.n_rows, n, replace=False))
    meta = {k: v for k, v in full.meta.items() if k != "given_train"}
    meta["subset_rows_seed"] = seed
    return Dataset("mediamill-10000", {"X": full["X"][rows], "Y": full["Y"][rows]}, meta)


for _name, _loader, _shape in [("mediamill", load_mediamill, "43907 × 120, 101 labels"),
                               ("mediamill-10000", load_mediamill_10000, "10000 × 120, 101 labels")]:
    register_dataset(DatasetEntry(
        name=_name, loader=_loader,
        description="video shots with 101 semantic concepts" + (" (10,000-row subset, Table 4.1)" if "10000" in _name else ""),
        shape=_shape, source=_CITE, files=tuple(f"multilabel/mediamill/{f}" for f in _FILES),
        tasks=("multilabel", "missing"), group="multi-label (MULAN)"))
