"""The UCI benchmark sets of the label-propagation experiments (dissertation §3.6).

Files live under ``MALT_DATA/uci/<folder>/`` (see each folder's SOURCE.md). Parsing specifics:
id columns dropped (breast-cancer, glass), '?' imputed by the column mean (hepatitis,
breast-cancer; the count is recorded in ``meta['imputed']``), class names or codes mapped to
0..C−1 in sorted order (``meta['classes']``). Components: ``X`` float (n, d), ``y`` int (n,).
Subsets: ``usps-1234`` (digits 1–4, as the thesis), ``letter-ef`` (letters E and F),
``wine2`` (wine classes 1 and 2, the two-class Wine(2) of Figure 3.3; the thesis does not say
which two classes it kept).
"""
from __future__ import annotations

import gzip

import numpy as np

from .catalogue import DataRoots, DatasetEntry, register_dataset
from .dataset import Dataset
from .delimited import encode_column, impute_mean, read_table

UCI = "UCI Machine Learning Repository (Dua & Graff); files and checksums in MALT_DATA/uci/*/SOURCE.md"
PMLB = "PMLB copy of the UCI data set (Olson et al. 2017); see MALT_DATA/uci/*/SOURCE.md"


def _classes(cells) -> tuple[np.ndarray, list[str]]:
    """Class column -> ids 0..C-1 in sorted order (numerically when the codes are numbers)."""
    values, names = encode_column(list(cells))
    if names is None:  # numeric codes
        codes = np.unique(values)
        return np.searchsorted(codes, values).astype(np.int64), [f"{c:g}" for c in codes]
    return values.astype(np.int64), names


def _table(roots: DataRoots, rel: str, class_col: int | str, drop: tuple[int, ...] = (),
           delimiter: str | None = None):
    header, rows = read_table(roots.path(rel), delimiter)
    cols = list(zip(*rows))
    if isinstance(class_col, str):
        class_col = header.index(class_col)
    class_col = class_col % len(cols)
    y, classes = _classes(cols[class_col])
    keep = [j for j in range(len(cols)) if j != class_col and j not in drop]
    X = np.column_stack([encode_column(list(cols[j]))[0] for j in keep])
    X, imputed = impute_mean(X)
    return X, y, {"classes": classes, "imputed": imputed, "imputation": "column mean" if imputed else "none"}


def _subset(X, y, meta, keep_classes: list[str]):
    pos = [meta["classes"].index(c) for c in keep_classes]
    rows = np.isin(y, pos)
    y_new = np.searchsorted(np.array(pos), y[rows]).astype(np.int64)
    return X[rows], y_new, dict(meta, classes=keep_classes, subset_of=meta.get("classes"))


def _make(name, rel, class_col, drop=(), subset=None, delimiter=None):
    def load(roots: DataRoots) -> Dataset:
        X, y, meta = _table(roots, rel, class_col, drop, delimiter)
        if subset is not None:
            X, y, meta = _subset(X, y, meta, subset)
        return Dataset(name, {"X": X, "y": y}, meta)
    return load


def _load_usps(name: str, digits: tuple[int, ...] | None):
    def load(roots: DataRoots) -> Dataset:
        parts = []
        for rel in ("uci/usps/zip.train.gz", "uci/usps/zip.test.gz"):
            with gzip.open(roots.path(rel), "rt") as handle:
                parts.append(np.loadtxt(handle))
        data = np.vstack(parts)
        y, X = data[:, 0].astype(np.int64), data[:, 1:]
        meta = {"classes": [str(d) for d in range(10)], "imputed": 0, "imputation": "none",
                "given_train": len(parts[0])}
        if digits is not None:
            rows = np.isin(y, digits)
            X, y = X[rows], np.searchsorted(np.array(digits), y[rows]).astype(np.int64)
            meta = {"classes": [str(d) for d in digits], "imputed": 0, "imputation": "none", "subset_of": "usps"}
        return Dataset(name, {"X": X, "y": y}, meta)
    return load


_ENTRIES = [
    # name, loader, description, shape, source, files
    ("hepatitis", _make("hepatitis", "uci/hepatitis/hepatitis.data", 0),
     "Hepatitis survival (DIE/LIVE); '?' imputed by column means", "155 × 19, 2 classes", UCI,
     ("uci/hepatitis/hepatitis.data",)),
    ("breast-cancer", _make("breast-cancer", "uci/breast-cancer-wisconsin/breast-cancer-wisconsin.data", -1,
                            drop=(0,)),
     "Breast Cancer Wisconsin (original), benign/malignant; id dropped, '?' imputed", "699 × 9, 2 classes", UCI,
     ("uci/breast-cancer-wisconsin/breast-cancer-wisconsin.data",)),
    ("pima", _make("pima", "uci/pima-indians-diabetes/pima-indians-diabetes.data", -1),
     "Pima Indians diabetes (zeros kept as in the file)", "768 × 8, 2 classes", UCI,
     ("uci/pima-indians-diabetes/pima-indians-diabetes.data",)),
    ("wine", _make("wine", "uci/wine/wine.data", 0), "Wine cultivars", "178 × 13, 3 classes", UCI,
     ("uci/wine/wine.data",)),
    ("wine2", _make("wine2", "uci/wine/wine.data", 0, subset=["1", "2"]),
     "Wine(2): cultivars 1 and 2 of Wine (two-class subset for Figure 3.3)", "130 × 13, 2 classes", UCI,
     ("uci/wine/wine.data",)),
    ("iris", _make("iris", "uci/iris/iris.data", -1), "Iris species", "150 × 4, 3 classes", UCI,
     ("uci/iris/iris.data",)),
    ("glass", _make("glass", "uci/glass/glass.data", -1, drop=(0,)), "Glass identification; id dropped",
     "214 × 9, 6 classes", UCI, ("uci/glass/glass.data",)),
    ("usps", _load_usps("usps", None), "USPS handwritten digits (train + test)", "9298 × 256, 10 classes",
     UCI, ("uci/usps/zip.train.gz", "uci/usps/zip.test.gz")),
    ("usps-1234", _load_usps("usps-1234", (1, 2, 3, 4)), "USPS digits 1–4 (the thesis's USPS subset)",
     "3874 × 256, 4 classes", UCI, ("uci/usps/zip.train.gz", "uci/usps/zip.test.gz")),
    ("letter-ef", _make("letter-ef", "uci/letter-recognition/letter-recognition.data.gz", 0, subset=["E", "F"]),
     "Letter recognition, letters E and F", "1543 × 16, 2 classes", UCI,
     ("uci/letter-recognition/letter-recognition.data.gz",)),
    ("ionosphere", _make("ionosphere", "uci/ionosphere/ionosphere.data", -1), "Ionosphere radar returns (b/g)",
     "351 × 34, 2 classes", UCI, ("uci/ionosphere/ionosphere.data",)),
    ("sonar", _make("sonar", "uci/sonar/sonar.all-data", -1), "Sonar mines vs rocks (M/R)", "208 × 60, 2 classes",
     UCI, ("uci/sonar/sonar.all-data",)),
    ("vehicle", _make("vehicle", "uci/vehicle/vehicle.tsv.gz", "target", delimiter="\t"),
     "Vehicle silhouettes", "846 × 18, 4 classes", PMLB, ("uci/vehicle/vehicle.tsv.gz",)),
    ("segment", _make("segment", "uci/segment/segmentation.tsv.gz", "target", delimiter="\t"),
     "Image segmentation", "2310 × 19, 7 classes", PMLB, ("uci/segment/segmentation.tsv.gz",)),
    ("optdigits", _make("optdigits", "uci/optdigits/optdigits.tsv.gz", "target", delimiter="\t"),
     "Optical recognition of handwritten digits", "5620 × 64, 10 classes", PMLB,
     ("uci/optdigits/optdigits.tsv.gz",)),
]

for _name, _loader, _desc, _shape, _source, _files in _ENTRIES:
    register_dataset(DatasetEntry(name=_name, loader=_loader, description=_desc, shape=_shape, source=_source,
                                  files=_files, tasks=("semisupervised",), group="uci"))
