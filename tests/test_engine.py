"""The engine against a real repository: skip-if-stored, cache reuse, rerun, failures, parallel."""
from __future__ import annotations

import numpy as np
import pytest

import tests.plugins.counting  # noqa: F401  (registers test-counting)
from malt import engine, registry
from malt.data import open_dataset
from malt.repository.store import Repository
from malt.results import ResultSet
from malt.tasks import get_task


def _run(repo_path, algo="test-counting", params=None, task="missing", jobs=1, force=(), **task_opts):
    repo = Repository(repo_path)
    dataset = open_dataset("synthetic-multilabel")
    t = get_task(task)
    tparams = t.Params(**task_opts)
    cls = registry.get(algo)
    p = cls.Params(**(params or {}))
    exp = engine.experiment_id(dataset.name, dataset.hash, t, tparams)
    plan = engine.Plan(exp, dataset, "synthetic-multilabel", t, tparams, [(cls, p)])
    repo.lock()
    with repo:
        counts = engine.execute(repo, plan, jobs=jobs, force=set(force), quiet=True)
    return exp, counts


@pytest.fixture
def counter(tmp_path, monkeypatch):
    path = tmp_path / "counter.txt"
    monkeypatch.setattr(tests.plugins.counting, "COUNTER", str(path))
    engine._WORKER_CACHES.clear()
    return lambda: path.read_text().splitlines() if path.exists() else []


def test_three_invocations_one_computation(repo_path, counter):
    for _ in range(3):
        exp, counts = _run(repo_path)
    runs = [line for line in counter() if line.startswith("run")]
    assert len(runs) == 5 and counts == {"planned": 5, "stored": 5, "ran": 0, "failed": 0}
    assert counter().count("kernel") == 1  # one artifact shared by all folds


def test_cache_survives_the_process_through_the_repository(repo_path, counter):
    _run(repo_path)
    engine._WORKER_CACHES.clear()  # a new process: only the repository remembers
    _run(repo_path, params={"sleep": 0.001})  # a new setting, so its units run
    assert counter().count("kernel") == 1


def test_changed_version_reruns(repo_path, counter, monkeypatch):
    _run(repo_path)
    monkeypatch.setattr(tests.plugins.counting.CountingMean, "version", "2")
    _, counts = _run(repo_path)
    assert counts["ran"] == 5
    current = ResultSet.from_repository(Repository(repo_path))
    assert current.stale == 5 and set(current.frame["version"]) == {"2"}
    everything = ResultSet.from_repository(Repository(repo_path), include_stale=True)
    assert set(everything.frame["display"]) == {"test-counting", "test-counting@v1"}


def test_failed_units_are_recorded_and_retried(repo_path, counter):
    exp, counts = _run(repo_path, params={"fail_fold": 2})
    assert counts["failed"] == 1 and counts["ran"] == 5
    rs = ResultSet.from_repository(Repository(repo_path))
    assert len(rs.failed) == 1 and "planned failure" in rs.failed["error"].iloc[0]
    _, counts = _run(repo_path, params={"fail_fold": 2})
    assert counts == {"planned": 5, "stored": 4, "ran": 1, "failed": 1}


def test_force_recomputes_only_that_algorithm(repo_path, counter):
    _run(repo_path)
    _, counts = _run(repo_path, force=("test-counting",))
    assert counts["ran"] == 5


def test_parallel_and_serial_store_identical_numbers(tmp_path, counter):
    serial, _ = _run(tmp_path / "a", algo="mllr", task="multilabel", missing=0.2)
    parallel, _ = _run(tmp_path / "b", algo="mllr", task="multilabel", jobs=2, missing=0.2)
    a = ResultSet.from_repository(Repository(tmp_path / "a")).frame.sort_values(["fold", "metric"])
    b = ResultSet.from_repository(Repository(tmp_path / "b")).frame.sort_values(["fold", "metric"])
    assert serial == parallel
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())
    np.testing.assert_array_equal(a["seed"].to_numpy(), b["seed"].to_numpy())


def test_seeded_randomness_is_reproducible(tmp_path, counter):
    _run(tmp_path / "a")
    _run(tmp_path / "b")
    a = ResultSet.from_repository(Repository(tmp_path / "a")).frame.sort_values(["fold", "metric"])
    b = ResultSet.from_repository(Repository(tmp_path / "b")).frame.sort_values(["fold", "metric"])
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())
