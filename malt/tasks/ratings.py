"""The `ratings` task: predict held-out entries of a sparse rating matrix (Koyejo, Lee & Ghosh 2014, §5).

Each run draws a fresh random split of the observed ratings. With ``new_rows=False`` a
``train_fraction`` of each dataset's observed entries is kept for training and the rest is
predicted; with ``new_rows=True`` whole rows (new users) are held out (``1 - train_fraction`` of the
rows) and all their ratings are predicted from side information only.

Metrics: RMSE and MAE at the test entries; precision@k and recall@k per test row, averaged over test
rows with at least one relevant test rating (relevant = rating > ``relevant``). Candidates of a row
are all columns except those the row rated in training (the paper's protocol).

Prediction convention for ranking (memory-safe: one row per distinct test row, never n_rows × n_cols
unless every row is tested): ``Prediction.values`` (n_test,) holds estimates at
(test_rows, test_cols); ``Prediction.scores`` is optional and, when given, is a dense array of shape
(len(np.unique(test_rows)), n_cols) whose i-th row scores every column for the i-th smallest test
row id. Without ``scores`` the ranking metrics rank only the test entries of each row by ``values``
(and are then reported on that restricted candidate set).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from malt import metrics
from malt.errors import DataError
from malt.params import Interval, Options, Params, param
from malt.splits import Prediction, RatingsSplit
from malt.tasks.base import Task, describe_metric, register_task, subkey_rng

describe_metric("rmse", "RMSE", "lower")
describe_metric("mae", "MAE", "lower")
describe_metric("precision@k", "Precision@k", "higher")
describe_metric("recall@k", "Recall@k", "higher")


@dataclass(frozen=True, kw_only=True)
class RatingsParams(Params):
    train_fraction: float = param(0.7, "fraction of observed ratings (or of rows, with new_rows) used for training",
                                  Interval(0, 1, "neither"))
    runs: int = param(5, "number of random train/test splits", Interval(1, None))
    new_rows: bool = param(False, "hold out whole rows (new users), predicted from side information only",
                           Options(False, True))
    k: int = param(20, "list length of precision@k and recall@k", Interval(1, None))
    relevant: float = param(4.0, "a test rating is relevant when it is > this value", Interval(None, None))
    seed: int = param(0, "seed of the random splits", Interval(0, None))


def ranking_at_k(train: sp.coo_matrix, test_rows, test_cols, truth, scores_rows, scores, k, relevant):
    """Mean precision@k and recall@k over test rows that have a relevant test rating.

    scores : (len(scores_rows), n_cols) scores of every column for each row in ``scores_rows``;
    columns rated in training are excluded from the candidates. Tied scores (a new row with no side
    information predicts one constant) are broken in a seeded random order per row, not by column
    index, which would hand such rows the catalogue's first items.
    """
    rel = truth > relevant
    if not rel.any():
        return float("nan"), float("nan")
    pos = np.searchsorted(scores_rows, test_rows)
    n_rel = np.bincount(pos[rel], minlength=len(scores_rows))
    S = np.array(scores, dtype=float, copy=True)
    tr = train.tocsr()
    sub = tr[scores_rows]
    S[sub.nonzero()] = -np.inf
    kk = min(k, S.shape[1])
    tiebreak = np.random.default_rng(0).random(S.shape)
    top = np.lexsort((tiebreak, -S), axis=1)[:, :kk]  # by score, ties in a seeded random order per row
    hit = sp.csr_matrix((np.ones(rel.sum()), (pos[rel], test_cols[rel])), shape=S.shape)
    hits = np.asarray(hit[np.arange(S.shape[0])[:, None], top].sum(axis=1)).ravel()
    ok = n_rel > 0
    return float(np.mean(hits[ok] / k)), float(np.mean(hits[ok] / n_rel[ok]))


@register_task
class RatingsTask(Task):
    name = "ratings"
    Params = RatingsParams
    settings = ("new_rows", "train_fraction", "k")
    version = "2"  # ties in the top-k broken in random column order (v1: by column index)

    def check(self, dataset, params):
        if "ratings" not in dataset:
            raise DataError(f"The ratings task needs a sparse 'ratings' component, which dataset '{dataset.name}' "
                            f"lacks (it has {', '.join(sorted(dataset.components))}).")

    def n_folds(self, dataset, params):
        return params.runs

    def _coo(self, dataset):
        R = sp.coo_matrix(dataset["ratings"])
        R.sum_duplicates()
        return R

    def split(self, dataset, params, fold):
        R = self._coo(dataset)
        rng = subkey_rng("ratings", params.seed, fold, params.train_fraction, params.new_rows)
        if params.new_rows:
            rows = np.unique(R.row)
            n_test = max(1, int(round((1 - params.train_fraction) * rows.size)))
            test_mask = np.isin(R.row, rng.choice(rows, n_test, replace=False))
        else:
            test_mask = np.zeros(R.nnz, dtype=bool)
            test_mask[rng.choice(R.nnz, int(round((1 - params.train_fraction) * R.nnz)), replace=False)] = True
        tr = ~test_mask
        train = sp.coo_matrix((R.data[tr], (R.row[tr], R.col[tr])), shape=R.shape)
        return RatingsSplit(train, R.row[test_mask], R.col[test_mask], dataset.get("row_graph"),
                            dataset.get("col_graph"), dataset.get("row_features"), dataset.get("col_features"),
                            bool(params.new_rows), fold)

    def score(self, dataset, params, split, prediction: Prediction):
        R = self._coo(dataset).tocsr()
        truth = np.asarray(R[split.test_rows, split.test_cols]).ravel()
        est = None if prediction.values is None else np.asarray(prediction.values, dtype=float).ravel()
        if est is None or est.shape != truth.shape:
            raise ValueError(f"the algorithm returned values of shape {None if est is None else est.shape}, "
                             f"expected {truth.shape}")
        if not np.all(np.isfinite(est)):
            raise ValueError("the algorithm returned NaN or inf at test entries")
        out = {"rmse": metrics.rmse(truth, est), "mae": metrics.mae(truth, est)}
        urows = np.unique(split.test_rows)
        if prediction.scores is not None:
            S = np.asarray(prediction.scores, dtype=float)
            if S.shape != (urows.size, R.shape[1]):
                raise ValueError(f"scores must have shape {(urows.size, R.shape[1])} (distinct test rows × columns)")
            train = split.train
        else:  # rank the test entries of each row only
            S = np.full((urows.size, R.shape[1]), -np.inf)
            S[np.searchsorted(urows, split.test_rows), split.test_cols] = est
            train = sp.coo_matrix(R.shape)
        p, r = ranking_at_k(train, split.test_rows, split.test_cols, truth, urows, S, params.k, params.relevant)
        out["precision@k"], out["recall@k"] = p, r
        return out
