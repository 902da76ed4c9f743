"""What an algorithm sees (a Split, one per task) and what it returns (a Prediction).

Every index in a split (``train_index``, ``test_index``, ``rows``) refers to rows of the dataset,
so an algorithm can ask the run context for a kernel or kNN graph of the whole dataset once and
slice it for the fold; the context caches it for every fold and algorithm.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # annotations only: reading results never needs scipy.sparse
    import scipy.sparse as sp


@dataclass(frozen=True)
class MultilabelSplit:
    """Predict whole label rows of unseen points.

    X_train : (n_train, d) features, dense ndarray or CSR matrix
    Y_train : (n_train, L) float array of 1.0 / 0.0, NaN where a training label is unknown
    X_test : (n_test, d)
    train_index, test_index : dataset rows of the two parts
    """

    X_train: Any
    Y_train: np.ndarray
    X_test: Any
    train_index: np.ndarray
    test_index: np.ndarray
    fold: int = 0


@dataclass(frozen=True)
class MissingSplit:
    """Recover hidden entries of a matrix.

    M : (n, m) float matrix; NaN at every entry the algorithm must not see (hidden ones included).
        For label matrices the entries are the truncated log-odds ±c (``kind='labels'``).

    hidden : (n, m) bool, the entries that are scored (a subset of the NaN entries)
    X : (n, d) row features or None (the side information K1 is built from)
    rows : dataset rows of M's rows (``np.arange(n)`` for the whole matrix)
    kind : 'labels' (scored by sign) or 'real' (scored by RMSE/MAE)
    """

    M: np.ndarray
    hidden: np.ndarray
    X: Any = None
    rows: np.ndarray | None = None
    kind: str = "labels"
    fold: int = 0


@dataclass(frozen=True)
class SemiSupervisedSplit:
    """Transductive classification on a graph over all points.

    X : (n, d) features of every point (labelled and unlabelled)
    y : (n,) int class ids in 0..n_classes-1 for labelled points, -1 for unlabelled ones
    n_classes : number of classes
    evaluate : (n_eval,) the unlabelled points that are scored
    """

    X: Any
    y: np.ndarray
    n_classes: int
    evaluate: np.ndarray
    fold: int = 0


@dataclass(frozen=True)
class TopicsSplit:
    """Fit a topic model on training documents and score held-out ones.

    docs_train, docs_test : CSR (n_docs, V) word counts
    vocab : list of V words
    labels_train, labels_test : class of each document, or None
    """

    docs_train: sp.csr_matrix
    docs_test: sp.csr_matrix
    vocab: list
    labels_train: np.ndarray | None
    labels_test: np.ndarray | None
    train_index: np.ndarray
    test_index: np.ndarray
    fold: int = 0


@dataclass(frozen=True)
class RatingsSplit:
    """Predict held-out entries of a sparse rating matrix.

    train : COO (n_rows, n_cols) observed training ratings (zeros are not ratings)
    test_rows, test_cols : entries to predict
    row_graph, col_graph : optional (n_rows, n_rows) / (n_cols, n_cols) sparse side graphs
    new_rows : the test rows have no training ratings
    """

    train: sp.coo_matrix
    test_rows: np.ndarray
    test_cols: np.ndarray
    row_graph: Any = None
    col_graph: Any = None
    row_features: Any = None
    col_features: Any = None
    new_rows: bool = False
    fold: int = 0


class RowScores:
    """Ranking scores of many rows computed a block of rows at a time — a ratings `Prediction`'s ``scores``
    when len(rows) × n_cols floats need not exist at once (100,000 test users × 20,000 items would be 16 GB):
    ``RowScores(rows, n_cols, score)`` with ``score(row_ids)`` returning their (len(row_ids), n_cols) scores.
    A slice of positions computes that block (the ratings task ranks 256 rows at a time); any other index,
    and ``np.asarray``, computes the whole array."""

    def __init__(self, rows, n_cols: int, score):
        self.rows = np.asarray(rows)
        self.shape = (self.rows.size, int(n_cols))
        self._score = score

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key):
        if isinstance(key, slice):
            return np.asarray(self._score(self.rows[key]), dtype=float)
        return np.asarray(self)[key]

    def __array__(self, dtype=None, copy=None):
        out = np.asarray(self._score(self.rows), dtype=float)
        return out if dtype is None else out.astype(dtype)


@dataclass(frozen=True)
class RecoverySplit:
    """Two views of every row, nothing held out: the algorithm reports the latent structure it finds.

    X : (n, d1), Y : (n, d2) real
    Answer: ``extras['K']`` the number of shared components found, ``extras['W']`` (d1 + d2, K) the
    estimated loadings (rows: X's dimensions, then Y's).
    """

    X: np.ndarray
    Y: np.ndarray
    fold: int = 0


@dataclass
class Prediction:
    """An algorithm's answer for one split. Which fields a task reads:

    multilabel : ``scores`` (n_test, L), higher = more likely positive, and ``labels`` (n_test, L) 0/1
    missing : ``values`` (n, m) estimates (read at the hidden entries); optional ``variance``
    semisupervised : ``labels`` (n,) class ids and optionally ``scores`` (n, n_classes)
    ratings : ``values`` (n_test,) at (test_rows, test_cols); ``scores`` optional full rows for ranking
    topics : ``extras`` as documented by the topics task
    recovery : ``extras['K']`` and ``extras['W']`` (see RecoverySplit)

    ``diagnostics`` holds what the run learned about itself (iterations, bound trace, inferred
    dimensionality); scalars and short lists, stored with the unit.
    """

    scores: np.ndarray | None = None
    labels: np.ndarray | None = None
    values: np.ndarray | None = None
    variance: np.ndarray | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
