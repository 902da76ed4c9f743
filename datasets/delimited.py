"""UCI-style delimited files: comma, tab or whitespace separated, '?' or empty for a missing value,
an optional header row, class labels in a column (the last by default) or N label columns."""
from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np

from malt.errors import DataError

from .dataset import Dataset

MISSING_TOKENS = {"", "?", "na", "nan", "NA", "NaN"}


def read_table(path: Path, delimiter: str | None = None) -> tuple[list[str] | None, list[list[str]]]:
    """Rows of string cells, and the header if the first row is not numeric-looking."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        lines = [line.strip() for line in handle if line.strip() and not line.startswith(("#", "%"))]
    if not lines:
        raise DataError(f"{path} is empty.")
    if delimiter is None:
        sample = lines[0]
        delimiter = "," if "," in sample else "\t" if "\t" in sample else None
    rows = [next(csv.reader([line], delimiter=delimiter)) if delimiter else line.split() for line in lines]
    rows = [[cell.strip() for cell in row] for row in rows]
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        bad = next(i for i, r in enumerate(rows) if len(r) != len(rows[0]))
        raise DataError(f"{path}, line {bad + 1}: expected {len(rows[0])} fields, found {len(rows[bad])}.")
    header = None
    if not any(_is_number(c) for c in rows[0]) and any(_is_number(c) for c in rows[min(1, len(rows) - 1)]):
        header, rows = rows[0], rows[1:]
    return header, rows


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def encode_column(cells: list[str]) -> tuple[np.ndarray, list[str] | None]:
    """Numeric column -> floats (NaN for missing); otherwise category codes and their names."""
    values = [c for c in cells if c not in MISSING_TOKENS]
    if all(_is_number(c) for c in values):
        return np.array([float(c) if c not in MISSING_TOKENS else np.nan for c in cells]), None
    names = sorted(set(values))
    index = {v: i for i, v in enumerate(names)}
    return np.array([index[c] if c in index else np.nan for c in cells], dtype=float), names


def impute_mean(X: np.ndarray) -> tuple[np.ndarray, int]:
    """Replace NaN by the column mean (0 for an all-missing column); returns (X, number replaced)."""
    missing = np.isnan(X)
    if not missing.any():
        return X, 0
    means = np.where(missing.all(0), 0.0, np.nanmean(np.where(missing.all(0), 0.0, X), axis=0))
    return np.where(missing, means, X), int(missing.sum())


def load_delimited(path: Path, name: str, labels: str | None = None, impute: str = "none",
                   drop: tuple[int, ...] = ()) -> Dataset:
    """A delimited file as a Dataset.

    labels : None or 'last' (class in the last column -> y), 'first', an integer string N (the last
             N columns are a 0/1 label matrix -> Y), or a header name.
    impute : 'none' (NaN in features is an error) or 'mean'
    drop : column indices to ignore (ids)
    """
    header, rows = read_table(Path(path))
    columns = list(zip(*rows))
    keep = [i for i in range(len(columns)) if i not in set(drop)]
    if labels in (None, "last"):
        label_cols, multi = [keep[-1]], False
    elif labels == "first":
        label_cols, multi = [keep[0]], False
    elif labels.isdigit():
        label_cols, multi = keep[-int(labels):], True
    elif header is not None and labels in header:
        label_cols, multi = [header.index(labels)], False
    else:
        raise DataError(f"--labels {labels!r}: not 'last', 'first', a number of label columns, or a column name "
                        f"of {path}.")
    feature_cols = [i for i in keep if i not in label_cols]
    encoded = [encode_column(list(columns[i])) for i in feature_cols]
    X = np.column_stack([e[0] for e in encoded]) if encoded else np.zeros((len(rows), 0))
    meta = {"source_files": [str(path)], "feature_names": [header[i] for i in feature_cols] if header else []}
    if impute == "mean":
        X, count = impute_mean(X)
        meta["imputed"] = f"{count} missing feature values replaced by column means"
    if multi:
        Y = np.column_stack([encode_column(list(columns[i]))[0] for i in label_cols])
        return Dataset(name, {"X": X, "Y": Y}, meta)
    y_raw, class_names = encode_column(list(columns[label_cols[0]]))
    if np.isnan(y_raw).any():
        raise DataError(f"{path}: the class column has missing values; remove those rows first.")
    classes, y = np.unique(y_raw, return_inverse=True)
    meta["class_names"] = class_names if class_names else [f"{c:g}" for c in classes]
    return Dataset(name, {"X": X, "y": y.astype(int)}, meta)
