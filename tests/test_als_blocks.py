"""One biased-MF fit split over row blocks (issue 47): in this process and on a real Dask LocalCluster of
two worker processes on 127.0.0.1, each block held by one worker, the same numbers as the
whole-matrix fit to 1e-10 (a row's ridge solution depends on its own ratings and the broadcast
factors only)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from malt.algorithms.als_blocks import both_sides, cut
from malt.algorithms.recommenders import als_biased_mf


def _ratings(n=700, m=240, per_row=12, seed=0):
    rng = np.random.default_rng(seed)
    U, V = rng.standard_normal((n, 3)), rng.standard_normal((m, 3))
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(0, m, rows.size)
    T = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, m)).tocsr()
    T.data[:] = 1.0
    r, c = T.nonzero()
    y = np.clip(np.round(3 + np.einsum("ij,ij->i", U[r], V[c]) + 0.5 * rng.standard_normal(r.size)), 1, 5)
    return sp.coo_matrix((y, (r, c)), shape=(n, m))


def _same(a, b, atol=1e-10):
    for key in ("bu", "bi", "P", "Q"):
        np.testing.assert_allclose(a[key], b[key], atol=atol, rtol=0)
    assert a["objective"] == pytest.approx(b["objective"], rel=1e-12)


def test_cut_covers_every_rating_once_in_consecutive_compact_blocks():
    R = _ratings()
    blocks = cut(R.row, R.col, R.data, *R.shape, 4)
    assert [b.first for b in blocks] == sorted(b.first for b in blocks)
    assert sum(b.n_rows for b in blocks) == R.shape[0] and sum(b.y.size for b in blocks) == R.nnz
    assert all(b.rows.dtype == np.int32 and b.cols.dtype == np.int32 and b.y.dtype == np.float32 for b in blocks)
    back = sp.coo_matrix((np.concatenate([b.y for b in blocks]),
                          (np.concatenate([b.rows + b.first for b in blocks]), np.concatenate([b.cols for b in blocks]))),
                         shape=R.shape)
    assert abs(back - R).sum() == 0
    assert cut(np.array([0], np.int32), np.array([1], np.int32), np.array([0.1]), 1, 3, 1)[0].y.dtype == np.float64


def test_the_column_side_is_the_transpose_and_the_row_side_shares_the_training_arrays():
    R = _ratings()  # canonical COO, float ratings exact in float32
    R.row, R.col = R.row.astype(np.int32), R.col.astype(np.int32)
    rows_side, cols_side = both_sides(R.row, R.col, R.data, R.shape)
    assert np.shares_memory(rows_side.indices, R.col)
    T = sp.coo_matrix(R).T.tocsr()
    T.sort_indices()
    assert cols_side.shape == T.shape and np.array_equal(cols_side.indptr, T.indptr)
    assert np.array_equal(cols_side.indices, T.indices) and np.array_equal(cols_side.data, T.data)
    assert cols_side.data.dtype == np.float32


@pytest.mark.timeout(120)
def test_row_blocks_in_this_process_give_the_whole_fit():
    R = _ratings()
    _same(als_biased_mf(R, rank=4, reg=5.0, reg_bias=3.0, iterations=15, tol=0),
          als_biased_mf(R, rank=4, reg=5.0, reg_bias=3.0, iterations=15, tol=0, blocks=5))


@pytest.mark.timeout(240)
def test_a_fit_split_over_a_two_worker_local_cluster_gives_the_local_numbers():
    distributed = pytest.importorskip("dask.distributed", reason="the optional extra malt[distributed] is not installed")
    R = _ratings()
    local = als_biased_mf(R, rank=4, reg=5.0, reg_bias=3.0, iterations=15, tol=0)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        spread = als_biased_mf(R, rank=4, reg=5.0, reg_bias=3.0, iterations=15, tol=0, client=client)
        from malt.algorithms.als_blocks import DaskBlocks
        held = DaskBlocks(R.row, R.col, R.data, R.shape, client)
        owners = client.who_has([f for side in held.sides for f in side])
        assert len({w for ws in owners.values() for w in ws}) == 2  # one block per side on each worker
        held.close()
    _same(local, spread)


@pytest.mark.timeout(300)
def test_malt_cv_with_split_fit_on_the_cluster_stores_the_numbers_of_one_process(tmp_path):
    """End to end: `malt cv --scheduler ADDR --param split_fit=true` runs each biased-mf unit on a worker,
    which splits its own fit over both workers; every stored RMSE equals the one-process run's."""
    distributed = pytest.importorskip("dask.distributed", reason="the optional extra malt[distributed] is not installed")
    from tests.conftest import require_data
    require_data("matrix/filmtrust")
    from malt import api

    local = api.cv("biased-mf", "filmtrust", task="ratings", repo=tmp_path / "local", quiet=True, runs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        spread = api.cv("biased-mf", "filmtrust", task="ratings", repo=tmp_path / "spread", quiet=True, runs=2,
                        params={"split_fit": True}, scheduler=cluster.scheduler_address)
    assert local.failed == 0 and spread.failed == 0 and spread.ran == 2
    a = api.load(tmp_path / "local").frame.sort_values(["fold", "metric"])
    b = api.load(tmp_path / "spread").frame.sort_values(["fold", "metric"])
    assert list(a["metric"]) == list(b["metric"]) and "rmse" in set(a["metric"])
    np.testing.assert_allclose(b["value"].to_numpy(float), a["value"].to_numpy(float), atol=1e-10, rtol=0)


def test_split_fit_without_a_cluster_is_one_clear_error():
    from malt.algorithms.als_blocks import cluster_client
    from malt.errors import InvalidParameterError

    pytest.importorskip("dask.distributed")
    with pytest.raises(InvalidParameterError, match="needs a Dask cluster"):
        cluster_client()
