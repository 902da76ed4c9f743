"""The `ratings` task: predict held-out entries of a sparse rating matrix (Koyejo, Lee & Ghosh 2014, §5).

Each run draws a fresh random split of the observed ratings. With ``new_rows=False`` a
``train_fraction`` of each dataset's observed entries is kept for training and the rest is
predicted; with ``new_rows=True`` whole rows (new users) are held out (``1 - train_fraction`` of the
rows) and all their ratings are predicted from side information only.

Metrics: RMSE and MAE at the test entries, of the estimates clipped to the range of the training
ratings for every algorithm alike (as Surprise clips to the rating scale: no model is charged for an
estimate off the scale that any user of it would clip); precision@k and recall@k per test row,
averaged over test rows with at least one relevant test rating (relevant = rating > ``relevant``; by
default one below the top of the dataset's scale, its 99.9th percentile rating, which ignores a few
out-of-scale entries such as FilmTrust's three ratings above 4: "> 4" on a 1–5 scale, "> 3" on
FilmTrust's 0.5–4). The candidates of a row are every column it did not rate in training — the same
set for every algorithm (the paper's protocol), so a column of a results table means one thing.

What an algorithm returns: ``Prediction.values`` (n_test,) estimates at (test_rows, test_cols), and
``Prediction.scores``, a dense array of shape (len(np.unique(test_rows)), n_cols) whose i-th row
scores every column for the i-th smallest test row id (memory: one row per distinct test row, never
n_rows × n_cols unless every row is tested), or a `malt.splits.RowScores` computing them a block of rows
at a time (the large matrices, where nearly every row is tested). An algorithm without ``scores`` gets no ranking metrics
(NaN), never a ranking over a smaller candidate set. Stored per unit: the estimates and each test
row's top ``max(k, 100)`` candidates, so k up to that length is rescored without refitting.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from typing import TYPE_CHECKING

from malt.tasks import metrics
from malt.errors import DataError
from malt.params import Interval, Options, Params, Size, param
from malt.splits import Prediction, RatingsSplit, RowScores
from malt.tasks.base import Metric, Setting, Task, as_array, register_task, subkey_rng

if TYPE_CHECKING:
    import scipy.sparse as sp

STORED_TOP = 100
"""Candidates kept per test row (at least k): rescoring with any k up to this needs no refit."""
BLOCK_ROWS = 256
"""Test rows ranked at once by `top_candidates` (its working memory: a few copies of a block)."""


@dataclass(frozen=True, kw_only=True)
class RatingsParams(Params):
    train_fraction: float = param(0.7, "fraction of observed ratings (or of rows, with new_rows) used for training",
                                  Interval(0, 1, "neither"))
    runs: int = param(5, "number of random train/test splits", Interval(1, None), count=True)
    new_rows: bool = param(False, "hold out whole rows (new users), predicted from side information only",
                           Options(False, True))
    k: int = param(20, "list length of precision@k and recall@k", Interval(1, None), scoring=True)
    relevant: float | None = param(None, "a test rating is relevant when it is > this value (default: the top of "
                                         "the dataset's scale, its 99.9th percentile rating, minus 1)",
                                   Interval(None, None), scoring=True)
    seed: int = param(0, "seed of the random splits", Interval(0, None), repetition=True)


def top_candidates(train: "sp.spmatrix", rows: np.ndarray, scores: np.ndarray, length: int) -> np.ndarray:
    """(len(rows), length) column ids of each row's best-scored columns among those it did not rate in
    training, best first. Tied scores (a new row with no side information predicts one constant) are
    broken in a seeded random order per row, not by column index, which would hand such rows the
    catalogue's first items. Cost O(rows · cols · log cols); working memory a block of BLOCK_ROWS rows
    beside ``scores`` (a whole copy per sort key made CiaoDVD's 17,615 × 16,121 need ~4× its scores)."""
    import scipy.sparse as sp

    n_cols = scores.shape[1]
    seen = sp.csr_matrix(train)[rows]
    rng = np.random.default_rng(0)  # one stream drawn block by block: the same ties as one whole draw
    top = np.empty((len(rows), min(length, n_cols)), dtype=np.int64)
    for start in range(0, len(rows), BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, len(rows))
        S = np.array(scores[start:stop], dtype=float, copy=True)
        S[np.isnan(S)] = -np.inf
        S[seen[start:stop].nonzero()] = -np.inf
        tiebreak = rng.random(S.shape)
        top[start:stop] = np.lexsort((tiebreak, -S), axis=1)[:, :top.shape[1]]
    return top


def scale_top(ratings: np.ndarray) -> float:
    """The top of a rating scale: the 99.9th percentile rating (a rating the data holds), so that a few
    out-of-scale entries (FilmTrust: 5.5, 6.5 and 8 among 35,494 ratings of 0.5-4) do not move it."""
    return float(np.quantile(ratings, 0.999, method="lower"))


def ranking_at_k(top: np.ndarray, rows: np.ndarray, test_rows, test_cols, truth, k: int, relevant: float):
    """Mean precision@k and recall@k over test rows with a relevant test rating (NaN if none).

    top : (len(rows), >= k) candidate column ids per distinct test row, best first."""
    import scipy.sparse as sp

    rel = truth > relevant
    if not rel.any():
        return float("nan"), float("nan")
    pos = np.searchsorted(rows, test_rows)
    n_rel = np.bincount(pos[rel], minlength=len(rows))
    width = int(max(top.max(initial=0), test_cols.max(initial=0))) + 1
    hit = sp.csr_matrix((np.ones(rel.sum()), (pos[rel], test_cols[rel])), shape=(len(rows), width))
    shown = top[:, :min(k, top.shape[1])]
    hits = np.asarray(hit[np.arange(len(rows))[:, None], shown].sum(axis=1)).ravel()
    ok = n_rel > 0
    return float(np.mean(hits[ok] / k)), float(np.mean(hits[ok] / n_rel[ok]))


@register_task
class RatingsTask(Task):
    """Predict held-out ratings of a sparse matrix (known rows, or new rows from side information)."""

    name = "ratings"
    Params = RatingsParams
    requires = ("ratings",)
    metrics = (
        Metric("rmse", "RMSE", "lower", version="2",
               conventions="over the test ratings, estimates clipped to the training ratings' range"),
        Metric("mae", "MAE", "lower", version="2",
               conventions="over the test ratings, estimates clipped to the training ratings' range"),
        Metric("precision@k", "Precision@{k}", "higher", options=("k",), version="3",
               conventions="candidates: every column the row did not rate in training; averaged over test rows "
                           "with a relevant rating (> `relevant`, by default the top of the scale minus 1); ties "
                           "broken in a seeded random order; NaN without scores"),
        Metric("recall@k", "Recall@{k}", "higher", options=("k",), version="3",
               conventions="as precision@k, divided by the row's number of relevant test ratings"),
    )
    settings = (Setting("new_rows", "New rows"), Setting("train_fraction", "Training fraction", "%", 100.0),
                Setting("k", "List length k"))

    @classmethod
    def test_train_ratio(cls, options):
        """Each run keeps a random ``train_fraction`` of the ratings (or rows) for training."""
        train = float(options.get("train_fraction", RatingsParams().train_fraction))
        return (1.0 - train) / train if 0 < train < 1 else None

    def check(self, dataset, params):
        if "ratings" not in dataset:
            raise DataError(f"The ratings task needs a sparse 'ratings' component, which dataset '{dataset.name}' "
                            f"lacks (it has {', '.join(sorted(dataset.components))}).")
        R = self._coo(dataset)
        if R.nnz < 2:
            raise DataError(f"Dataset '{dataset.name}' has {R.nnz} rating(s); there is nothing to split.")
        if not np.all(np.isfinite(R.data)):
            raise DataError(f"Dataset '{dataset.name}': ratings contain NaN or inf.")

    def n_folds(self, dataset, params):
        return params.runs

    def _coo(self, dataset):
        import scipy.sparse as sp

        given = dataset["ratings"]
        R = sp.coo_matrix(given)  # shares a COO input's arrays ...
        R.has_canonical_format = bool(getattr(given, "has_canonical_format", False))  # ... and its sortedness
        R.sum_duplicates()  # a copy only when the input is not known to be sorted without repeats
        return R

    def sizes(self, dataset, params):
        R = self._coo(dataset)
        rows, cols = R.shape
        what = f"of the rating matrix of '{dataset.name}'"
        out = {"rows": Size(rows, f"the number of rows {what}"), "cols": Size(cols, f"the number of columns {what}"),
               "min_side": Size(min(rows, cols), f"the smaller side {what}")}
        if params.new_rows:  # held-out rows leave a training count that varies by split: the fewest
            train = min(R.nnz - int(self._test_mask(R, params, fold).sum()) for fold in range(params.runs))
            what = f"the number of training ratings in the smallest split of '{dataset.name}' (new_rows)"
        else:
            train = R.nnz - int(round((1 - params.train_fraction) * R.nnz))
            what = f"the number of training ratings of a split of '{dataset.name}'"
        out["inner_items"] = Size(train, what)
        return out

    def _test_mask(self, R, params, fold) -> np.ndarray:
        """(nnz,) bool: the ratings split ``fold`` holds out. Cost: O(nnz)."""
        rng = subkey_rng("ratings", params.seed, fold, params.train_fraction, params.new_rows)
        if params.new_rows:
            rows = np.unique(R.row)
            n_test = max(1, int(round((1 - params.train_fraction) * rows.size)))
            return np.isin(R.row, rng.choice(rows, n_test, replace=False))
        test_mask = np.zeros(R.nnz, dtype=bool)
        test_mask[rng.choice(R.nnz, int(round((1 - params.train_fraction) * R.nnz)), replace=False)] = True
        return test_mask

    def split(self, dataset, params, fold):
        R = self._coo(dataset)
        test_mask = self._test_mask(R, params, fold)
        tr = ~test_mask
        import scipy.sparse as sp

        train = sp.coo_matrix((R.data[tr], (R.row[tr], R.col[tr])), shape=R.shape)
        train.has_canonical_format = True  # a subset of sorted, distinct positions, in order
        return RatingsSplit(train, R.row[test_mask], R.col[test_mask], dataset.get("row_graph"),
                            dataset.get("col_graph"), dataset.get("row_features"), dataset.get("col_features"),
                            bool(params.new_rows), fold)

    def pack(self, split, prediction: Prediction, params):
        values = None if prediction.values is None else np.ravel(prediction.values)
        out = {"values": as_array(values, "values", (len(split.test_rows),)).astype(np.float64)}
        if prediction.scores is not None:
            rows = np.unique(split.test_rows)
            n_cols = split.train.shape[1]
            scores = prediction.scores
            if not isinstance(scores, RowScores):  # a RowScores is computed block by block in top_candidates
                scores = as_array(scores, "scores", (rows.size, n_cols), finite=False)
            elif scores.shape != (rows.size, n_cols):
                raise ValueError(f"the algorithm returned scores of shape {scores.shape}, expected {(rows.size, n_cols)}")
            top = top_candidates(split.train, rows, scores, max(params.k, STORED_TOP))
            out["top"] = top.astype(np.uint16 if n_cols < 65536 else np.uint32)
        return out

    def can_score(self, packed, params):
        """Stored lists serve any k up to their length."""
        if "top" not in packed:
            return True
        return params.k <= packed["top"].shape[1]

    def score_packed(self, dataset, params, split, packed):
        R = self._coo(dataset).tocsr()
        truth = np.asarray(R[split.test_rows, split.test_cols]).ravel()
        seen = split.train.data
        est = np.clip(np.asarray(packed["values"], dtype=float), seen.min(), seen.max())
        out = {"rmse": metrics.rmse(truth, est), "mae": metrics.mae(truth, est)}
        if "top" in packed:
            rows = np.unique(split.test_rows)
            relevant = scale_top(R.data) - 1.0 if params.relevant is None else params.relevant
            p, r = ranking_at_k(packed["top"].astype(np.int64), rows, split.test_rows, split.test_cols, truth,
                                params.k, relevant)
        else:
            p = r = float("nan")
        out["precision@k"], out["recall@k"] = p, r
        return out
