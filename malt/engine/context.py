"""The run context: everything an algorithm may ask for besides its split and parameters.

Expensive artifacts of a dataset (distance matrices, kernels, kNN graphs) are content-addressed
by the dataset's hash and a spec, computed once and shared by every fold and algorithm. In the
engine the cache is backed by the repository; on plain arrays (tests, notebooks) it is a dict::

    ctx = Context.for_arrays(X, seed=0)
    K1 = ctx.kernel("rbf")            # (n, n) over all rows of X
"""
from __future__ import annotations

import hashlib
import time
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from malt.numerics import linalg
from malt.errors import DataError
from malt.params import canonical_json

PRODUCER = "malt.context@2"
"""The producer of the context's shared artifacts (features, distances, kernels): every algorithm
that asks for the same one shares it."""


class MemoryCache:
    """A dict-backed artifact cache over an optional repository cache; also the layer that records
    what a worker computed (with how long it took, so the driver can decide whether storing it pays)
    and which stored artifacts it read."""

    def __init__(self, backing=None):
        self._items: dict[str, Any] = {}
        self.meta: dict[str, dict] = {}
        self.backing = backing
        self.new_keys: list[str] = []
        self.hits: list[str] = []
        self.problems: list[tuple[str, str]] = []  # (key, what is wrong) of damaged stored entries

    def get(self, key: str):
        if key in self._items:
            if key not in self.meta:
                self.hits.append(key)
            return self._items[key]
        if self.backing is not None:
            found: list[str] = []
            value = self.backing.get(key, found)
            self.problems += [(key, text) for text in found]
            if value is not None:
                self._items[key] = value
                self.hits.append(key)
            return value
        return None

    def remember(self, key: str, value) -> None:
        """Keep an artifact another process computed (stored or not), as if read from the repository."""
        self._items.setdefault(key, value)

    def put(self, key: str, value, meta: dict | None = None) -> None:
        self._items[key] = value
        self.meta[key] = meta or {}
        self.new_keys.append(key)


class Context:
    """Per-unit services: rng, cached dataset artifacts, progress reporting."""

    def __init__(self, X=None, *, data_key: str = "arrays", seed: int = 0, cache=None,
                 progress: Callable[[float, str], None] | None = None, dataset=None, producer: str = ""):
        self.X = X
        self.dataset = dataset
        self.data_key = data_key
        self.producer = producer  # "name@version" of the running algorithm: the default artifact producer
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.cache = cache if cache is not None else MemoryCache()
        self._progress = progress

    @classmethod
    def for_arrays(cls, X=None, seed: int = 0) -> "Context":
        """A context over plain arrays with an in-memory cache (tests, notebooks)."""
        return cls(X, seed=seed)

    # ---- generic cache ---------------------------------------------------------------------
    def cached(self, name: str, spec: dict, compute: Callable[[], Any], *, producer: str | None = None):
        """Return the artifact ``name`` for ``spec`` of this dataset, computing it at most once.

        ``compute`` returns an ndarray, a scipy sparse matrix or a dict of ndarrays. ``spec`` must
        name every input the artifact depends on besides the dataset. ``producer`` ("module@version")
        is the code that computes it: a building block shared by several algorithms passes its own,
        so they share the artifact; by default it is the running algorithm's name and version, so a
        version bump never reuses an artifact computed by the older code.
        """
        producer = self.producer if producer is None else producer
        text = canonical_json(spec)
        key = hashlib.sha256(f"{self.data_key}|{producer}|{name}|{text}".encode()).hexdigest()[:32]
        value = self.cache.get(key)
        if value is None:
            start = time.perf_counter()
            value = compute()
            meta = {"name": name, "producer": producer, "spec": text, "data": self.data_key,
                    "compute_seconds": time.perf_counter() - start, "nbytes": _nbytes(value)}
            self.cache.put(key, value, meta)
        return value

    def progress(self, fraction: float, message: str = "") -> None:
        """Report how far the current unit is (0..1) and, optionally, what it is doing ("sweep 40/500")."""
        if self._progress is not None:
            self._progress(float(fraction), message)

    # ---- dataset artifacts -----------------------------------------------------------------
    def _features(self):
        if self.X is None:
            raise ValueError("this dataset has no feature matrix X, so no kernel or kNN graph can be built")
        return self.X

    def scaled_features(self, scale: str = "standardize", fit_rows: np.ndarray | None = None) -> np.ndarray:
        """Every row of X scaled with the statistics of ``fit_rows`` (the training rows of an inductive
        protocol) or of all rows (None: the transductive choice); see `linalg.scaling`."""
        return self.cached("features", {"scale": scale, "fit_rows": _rows_digest(fit_rows)},
                           lambda: np.asarray(linalg.standardize(self._features(), scale, fit_rows), dtype=float),
                           producer=PRODUCER)

    def sq_distances(self, scale: str = "standardize", fit_rows: np.ndarray | None = None) -> np.ndarray:
        """(n, n) squared Euclidean distances between all rows of the scaled features."""
        return self.cached("sq-distances", {"scale": scale, "fit_rows": _rows_digest(fit_rows)},
                           lambda: linalg.sq_dists(self.scaled_features(scale, fit_rows)), producer=PRODUCER)

    def kernel(self, kind: str = "rbf", width: float | str = "median", scale: str = "standardize",
               rows: np.ndarray | None = None, fit_rows: np.ndarray | None = None) -> np.ndarray:
        """Kernel over all dataset rows, the features scaled with ``fit_rows``' statistics (None: all
        rows) and the median-heuristic width taken over ``rows`` (None: all rows).

        kind : 'rbf' (exp(-d²/2w²)) or 'linear' (X Xᵀ of the scaled features)
        width : a positive float or 'median' (median pairwise distance)
        """
        digest = _rows_digest(fit_rows)
        if kind == "linear":
            return self.cached("kernel", {"kind": kind, "scale": scale, "fit_rows": digest},
                               lambda: self._linear(scale, fit_rows), producer=PRODUCER)
        if kind != "rbf":
            raise ValueError(f"unknown kernel kind {kind!r}; use 'rbf' or 'linear'")
        D2 = self.sq_distances(scale, fit_rows)
        w = linalg.median_width(D2 if rows is None else D2[np.ix_(rows, rows)]) if width == "median" else float(width)
        return self.cached("kernel", {"kind": kind, "width": round(w, 12), "scale": scale, "fit_rows": digest},
                           lambda: linalg.rbf_from_sq_dists(D2, w), producer=PRODUCER)

    def _linear(self, scale, fit_rows):
        Z = self.scaled_features(scale, fit_rows)
        return Z @ Z.T

    def knn(self, k: int, query: np.ndarray, among: np.ndarray, scale: str = "standardize",
            exclude_self: bool = True):
        """The k nearest rows of ``among`` for each row of ``query`` (dataset row indices), the features
        scaled with the statistics of ``among`` (the candidates are the training rows: a query row's
        own values never move the scale); the search is malt's one kNN builder, `malt.numerics.graphs`.

        Returns (indices (len(query), k) into dataset rows, distances). A query row that is also in
        ``among`` does not count as its own neighbour when ``exclude_self``.
        """
        from malt.numerics import graphs

        query, among = np.asarray(query), np.asarray(among)
        if k > len(among) - (1 if exclude_self else 0):
            raise DataError(f"Expected k <= number of candidate neighbours, but k = {k}, candidates = {len(among)}; "
                            "lower k")
        Z = self.scaled_features(scale, among)
        return graphs.neighbours(Z, k, query=query, among=among, exclude_self=exclude_self)


def _rows_digest(rows) -> str | None:
    if rows is None:
        return None
    rows = np.asarray(rows)
    if rows.dtype == bool:
        rows = np.flatnonzero(rows)
    return hashlib.sha256(np.ascontiguousarray(rows, dtype=np.int64).tobytes()).hexdigest()[:16]


def _nbytes(value) -> int:
    if sp.issparse(value):
        return int(sum(getattr(value, a).nbytes for a in ("data", "indices", "indptr", "row", "col")
                       if hasattr(value, a)))
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    return int(getattr(value, "nbytes", 0))
