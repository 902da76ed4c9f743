"""The Dataset container: a named bag of components with metadata and a content hash.

Components by convention (any other name is allowed, MALT's "generic data sets"):

X          (n, d) features, dense float ndarray or CSR matrix
Y          (n, L) label matrix, 1.0 / 0.0, NaN = unknown (multi-label)
y          (n,) integer class ids (single-label)
M          (n, m) real matrix with NaN = unobserved (missing-value data)
docs       (n_docs, V) CSR word counts; ``vocab`` the words
ratings    (n_rows, n_cols) COO ratings; ``row_graph`` / ``col_graph`` sparse side graphs

The hash covers every component's bytes, shapes and dtypes and the metadata that changes
meaning (not free text), so any change to the data changes every cache and result key.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from malt.errors import DataError
from malt.names import NAME_MAX, validate_name  # noqa: F401  (part of this module's API)


@dataclass
class Dataset:
    name: str
    components: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    _hash: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        self.validate()

    def __getitem__(self, key: str):
        try:
            return self.components[key]
        except KeyError:
            raise DataError(
                f"Dataset '{self.name}' has no component '{key}'; it has: {', '.join(sorted(self.components))}."
            ) from None

    def __contains__(self, key: str) -> bool:
        return key in self.components

    def get(self, key: str, default=None):
        return self.components.get(key, default)

    @property
    def n_rows(self) -> int:
        for key in ("X", "Y", "M", "docs", "ratings", "y"):
            if key in self.components:
                return self.components[key].shape[0]
        return 0

    def validate(self) -> None:
        """Reject data no algorithm can use or no metric can score honestly (one DataError line each):
        a bad name; fewer than 2 rows; components that disagree on the number of rows; features X
        that are not a numeric 2-D matrix, have no column, or hold NaN/inf; class ids y that are not
        integers 0..C-1 each with an example, or a single class; a matrix M with no observed entry.

        Label matrices are checked by `check_labels` where they come from a user's file: generic
        datasets may use the name Y for other things (synthetic-cca's second view is real-valued)."""
        validate_name("dataset", self.name)
        where = f"Dataset '{self.name}'"
        rows = {k: v.shape[0] for k, v in self.components.items()
                if k in ("X", "Y", "y", "docs") and hasattr(v, "shape")}
        if len(set(rows.values())) > 1:
            raise DataError(f"{where}: components disagree on the number of rows: {rows}.")
        if self.n_rows < 2 and self.components:
            raise DataError(f"{where} has {self.n_rows} row(s); cross-validation needs at least 2 (and at least as "
                            "many as folds).")
        if "X" in self.components:
            _check_features(where, self.components["X"], self.meta.get("feature_names"))
        if "y" in self.components:
            _check_classes(where, self.components["y"])
        if "M" in self.components:
            M = self.components["M"]
            values = M.data if sp.issparse(M) else np.asarray(M)
            if not sp.issparse(M) and values.dtype.kind in "fc" and np.isnan(values).all():
                raise DataError(f"{where}: the matrix M has no observed entry (every value is NaN).")

    @property
    def hash(self) -> str:
        if self._hash is None:
            self._hash = content_hash(self.components, self.meta.get("hash_meta", {}))
        return self._hash

    def describe(self) -> dict[str, Any]:
        """Component shapes and, for label matrices, cardinality and density."""
        info: dict[str, Any] = {"name": self.name, "hash": self.hash[:16]}
        for key, value in sorted(self.components.items()):
            shape = getattr(value, "shape", None)
            kind = "sparse" if sp.issparse(value) else type(value).__name__
            info[key] = f"{'×'.join(map(str, shape))} {kind}" if shape is not None else f"{len(value)} items"
        Y = self.components.get("Y")
        if Y is not None:
            Yd = np.asarray(Y, dtype=float)
            info["label cardinality"] = round(float(np.nansum(Yd) / Yd.shape[0]), 3)
            info["label density"] = round(float(np.nanmean(Yd)), 3)
        for key in ("source", "notes", "imputed"):
            value = self.meta.get(key)
            if value:
                info[key] = "; ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
        return info


def content_hash(components: dict[str, Any], extra: dict | None = None) -> str:
    h = hashlib.sha256()
    for key in sorted(components):
        value = components[key]
        h.update(key.encode())
        _update(h, value)
    if extra:
        h.update(repr(sorted(extra.items())).encode())
    return h.hexdigest()


def _update(h, value) -> None:
    if sp.issparse(value):
        value = value.tocsr()
        value.sort_indices()
        h.update(f"sparse{value.shape}{value.dtype}".encode())
        for part in (value.data, value.indices, value.indptr):
            h.update(np.ascontiguousarray(part).tobytes())
    elif isinstance(value, np.ndarray):
        h.update(f"array{value.shape}{value.dtype}".encode())
        if value.dtype == object:
            h.update(repr(value.tolist()).encode())
        else:
            h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (list, tuple)):
        h.update(f"list{len(value)}".encode())
        h.update("\x00".join(map(str, value)).encode())
    else:
        h.update(repr(value).encode())


def _check_features(where: str, X, names=None) -> None:
    if getattr(X, "ndim", 2) != 2:
        raise DataError(f"{where}: features X must be a 2-D matrix (rows × features), got shape {np.shape(X)}.")
    values = X.data if sp.issparse(X) else np.asarray(X)
    if values.dtype.kind not in "fiub":
        raise DataError(f"{where}: features X must be numeric, got dtype {values.dtype}.")
    if X.shape[1] == 0:
        raise DataError(f"{where} has no feature columns (X is {X.shape[0]}×0); every column was taken as a label "
                        "or dropped.")
    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        dense = np.asarray(X.toarray() if sp.issparse(X) else X)
        empty = np.flatnonzero(np.isnan(dense).all(axis=0))
        if empty.size:
            j = int(empty[0])
            label = f" ('{names[j]}')" if names and j < len(names) else ""
            raise DataError(f"{where}: feature column {j}{label} has no values at all (all missing); remove that "
                            "column from the file.")
        bad = np.argwhere(~np.isfinite(dense))[0]
        raise DataError(
            f"{where}: features X contain NaN or inf (first at row {bad[0]}, column {bad[1]}); "
            "impute or drop them before use (for example with --impute mean on import)."
        )


def check_labels(dataset: "Dataset", examples: bool = True) -> None:
    """A multi-label matrix Y as malt's tasks read it: 2-D, values 0, 1 or NaN (unknown), some known
    and some positive value, no label unknown in every row; with ``examples`` (a user's file) every
    label also has a positive and a negative example."""
    if "Y" not in dataset:
        return
    _check_label_matrix(f"Dataset '{dataset.name}'", dataset["Y"], dataset.meta.get("label_names"))
    if examples:
        _check_label_examples(dataset)


def _check_label_matrix(where: str, Y, names=None) -> None:
    if sp.issparse(Y):
        Y = Y.toarray()
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[1] == 0:
        raise DataError(f"{where}: the label matrix Y must be 2-D with at least one label, got shape {Y.shape}.")
    if Y.dtype.kind not in "fiub":
        raise DataError(f"{where}: labels Y must be 0/1 numbers, got dtype {Y.dtype}.")
    if names is not None and len(names) != Y.shape[1]:
        raise DataError(f"{where}: {len(names)} label names for {Y.shape[1]} label columns.")
    Y = Y.astype(float, copy=False)
    bad = ~np.isnan(Y) & (Y != 0) & (Y != 1)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise DataError(f"{where}: label {_label(j, names)} has the value {Y[i, j]:g} (row {i}); labels must be 0, "
                        "1 or NaN (unknown).")
    known = ~np.isnan(Y)
    if not known.any():
        raise DataError(f"{where}: every label value is unknown (NaN); there is nothing to learn or score.")
    if not np.nansum(Y):
        raise DataError(f"{where}: no label is positive in any row (Y is all 0); check the label columns.")
    unknown_cols = np.flatnonzero(~known.any(axis=0))
    if unknown_cols.size:
        raise DataError(f"{where}: label {_label(int(unknown_cols[0]), names)} is unknown (NaN) in every row; "
                        "remove it.")


def _check_label_examples(dataset: "Dataset") -> None:
    """Every label positive in some row and negative in another (a label with no example cannot be
    learned, and every metric of it is undefined)."""
    Y = dataset["Y"]
    Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=float)
    names = dataset.meta.get("label_names")
    for j in range(Y.shape[1]):
        column = Y[:, j]
        if not np.any(column == 1):
            raise DataError(f"Dataset '{dataset.name}': label {_label(j, names)} has no positive example; remove "
                            "that label (or check the label columns).")
        if not np.any(column == 0):
            raise DataError(f"Dataset '{dataset.name}': label {_label(j, names)} is positive in every row (no "
                            "negative example); remove that label.")


def _check_classes(where: str, y) -> None:
    y = np.asarray(y)
    if y.ndim != 1:
        raise DataError(f"{where}: class ids y must be a vector, got shape {y.shape}.")
    if y.dtype.kind not in "iu":
        raise DataError(f"{where}: class ids y must be integers 0..C-1, got dtype {y.dtype}.")
    if y.min() < 0:
        raise DataError(f"{where}: class ids y must be 0..C-1, found {y.min()}.")
    present = np.unique(y)
    if present.size < 2:
        raise DataError(f"{where}: every row has the same class ({present[0]}); classification needs at least two "
                        "classes.")
    if present.size != int(present[-1]) + 1:
        gap = sorted(set(range(int(present[-1]) + 1)) - set(present.tolist()))
        raise DataError(f"{where}: class id {gap[0]} has no example (ids must be 0..C-1, each used); renumber "
                        "the classes.")


def _label(j: int, names=None) -> str:
    return f"'{names[j]}'" if names and j < len(names) else f"column {j}"
