"""The shared inner-CV model selection: folds, candidates, the choice."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from malt.params import Interval, param
from malt.numerics.selection import InnerCVParams, candidates, halving, holdout_ids, inner_fold_ids, select


@dataclass(frozen=True, kw_only=True)
class RidgeParams(InnerCVParams):
    alpha: float = param(1.0, "ridge penalty", Interval(0, None, "neither"))
    alpha_grid: tuple[float, ...] = param((0.01, 1.0, 100.0), "candidates for alpha", Interval(0, None, "neither"))


@pytest.mark.timeout(30)
def test_stratified_fold_ids_are_balanced_and_cover_every_class():
    y = np.repeat([0, 1, 2], [10, 7, 5])
    ids = inner_fold_ids(len(y), 5, np.random.default_rng(0), strata=y)
    assert sorted(np.bincount(ids)) == [4, 4, 4, 5, 5]
    for c in range(3):
        assert len(set(ids[y == c])) == 5  # every class with >= 5 members reaches every fold
    assert inner_fold_ids(3, 5, np.random.default_rng(0)).max() == 2  # folds capped at n
    h = holdout_ids(100, 0.1, np.random.default_rng(0))
    assert (h == 0).sum() == 10 and (h == -1).sum() == 90


@pytest.mark.timeout(30)
def test_select_picks_the_penalty_a_brute_force_loop_picks():
    """Ridge regression on a noisy linear problem: `select` must agree with a hand-written loop."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 20))
    y = X[:, 0] + 0.5 * rng.normal(size=60)

    def loss(alpha, tr, va):
        w = np.linalg.solve(X[tr].T @ X[tr] + alpha * np.eye(20), X[tr].T @ y[tr])
        return float(np.mean((X[va] @ w - y[va]) ** 2))

    params = RidgeParams(select="inner-cv")
    ids = inner_fold_ids(60, params.inner_folds, np.random.default_rng(2))
    choice = select(candidates(params, {"alpha": params.alpha_grid}), lambda p, tr, va: loss(p.alpha, tr, va), ids)
    brute = []
    for alpha in params.alpha_grid:
        brute.append(sum(loss(alpha, np.flatnonzero(ids != f), np.flatnonzero(ids == f)) * np.sum(ids == f)
                         for f in range(5)) / 60)
    assert choice.best.alpha == params.alpha_grid[int(np.argmin(brute))]
    np.testing.assert_allclose(choice.scores, brute)
    assert choice.best.select == "none"
    assert choice.diagnostics()["selected"] == {"alpha": choice.best.alpha}


@pytest.mark.timeout(30)
def test_ties_keep_the_first_candidate_and_failures_score_worst():
    params = RidgeParams()
    options = candidates(params, {"alpha": (1.0, 2.0, 3.0)})

    def evaluate(p, tr, va):
        if p.alpha == 1.0:
            raise np.linalg.LinAlgError("singular")
        return 0.5

    assert select(options, evaluate, np.arange(10) % 2).best.alpha == 2.0


@pytest.mark.timeout(30)
def test_one_se_walks_only_the_family_of_the_best_mean():
    """Fold losses (hand-made): family 'a' (first in order) has mean 0.30, family 'b' 0.31 and 0.29, each
    with a standard error of 0.029 — without families the one-SE rule returns a's candidate (0.30 ≤ 0.29 +
    0.029), with families the first of b's candidates within one SE of b's best (0.31)."""
    params = RidgeParams()
    options = candidates(params, {"alpha": (1.0, 2.0, 3.0)})
    by_alpha = {1.0: [0.30, 0.30, 0.30, 0.30], 2.0: [0.36, 0.26, 0.36, 0.26], 3.0: [0.34, 0.24, 0.34, 0.24]}
    ids = np.arange(8) % 4

    def evaluate(p, tr, va):
        return by_alpha[p.alpha][int(va[0])]

    assert select(options, evaluate, ids, rule="one-se").best.alpha == 1.0
    assert select(options, evaluate, ids, rule="one-se", families=["a", "b", "b"]).best.alpha == 2.0
    assert select(options, evaluate, ids, rule="best", families=["a", "b", "b"]).best.alpha == 3.0


@pytest.mark.timeout(30)
def test_halving_keeps_the_best_third_of_each_rung_on_the_first_folds():
    """Twelve candidates with hand-made losses that order them differently on a third of the rows (rung 0)
    and on all rows (rung 1): the survivors are rung 1's best ⌈⌈12/3⌉/3⌉ = 2 among rung 0's best 4, rung 0
    fit on a random third of each partition's first fold's training rows, both rungs validated on its whole
    validation part; a NaN scores worst, ties keep the earlier candidate, η = 1 keeps every candidate
    unscored, and a training part under ``min_rows`` is not subsampled."""
    ids = np.stack([inner_fold_ids(60, 3, np.random.default_rng(3 + r)) for r in range(2)])
    small = np.array([9, 3, 0, 8, 7, 3, 6, 1, 5, 4, np.nan, 2], float)  # rung 0's best 4: 2, 7, 11, then 1 (tie with 5)
    large = np.array([0, 5, 4, 0, 0, 0, 0, 1, 0, 0, 0, 2], float)       # among those: 7, 11
    calls = []

    def score(which, train, val):  # the same loss on every validation row: no row varies, SE 0
        calls.append((list(which), train, val))
        return np.repeat((small if train.size < 40 else large)[which][:, None], val.size, axis=1)

    assert halving(12, score, ids, np.random.default_rng(0), min_rows=0) == [7, 11]
    assert [c[0] for c in calls] == [list(range(12))] * 2 + [[1, 2, 7, 11]] * 2
    for r, partition in enumerate(ids):
        (_, t0, v0), (_, t1, v1) = calls[r], calls[2 + r]
        np.testing.assert_array_equal(v0, np.flatnonzero(partition == 0))
        np.testing.assert_array_equal(v1, v0)
        np.testing.assert_array_equal(t1, np.flatnonzero(partition != 0))
        assert t0.size == np.ceil(t1.size / 3) and np.isin(t0, t1).all() and np.unique(t0).size == t0.size
    calls.clear()
    assert halving(12, score, ids, np.random.default_rng(0), eta=1) == list(range(12)) and not calls
    assert halving(12, lambda w, t, v: np.repeat(small[w][:, None], v.size, axis=1), ids, np.random.default_rng(0),
                   better="higher", min_rows=0) == [0, 3]
    halving(12, score, ids, np.random.default_rng(0), min_rows=30)
    assert calls[0][1].size == 30 and calls[2][1].size == 40
    calls.clear()
    assert halving(12, score, ids, np.random.default_rng(0)) == [0, 3]  # 40 < 500 rows: both rungs on all


@pytest.mark.timeout(30)
def test_halving_keeps_the_candidate_the_one_se_rule_would_choose():
    """Per-row losses base + ε, ε = ±d on alternate validation rows: the standard error of a mean is
    d·√(N/(N−1))/√N. With d = 0.5 (SE ≈ 0.08) the first candidate within one SE of the best (2: 0.25)
    takes rung 0's second place from 3 (0.26): candidate 0 (0.30) without families, 1 (0.31) when 0 is
    another family; rung 1 keeps one, the one-SE choice itself. With d = 0.01 the best means win."""
    ids = np.stack([inner_fold_ids(60, 3, np.random.default_rng(r)) for r in range(2)])
    base = np.array([0.30, 0.31, 0.25, 0.26, 0.27, 0.40])

    def score(d):
        return lambda which, train, val: base[which][:, None] + d * (-1.0) ** np.arange(val.size)[None, :]

    N = sum((p == 0).sum() for p in ids)
    assert 0.5 * np.sqrt(N / (N - 1)) / np.sqrt(N) > 0.06  # 0.25 + SE reaches 0.31
    families = ["a", "b", "b", "b", "b", "b"]
    assert halving(6, score(0.5), ids, np.random.default_rng(0), families=families) == [1]
    assert halving(6, score(0.5), ids, np.random.default_rng(0)) == [0]
    assert halving(6, score(0.01), ids, np.random.default_rng(0), families=families) == [2]
