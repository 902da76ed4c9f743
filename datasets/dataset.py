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
        """Reject data no algorithm can use: NaN/inf in features, mismatched row counts."""
        X = self.components.get("X")
        if X is not None:
            values = X.data if sp.issparse(X) else np.asarray(X)
            if values.dtype.kind not in "fiub":
                raise DataError(f"Dataset '{self.name}': features X must be numeric, got dtype {values.dtype}.")
            if not np.all(np.isfinite(values)):
                bad = np.argwhere(~np.isfinite(np.asarray(X.toarray() if sp.issparse(X) else X)))[0]
                raise DataError(
                    f"Dataset '{self.name}': features X contain NaN or inf (first at row {bad[0]}, column {bad[1]}); "
                    "impute or drop them before use (for example with --impute mean on import)."
                )
        rows = {k: v.shape[0] for k, v in self.components.items()
                if k in ("X", "Y", "y", "docs") and hasattr(v, "shape")}
        if len(set(rows.values())) > 1:
            raise DataError(f"Dataset '{self.name}': components disagree on the number of rows: {rows}.")

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
