"""The ratings task's ranking protocol: every algorithm ranks the same candidates (all columns a
row did not rate in training), ties are broken at random, and stored top lists rescore any k."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from malt.datasets.dataset import Dataset
from malt.splits import Prediction
from malt.tasks import get_task
from malt.tasks.ratings import ranking_at_k, top_candidates


@pytest.mark.timeout(30)
def test_ranking_at_k_brute_force():
    rng = np.random.default_rng(4)
    M, N, k = 6, 15, 4
    R = rng.integers(1, 6, (M, N)).astype(float)
    trm = rng.random((M, N)) < 0.4
    train = sp.coo_matrix(np.where(trm, R, 0))
    tr, tc = np.nonzero(~trm)
    S = rng.standard_normal((M, N))
    top = top_candidates(train, np.arange(M), S, 10)
    p, r = ranking_at_k(top, np.arange(M), tr, tc, R[tr, tc], k, 4.0)
    ps, rs = [], []
    for i in range(M):
        cand = [j for j in range(N) if not trm[i, j]]
        rel = {j for j in cand if R[i, j] > 4}
        if not rel:
            continue
        best = sorted(cand, key=lambda j: -S[i, j])[:k]
        hits = len(rel & set(best))
        ps.append(hits / k)
        rs.append(hits / len(rel))
    assert np.isclose(p, np.mean(ps)) and np.isclose(r, np.mean(rs))


@pytest.mark.timeout(30)
def test_ranking_at_k_breaks_ties_at_random_not_by_column_index():
    M, N, k = 400, 50, 5
    train = sp.coo_matrix((M, N))
    rows, cols = np.repeat(np.arange(M), k), np.tile(np.arange(k), M)  # the first k columns relevant
    top = top_candidates(train, np.arange(M), np.zeros((M, N)), k)
    p, r = ranking_at_k(top, np.arange(M), rows, cols, np.full(rows.size, 5.0), k, 4.0)
    # constant scores: the top k is a random k of N, so the expected recall is k / N (index order gives 1)
    assert abs(r - k / N) < 4 * np.sqrt(k / N / (M * k))


@pytest.mark.timeout(30)
def test_every_algorithm_is_ranked_over_the_same_candidates_or_not_at_all():
    """Scoring only the test entries would rank a smaller candidate set and inflate precision (issue
    23: the same predictions scored 6x higher); without full score rows there is no ranking metric."""
    rng = np.random.default_rng(0)
    R = sp.random(30, 40, density=0.3, random_state=2, format="coo")
    R.data = np.ceil(R.data * 5)
    data = Dataset("tiny", {"ratings": R})
    task = get_task("ratings")
    options = task.Params(k=5)
    split = task.split(data, options, 0)
    truth = np.asarray(R.tocsr()[split.test_rows, split.test_cols]).ravel()
    oracle_values = Prediction(values=truth)
    scores = task.score(data, options, split, oracle_values)
    assert scores["rmse"] == 0 and np.isnan(scores["precision@k"]) and np.isnan(scores["recall@k"])
    rows = np.unique(split.test_rows)
    full = np.zeros((rows.size, 40))
    full[np.searchsorted(rows, split.test_rows), split.test_cols] = truth + rng.random(truth.size) * 0.1
    ranked = task.score(data, options, split, Prediction(values=truth, scores=full))
    packed = task.pack(split, Prediction(values=truth, scores=full), options)
    assert packed["top"].shape == (rows.size, 40)  # at least k, up to the 100 kept, never more than the columns
    assert 0 < ranked["precision@k"] <= 1 and 0 < ranked["recall@k"] <= 1


@pytest.mark.timeout(30)
def test_rmse_scores_estimates_clipped_to_the_training_range():
    """Hand-computed: an estimate above the highest training rating counts as that rating, one below
    the lowest as the lowest; estimates inside the range are scored as they are."""
    R = sp.coo_matrix(np.array([[1.0, 2.0, 5.0, 3.0], [4.0, 1.0, 2.0, 5.0]]))
    data = Dataset("tiny", {"ratings": R})
    task = get_task("ratings")
    options = task.Params(train_fraction=0.5)
    split = task.split(data, options, 0)
    truth = np.asarray(R.tocsr()[split.test_rows, split.test_cols]).ravel()
    low, high = split.train.data.min(), split.train.data.max()
    raw = np.where(np.arange(truth.size) % 2 == 0, 9.0, -3.0)
    scores = task.score(data, options, split, Prediction(values=raw))
    clipped = np.where(raw > 0, high, low)
    assert np.isclose(scores["rmse"], np.sqrt(np.mean((truth - clipped) ** 2)))
    assert np.isclose(scores["mae"], np.mean(np.abs(truth - clipped)))


@pytest.mark.timeout(30)
def test_relevance_defaults_to_one_below_the_highest_rating():
    """On a 0.5-4 scale (FilmTrust) a fixed "> 4" would leave no relevant rating; the default is
    "> 3" there and "> 4" on a 1-5 scale, also when one rating lies off the scale (FilmTrust has three
    above 4). Oracle scores rank the relevant test ratings first."""
    rng = np.random.default_rng(1)
    for scale in (np.arange(1, 9) / 2, np.arange(1.0, 6.0)):
        R = sp.random(40, 60, density=0.6, random_state=3, format="coo")
        R.data = rng.choice(scale, R.nnz)
        R.data[7] = 8.0
        data = Dataset("tiny", {"ratings": R})
        task = get_task("ratings")
        options = task.Params(k=5)
        split = task.split(data, options, 0)
        truth = np.asarray(R.tocsr()[split.test_rows, split.test_cols]).ravel()
        rows = np.unique(split.test_rows)
        full = np.full((rows.size, 60), -1.0)
        full[np.searchsorted(rows, split.test_rows), split.test_cols] = (truth > scale.max() - 1) & (truth <= 5)
        got = task.score(data, options, split, Prediction(values=truth, scores=full))
        explicit = task.score(data, task.Params(k=5, relevant=float(scale.max() - 1)), split,
                              Prediction(values=truth, scores=full))
        fixed_four = task.score(data, task.Params(k=5, relevant=4.0), split, Prediction(values=truth, scores=full))
        assert got == explicit and got["recall@k"] > 0.9
        assert np.isnan(fixed_four["recall@k"]) == (scale.max() == 4)


@pytest.mark.timeout(30)
def test_top_candidates_in_blocks_equal_one_pass(monkeypatch):
    """Ranking in row blocks (bounded memory) breaks ties exactly as one pass over all rows would."""
    from malt.tasks import ratings

    rng = np.random.default_rng(1)
    train = sp.random(700, 90, density=0.2, random_state=1, format="coo")
    rows = np.arange(0, 700, 2)
    S = np.round(rng.standard_normal((rows.size, 90)), 1)  # many ties
    blocked = top_candidates(train, rows, S, 30)
    monkeypatch.setattr(ratings, "BLOCK_ROWS", 10**9)
    assert np.array_equal(blocked, top_candidates(train, rows, S, 30))


def test_row_scores_computed_by_blocks_rank_like_the_dense_array(monkeypatch):
    """A `RowScores` (scores computed a block of rows at a time, issue 36) gives the stored top lists and the
    metrics of the dense array it stands for, never asking for more than one block of rows at once."""
    import malt.tasks.ratings as ratings
    from malt.splits import RowScores

    monkeypatch.setattr(ratings, "BLOCK_ROWS", 4)
    task, options, split = tiny_ratings_split(seed=5)
    rows = np.unique(split.test_rows)
    table = np.random.default_rng(1).random((30, 40))
    asked = []

    def score(ids):
        asked.append(len(ids))
        return table[ids]

    values = np.full(split.test_rows.size, 3.0)
    dense = task.pack(split, Prediction(values=values, scores=table[rows]), options)
    lazy = task.pack(split, Prediction(values=values, scores=RowScores(rows, 40, score)), options)
    np.testing.assert_array_equal(lazy["top"], dense["top"])
    assert max(asked) == 4 and sum(asked) == rows.size
    with pytest.raises(ValueError, match="shape"):
        task.pack(split, Prediction(values=values, scores=RowScores(rows[:-1], 40, score)), options)


def tiny_ratings_split(seed: int):
    """The ratings task, k=5, and fold 0 of a 30 × 40 rating matrix with 30 % of its entries rated 1-5."""
    R = sp.random(30, 40, density=0.3, random_state=seed, format="coo")
    R.data = np.ceil(R.data * 5)
    task = get_task("ratings")
    options = task.Params(k=5)
    return task, options, task.split(Dataset("tiny", {"ratings": R}), options, 0)
