"""One pma-map scalable-path solve split over row blocks held by Dask workers (issue 47): on a real
LocalCluster of two worker processes on 127.0.0.1, each block held by one worker, the posterior mean of the
local weight-space solve (`ObservedKroneckerSum`) to 1e-10 — a block's share of JᵀJ θ depends on its own
observations, Ω and its rows of Υ only, so only the order of the partial sums differs."""
from __future__ import annotations

import numpy as np
import pytest

from malt.algorithms.pma.ratings import fit_moments_low_rank
from malt.algorithms.pma.split import cut_by_rows
from malt.numerics.kron_observed import ObservedKroneckerSum


def _draw(n=300, m=200, L=6000, seed=0):
    """Observed positions (unsorted) of a random (n, m) matrix and smooth ratings on them."""
    rng = np.random.default_rng(seed)
    key = rng.choice(n * m, L, replace=False)
    rows, cols = key // m, key % m
    U, V = rng.standard_normal((n, 2)), rng.standard_normal((m, 2))
    y = np.einsum("ij,ij->i", U[rows], V[cols]) + 0.5 * rng.standard_normal(L)
    return rows, cols, y, (n, m)


@pytest.fixture(scope="module")
def cluster_client():
    distributed = pytest.importorskip("dask.distributed", reason="the optional extra malt[distributed] is not installed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


def test_row_runs_cover_every_observation_once_in_consecutive_rows():
    rows, cols, _, (n, _) = _draw()
    runs = cut_by_rows(rows, cols, n, 3)
    assert len(runs) == 3 and runs[0][0] == 0 and sum(r[1] for r in runs) == n
    assert all(a[0] + a[1] == b[0] for a, b in zip(runs[:-1], runs[1:]))
    index = np.concatenate([r[2] for r in runs])
    assert np.array_equal(np.sort(index), np.arange(rows.size))
    for first, n_rows, at in runs:
        assert np.all((rows[at] >= first) & (rows[at] < first + n_rows))


@pytest.mark.timeout(240)
@pytest.mark.parametrize("blocks", [None, 3])
def test_a_solve_split_over_two_workers_gives_the_local_posterior_mean(cluster_client, blocks):
    from malt.algorithms.pma.split import SplitKroneckerSum

    rows, cols, y, shape = _draw()
    moments = fit_moments_low_rank(rows, cols, y, shape, rank=8)
    E1, E2 = moments["E1"], moments["E2"]
    local, local_info = ObservedKroneckerSum(E1, E2, rows, cols, shape).solve(
        moments["resid"], noise=0.5, scale=0.5, tol=1e-8, space="weights")
    solver = SplitKroneckerSum(E1, E2, rows, cols, shape, cluster_client, blocks=blocks)
    from distributed import wait

    wait(solver.blocks)  # built on their workers
    owners = cluster_client.who_has(solver.blocks)
    assert len({w for ws in owners.values() for w in ws}) == 2  # the blocks sit on both workers
    spread, info = solver.solve(moments["resid"], noise=0.5, scale=0.5, tol=1e-8)
    assert info["space"] == "weights" and info["iterations"] == local_info["iterations"]
    np.testing.assert_allclose(spread.Z, local.Z, atol=1e-10, rtol=0)
    np.testing.assert_allclose(spread.W, local.W, atol=1e-10, rtol=0)
    again, _ = solver.solve(moments["resid"], noise=0.3, scale=0.8, tol=1e-8)  # the held blocks serve a new scale
    other, _ = ObservedKroneckerSum(E1, E2, rows, cols, shape).solve(moments["resid"], noise=0.3, scale=0.8, tol=1e-8,
                                                                     space="weights")
    np.testing.assert_allclose(again.at(rows, cols), other.at(rows, cols), atol=1e-10, rtol=0)
    with pytest.raises(ValueError, match="weight space"):
        solver.solve(moments["resid"], noise=0.5, space="observations")
    solver.close()


@pytest.mark.timeout(300)
def test_malt_cv_with_split_fit_on_the_cluster_stores_the_numbers_of_one_process(tmp_path):
    """End to end: `malt cv --scheduler ADDR --param split_fit=true` runs each pma-map unit on a worker, which
    splits its scalable-path solve over both workers; every stored RMSE equals the one-process run's (rank 5
    on FilmTrust: more training ratings than weights, so both solve in the weight space)."""
    distributed = pytest.importorskip("dask.distributed", reason="the optional extra malt[distributed] is not installed")
    from tests.conftest import require_data
    require_data("matrix/filmtrust")
    from malt import api

    params = {"dense_limit": 1000, "rank": 5, "select": "none", "mf_term": "off"}
    local = api.cv("pma-map", "filmtrust", task="ratings", repo=tmp_path / "local", quiet=True, runs=2, params=params)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        spread = api.cv("pma-map", "filmtrust", task="ratings", repo=tmp_path / "spread", quiet=True, runs=2,
                        params={**params, "split_fit": True}, scheduler=cluster.scheduler_address)
    assert local.failed == 0 and spread.failed == 0 and spread.ran == 2
    a = api.load(tmp_path / "local").frame.sort_values(["fold", "metric"])
    b = api.load(tmp_path / "spread").frame.sort_values(["fold", "metric"])
    assert list(a["metric"]) == list(b["metric"]) and "rmse" in set(a["metric"])
    d = api.load(tmp_path / "spread").diagnostics
    assert set(d.loc[d["diagnostic"] == "split_blocks", "value"]) == {2.0}  # the solve did run over both workers
    assert "split_blocks" not in set(api.load(tmp_path / "local").diagnostics["diagnostic"])
    np.testing.assert_allclose(b["value"].to_numpy(float), a["value"].to_numpy(float), atol=1e-10, rtol=0)

