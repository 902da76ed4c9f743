"""A real Dask cluster on 127.0.0.1: stored numbers equal the serial run's, also when a worker is
killed mid-run (Dask reschedules its units)."""
from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

from malt import registry
from malt.engine import runner as engine
from malt.datasets.open import open_dataset
from malt.repository.store import Repository
from malt.results import ResultSet
from malt.tasks import get_task

distributed = pytest.importorskip("dask.distributed", reason="the optional extra malt[distributed] is not installed")


def _plan():
    dataset = open_dataset("synthetic-multilabel")
    task = get_task("multilabel")
    tparams = task.Params(missing=0.2)
    algo = registry.get("mllr")
    entries = [(algo, algo.Params(select="none", C=c)) for c in (0.1, 0.3, 1.0, 3.0)]
    return engine.Plan(dataset, {"kind": "catalogue", "name": dataset.name}, task, tparams, entries)


def _execute(path, **kw):
    counts = engine.execute(Repository(path), _plan(), quiet=True, **kw).as_dict()
    frame = ResultSet.from_repository(Repository(path)).frame.sort_values(["display", "fold", "metric"])
    return counts, frame


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return _execute(tmp_path_factory.mktemp("serial") / "repo")[1]


def test_local_cluster_gives_the_serial_numbers(tmp_path, serial):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        counts, frame = _execute(tmp_path / "repo", scheduler=cluster.scheduler_address)
    assert counts["ran"] == 20 and counts["failed"] == 0
    np.testing.assert_array_equal(frame["value"].to_numpy(), serial["value"].to_numpy())


def test_killing_a_worker_mid_run_still_completes_with_identical_numbers(tmp_path, serial):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster.scheduler_address) as client:
            pids = list(client.run(os.getpid).values())

        def kill_one():
            time.sleep(1.5)
            os.kill(pids[0], signal.SIGKILL)

        killer = threading.Thread(target=kill_one)
        killer.start()
        counts, frame = _execute(tmp_path / "repo", scheduler=cluster.scheduler_address)
        killer.join()
    assert counts["ran"] == 20 and counts["failed"] == 0
    np.testing.assert_array_equal(frame["value"].to_numpy(), serial["value"].to_numpy())


def test_unreachable_scheduler_is_a_clear_error(tmp_path):
    from malt.errors import MaltError

    with pytest.raises(MaltError, match="Cannot reach the Dask scheduler"):
        _execute(tmp_path / "repo", scheduler="tcp://127.0.0.1:9")


def test_the_units_on_the_cluster_report_their_own_progress_to_the_driver(tmp_path, monkeypatch, capsys):
    """ctx.progress inside a unit on a Dask worker reaches the driver's progress line (an event topic)."""
    monkeypatch.setenv("MALT_PROGRESS_SECONDS", "0")
    dataset = open_dataset("synthetic-multilabel")
    task, algo = get_task("multilabel"), registry.get("mllr")
    plan = engine.Plan(dataset, {"kind": "catalogue", "name": dataset.name}, task, task.Params(), [(algo, algo.Params())])
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        counts = engine.execute(Repository(tmp_path / "repo"), plan, scheduler=cluster.scheduler_address, quiet=False)
    err = capsys.readouterr().err
    assert counts.ran == 5 and "(inner CV over C)" in err and "ETA" in err


@pytest.mark.timeout(120)
def test_a_unit_over_its_time_limit_on_the_cluster_is_cancelled_and_the_others_go_on(tmp_path):
    import tests.plugins.counting  # noqa: F401  (a cluster of threads in this process knows the test plugin)

    dataset = open_dataset("synthetic-multilabel")
    task, algo = get_task("missing"), registry.get("test-counting")
    plan = engine.Plan(dataset, {"kind": "catalogue", "name": dataset.name}, task, task.Params(folds=3),
                       [(algo, algo.Params(fold_seconds=(0.0, 0.0, 8.0)))])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                                  host="127.0.0.1", dashboard_address=":0") as cluster:
        start = time.monotonic()
        counts = engine.execute(Repository(tmp_path / "repo"), plan, scheduler=cluster.scheduler_address, quiet=True,
                                unit_timeout=1.0)
        took = time.monotonic() - start
    assert counts.ran == 3 and counts.failed == 1 and took < 7
    assert "UnitTimeout" in counts.failures[0][2] and counts.failures[0][1] == 2
