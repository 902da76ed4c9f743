"""The ratings task's standard baselines (algorithms/recommenders.py) against closed forms and brute
force, and the real-data bar: every registered ratings algorithm below the bias baseline."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from malt.algorithms.recommenders import als_biased_mf, fit_biases, ridge_rows, row_grams
from malt.engine.context import Context
from malt.registry import algorithms
from malt.splits import RatingsSplit


def _ratings(n=12, m=9, density=0.6, seed=0, rank=2):
    rng = np.random.default_rng(seed)
    truth = (3 + rng.normal(0, 0.5, (n, 1)) + rng.normal(0, 0.5, (1, m))
             + rng.standard_normal((n, rank)) @ rng.standard_normal((rank, m)) * 0.5)
    mask = rng.random((n, m)) < density
    mask[np.arange(n), rng.integers(0, m, n)] = True          # every row rated at least once
    r, c = np.nonzero(mask)
    return sp.coo_matrix((truth[r, c], (r, c)), shape=(n, m)), truth, mask


def test_biases_are_the_closed_form_ridge_solution():
    """min Σ (r − μ − b_u − b_i)² + λ_u‖b_u‖² + λ_i‖b_i‖² is a ridge regression on one-hot user and item
    indicators: solve its normal equations directly."""
    train, _, _ = _ratings()
    n, m = train.shape
    mu = train.data.mean()
    D = np.zeros((train.nnz, n + m))
    D[np.arange(train.nnz), train.row] = 1.0
    D[np.arange(train.nnz), n + train.col] = 1.0
    pen = np.r_[np.full(n, 15.0), np.full(m, 10.0)]
    exact = np.linalg.solve(D.T @ D + np.diag(pen), D.T @ (train.data - mu))
    b = fit_biases(train, 15.0, 10.0, iterations=10_000, tol=1e-14)
    assert b.mu == pytest.approx(mu)
    np.testing.assert_allclose(np.r_[b.user, b.item], exact, atol=1e-10)


def test_row_grams_and_ridge_rows_match_a_loop_over_rows():
    rng = np.random.default_rng(1)
    R = sp.random(7, 11, density=0.4, random_state=2, format="csr")
    V = rng.standard_normal((11, 3))
    G = row_grams(R, V)
    U = ridge_rows(R, V, np.array([0.5, 1.0, 2.0]))
    offset = rng.standard_normal(11)
    U_off = ridge_rows(R, V, np.array([0.5, 1.0, 2.0]), col_offset=offset)
    for i in range(7):
        o = R[i].indices
        np.testing.assert_allclose(G[i], V[o].T @ V[o], atol=1e-12)
        expect = np.linalg.solve(V[o].T @ V[o] + np.diag([0.5, 1.0, 2.0]), V[o].T @ R[i].data)
        np.testing.assert_allclose(U[i], expect, atol=1e-10)
        expect = np.linalg.solve(V[o].T @ V[o] + np.diag([0.5, 1.0, 2.0]), V[o].T @ (R[i].data - offset[o]))
        np.testing.assert_allclose(U_off[i], expect, atol=1e-10)


def test_row_grams_in_runs_of_entries_and_heavy_rows_alone_match_a_loop_over_rows(monkeypatch):
    """Runs of at most GRAM_ENTRIES ratings (several rows each, a run boundary inside the matrix), rows
    with more ratings than that (one product each) and empty rows (zero Gram): all Σ w_ij v_j v_jᵀ."""
    from malt.algorithms import als_blocks

    monkeypatch.setattr(als_blocks, "GRAM_ENTRIES", 5)
    monkeypatch.setattr(als_blocks, "TABLE_ROWS", 5)  # V's 30 rows: the per-rating runs, not the table
    rng = np.random.default_rng(3)
    m, k = 30, 4
    counts = np.array([0, 3, 1, 0, 7, 2, 2, 5, 6, 0, 1, 12])
    rows = np.repeat(np.arange(counts.size), counts)
    cols = np.concatenate([rng.choice(m, c, replace=False) for c in counts])
    w = rng.uniform(0.5, 2.0, rows.size)
    R = sp.csr_matrix((w, (rows, cols)), shape=(counts.size, m))
    V = rng.standard_normal((m, k))
    G = row_grams(R, V, R.data)
    for i in range(counts.size):
        o, wi = R[i].indices, R[i].data
        np.testing.assert_allclose(G[i], V[o].T @ (wi[:, None] * V[o]), atol=1e-12)


def test_ridge_rows_solves_short_rows_in_the_push_through_form_and_long_rows_by_chunks(monkeypatch):
    """Rows with 1..k−1 observations go through (V D⁻¹Vᵀ + I)⁻¹ (c × c), the others through their Gram
    matrices a few rows at a time: both equal the normal equations of each row solved alone."""
    from malt.algorithms import als_blocks

    monkeypatch.setattr(als_blocks, "ROW_CHUNK", 3)
    rng = np.random.default_rng(9)
    k, m = 6, 40
    rows = np.repeat(np.arange(14), np.arange(1, 15))          # counts 1 … 14
    cols = np.concatenate([rng.choice(m, c, replace=False) for c in range(1, 15)])
    R = sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(14, m))
    V = rng.standard_normal((m, k))
    reg = np.linspace(0.3, 2.0, k)
    U = ridge_rows(R, V, reg)
    offset = rng.standard_normal(m)
    U_off = ridge_rows(R, V, reg, col_offset=offset)  # targets r − o_j, both paths
    for i in range(14):
        o = R[i].indices
        np.testing.assert_allclose(U[i], np.linalg.solve(V[o].T @ V[o] + np.diag(reg), V[o].T @ R[i].data),
                                   atol=1e-11)
        np.testing.assert_allclose(U_off[i], np.linalg.solve(V[o].T @ V[o] + np.diag(reg),
                                                             V[o].T @ (R[i].data - offset[o])), atol=1e-11)


def test_ridge_rows_gives_rows_without_observations_the_exact_solution_zero():
    """argmin_u uᵀ diag(reg) u = 0: the rows left out of the batched solve are zero, the others unchanged."""
    rng = np.random.default_rng(6)
    R = sp.random(9, 6, density=0.5, random_state=3, format="csr")
    R = sp.csr_matrix(R.multiply(sp.diags((np.arange(9) % 3 != 0).astype(float)) @ np.ones((9, 6))))
    R.eliminate_zeros()
    V = rng.standard_normal((6, 2))
    U = ridge_rows(R, V, 0.7)
    for i in range(9):
        o = R[i].indices
        expect = np.zeros(2) if o.size == 0 else np.linalg.solve(V[o].T @ V[o] + 0.7 * np.eye(2), V[o].T @ R[i].data)
        np.testing.assert_allclose(U[i], expect, atol=1e-12)
    assert np.all(U[::3] == 0)


def _objective(theta, train, rank, reg, reg_bias, mu):
    n, m = train.shape
    bu, bi = theta[:n], theta[n:n + m]
    P = theta[n + m:n + m + n * rank].reshape(n, rank)
    Q = theta[n + m + n * rank:].reshape(m, rank)
    e = train.data - mu - bu[train.row] - bi[train.col] - np.einsum("ij,ij->i", P[train.row], Q[train.col])
    return e @ e + reg * (np.sum(P * P) + np.sum(Q * Q)) + reg_bias * (bu @ bu + bi @ bi)


def test_biased_mf_converges_to_a_stationary_point_of_its_objective():
    """ALS ends where no direction decreases the objective: L-BFGS started there finds nothing lower,
    and the objective trace never increases."""
    train, _, _ = _ratings(15, 10, seed=3)
    f = als_biased_mf(train, rank=2, reg=0.5, reg_bias=1.0, iterations=3000, tol=1e-15)
    assert np.all(np.diff(f["objective"]) <= 1e-9 * f["objective"][0])
    theta = np.r_[f["bu"], f["bi"], f["P"].ravel(), f["Q"].ravel()]
    args = (train, 2, 0.5, 1.0, f["mu"])
    at_als = _objective(theta, *args)
    assert at_als == pytest.approx(f["objective"][-1], rel=1e-10)
    polished = minimize(_objective, theta, args=args, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15})
    assert polished.fun >= at_als - 1e-6 * at_als


def test_warm_starts_keep_a_fixed_point_and_zero_factors_fit_the_bias_model():
    """A converged fit is a fixed point of the sweeps (restarting there stays there), and zero factors
    are one too: ALS from them is block coordinate descent on the biases alone, whose minimiser
    `fit_biases` gives in closed form (checked against the normal equations above)."""
    train, _, _ = _ratings(15, 10, seed=7)
    f = als_biased_mf(train, rank=2, reg=0.5, reg_bias=1.0, iterations=5000, tol=1e-15)
    again = als_biased_mf(train, rank=2, reg=0.5, reg_bias=1.0, iterations=1, start=f)
    np.testing.assert_allclose(again["P"], f["P"], atol=1e-6)
    np.testing.assert_allclose(again["objective"][-1], f["objective"][-1], rtol=1e-10)
    zero = {**f, "P": np.zeros_like(f["P"]), "Q": np.zeros_like(f["Q"])}
    # every sweep runs (tol −∞): a stop on a rounding-level change of the objective leaves the biases ~1e-8 off
    biases_only = als_biased_mf(train, rank=2, reg=0.5, reg_bias=3.0, iterations=500, tol=-np.inf, start=zero)
    b = fit_biases(train, 3.0, 3.0, iterations=10_000, tol=1e-14)
    assert not np.any(biases_only["P"]) and not np.any(biases_only["Q"])
    np.testing.assert_allclose(biases_only["bu"], b.user, atol=1e-12)
    np.testing.assert_allclose(biases_only["bi"], b.item, atol=1e-12)


def test_biased_mf_penalty_path_prunes_after_the_turn_and_reports_its_choice(monkeypatch):
    """The λ path (strongest first) stops after the first candidate whose held-out error exceeds the best so
    far by more than PATH_TURN: every candidate after it scores inf, none before it does; the chosen
    penalties are in the diagnostics."""
    from malt.algorithms.recommenders import BiasedMFParams, choose_penalties

    train, _, _ = _ratings(60, 40, density=0.3, seed=8, rank=3)
    params = BiasedMFParams(reg_grid=(100.0, 30.0, 10.0, 3.0, 1.0, 0.3, 0.1, 0.03))
    chosen, diagnostics, start = choose_penalties(params, train, np.random.default_rng(0))
    assert diagnostics["selected_reg"] == chosen.reg and diagnostics["selected_reg_bias"] == chosen.reg_bias
    assert chosen.reg_bias in params.reg_bias_grid and start["P"].shape == (60, 10)
    from malt.numerics import selection
    scores = []
    original = selection.select

    def recording(options, evaluate, ids, **kw):  # the real selection, its scores kept
        out = original(options, evaluate, ids, **kw)
        scores.append(out.scores)
        return out
    import malt.algorithms.recommenders as rec
    monkeypatch.setattr(rec, "select", recording)
    choose_penalties(params, train, np.random.default_rng(0))
    path = scores[-1]
    finite = np.isfinite(path)
    turn = int(np.argmin(finite)) if not finite.all() else path.size
    assert 1 < turn < path.size and not finite[turn:].any()   # this path turns before its weakest λ
    from malt.algorithms.recommenders import PATH_TURN
    assert path[turn - 1] > np.min(path[:turn - 1]) * (1 + PATH_TURN)       # ... after the first rise
    assert all(path[i] <= np.min(path[:i]) * (1 + PATH_TURN) for i in range(1, turn - 1))


def test_a_monitor_ends_the_fit_after_the_sweep_it_returns_true_and_given_biases_are_the_fit_it_would_make():
    """``monitor`` sees every sweep's fit and a True ends the fit there: the same numbers as a fit of that many
    sweeps. ``biases`` (the bias model the fit would start from) and the collapse check's own bias model
    change nothing either."""
    from malt.algorithms.recommenders import biases_at, collapse_threshold, training_triplets

    train, _, _ = _ratings(15, 10, seed=5)
    seen = []

    def after_two(f):
        seen.append((len(f["objective"]), f["P"].shape, f["Q"].shape))
        return len(f["objective"]) == 2
    stopped = als_biased_mf(train, rank=2, reg=0.5, reg_bias=1.0, iterations=50, tol=0, monitor=after_two)
    two = als_biased_mf(train, rank=2, reg=0.5, reg_bias=1.0, iterations=2, tol=0)
    assert seen == [(1, (15, 2), (10, 2)), (2, (15, 2), (10, 2))] and len(stopped["objective"]) == 2
    for name in ("bu", "bi", "P", "Q"):
        np.testing.assert_array_equal(stopped[name], two[name])
    rows, cols, y, shape = training_triplets(train)
    b = biases_at(rows, cols, y, shape, 1.0, 1.0)
    given = als_biased_mf(train, rank=2, reg=0.5, reg_bias=1.0, iterations=2, tol=0, biases=b)
    for name in ("bu", "bi", "P", "Q"):
        np.testing.assert_array_equal(given[name], two[name])
    assert collapse_threshold(rows, cols, y, shape, 1.0, 2, biases=b)[0] == collapse_threshold(rows, cols, y, shape,
                                                                                               1.0, 2)[0]


def test_a_path_candidate_past_the_turn_is_abandoned_mid_fit_without_changing_the_choice(monkeypatch):
    """Abandoning a candidate whose held-out error has turned (ABANDON_RISES sweeps rising, past PATH_TURN)
    changes neither the choice nor the chosen holdout fit, only the abandoned candidate's score — still past
    the turn, so the path stops there as it would have."""
    import malt.algorithms.recommenders as rec
    from malt.numerics import selection

    train, _, _ = _ratings(60, 40, density=0.3, seed=8, rank=3)
    params = rec.BiasedMFParams(reg_grid=(100.0, 30.0, 10.0, 3.0, 1.0, 0.3, 0.1, 0.03), tol=1e-6)
    scores = []
    original = selection.select

    def recording(options, evaluate, ids, **kw):
        out = original(options, evaluate, ids, **kw)
        scores.append(out.scores)
        return out
    monkeypatch.setattr(rec, "select", recording)
    chosen, _, start = rec.choose_penalties(params, train, np.random.default_rng(0))
    abandoning = scores[-1]
    monkeypatch.setattr(rec, "ABANDON_RISES", 10 ** 6)  # never abandoned: every candidate fitted to tol
    chosen_full, _, start_full = rec.choose_penalties(params, train, np.random.default_rng(0))
    full = scores[-1]
    assert chosen == chosen_full
    for name in ("bu", "bi", "P", "Q"):
        np.testing.assert_array_equal(start[name], start_full[name])
    finite = np.isfinite(full)
    turn = int(np.argmin(finite)) - 1  # the candidate the path stopped after
    np.testing.assert_array_equal(np.isfinite(abandoning), finite)
    np.testing.assert_array_equal(abandoning[:turn], full[:turn])
    assert abandoning[turn] != full[turn]                                    # this one was abandoned ...
    assert abandoning[turn] > np.min(abandoning[:turn]) * (1 + rec.PATH_TURN)  # ... past the turn


def test_biased_mf_with_its_default_grids_is_equivariant_to_the_rating_scale():
    """Ratings a + c·r give a + c × the predictions of r (c = 5: Jester's ±10 against a 1–5 scale) and the same
    chosen penalties: at the MAP point P, Q (and the random start) scale by √c and μ, b by c when λ scales by c
    (the factor penalty is in units of the ratings' standard deviation) and the bias penalty stays. Up to ALS's
    tolerance."""
    from malt.algorithms.recommenders import BiasedMFParams, biased_mf_at, fit_biased_mf

    train, _, mask = _ratings(60, 40, density=0.3, seed=8, rank=3)
    test_r, test_c = np.nonzero(~mask)
    fits = {}
    for a, c in ((0.0, 1.0), (-7.0, 5.0)):
        scaled = sp.coo_matrix((a + c * train.data, (train.row, train.col)), shape=train.shape)
        f, d = fit_biased_mf(scaled, BiasedMFParams(tol=1e-9, iterations=500), np.random.default_rng(0))
        fits[c] = (biased_mf_at(f, test_r, test_c), d["selected"], a)
    (base, chosen, _), (scaled_pred, scaled_chosen, a) = fits[1.0], fits[5.0]
    assert scaled_chosen == chosen
    np.testing.assert_allclose(scaled_pred, a + 5.0 * base, atol=1e-3 * 5.0)


def test_biased_mf_recovers_a_complete_biased_low_rank_matrix():
    _, truth, _ = _ratings(20, 15, density=1.0, seed=4)
    r, c = np.indices(truth.shape).reshape(2, -1)
    f = als_biased_mf(sp.coo_matrix((truth[r, c], (r, c)), shape=truth.shape), rank=2, reg=1e-6, reg_bias=1e-6,
                      iterations=2000, tol=1e-15)
    fit = f["mu"] + f["bu"][:, None] + f["bi"][None, :] + f["P"] @ f["Q"].T
    np.testing.assert_allclose(fit, truth, atol=1e-3)


def test_registered_baselines_return_full_ranking_rows():
    train, truth, mask = _ratings(30, 25, density=0.5, seed=5)
    tr, tc = np.nonzero(~mask)
    split = RatingsSplit(train, tr, tc)
    ctx = Context.for_arrays(seed=0)
    urows = np.unique(tr)
    count = np.bincount(train.col, minlength=25)
    for name in ("baseline", "biased-mf", "popularity"):
        algo = algorithms()[name]()
        pred = algo.run(split, algo.Params(), ctx)
        assert pred.values.shape == tr.shape and pred.scores.shape == (urows.size, 25)
        # the score rows are the model's estimates of every column (popularity: the training counts)
        at = pred.scores[np.searchsorted(urows, tr), tc]
        np.testing.assert_allclose(at, count[tc] if name == "popularity" else pred.values, atol=1e-10)
    base = algorithms()["baseline"]()
    b = fit_biases(train)
    np.testing.assert_allclose(base.run(split, base.Params(), ctx).values, b.at(tr, tc))


RATINGS_MODELS = ("biased-mf", "pmf", "pcsa", "pcsa-sparse", "kpmf", "con-mvgp", "trace-gp", "mvgp", "pma-map")


@pytest.fixture(scope="module")
def movielens_core_splits():
    """Two random 70/30 splits of a MovieLens-100K core: the 200 most active users × the 300 most rated
    movies (≈ 25,000 ratings, a quarter of the set, so that every model fits in seconds in CI), with the
    dataset's user and item kNN graphs restricted to the core."""
    from tests.conftest import require_data
    root = require_data("matrix/movielens-100k/u.data")
    from malt.datasets.catalogue import DataRoots, entry
    data = entry("movielens-100k").loader(DataRoots([root]))
    R = data["ratings"].tocsr()
    users = np.sort(np.argsort(-np.diff(R.indptr), kind="stable")[:200])
    items = np.sort(np.argsort(-np.bincount(R.indices, minlength=R.shape[1]), kind="stable")[:300])
    core = R[users][:, items].tocoo()
    rg = data["row_graph"].tocsr()[users][:, users]
    cg = data["col_graph"].tocsr()[items][:, items]
    splits = []
    for run in range(2):
        rng = np.random.default_rng(run)
        test = rng.random(core.nnz) < 0.3
        train = sp.coo_matrix((core.data[~test], (core.row[~test], core.col[~test])), shape=core.shape)
        split = RatingsSplit(train, core.row[test], core.col[test], rg, cg, fold=run)
        splits.append((split, core.data[test]))
    base = algorithms()["baseline"]()
    rmse = [np.sqrt(np.mean((base.run(s, base.Params(), Context.for_arrays(seed=0)).values - y) ** 2))
            for s, y in splits]
    return splits, float(np.mean(rmse))


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", RATINGS_MODELS)
def test_every_ratings_model_beats_the_bias_baseline_on_movielens_at_defaults(name, movielens_core_splits):
    """Issue 23: a default that loses to user + item biases is a defect. Mean RMSE over two splits."""
    splits, baseline = movielens_core_splits
    algo = algorithms()[name]()
    # the matrix-variate GPs' second (ranking) fit changes only `scores`; RMSE is read from `values`
    fields = {f.name for f in dataclasses.fields(algo.Params)}
    params = algo.Params(ranking="ratings") if "ranking" in fields else algo.Params()
    rmse = []
    for split, truth in splits:
        pred = algo.run(split, params, Context.for_arrays(seed=split.fold))
        assert pred.scores.shape == (np.unique(split.test_rows).size, split.train.shape[1])
        rmse.append(np.sqrt(np.mean((pred.values - truth) ** 2)))
    assert np.mean(rmse) < baseline, (name, rmse, baseline)


def test_validation_recall_equals_the_tasks_recall_by_blocks_and_partial_sorts(monkeypatch):
    """The self-tuning models' ranking selection (issue 36) scores a validation part of the training ratings
    like the ratings task (candidates: columns not rated in the fitting part) — here with continuous scores,
    given whole or as a function of row blocks — against the task's own ranking_at_k over top_candidates."""
    from malt.algorithms import recommenders
    from malt.algorithms.recommenders import validation_recall
    from malt.tasks.ratings import ranking_at_k, top_candidates

    rng = np.random.default_rng(0)
    n, m = 300, 80
    fit_rows, fit_cols = rng.integers(0, n, 2000), rng.integers(0, m, 2000)
    val_rows, val_cols, val_y = rng.integers(0, n, 600), rng.integers(0, m, 600), rng.integers(1, 6, 600) * 1.0
    u = np.unique(val_rows)
    S = rng.random((u.size, m))
    seen = sp.csr_matrix((np.ones(2000), (fit_rows, fit_cols)), shape=(n, m))
    expected = ranking_at_k(top_candidates(seen, u, S, 20), u, val_rows, val_cols, val_y, 20, 4.0)[1]
    assert validation_recall(fit_rows, fit_cols, (n, m), val_rows, val_cols, val_y, S, 4.0) == expected
    monkeypatch.setattr(recommenders, "VALIDATION_BLOCK", 7)
    by_blocks = validation_recall(fit_rows, fit_cols, (n, m), val_rows, val_cols, val_y,
                                  lambda r: S[np.searchsorted(u, r)], 4.0)
    assert by_blocks == expected and 0 < expected < 1
    from malt.algorithms.recommenders import relevance_threshold
    from malt.tasks.ratings import scale_top

    assert relevance_threshold(val_y) == scale_top(val_y) - 1.0


@pytest.mark.timeout(60)
def test_the_penalty_path_still_returns_the_chosen_candidates_own_holdout_fit(monkeypatch):
    """With one inner holdout the path drops the fits that can no longer be chosen (memory: about one (n + m) ×
    rank pair instead of one per candidate); the warm start it returns must still be the chosen λ's own holdout
    fit, the very object that fit returned."""
    import malt.algorithms.recommenders as rec

    train, _, _ = _ratings(60, 40, density=0.3, seed=8, rank=3)
    params = rec.BiasedMFParams(reg_grid=(100.0, 30.0, 10.0, 3.0, 1.0, 0.3, 0.1, 0.03))
    fitted = []
    original = rec.als_biased_mf

    def recording(train, rank, reg, *args, **kw):
        f = original(train, rank, reg, *args, **kw)
        fitted.append((reg, f))
        return f
    monkeypatch.setattr(rec, "als_biased_mf", recording)
    chosen, _, start = rec.choose_penalties(params, train, np.random.default_rng(0))
    scale = rec.rating_scale(train)
    own = [f for reg, f in fitted if reg == chosen.reg * scale]
    assert len(fitted) > 2 and len(own) == 1 and start is own[0]
